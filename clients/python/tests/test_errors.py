"""Error answers of the real service become AuthzError with the service's code,
the status, the request id and Retry-After; no answer is client.network_error."""
import unittest

from agent_authz import AuthzClient, AuthzError, RetryPolicy

from support import ALLOW, CHARGE, DENY, KEY, LIMITED, OTHER_KEY, URL, WRITE_ONLY_KEY, RecordingSleep, agent, closed_port_url


class ErrorCodeTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = AuthzClient(base_url=URL, api_key=KEY)

    def assertError(self, error: AuthzError, code: str, status: int) -> None:
        self.assertEqual((error.code, error.status), (code, status), str(error))
        self.assertTrue(error.request_id and error.request_id.startswith("req_"), error.request_id)
        self.assertIn(code, str(error))

    def test_bad_action(self) -> None:
        with self.assertRaises(AuthzError) as caught:
            self.client.decide(agent_id=agent(), action="Orders.Read!")
        self.assertError(caught.exception, "validation.invalid_action", 400)
        self.assertEqual(caught.exception.body["error"]["code"], "validation.invalid_action")

    def test_bad_key(self) -> None:
        client = AuthzClient(base_url=URL, api_key="svc_test_sk_" + "x" * 40)
        with self.assertRaises(AuthzError) as caught:
            client.decide(agent_id=agent(), action=ALLOW)
        self.assertError(caught.exception, "auth.invalid_key", 401)

    def test_missing_scope(self) -> None:
        writer = AuthzClient(base_url=URL, api_key=WRITE_ONLY_KEY)
        d = writer.decide(agent_id=agent(), action=ALLOW)
        with self.assertRaises(AuthzError) as caught:
            writer.get(d["id"])
        self.assertError(caught.exception, "auth.scope_insufficient", 403)

    def test_another_accounts_decision_is_not_found(self) -> None:
        d = self.client.decide(agent_id=agent(), action=ALLOW)
        other = AuthzClient(base_url=URL, api_key=OTHER_KEY)
        for call in (lambda: other.get(d["id"]), lambda: other.confirm(d["id"]), lambda: other.reject(d["id"])):
            with self.assertRaises(AuthzError) as caught:
                call()
            self.assertError(caught.exception, "decision.not_found", 404)
        self.assertEqual(self.client.get(d["id"])["status"], "pending")

    def test_confirming_twice_is_already_confirmed(self) -> None:
        # On a first attempt the 409 is an error (only a retry's 409 counts as done: see test_retry).
        d = self.client.decide(agent_id=agent(), action=ALLOW)
        self.client.confirm(d["id"])
        with self.assertRaises(AuthzError) as caught:
            self.client.confirm(d["id"])
        self.assertError(caught.exception, "decision.already_confirmed", 409)

    def test_confirm_or_reject_of_a_deny_is_not_pending(self) -> None:
        d = self.client.decide(agent_id=agent(), action=DENY)
        for call in (lambda: self.client.confirm(d["id"]), lambda: self.client.reject(d["id"])):
            with self.assertRaises(AuthzError) as caught:
                call()
            self.assertError(caught.exception, "decision.not_pending", 409)

    def test_a_usd_budget_needs_an_amount(self) -> None:
        with self.assertRaises(AuthzError) as caught:
            self.client.decide(agent_id=agent(), action=CHARGE)
        self.assertError(caught.exception, "validation.missing_field", 400)

    def test_rate_limit_carries_retry_after(self) -> None:
        client = AuthzClient(base_url=URL, api_key=KEY, retries=0)
        a = agent()
        self.assertEqual(client.decide(agent_id=a, action=LIMITED)["effect"], "allow")
        with self.assertRaises(AuthzError) as caught:
            client.decide(agent_id=a, action=LIMITED)
        self.assertError(caught.exception, "rate_limit.exceeded", 429)
        self.assertIsNotNone(caught.exception.retry_after)
        self.assertGreaterEqual(caught.exception.retry_after, 1)

    def test_a_retry_after_longer_than_the_policy_accepts_is_not_waited_out(self) -> None:
        sleep = RecordingSleep()
        client = AuthzClient(base_url=URL, api_key=KEY, retry_policy=RetryPolicy(retries=3, max_retry_after=0.5, sleep=sleep))
        a = agent()
        client.decide(agent_id=a, action=LIMITED)
        with self.assertRaises(AuthzError) as caught:
            client.decide(agent_id=a, action=LIMITED)
        self.assertEqual(caught.exception.code, "rate_limit.exceeded")
        self.assertEqual(sleep.waits, [])

    def test_no_answer_is_a_network_error_after_the_retries_with_backoff(self) -> None:
        sleep = RecordingSleep()
        client = AuthzClient(base_url=closed_port_url(), api_key=KEY, retry_policy=RetryPolicy(retries=3, sleep=sleep))
        with self.assertRaises(AuthzError) as caught:
            client.decide(agent_id=agent(), action=ALLOW)
        error = caught.exception
        self.assertEqual((error.code, error.status, error.request_id), ("client.network_error", None, None))
        self.assertIn("4 attempt(s)", str(error))
        self.assertEqual(sleep.waits, [0.2, 0.4, 0.8])

    def test_bad_arguments_fail_before_any_request(self) -> None:
        with self.assertRaises(ValueError):
            self.client.confirm("")
        with self.assertRaises(ValueError):
            AuthzClient(base_url=URL, api_key="")


if __name__ == "__main__":
    unittest.main()
