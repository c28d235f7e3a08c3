"""One HTTP attempt with urllib (no retry here): the request as the service wants
it, the answer as bytes, or a :class:`NetworkFailure` when no answer came.

Redirects are not followed (a redirect would carry the API key elsewhere or turn
a POST into a GET); a 3xx is answered like any other status.

Example::

    transport = Transport("http://127.0.0.1:8080", "svc_test_sk_...", timeout=10.0)
    response = transport.send("GET", "/v1/decisions/dec_1", None, None)
    response.status, response.header("Request-Id"), response.body
"""
import http.client
import json
import urllib.error
import urllib.request
from typing import Any, Dict, Iterable, Optional, Protocol, Tuple

from ._version import __version__ as _version

USER_AGENT = f"agent-authz-python/{_version}"


class NetworkFailure(Exception):
    """No HTTP answer: connection refused or reset, timeout, DNS, a truncated answer."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause


class Headers(Protocol):
    """What an answer's headers are read through: a dict, or the standard library's message headers."""

    def items(self) -> Iterable[Tuple[str, str]]: ...


class Response:
    """An HTTP answer: status, headers (case-insensitive lookup), raw body."""

    def __init__(self, status: int, headers: Headers, body: bytes) -> None:
        self.status = status
        self._headers = {k.lower(): v for k, v in headers.items()}
        self.body = body

    def header(self, name: str) -> Optional[str]:
        """The header's value, ``None`` when absent."""
        return self._headers.get(name.lower())


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


class Transport:
    """Sends one request to the service; blocking (the async client runs it in a thread)."""

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        if not base_url:
            raise ValueError("base_url is required")
        if not api_key:
            raise ValueError("api_key is required")
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.timeout = timeout
        self._opener = urllib.request.build_opener(_NoRedirect())

    def send(self, method: str, path: str, body: Optional[Dict[str, Any]], idempotency_key: Optional[str]) -> Response:
        """One attempt; raises :class:`NetworkFailure` when no answer came."""
        headers = {
            "Authorization": f"Bearer {self._api_key}",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        data: Optional[bytes] = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        request = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
        try:
            with self._opener.open(request, timeout=self.timeout) as answer:
                return Response(answer.status, answer.headers, answer.read())
        except urllib.error.HTTPError as error:
            try:
                content = error.read()
            except (OSError, http.client.HTTPException) as cause:
                raise NetworkFailure(cause) from cause
            finally:
                error.close()
            return Response(error.code, error.headers if error.headers is not None else {}, content)
        except (OSError, http.client.HTTPException) as cause:
            # URLError, socket.timeout, ConnectionResetError, RemoteDisconnected, IncompleteRead.
            raise NetworkFailure(cause) from cause
