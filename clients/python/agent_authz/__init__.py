"""agent_authz: the Python client of the agent-authz service (standard library only).

Example::

    from agent_authz import AuthzClient, DecisionDeniedError, AuthzError

    authz = AuthzClient(base_url="http://127.0.0.1:8080", api_key="svc_test_sk_...")
    with authz.guard(agent_id="agent_7", action="payments.charge", amount=12.5) as decision:
        charge(decision["permit_token"])
"""
from ._version import __version__
from .async_client import AsyncAuthzClient
from .client import AuthzClient
from .errors import (
    NETWORK_ERROR,
    UNEXPECTED_RESPONSE,
    AuthzError,
    DecisionDeniedError,
    WebhookVerificationError,
)
from .guard import AsyncGuard, Guard
from .retry import RetryPolicy
from .webhooks import (
    DEFAULT_TOLERANCE_SECONDS,
    sign_standard_webhook,
    sign_webhook_body,
    verify_standard_webhook,
    verify_webhook_signature,
)

__all__ = [
    "__version__",
    "AuthzClient",
    "AsyncAuthzClient",
    "AuthzError",
    "DecisionDeniedError",
    "WebhookVerificationError",
    "NETWORK_ERROR",
    "UNEXPECTED_RESPONSE",
    "Guard",
    "AsyncGuard",
    "RetryPolicy",
    "DEFAULT_TOLERANCE_SECONDS",
    "verify_webhook_signature",
    "sign_webhook_body",
    "verify_standard_webhook",
    "sign_standard_webhook",
]
