"""The asyncio client: :class:`AsyncAuthzClient`, the same methods as coroutines.

Each HTTP attempt runs the blocking urllib call in the loop's default executor
(a thread), and waits between retries with ``asyncio.sleep``: the event loop
never blocks. Standard library only.

Example::

    import asyncio
    from agent_authz import AsyncAuthzClient

    async def main():
        authz = AsyncAuthzClient(base_url="http://127.0.0.1:8080", api_key="svc_test_sk_...")
        async with authz.guard(agent_id="agent_7", action="orders.read") as decision:
            await read_orders()

    asyncio.run(main())
"""
import asyncio
import functools
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

from ._calls import Call, CallRun, ClientCore, add_labels_call, confirm_call, confirmed_elsewhere, get_call, get_session_call, reject_call
from ._request import Decision, DecisionRequest, decision_request, takes_decision_request
from .guard import AsyncGuard

if TYPE_CHECKING:  # for the type checker only: the package is standard library only at run time
    from typing_extensions import Unpack


class AsyncAuthzClient(ClientCore):
    """:class:`~agent_authz.AuthzClient` for asyncio: same arguments, same answers, same errors.

    Example::

        authz = AsyncAuthzClient(base_url=url, api_key=key)
        d = await authz.decide(agent_id="agent_7", action="orders.read")
        await authz.confirm(d["id"])
    """

    async def _run(self, call: Call) -> CallRun:
        """Runs the call's attempts until it is over; the finished run."""
        run = CallRun(call, self.retry_policy, self.base_url)
        loop = asyncio.get_running_loop()
        while True:
            # run_in_executor rather than asyncio.to_thread: the same on every Python >= 3.7.
            answer = await loop.run_in_executor(None, functools.partial(self._send, run))
            wait = run.outcome(answer)
            if wait is None:
                return run
            await self.retry_policy.async_sleep(wait)

    @takes_decision_request
    async def decide(self, **fields: "Unpack[DecisionRequest]") -> Decision:
        """``POST /v1/decisions`` (see ``AuthzClient.decide``).

        Example: ``(await authz.decide(agent_id="a", action="orders.read"))["effect"]``.
        """
        call = self._decide_call(fields)
        return (await self._run(call)).result()

    async def confirm(self, id: str, amount: Optional[float] = None, amounts: Optional[Dict[str, float]] = None) -> Decision:
        """``POST /v1/decisions/:id/confirm`` (see ``AuthzClient.confirm``).

        Example: ``await authz.confirm(d["id"], amount=9.99)``.
        """
        run = await self._run(confirm_call(id, amount, amounts))
        if not run.done_earlier:
            return run.result()
        try:
            return await self.get(id)
        except Exception:  # the confirm is done; reading it back is a courtesy
            return confirmed_elsewhere(id)

    async def reject(self, id: str) -> Decision:
        """``POST /v1/decisions/:id/reject``. Example: ``await authz.reject(d["id"])``."""
        return (await self._run(reject_call(id))).result()

    async def budgets_remaining(self, *, agent_id: str, session_id: Optional[str] = None, on_behalf_of: Optional[str] = None) -> List[Dict[str, Any]]:
        """``GET /v1/budgets/remaining`` (see ``AuthzClient.budgets_remaining``).

        Example: ``await authz.budgets_remaining(agent_id="research-bot", session_id="run_42")``.
        """
        call = self._remaining_call(agent_id, session_id, on_behalf_of)
        return list((await self._run(call)).result().get("data", []))

    async def add_labels(self, labels: Sequence[str], *, agent_id: str, session_id: Optional[str] = None, detail: Optional[str] = None) -> Dict[str, Any]:
        """``POST /v1/sessions/:session_id/labels`` (see ``AuthzClient.add_labels``).

        Example: ``await authz.add_labels(["private"], agent_id="files-bot")``.
        """
        call = add_labels_call(session_id if session_id is not None else self.session_id, labels, agent_id, detail)
        return (await self._run(call)).result()

    async def get_session(self, session_id: Optional[str] = None) -> Dict[str, Any]:
        """``GET /v1/sessions/:session_id`` (see ``AuthzClient.get_session``).

        Example: ``(await authz.get_session("run-42"))["labels"]``.
        """
        call = get_session_call(session_id if session_id is not None else self.session_id)
        return (await self._run(call)).result()

    async def get(self, id: str) -> Decision:
        """``GET /v1/decisions/:id``. Example: ``(await authz.get(d["id"]))["status"]``."""
        return (await self._run(get_call(id))).result()

    @takes_decision_request
    def guard(self, **fields: "Unpack[DecisionRequest]") -> AsyncGuard:
        """``async with authz.guard(...) as decision:`` or ``@authz.guard(...)`` on an ``async def``.

        Example::

            async with authz.guard(agent_id="agent_7", action="payments.charge", amount=5) as d:
                await charge(d["permit_token"])
        """
        return AsyncGuard(self, decision_request(fields))
