"""When and how long to wait before retrying a call (shared by both clients).

Retried: network failures (no answer), 5xx answers, ``429`` (after its
``Retry-After``) and ``409 idempotency.in_progress`` (the first attempt of the
same call still runs on the service). Everything else is final. Every attempt of
one call carries the same ``Idempotency-Key`` (see :func:`new_idempotency_key`),
so a retry never makes a second decision or a second confirm.

Example::

    policy = RetryPolicy(retries=5, backoff=0.1)
    client = AuthzClient(base_url=url, api_key=key, retry_policy=policy)
"""
import asyncio
import time
import uuid
from typing import Awaitable, Callable, Optional

RETRYABLE_CODES = frozenset({"idempotency.in_progress"})


def new_idempotency_key() -> str:
    """A fresh key for one logical call: ``authz-py-<uuid4 hex>`` (the service accepts 1..255 characters)."""
    return f"authz-py-{uuid.uuid4().hex}"


def is_retryable_status(status: int, code: Optional[str] = None) -> bool:
    """True for 5xx, 429 and ``409 idempotency.in_progress``.

    Example: ``is_retryable_status(503)`` is True, ``is_retryable_status(404)`` False.
    """
    return status >= 500 or status == 429 or (code is not None and code in RETRYABLE_CODES)


class RetryPolicy:
    """How many retries and how long between them.

    Attributes:
        retries: retries after the first attempt (``0`` = one attempt only).
        backoff: the first wait in seconds; each later wait doubles it.
        max_backoff: the cap of the doubling.
        max_retry_after: a ``Retry-After`` longer than this is not waited out:
            the call fails at once with the ``429`` (its ``.retry_after`` says when).
        sleep / async_sleep: how the sync and async clients wait (replaceable
            to observe the waits).

    Example::

        RetryPolicy(retries=3).delay(0, None)   # 0.2
        RetryPolicy(retries=3).delay(2, None)   # 0.8
        RetryPolicy(retries=3).delay(0, 2.0)    # 2.0 (Retry-After wins)
    """

    def __init__(
        self,
        retries: int = 3,
        backoff: float = 0.2,
        max_backoff: float = 10.0,
        max_retry_after: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        async_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if retries < 0:
            raise ValueError("retries must be >= 0")
        if backoff < 0 or max_backoff < 0:
            raise ValueError("backoff must be >= 0")
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self.sleep = sleep
        self.async_sleep = async_sleep

    def delay(self, attempt: int, retry_after: Optional[float]) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (0-based).

        The ``Retry-After`` seconds when the answer had one, else
        ``backoff * 2**attempt`` capped at ``max_backoff``.
        """
        if retry_after is not None:
            return max(0.0, retry_after)
        return min(self.max_backoff, self.backoff * (2 ** attempt))

    def should_retry(self, attempt: int, retry_after: Optional[float]) -> bool:
        """True while retries remain after attempt ``attempt`` and the wait asked for is acceptable."""
        if attempt >= self.retries:
            return False
        return retry_after is None or retry_after <= self.max_retry_after
