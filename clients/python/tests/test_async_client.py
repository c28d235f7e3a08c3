"""AsyncAuthzClient against the real service: the same cases as the blocking
client, as coroutines (async with guard, decorated coroutines), errors and a
retried call under one Idempotency-Key."""
import asyncio
import unittest
from typing import Any, Awaitable, Callable

from agent_authz import AsyncAuthzClient, AuthzError, DecisionDeniedError, RetryPolicy

from support import (
    ALLOW,
    CHARGE,
    DENY,
    KEY,
    REVIEW,
    URL,
    FaultProxy,
    RecordingSleep,
    agent,
    budgets_of,
    closed_port_url,
    decisions_of,
)


def run(coroutine: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(coroutine())


class AsyncClientTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = AsyncAuthzClient(base_url=URL, api_key=KEY)

    def test_allow_deny_review(self) -> None:
        async def main() -> Any:
            return await asyncio.gather(
                self.client.decide(agent_id=agent(), action=ALLOW),
                self.client.decide(agent_id=agent(), action=DENY),
                self.client.decide(agent_id=agent(), action=REVIEW),
            )

        allow, deny, review = run(main)
        self.assertEqual((allow["effect"], allow["status"]), ("allow", "pending"))
        self.assertEqual((deny["effect"], deny["status"], deny["permit_token"]), ("deny", "denied", None))
        self.assertEqual((review["effect"], review["status"]), ("review", "pending"))

    def test_confirm_with_amount_reject_and_get(self) -> None:
        a = agent()

        async def main() -> Any:
            charged = await self.client.decide(agent_id=a, action=CHARGE, amount=50)
            dropped = await self.client.decide(agent_id=a, action=CHARGE, amount=20)
            confirmed = await self.client.confirm(charged["id"], amount=45)
            rejected = await self.client.reject(dropped["id"])
            return confirmed, rejected, await self.client.get(charged["id"])

        confirmed, rejected, read = run(main)
        self.assertEqual((confirmed["status"], confirmed["confirmed_amount"]), ("confirmed", 45))
        self.assertEqual(rejected["status"], "rejected")
        self.assertEqual(read["status"], "confirmed")
        self.assertEqual([(b["held"], b["consumed"]) for b in budgets_of(a)], [(0, 45)])

    def test_async_with_guard_confirms_on_success_and_rejects_on_exception(self) -> None:
        a = agent()
        seen = []

        async def main() -> None:
            async with self.client.guard(agent_id=a, action=CHARGE, amount=5) as d:
                seen.append(d["id"])
                await asyncio.sleep(0)
            try:
                async with self.client.guard(agent_id=a, action=CHARGE, amount=6) as d:
                    seen.append(d["id"])
                    raise RuntimeError("work failed")
            except RuntimeError:
                pass
            else:
                self.fail("the exception was swallowed")

        run(main)
        client = self.client

        async def statuses() -> Any:
            return [(await client.get(i))["status"] for i in seen]

        self.assertEqual(run(statuses), ["confirmed", "rejected"])
        self.assertEqual([(b["held"], b["consumed"]) for b in budgets_of(a)], [(0, 5)])

    def test_deny_raises_before_the_body_runs(self) -> None:
        ran = []

        async def main() -> None:
            async with self.client.guard(agent_id=agent(), action=DENY):
                ran.append(True)

        with self.assertRaises(DecisionDeniedError) as caught:
            run(main)
        self.assertEqual(ran, [])
        self.assertEqual(caught.exception.decision["effect"], "deny")

    def test_decorated_coroutine(self) -> None:
        a = agent()
        client = self.client

        @client.guard(agent_id=a, action=ALLOW)
        async def work(x: int) -> int:
            await asyncio.sleep(0)
            return x * 2

        @client.guard(agent_id=a, action=ALLOW)
        async def broken() -> None:
            raise LookupError("nope")

        @client.guard(agent_id=agent(), action=DENY)
        async def forbidden() -> None:
            raise AssertionError("must not run")

        async def main() -> Any:
            answer = await work(21)
            try:
                await broken()
            except LookupError:
                pass
            try:
                await forbidden()
            except DecisionDeniedError as e:
                return answer, e.code
            return answer, None

        self.assertEqual(run(main), (42, "policy.matched"))
        self.assertEqual(sorted(d["status"] for d in decisions_of(a)), ["confirmed", "rejected"])
        with self.assertRaises(TypeError):
            client.guard(agent_id=a, action=ALLOW)(lambda: None)

    def test_errors(self) -> None:
        async def bad_action() -> None:
            await self.client.decide(agent_id=agent(), action="nope")

        async def bad_key() -> None:
            await AsyncAuthzClient(base_url=URL, api_key="svc_test_sk_" + "y" * 40).decide(agent_id=agent(), action=ALLOW)

        for coroutine, code, status in ((bad_action, "validation.invalid_action", 400), (bad_key, "auth.invalid_key", 401)):
            with self.assertRaises(AuthzError) as caught:
                run(coroutine)
            self.assertEqual((caught.exception.code, caught.exception.status), (code, status))
            self.assertTrue(caught.exception.request_id.startswith("req_"))

    def test_no_answer_is_a_network_error_after_awaited_backoff(self) -> None:
        sleep = RecordingSleep()
        policy = RetryPolicy(retries=2, async_sleep=sleep.async_sleep, sleep=lambda s: self.fail("blocking sleep used"))
        client = AsyncAuthzClient(base_url=closed_port_url(), api_key=KEY, retry_policy=policy)

        async def main() -> None:
            await client.decide(agent_id=agent(), action=ALLOW)

        with self.assertRaises(AuthzError) as caught:
            run(main)
        self.assertEqual((caught.exception.code, caught.exception.status), ("client.network_error", None))
        self.assertEqual(sleep.waits, [0.2, 0.4])

    def test_a_retried_decide_is_one_decision_under_one_key(self) -> None:
        a = agent()
        sleep = RecordingSleep()
        with FaultProxy(faults=["drop_after_forward", "503"]) as proxy:
            policy = RetryPolicy(retries=3, async_sleep=sleep.async_sleep)
            client = AsyncAuthzClient(base_url=proxy.url, api_key=KEY, retry_policy=policy)

            async def main() -> Any:
                return await client.decide(agent_id=a, action=ALLOW)

            d = run(main)
        self.assertEqual(len(proxy.attempts), 3)
        self.assertEqual(len({p["idempotency_key"] for p in proxy.attempts}), 1)
        self.assertEqual(d["id"], proxy.attempts[0]["body"]["id"])
        self.assertEqual([x["id"] for x in decisions_of(a)], [d["id"]])
        self.assertEqual(sleep.waits, [0.2, 0.4])


if __name__ == "__main__":
    unittest.main()
