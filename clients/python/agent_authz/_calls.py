"""The service's routes as call descriptions, and one call's attempts as a small
state machine, so the sync and async clients share every rule and differ only
in how they send and wait.

Example (what AuthzClient does)::

    run = CallRun(confirm_call("dec_1", 12.5), RetryPolicy())
    while True:
        wait = run.outcome(send(run))       # a Response or a NetworkFailure
        if wait is None:
            return run.result()             # the answer, or raises AuthzError
        time.sleep(wait)
"""
import email.utils
import json
import math
import time
import urllib.parse
from typing import Any, Dict, FrozenSet, Mapping, NamedTuple, Optional, Sequence, Union, cast

from ._http import NetworkFailure, Response, Transport
from .errors import NETWORK_ERROR, UNEXPECTED_RESPONSE, AuthzError
from ._request import Decision, DecisionRequest, decision_request
from .retry import RetryPolicy, is_retryable_status, new_idempotency_key


class Call(NamedTuple):
    """One logical call: method, path, JSON body, and the error codes that, met on a
    retry, mean an earlier attempt was applied (the call counts as done)."""

    method: str
    path: str
    body: Optional[Dict[str, Any]]
    done_on_retry: FrozenSet[str] = frozenset()


def _decision_path(decision_id: str, verb: str = "") -> str:
    if not isinstance(decision_id, str) or not decision_id:
        raise ValueError("a decision id (dec_...) is required")
    return f"/v1/decisions/{urllib.parse.quote(decision_id, safe='')}" + (f"/{verb}" if verb else "")


def decide_call(request: DecisionRequest) -> Call:
    """``POST /v1/decisions`` with the request :func:`~agent_authz._request.decision_request` built."""
    return Call("POST", "/v1/decisions", dict(request))


def confirm_call(decision_id: str, amount: Optional[float] = None, amounts: Optional[Dict[str, float]] = None) -> Call:
    """``POST /v1/decisions/:id/confirm``; a retry answered ``decision.already_confirmed`` is done."""
    body: Dict[str, Any] = {} if amount is None else {"amount": amount}
    if amounts is not None:
        body["amounts"] = amounts
    return Call("POST", _decision_path(decision_id, "confirm"), body, frozenset({"decision.already_confirmed"}))


def reject_call(decision_id: str) -> Call:
    """``POST /v1/decisions/:id/reject``."""
    return Call("POST", _decision_path(decision_id, "reject"), {})


def remaining_call(agent_id: str, session_id: Optional[str] = None, on_behalf_of: Optional[str] = None) -> Call:
    """``GET /v1/budgets/remaining``; the session and user only when set.

    Example: ``remaining_call("bot", session_id="run_1").path`` is
    ``"/v1/budgets/remaining?agent_id=bot&session_id=run_1"``.
    """
    if not isinstance(agent_id, str) or not agent_id:
        raise ValueError("an agent_id is required")
    query = {"agent_id": agent_id, "session_id": session_id, "on_behalf_of": on_behalf_of}
    return Call("GET", "/v1/budgets/remaining?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None}), None)


def _session_path(session_id: Optional[str]) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise ValueError("a session_id is required (give one, or create the client with session_id=...)")
    return f"/v1/sessions/{urllib.parse.quote(session_id, safe='')}"


def add_labels_call(session_id: Optional[str], labels: Sequence[str], agent_id: str, detail: Optional[str] = None) -> Call:
    """``POST /v1/sessions/:session_id/labels``; ``detail`` only when set.

    Example: ``add_labels_call("run-1", ["private"], "bot").body`` is
    ``{"labels": ["private"], "agent_id": "bot"}``.
    """
    if isinstance(labels, str):
        raise ValueError("labels is a list of labels, not one string")
    body: Dict[str, Any] = {"labels": list(labels), "agent_id": agent_id}
    if detail is not None:
        body["detail"] = detail
    return Call("POST", _session_path(session_id) + "/labels", body)


def get_session_call(session_id: Optional[str]) -> Call:
    """``GET /v1/sessions/:session_id``."""
    return Call("GET", _session_path(session_id), None)


def confirmed_elsewhere(decision_id: str) -> Decision:
    """What ``confirm`` answers when a retry found the decision already confirmed by
    its earlier attempt and the decision cannot be read back (a key without
    ``decisions:read``): the id and the status it is known to have."""
    return {"id": decision_id, "object": "decision", "status": "confirmed"}


def get_call(decision_id: str) -> Call:
    """``GET /v1/decisions/:id``."""
    return Call("GET", _decision_path(decision_id), None)


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds from a ``Retry-After`` header (delta seconds or an HTTP date); ``None`` when absent or unreadable.

    Example: ``parse_retry_after("3")`` is ``3.0``.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def error_from_response(response: Response) -> AuthzError:
    """The :class:`AuthzError` of a non-2xx answer (``client.unexpected_response`` when it is not the service's error body)."""
    request_id = response.header("Request-Id")
    retry_after = parse_retry_after(response.header("Retry-After"))
    payload: Any = None
    try:
        payload = json.loads(response.body.decode("utf-8")) if response.body else None
    except (UnicodeDecodeError, ValueError):
        payload = None
    body = cast(Dict[str, Any], payload) if isinstance(payload, dict) else None
    error: Any = body.get("error") if body is not None else None
    details = cast(Dict[str, Any], error) if isinstance(error, dict) else None
    code: Any = details.get("code") if details is not None else None
    if details is not None and isinstance(code, str):
        request_id_in_body: Any = details.get("request_id")
        return AuthzError(
            str(details.get("message") or code),
            code=code,
            status=response.status,
            request_id=request_id_in_body if isinstance(request_id_in_body, str) and request_id_in_body else request_id,
            retry_after=retry_after,
            body=body,
        )
    return AuthzError(
        f"unexpected HTTP {response.status} answer",
        code=UNEXPECTED_RESPONSE,
        status=response.status,
        request_id=request_id,
        retry_after=retry_after,
    )


def value_from_response(response: Response) -> Dict[str, Any]:
    """The JSON object of a 2xx answer; ``client.unexpected_response`` when it is not one."""
    try:
        value = json.loads(response.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        value = None
    if not isinstance(value, dict):
        raise AuthzError(
            f"HTTP {response.status} answer is not a JSON object",
            code=UNEXPECTED_RESPONSE,
            status=response.status,
            request_id=response.header("Request-Id"),
        )
    return cast(Dict[str, Any], value)


class CallRun:
    """The attempts of one call, all under one ``Idempotency-Key`` (POST only).

    Feed each attempt's :class:`Response` or :class:`NetworkFailure` to
    :meth:`outcome`: it answers the seconds to wait before the next attempt, or
    ``None`` when the call is over; then :meth:`result` answers or raises.
    """

    def __init__(self, call: Call, policy: RetryPolicy, base_url: str = "") -> None:
        self.call = call
        self.policy = policy
        self.base_url = base_url
        self.idempotency_key: Optional[str] = new_idempotency_key() if call.method == "POST" else None
        self.attempt = 0
        self._value: Optional[Dict[str, Any]] = None
        self._error: Optional[AuthzError] = None
        self._done_earlier = False

    def outcome(self, answer: Union[Response, NetworkFailure]) -> Optional[float]:
        """Records one attempt; the wait before the next one, or ``None`` when finished."""
        if isinstance(answer, Response) and 200 <= answer.status < 300:
            try:
                self._value = value_from_response(answer)
            except AuthzError as error:
                self._error = error
            return None
        if isinstance(answer, NetworkFailure):
            error = AuthzError(
                f"no answer from {self.base_url or 'the service'} ({self.attempt + 1} attempt(s)): {answer}",
                code=NETWORK_ERROR,
            )
            retryable = True
        else:
            error = error_from_response(answer)
            if self.attempt > 0 and error.code in self.call.done_on_retry:
                self._done_earlier = True
                return None
            retryable = is_retryable_status(answer.status, error.code)
        if retryable and self.policy.should_retry(self.attempt, error.retry_after):
            wait = self.policy.delay(self.attempt, error.retry_after)
            self.attempt += 1
            return wait
        self._error = error
        return None

    @property
    def done_earlier(self) -> bool:
        """True when a retry found that an earlier attempt had been applied (e.g. a confirm)."""
        return self._done_earlier

    def result(self) -> Dict[str, Any]:
        """The answer's JSON object (``{}`` when :attr:`done_earlier`); raises the final :class:`AuthzError`."""
        if self._error is not None:
            raise self._error
        return self._value if self._value is not None else {}


class ClientCore:
    """What the blocking and the asyncio clients share: the transport, the retry policy, the run defaults, one attempt."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        timeout: float = 10.0,
        retries: int = 3,
        session_id: Optional[str] = None,
        on_behalf_of: Optional[str] = None,
        retry_policy: Optional[RetryPolicy] = None,
    ) -> None:
        self._transport = Transport(base_url, api_key, timeout)
        self.retry_policy = retry_policy if retry_policy is not None else RetryPolicy(retries=retries)
        self.session_id = session_id
        self.on_behalf_of = on_behalf_of

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    def _decide_call(self, fields: Mapping[str, Any]) -> Call:
        """The ``decide`` call of these keywords, the run defaults filling in ``session_id`` and ``on_behalf_of``."""
        return decide_call(decision_request(fields, session_id=self.session_id, on_behalf_of=self.on_behalf_of))

    def _remaining_call(self, agent_id: str, session_id: Optional[str], on_behalf_of: Optional[str]) -> Call:
        """The ``budgets_remaining`` call, the run defaults filling in ``session_id`` and ``on_behalf_of``."""
        return remaining_call(
            agent_id,
            session_id=session_id if session_id is not None else self.session_id,
            on_behalf_of=on_behalf_of if on_behalf_of is not None else self.on_behalf_of,
        )

    def _send(self, run: CallRun) -> Union[Response, NetworkFailure]:
        call = run.call
        try:
            return self._transport.send(call.method, call.path, call.body, run.idempotency_key)
        except NetworkFailure as failure:
            return failure
