"""Spend controls for agent runs through the client: a session budget held in
USD and tokens together (``amounts``), ``guard`` confirming per unit,
``budgets_remaining`` with the client's session default, and a run stopped by
its budget (``DecisionDeniedError`` reason ``budget.exceeded``) while another
run goes on."""
import asyncio
import unittest

from agent_authz import AsyncAuthzClient, AuthzClient, AuthzError, DecisionDeniedError

from support import KEY, LLM, URL, agent, run_id


class SpendControlsTest(unittest.TestCase):
    def test_amounts_are_held_per_unit_and_guard_confirms_them_until_the_run_is_stopped(self) -> None:
        bot, run = agent("spend"), run_id()
        authz = AuthzClient(base_url=URL, api_key=KEY, session_id=run)
        calls = 0
        with self.assertRaises(DecisionDeniedError) as stopped:
            for _ in range(10):
                with authz.guard(agent_id=bot, action=LLM, amounts={"USD": 0.3, "tokens": 100}):
                    calls += 1
        # USD 1 per run: three calls of 0.3 fit, the fourth would not.
        self.assertEqual(calls, 3)
        self.assertEqual(stopped.exception.decision["reason"], "budget.exceeded")
        self.assertEqual(stopped.exception.decision["session_id"], run)
        left = {b["unit"]: b for b in authz.budgets_remaining(agent_id=bot) if b["policy_id"].startswith("pol_llm_")}
        self.assertEqual(left["USD"]["consumed"], 0.9)
        self.assertEqual(left["USD"]["remaining"], 0.1)
        self.assertEqual(left["tokens"]["consumed"], 300)
        self.assertEqual(left["tokens"]["scope"], "session")
        # Another run of the same agent has its own budget.
        other = authz.decide(agent_id=bot, action=LLM, session_id=run_id(), amounts={"USD": 0.3, "tokens": 100})
        self.assertEqual(other["effect"], "allow")

    def test_confirm_with_amounts_and_the_400_for_amount_alone(self) -> None:
        bot, run = agent("spend"), run_id()
        authz = AuthzClient(base_url=URL, api_key=KEY)
        d = authz.decide(agent_id=bot, action=LLM, session_id=run, amounts={"USD": 0.5, "tokens": 400})
        self.assertEqual(d["effect"], "allow")
        authz.confirm(d["id"], amounts={"USD": 0.25, "tokens": 350})
        left = {b["unit"]: b for b in authz.budgets_remaining(agent_id=bot, session_id=run) if b["policy_id"].startswith("pol_llm_")}
        self.assertEqual((left["USD"]["consumed"], left["USD"]["held"]), (0.25, 0))
        self.assertEqual(left["tokens"]["consumed"], 350)
        with self.assertRaises(AuthzError) as refused:
            authz.decide(agent_id=bot, action=LLM, session_id=run, amount=0.1)
        self.assertEqual(refused.exception.code, "validation.invalid_field")
        self.assertIn("USD, tokens", str(refused.exception))
        with self.assertRaises(AuthzError) as missing:
            authz.decide(agent_id=bot, action=LLM, amounts={"USD": 0.1, "tokens": 1})
        self.assertEqual(missing.exception.code, "validation.missing_field")

    def test_the_async_client_takes_amounts_and_answers_remaining(self) -> None:
        bot, run = agent("spend"), run_id()

        async def main() -> float:
            authz = AsyncAuthzClient(base_url=URL, api_key=KEY, session_id=run)
            async with authz.guard(agent_id=bot, action=LLM, amounts={"USD": 0.2, "tokens": 50}):
                pass
            left = await authz.budgets_remaining(agent_id=bot)
            return next(b["remaining"] for b in left if b["policy_id"] == "pol_llm_usd")

        self.assertEqual(asyncio.run(main()), 0.8)


if __name__ == "__main__":
    unittest.main()
