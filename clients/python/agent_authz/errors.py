"""Typed errors of the agent_authz client.

Every error answer of the service becomes an :class:`AuthzError` carrying the
service's code (``error.code`` of the body, docs/errors.md), the HTTP status, the request id and,
for ``429``, the ``Retry-After`` seconds. Failures that never reached an answer
use codes of the ``client.`` family, so the caller always fails closed::

    try:
        decision = client.decide(agent_id="agent_7", action="orders.read")
    except AuthzError as e:
        log.warning("authz unavailable: %s (%s)", e.code, e.request_id)
        raise
"""
from typing import Any, Dict, Optional

#: No answer after every retry (connection refused, reset, timeout, DNS failure).
NETWORK_ERROR = "client.network_error"
#: An answer that is not the service's JSON (a proxy's HTML page, a truncated body).
UNEXPECTED_RESPONSE = "client.unexpected_response"


class AuthzError(Exception):
    """An error answer of the service, or a failure to get one (fail closed).

    Attributes:
        code: the service's code (``auth.invalid_key``, ``decision.expired`` ...) or
            ``client.network_error`` / ``client.unexpected_response``.
        status: the HTTP status, ``None`` when no answer came.
        request_id: the ``req_...`` id to quote to support, when the service answered.
        retry_after: seconds from a ``Retry-After`` header (``429``), else ``None``.
        result: for ``guard``: the work's answer when the work succeeded but the
            confirm failed (so the caller can still use it), else ``None``.
        body: the parsed error body when there was one.

    Example::

        except AuthzError as e:
            if e.code == "rate_limit.exceeded":
                time.sleep(e.retry_after or 1)
    """

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status: Optional[int] = None,
        request_id: Optional[str] = None,
        retry_after: Optional[float] = None,
        result: Any = None,
        body: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.request_id = request_id
        self.retry_after = retry_after
        self.result = result
        self.body = body

    def __str__(self) -> str:
        parts = [self.code]
        if self.status is not None:
            parts.append(f"HTTP {self.status}")
        if self.request_id:
            parts.append(self.request_id)
        return f"{self.message} ({', '.join(parts)})"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, status={self.status!r}, request_id={self.request_id!r})"


class DecisionDeniedError(AuthzError):
    """Raised by ``guard`` when the decision is a deny, before the guarded work runs.

    ``.decision`` is the whole decision dict; ``.code`` is its reason
    (``policy.not_found``, ``budget.exceeded`` ...), ``.status`` is 200 (a deny
    is a normal answer of the service).

    Example::

        try:
            with client.guard(agent_id="agent_7", action="orders.delete"):
                delete_order()
        except DecisionDeniedError as e:
            print("refused:", e.decision["reason"])
    """

    def __init__(self, decision: Dict[str, Any], request_id: Optional[str] = None) -> None:
        reason = str(decision.get("reason") or "decision.denied")
        message = f"{decision.get('action')} denied for {decision.get('agent_id')}: {reason}"
        super().__init__(message, code=reason, status=200, request_id=request_id)
        self.decision = decision


class WebhookVerificationError(AuthzError):
    """A webhook delivery whose signature or timestamp does not check out (answer it 401/400).

    Codes: ``webhook.signature_invalid`` (missing, malformed or wrong signature),
    ``webhook.timestamp_invalid`` (missing, malformed, or outside the tolerance
    window: a replay or a skewed clock), ``webhook.headers_missing`` (no
    ``webhook-id``).

    Example::

        try:
            verify_webhook_signature(secret, raw_body, headers["X-Service-Signature"])
        except WebhookVerificationError:
            return 401
    """

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message, code=code)
