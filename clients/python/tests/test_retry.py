"""Retries through a fault-injecting proxy in front of the real service: every
attempt of one call carries one Idempotency-Key, so a retried decide makes one
decision and a retried confirm confirms once; 5xx and 429 are retried, 4xx not;
RetryPolicy's waits."""
import unittest
from typing import Any, Dict, List

from agent_authz import AuthzClient, AuthzError, DecisionDeniedError, RetryPolicy

from support import ALLOW, CHARGE, DENY, KEY, URL, WRITE_ONLY_KEY, FaultProxy, RecordingSleep, agent, budgets_of, decision, decisions_of


def client_via(proxy: FaultProxy, sleep: RecordingSleep, retries: int = 3) -> AuthzClient:
    return AuthzClient(base_url=proxy.url, api_key=KEY, retry_policy=RetryPolicy(retries=retries, sleep=sleep))


def keys(attempts: List[Dict[str, Any]]) -> List[Any]:
    return [a["idempotency_key"] for a in attempts]


class RetryTest(unittest.TestCase):
    def assertOneKey(self, attempts: List[Dict[str, Any]], count: int) -> None:
        self.assertEqual(len(attempts), count)
        first = attempts[0]["idempotency_key"]
        self.assertTrue(first and first.startswith("authz-py-"), first)
        self.assertEqual(keys(attempts), [first] * count)

    def test_a_decide_whose_answer_was_lost_is_retried_under_one_key_and_makes_one_decision(self) -> None:
        a = agent()
        sleep = RecordingSleep()
        with FaultProxy(faults=["drop_after_forward"]) as proxy:
            d = client_via(proxy, sleep).decide(agent_id=a, action=CHARGE, amount=10)
        self.assertOneKey(proxy.attempts, 2)
        first, second = proxy.attempts
        self.assertEqual(first["status"], 200)
        self.assertEqual(d["id"], first["body"]["id"])  # the retry answered the first attempt's decision
        self.assertEqual(second["replayed"], "true")
        self.assertEqual([x["id"] for x in decisions_of(a)], [d["id"]])
        self.assertEqual([b["held"] for b in budgets_of(a)], [10])  # held once
        self.assertEqual(sleep.waits, [0.2])

    def test_each_call_has_its_own_key(self) -> None:
        with FaultProxy() as proxy:
            client = client_via(proxy, RecordingSleep())
            d = client.decide(agent_id=agent(), action=ALLOW)
            client.confirm(d["id"])
            client.get(d["id"])
        self.assertEqual([a["method"] for a in proxy.attempts], ["POST", "POST", "GET"])
        post_keys = keys(proxy.attempts[:2])
        self.assertEqual(len(set(post_keys)), 2)
        self.assertIsNone(proxy.attempts[2]["idempotency_key"])  # GET carries none

    def test_a_confirm_answered_503_after_it_was_applied_is_retried_and_confirms_once(self) -> None:
        a = agent()
        d = AuthzClient(base_url=URL, api_key=KEY).decide(agent_id=a, action=CHARGE, amount=20)
        with FaultProxy(faults=["503_after_forward"]) as proxy:
            confirmed = client_via(proxy, RecordingSleep()).confirm(d["id"], amount=15)
        self.assertOneKey(proxy.attempts, 2)
        self.assertEqual([p["status"] for p in proxy.attempts], [200, 200])
        self.assertEqual(proxy.attempts[1]["replayed"], "true")
        self.assertEqual((confirmed["status"], confirmed["confirmed_amount"]), ("confirmed", 15))
        self.assertEqual([(b["held"], b["consumed"]) for b in budgets_of(a)], [(0, 15)])

    def test_a_retried_confirm_answered_already_confirmed_counts_as_done(self) -> None:
        # The first attempt reaches the service without its key (as if its stored answer were lost)
        # and its answer is dropped; the retry, under the client's key, meets 409 decision.already_confirmed.
        a = agent()
        d = AuthzClient(base_url=URL, api_key=KEY).decide(agent_id=a, action=ALLOW)
        with FaultProxy(faults=["strip_key_drop"]) as proxy:
            confirmed = client_via(proxy, RecordingSleep()).confirm(d["id"])
        # Two confirm attempts under one key, then the decision read back.
        self.assertEqual([(p["method"], p["path"]) for p in proxy.attempts][2:], [("GET", f"/v1/decisions/{d['id']}")])
        self.assertOneKey(proxy.attempts[:2], 2)
        self.assertEqual(proxy.attempts[0]["status"], 200)
        self.assertEqual((proxy.attempts[1]["status"], proxy.attempts[1]["body"]["error"]["code"]), (409, "decision.already_confirmed"))
        self.assertEqual((confirmed["id"], confirmed["status"]), (d["id"], "confirmed"))
        self.assertEqual(decision(d["id"])["status"], "confirmed")

    def test_done_on_retry_without_read_scope_answers_the_known_status(self) -> None:
        d = AuthzClient(base_url=URL, api_key=WRITE_ONLY_KEY).decide(agent_id=agent(), action=ALLOW)
        with FaultProxy(faults=["strip_key_drop"]) as proxy:
            client = AuthzClient(base_url=proxy.url, api_key=WRITE_ONLY_KEY, retry_policy=RetryPolicy(sleep=RecordingSleep()))
            confirmed = client.confirm(d["id"])
        self.assertEqual(confirmed, {"id": d["id"], "object": "decision", "status": "confirmed"})
        self.assertEqual(proxy.attempts[2]["status"], 403)  # the read-back was refused
        self.assertEqual(decision(d["id"])["status"], "confirmed")

    def test_429_is_retried_after_its_retry_after(self) -> None:
        sleep = RecordingSleep()
        with FaultProxy(faults=[("429", 2)]) as proxy:
            d = client_via(proxy, sleep).decide(agent_id=agent(), action=ALLOW)
        self.assertEqual(d["effect"], "allow")
        self.assertOneKey(proxy.attempts, 2)
        self.assertEqual(sleep.waits, [2.0])

    def test_5xx_until_the_retries_run_out_raises_the_last_answer(self) -> None:
        sleep = RecordingSleep()
        with FaultProxy(always="503") as proxy:
            with self.assertRaises(AuthzError) as caught:
                client_via(proxy, sleep, retries=2).decide(agent_id=agent(), action=ALLOW)
        self.assertEqual((caught.exception.status, caught.exception.code), (503, "client.unexpected_response"))
        self.assertOneKey(proxy.attempts, 3)
        self.assertEqual(sleep.waits, [0.2, 0.4])

    def test_dropped_connections_until_the_retries_run_out_fail_closed(self) -> None:
        a = agent()
        with FaultProxy(always="drop_after_forward") as proxy:
            with self.assertRaises(AuthzError) as caught:
                client_via(proxy, RecordingSleep(), retries=2).decide(agent_id=a, action=ALLOW)
        self.assertEqual(caught.exception.code, "client.network_error")
        self.assertOneKey(proxy.attempts, 3)
        self.assertEqual(len(decisions_of(a)), 1)  # three attempts, one decision

    def test_4xx_is_not_retried(self) -> None:
        with FaultProxy() as proxy:
            with self.assertRaises(AuthzError) as caught:
                client_via(proxy, RecordingSleep()).decide(agent_id=agent(), action="not an action")
        self.assertEqual(caught.exception.code, "validation.invalid_action")
        self.assertEqual(len(proxy.attempts), 1)

    def test_guard_whose_confirm_fails_raises_with_the_work_result(self) -> None:
        a = agent()
        # decide passes; the confirm and its two retries answer 503.
        with FaultProxy(faults=[None, "503", "503", "503"]) as proxy:
            client = client_via(proxy, RecordingSleep(), retries=2)

            @client.guard(agent_id=a, action=ALLOW)
            def work() -> str:
                return "done"

            with self.assertRaises(AuthzError) as caught:
                work()
        self.assertEqual((caught.exception.status, caught.exception.result), (503, "done"))
        self.assertEqual([d["status"] for d in decisions_of(a)], ["pending"])

    def test_guard_of_a_deny_via_the_proxy_makes_no_confirm(self) -> None:
        with FaultProxy() as proxy:
            with self.assertRaises(DecisionDeniedError):
                with client_via(proxy, RecordingSleep()).guard(agent_id=agent(), action=DENY):
                    pass
        self.assertEqual([p["path"] for p in proxy.attempts], ["/v1/decisions"])


class RetryPolicyTest(unittest.TestCase):
    def test_exponential_backoff_from_200_ms_capped(self) -> None:
        policy = RetryPolicy(retries=3)
        self.assertEqual([policy.delay(n, None) for n in range(4)], [0.2, 0.4, 0.8, 1.6])
        self.assertEqual(RetryPolicy(max_backoff=0.5).delay(5, None), 0.5)

    def test_retry_after_wins_and_bounds_the_retries(self) -> None:
        policy = RetryPolicy(retries=2, max_retry_after=30)
        self.assertEqual(policy.delay(0, 3.0), 3.0)
        self.assertTrue(policy.should_retry(1, 30))
        self.assertFalse(policy.should_retry(1, 31))
        self.assertFalse(policy.should_retry(2, None))

    def test_negative_retries_are_refused(self) -> None:
        with self.assertRaises(ValueError):
            RetryPolicy(retries=-1)


if __name__ == "__main__":
    unittest.main()
