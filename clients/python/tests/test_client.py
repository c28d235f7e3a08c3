"""AuthzClient against the real service: decide (allow, deny as a value, review),
confirm with an amount on a USD budget, reject, get, and guard as a context
manager and as a decorator."""
import unittest

from agent_authz import AuthzClient, AuthzError, DecisionDeniedError

from support import ALLOW, CHARGE, DENY, KEY, REVIEW, URL, FaultProxy, agent, budgets_of, decision, decisions_of


class DecideTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = AuthzClient(base_url=URL, api_key=KEY)

    def test_allow_answers_the_decision_with_a_permit_token(self) -> None:
        a = agent()
        d = self.client.decide(agent_id=a, action=ALLOW, resource="order:1", context={"channel": "chat"}, ttl_seconds=60)
        self.assertEqual(d["object"], "decision")
        self.assertTrue(d["id"].startswith("dec_"))
        self.assertEqual((d["effect"], d["reason"], d["status"]), ("allow", "policy.matched", "pending"))
        self.assertEqual((d["agent_id"], d["action"], d["resource"], d["ttl_seconds"]), (a, ALLOW, "order:1", 60))
        self.assertTrue(d["permit_token"].startswith("eyJ"))
        self.assertEqual(decision(d["id"])["status"], "pending")

    def test_deny_is_a_value_not_an_exception(self) -> None:
        d = self.client.decide(agent_id=agent(), action=DENY)
        self.assertEqual((d["effect"], d["status"], d["permit_token"]), ("deny", "denied", None))
        self.assertEqual(d["reason"], "policy.matched")
        unmatched = self.client.decide(agent_id=agent(), action="nothing.matches")
        self.assertEqual((unmatched["effect"], unmatched["reason"]), ("deny", "policy.not_found"))

    def test_review(self) -> None:
        d = self.client.decide(agent_id=agent(), action=REVIEW, resource="refund:7")
        self.assertEqual((d["effect"], d["status"]), ("review", "pending"))
        self.assertIsNotNone(d["permit_token"])

    def test_confirm_with_an_amount_consumes_that_amount_of_the_usd_budget(self) -> None:
        a = agent()
        d = self.client.decide(agent_id=a, action=CHARGE, amount=40)
        self.assertEqual(d["effect"], "allow")
        self.assertEqual([(b["unit"], b["held"], b["consumed"]) for b in budgets_of(a)], [("USD", 40, 0)])
        confirmed = self.client.confirm(d["id"], amount=25.5)
        self.assertEqual((confirmed["id"], confirmed["status"], confirmed["confirmed_amount"]), (d["id"], "confirmed", 25.5))
        self.assertEqual([(b["held"], b["consumed"]) for b in budgets_of(a)], [(0, 25.5)])
        self.assertEqual(self.client.get(d["id"])["status"], "confirmed")

    def test_confirm_without_an_amount(self) -> None:
        d = self.client.decide(agent_id=agent(), action=ALLOW)
        self.assertEqual(self.client.confirm(d["id"])["status"], "confirmed")
        self.assertIsNone(decision(d["id"])["confirmed_amount"])

    def test_reject_releases_the_hold(self) -> None:
        a = agent()
        d = self.client.decide(agent_id=a, action=CHARGE, amount=30)
        rejected = self.client.reject(d["id"])
        self.assertEqual(rejected["status"], "rejected")
        self.assertEqual([(b["held"], b["consumed"]) for b in budgets_of(a)], [(0, 0)])
        self.assertEqual(self.client.get(d["id"])["status"], "rejected")

    def test_a_trailing_slash_in_base_url_is_fine(self) -> None:
        d = AuthzClient(base_url=URL + "/", api_key=KEY).decide(agent_id=agent(), action=ALLOW)
        self.assertEqual(d["effect"], "allow")


class WireTest(unittest.TestCase):
    """What goes on the wire, seen by a proxy that answers 503 without forwarding (retries=0)."""

    def sent(self, client_args: dict, **decide: object) -> dict:
        with FaultProxy(always="503") as proxy:
            client = AuthzClient(base_url=proxy.url, api_key=KEY, retries=0, **client_args)
            with self.assertRaises(AuthzError) as caught:
                client.decide(**decide)
            self.assertEqual((caught.exception.status, caught.exception.code), (503, "client.unexpected_response"))
        self.assertEqual(len(proxy.attempts), 1)
        return proxy.attempts[0]["request_body"]

    def test_only_the_fields_given_are_sent(self) -> None:
        self.assertEqual(self.sent({}, agent_id="a1", action=ALLOW), {"agent_id": "a1", "action": ALLOW})
        self.assertEqual(
            self.sent({}, agent_id="a1", action=CHARGE, resource="r", amount=0, context={}, ttl_seconds=5),
            {"agent_id": "a1", "action": CHARGE, "resource": "r", "amount": 0, "context": {}, "ttl_seconds": 5},
        )

    def test_session_id_and_on_behalf_of_come_from_the_client_unless_the_call_gives_them(self) -> None:
        defaults = {"session_id": "sess_1", "on_behalf_of": "user:ann"}
        self.assertEqual(
            self.sent(defaults, agent_id="a1", action=ALLOW),
            {"agent_id": "a1", "action": ALLOW, "session_id": "sess_1", "on_behalf_of": "user:ann"},
        )
        self.assertEqual(
            self.sent(defaults, agent_id="a1", action=ALLOW, session_id="sess_2"),
            {"agent_id": "a1", "action": ALLOW, "session_id": "sess_2", "on_behalf_of": "user:ann"},
        )


class GuardTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = AuthzClient(base_url=URL, api_key=KEY)

    def test_context_manager_confirms_with_the_amount_on_success(self) -> None:
        a = agent()
        with self.client.guard(agent_id=a, action=CHARGE, amount=12.5) as d:
            self.assertEqual((d["effect"], d["status"]), ("allow", "pending"))
            seen = d
        after = self.client.get(seen["id"])
        self.assertEqual((after["status"], after["confirmed_amount"]), ("confirmed", 12.5))
        self.assertEqual([(b["held"], b["consumed"]) for b in budgets_of(a)], [(0, 12.5)])

    def test_context_manager_rejects_and_reraises_on_exception(self) -> None:
        a = agent()
        seen = {}
        with self.assertRaisesRegex(KeyError, "boom"):
            with self.client.guard(agent_id=a, action=CHARGE, amount=7) as d:
                seen.update(d)
                raise KeyError("boom")
        self.assertEqual(self.client.get(seen["id"])["status"], "rejected")
        self.assertEqual([(b["held"], b["consumed"]) for b in budgets_of(a)], [(0, 0)])

    def test_deny_raises_before_the_body_runs(self) -> None:
        a = agent()
        ran = []
        with self.assertRaises(DecisionDeniedError) as caught:
            with self.client.guard(agent_id=a, action=DENY):
                ran.append(True)
        self.assertEqual(ran, [])
        error = caught.exception
        self.assertIsInstance(error, AuthzError)
        self.assertEqual((error.decision["effect"], error.decision["agent_id"]), ("deny", a))
        self.assertEqual(error.code, "policy.matched")
        self.assertEqual([d["status"] for d in decisions_of(a)], ["denied"])

    def test_review_runs_the_body_and_confirms(self) -> None:
        with self.client.guard(agent_id=agent(), action=REVIEW) as d:
            self.assertEqual(d["effect"], "review")
        self.assertEqual(self.client.get(d["id"])["status"], "confirmed")

    def test_decorator_confirms_each_call_and_answers_the_function_result(self) -> None:
        a = agent()

        @self.client.guard(agent_id=a, action=ALLOW, resource="order:9")
        def read(order: str, *, twice: bool = False) -> str:
            return order * (2 if twice else 1)

        self.assertEqual(read("ab", twice=True), "abab")
        self.assertEqual(read("c"), "c")
        self.assertEqual(read.__name__, "read")
        made = decisions_of(a)
        self.assertEqual(sorted(d["status"] for d in made), ["confirmed", "confirmed"])
        self.assertEqual({d["resource"] for d in made}, {"order:9"})

    def test_decorator_rejects_and_reraises(self) -> None:
        a = agent()

        @self.client.guard(agent_id=a, action=ALLOW)
        def fail() -> None:
            raise ValueError("work failed")

        with self.assertRaisesRegex(ValueError, "work failed"):
            fail()
        self.assertEqual([d["status"] for d in decisions_of(a)], ["rejected"])

    def test_decorator_on_deny_never_runs_the_function(self) -> None:
        ran = []

        @self.client.guard(agent_id=agent(), action=DENY)
        def delete() -> None:
            ran.append(True)

        with self.assertRaises(DecisionDeniedError):
            delete()
        self.assertEqual(ran, [])

    def test_a_guard_refuses_a_coroutine_function(self) -> None:
        async def work() -> None:
            pass

        with self.assertRaises(TypeError):
            self.client.guard(agent_id=agent(), action=ALLOW)(work)


if __name__ == "__main__":
    unittest.main()
