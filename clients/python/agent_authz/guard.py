"""``client.guard(...)``: decide, run the work only when allowed, then confirm it
(or reject it when the work raised). Usable as a context manager and as a
decorator; :class:`AsyncGuard` is the same for ``async with`` and coroutines.

- deny: :class:`DecisionDeniedError` (with ``.decision``) before the work runs;
- a review decision still awaiting a human's approval: :class:`AuthzError`
  ``decision.awaiting_approval`` before the work runs (it is not allowed yet);
- the work returned: confirm (with ``amount`` when one was given); if that
  confirm fails after its retries, its :class:`AuthzError` is raised with
  ``.result`` holding the work's answer (``None`` for a ``with`` block);
- the work raised: reject, then the work's exception propagates unchanged (a
  failed reject is not reported over it: the decision expires at its TTL).

The confirm or reject has completed when the block or call is over.

Example::

    with client.guard(agent_id="agent_7", action="payments.charge", amount=12.5) as decision:
        charge(decision["permit_token"])

    @client.guard(agent_id="agent_7", action="orders.read")
    def read_orders():
        return fetch()
"""
import functools
import inspect
from types import TracebackType
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Dict, Optional, Protocol, Type, TypeVar, cast

from ._request import Decision, DecisionRequest, confirm_amounts
from .errors import AuthzError, DecisionDeniedError

if TYPE_CHECKING:  # for the type checker only: the package is standard library only at run time
    from typing_extensions import Unpack

F = TypeVar("F", bound=Callable[..., Any])


class DecidingClient(Protocol):
    """What a :class:`Guard` needs of its client (``AuthzClient`` has it); the guard
    does not import the client, which imports the guard."""

    def decide(self, **fields: "Unpack[DecisionRequest]") -> Decision: ...

    def confirm(self, id: str, amount: Optional[float] = None, amounts: Optional[Dict[str, float]] = None) -> Decision: ...

    def reject(self, id: str) -> Decision: ...


class AsyncDecidingClient(Protocol):
    """What an :class:`AsyncGuard` needs of its client (``AsyncAuthzClient`` has it)."""

    async def decide(self, **fields: "Unpack[DecisionRequest]") -> Decision: ...

    async def confirm(self, id: str, amount: Optional[float] = None, amounts: Optional[Dict[str, float]] = None) -> Decision: ...

    async def reject(self, id: str) -> Decision: ...


def _admit(decision: Decision) -> Decision:
    """The decision when the work may run; raises otherwise."""
    if decision.get("effect") == "deny":
        raise DecisionDeniedError(decision)
    if decision.get("status") == "awaiting_approval":
        raise AuthzError(
            f"{decision.get('id')} awaits a reviewer's approval",
            code="decision.awaiting_approval",
            status=200,
            body=decision,
        )
    return decision


class Guard:
    """The object ``AuthzClient.guard(...)`` answers (see the module doc)."""

    def __init__(self, client: DecidingClient, request: DecisionRequest) -> None:
        self._client = client
        self._request = request
        self._decision: Optional[Decision] = None

    def _open(self) -> Decision:
        return _admit(self._client.decide(**self._request))

    def _succeeded(self, decision: Decision, result: Any) -> None:
        try:
            amount, amounts = confirm_amounts(self._request)
            self._client.confirm(decision["id"], amount=amount, amounts=amounts)
        except AuthzError as error:
            error.result = result
            raise

    def _failed(self, decision: Decision) -> None:
        try:
            self._client.reject(decision["id"])
        except AuthzError:
            pass  # the work's exception is what the caller must see; the decision expires at its TTL

    def __enter__(self) -> Decision:
        if self._decision is not None:
            raise RuntimeError("this guard is already in use; call client.guard(...) again")
        self._decision = self._open()
        return self._decision

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool:
        decision, self._decision = self._decision, None
        if decision is not None:
            if exc_type is None:
                self._succeeded(decision, None)
            else:
                self._failed(decision)
        return False

    def __call__(self, fn: F) -> F:
        """As a decorator: every call of ``fn`` is decided, run, then confirmed or rejected."""
        if inspect.iscoroutinefunction(fn):
            raise TypeError("guard a coroutine function with AsyncAuthzClient.guard")

        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            run = Guard(self._client, self._request)
            decision = run._open()
            try:
                result = fn(*args, **kwargs)
            except BaseException:
                run._failed(decision)
                raise
            run._succeeded(decision, result)
            return result

        return cast(F, guarded)


class AsyncGuard:
    """The object ``AsyncAuthzClient.guard(...)`` answers: ``async with`` and a decorator of coroutine functions."""

    def __init__(self, client: AsyncDecidingClient, request: DecisionRequest) -> None:
        self._client = client
        self._request = request
        self._decision: Optional[Decision] = None

    async def _open(self) -> Decision:
        return _admit(await self._client.decide(**self._request))

    async def _succeeded(self, decision: Decision, result: Any) -> None:
        try:
            amount, amounts = confirm_amounts(self._request)
            await self._client.confirm(decision["id"], amount=amount, amounts=amounts)
        except AuthzError as error:
            error.result = result
            raise

    async def _failed(self, decision: Decision) -> None:
        try:
            await self._client.reject(decision["id"])
        except AuthzError:
            pass  # as Guard._failed

    async def __aenter__(self) -> Decision:
        if self._decision is not None:
            raise RuntimeError("this guard is already in use; call client.guard(...) again")
        self._decision = await self._open()
        return self._decision

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool:
        decision, self._decision = self._decision, None
        if decision is not None:
            if exc_type is None:
                await self._succeeded(decision, None)
            else:
                await self._failed(decision)
        return False

    def __call__(self, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        """As a decorator of a coroutine function: each await is decided, run, then confirmed or rejected."""
        if not inspect.iscoroutinefunction(fn):
            raise TypeError("AsyncAuthzClient.guard decorates coroutine functions (async def)")

        @functools.wraps(fn)
        async def guarded(*args: Any, **kwargs: Any) -> Any:
            run = AsyncGuard(self._client, self._request)
            decision = await run._open()
            try:
                result = await fn(*args, **kwargs)
            except BaseException:
                await run._failed(decision)
                raise
            await run._succeeded(decision, result)
            return result

        return guarded
