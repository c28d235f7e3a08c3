"""Session labels through the client against the real service: ``add_labels`` (the
session's next decision is decided with them), ``get_session`` (labels with their
source, decisions, last decision), the client's ``session_id`` default, the errors
(``validation.too_many_labels``, a bad label, ``session.not_found``), and the async
client."""
import asyncio
import unittest

from agent_authz import AsyncAuthzClient, AuthzClient, AuthzError

from support import FILES_READ, KEY, SEND, URL, agent, run_id


class SessionsTest(unittest.TestCase):
    def test_labels_added_by_a_tool_decide_the_next_decision_and_the_session_shows_them(self) -> None:
        bot, run = agent("labels"), run_id()
        authz = AuthzClient(base_url=URL, api_key=KEY, session_id=run)
        self.assertEqual(authz.decide(agent_id=bot, action=SEND)["effect"], "allow")
        read = authz.decide(agent_id=bot, action=FILES_READ)
        self.assertEqual(read["effect"], "allow")
        session = authz.add_labels(["untrusted"], agent_id=bot, detail="fetched a web page")
        self.assertEqual(session["object"], "session")
        self.assertEqual(session["id"], run)
        self.assertEqual(
            [(l["label"], l["source"], l.get("decision_id"), l.get("detail")) for l in session["labels"]],
            [("private", "policy", read["id"], None), ("untrusted", "api", None, "fetched a web page")],
        )
        denied = authz.decide(agent_id=bot, action=SEND)
        self.assertEqual((denied["effect"], denied["policy_id"]), ("deny", "pol_send_untrusted"))
        self.assertEqual(denied["metadata"]["session_labels"], ["private", "untrusted"])
        again = authz.get_session()
        self.assertEqual(again["decisions"], 3)
        self.assertEqual(again["last_decision_at"], denied["evaluated_at"])
        # Another run of the same agent is untouched.
        self.assertEqual(authz.decide(agent_id=bot, action=SEND, session_id=run_id())["effect"], "allow")

    def test_errors(self) -> None:
        authz = AuthzClient(base_url=URL, api_key=KEY)
        with self.assertRaises(AuthzError) as caught:
            authz.get_session(run_id())
        self.assertEqual((caught.exception.code, caught.exception.status), ("session.not_found", 404))
        with self.assertRaises(AuthzError) as caught:
            authz.add_labels([f"l{i}" for i in range(33)], agent_id="bot", session_id=run_id())
        self.assertEqual((caught.exception.code, caught.exception.status), ("validation.too_many_labels", 400))
        with self.assertRaises(AuthzError) as caught:
            authz.add_labels(["Not-A-Label"], agent_id="bot", session_id=run_id())
        self.assertEqual(caught.exception.code, "validation.invalid_field")
        self.assertIn("Not-A-Label", str(caught.exception))
        # No session named and none on the client: refused before any request.
        with self.assertRaises(ValueError):
            authz.get_session()
        with self.assertRaises(ValueError):
            authz.add_labels("private", agent_id="bot", session_id=run_id())  # type: ignore[arg-type]

    def test_the_async_client(self) -> None:
        bot, run = agent("labels-async"), run_id()

        async def main() -> dict:
            authz = AsyncAuthzClient(base_url=URL, api_key=KEY, session_id=run)
            await authz.add_labels(["untrusted", "pii"], agent_id=bot)
            decided = await authz.decide(agent_id=bot, action=SEND)
            self.assertEqual(decided["effect"], "deny")
            return await authz.get_session()

        session = asyncio.run(main())
        self.assertEqual(sorted(l["label"] for l in session["labels"]), ["pii", "untrusted"])
        self.assertEqual(session["decisions"], 1)


if __name__ == "__main__":
    unittest.main()
