"""Verifying the service's webhook deliveries (receivers), over the raw bytes received.

Two signatures:

- ``X-Service-Signature: sha256=<hex>`` on every delivery: the lower-case hex
  HMAC-SHA256 of the raw body keyed with the endpoint's whole secret
  (``whsec_...`` as UTF-8): :func:`verify_webhook_signature`.
- The Standard Webhooks headers on endpoints created with
  ``"standard_webhooks": true``: ``webhook-id``, ``webhook-timestamp`` (Unix
  seconds) and ``webhook-signature: v1,<base64 HMAC-SHA256 of
  "<id>.<timestamp>.<body>">`` keyed with the base64-decoded part of the secret
  after ``whsec_``; old (or future) timestamps are refused, which stops replays:
  :func:`verify_standard_webhook`.

Both compare in constant time and raise :class:`WebhookVerificationError` on a
mismatch; de-duplicate on the envelope's ``id`` afterwards.

Example (any framework; the body must be the bytes as received, not a re-serialised parse)::

    try:
        verify_webhook_signature(SECRET, request.body, request.headers.get("X-Service-Signature"))
    except WebhookVerificationError:
        return Response(status=401)
    event = json.loads(request.body)
"""
import base64
import binascii
import hashlib
import hmac
import re
import time
from typing import Mapping, Optional, Union

from .errors import WebhookVerificationError

#: Default Standard Webhooks tolerance: a delivery older or newer than this is refused.
DEFAULT_TOLERANCE_SECONDS = 300
_SIGNATURE = re.compile(r"sha256=([0-9a-fA-F]{64})")
_SIGNATURE_INVALID = "webhook.signature_invalid"
_TIMESTAMP_INVALID = "webhook.timestamp_invalid"

Secret = Union[str, bytes]


def _body_bytes(raw_body: Union[bytes, bytearray, memoryview]) -> bytes:
    if not isinstance(raw_body, (bytes, bytearray, memoryview)):
        raise TypeError("raw_body must be the bytes received (not a parsed or re-serialised body)")
    return bytes(raw_body)


def _service_key(secret: Secret) -> bytes:
    if isinstance(secret, str):
        secret = secret.encode("utf-8")
    if not isinstance(secret, bytes) or not secret:
        # A configuration error (an unset variable), not a bad delivery: an empty key would make any signature valid.
        raise ValueError("the webhook signing secret must be a non-empty string")
    return secret


def sign_webhook_body(secret: Secret, raw_body: bytes) -> str:
    """The ``X-Service-Signature`` value of ``raw_body``: ``sha256=<hex>`` (tests, local tooling).

    Example: ``sign_webhook_body("whsec_abc", b"{}")`` -> ``"sha256=..."``.
    """
    return "sha256=" + hmac.new(_service_key(secret), _body_bytes(raw_body), hashlib.sha256).hexdigest()


def verify_webhook_signature(secret: Secret, raw_body: bytes, header_value: Optional[str]) -> None:
    """Checks ``X-Service-Signature`` against the raw body; raises :class:`WebhookVerificationError`
    (``webhook.signature_invalid``) when it is missing, malformed or wrong.

    ``secret`` is the endpoint's ``whsec_...`` string. Raises ``ValueError`` for an
    empty secret and ``TypeError`` for a body that is not bytes (programming errors).

    Example::

        verify_webhook_signature("whsec_...", raw, headers.get("X-Service-Signature"))
    """
    expected = sign_webhook_body(secret, raw_body)[len("sha256="):]
    match = _SIGNATURE.fullmatch(header_value.strip()) if isinstance(header_value, str) else None
    # Compare against a value of the right length either way; it counts only with a well-formed header.
    given = match.group(1).lower() if match else "0" * len(expected)
    if not hmac.compare_digest(given.encode("ascii"), expected.encode("ascii")) or match is None:
        raise WebhookVerificationError("X-Service-Signature does not match the body", _SIGNATURE_INVALID)


def _standard_key(secret: Secret) -> bytes:
    if isinstance(secret, bytes):
        if not secret:
            raise ValueError("the webhook signing secret must not be empty")
        return secret
    if not isinstance(secret, str) or not secret:
        raise ValueError("the webhook signing secret must be a non-empty whsec_... string")
    encoded = secret[len("whsec_"):] if secret.startswith("whsec_") else secret
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as error:
        raise ValueError("a Standard Webhooks secret is whsec_ followed by base64") from error
    if not key:
        raise ValueError("the webhook signing secret must not be empty")
    return key


def sign_standard_webhook(secret: Secret, msg_id: str, timestamp: int, raw_body: bytes) -> str:
    """The ``webhook-signature`` value: ``v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">``.

    Example: ``sign_standard_webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_1", 1614265330, b"{}")``.
    """
    content = f"{msg_id}.{int(timestamp)}.".encode("utf-8") + _body_bytes(raw_body)
    digest = hmac.new(_standard_key(secret), content, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def _header(headers: Mapping[str, str], name: str) -> Optional[str]:
    value = headers.get(name)
    if value is None:  # a plain dict: look the name up ignoring case
        lowered = name.lower()
        value = next((v for k, v in headers.items() if isinstance(k, str) and k.lower() == lowered), None)
    return value.strip() if isinstance(value, str) else None


def verify_standard_webhook(
    secret: Secret,
    raw_body: bytes,
    headers: Mapping[str, str],
    tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS,
    now: Optional[float] = None,
) -> None:
    """Checks the Standard Webhooks headers of a delivery; raises :class:`WebhookVerificationError`.

    ``headers`` is any mapping of the request's headers (names in any case).
    Refused: no ``webhook-id`` (``webhook.headers_missing``); a timestamp that is
    missing, not an integer, or more than ``tolerance_seconds`` from ``now``
    (default: the current time) in either direction (``webhook.timestamp_invalid``);
    no ``v1`` signature among the space-separated ones that matches
    (``webhook.signature_invalid``).

    Example::

        verify_standard_webhook("whsec_...", raw, request.headers)
    """
    msg_id = _header(headers, "webhook-id")
    stamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not msg_id:
        raise WebhookVerificationError("the webhook-id header is missing", "webhook.headers_missing")
    if stamp is None or not re.fullmatch(r"[0-9]{1,12}", stamp):
        raise WebhookVerificationError("the webhook-timestamp header is missing or not Unix seconds", _TIMESTAMP_INVALID)
    timestamp = int(stamp)
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance_seconds:
        raise WebhookVerificationError(
            f"webhook-timestamp is {int(current - timestamp)} s from now (tolerance {tolerance_seconds} s)",
            _TIMESTAMP_INVALID,
        )
    expected = sign_standard_webhook(secret, msg_id, timestamp, raw_body).encode("ascii")
    for candidate in (signatures or "").split(" "):
        if candidate.startswith("v1,") and hmac.compare_digest(candidate.encode("utf-8"), expected):
            return
    raise WebhookVerificationError("no webhook-signature matches the body", _SIGNATURE_INVALID)
