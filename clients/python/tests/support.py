"""What the tests share: the server under test (from the environment), direct
HTTP calls that bypass the client (to check what it did), a fault-injecting
proxy and a webhook receiver, both on 127.0.0.1.

Environment (set by test/clients/python-client.test.ts):
  AUTHZ_TEST_URL              the service, e.g. http://127.0.0.1:41234
  AUTHZ_TEST_KEY              a test key of the main account, every scope
  AUTHZ_TEST_OTHER_KEY        a test key of another account
  AUTHZ_TEST_WRITE_ONLY_KEY   a key of the main account with decisions:write only
  AUTHZ_TEST_WEBHOOK_VECTORS  JSON: signatures computed by the Node side
"""
import http.client
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run these tests through test/clients/python-client.test.ts")
    return value


URL = env("AUTHZ_TEST_URL")
KEY = env("AUTHZ_TEST_KEY")
OTHER_KEY = env("AUTHZ_TEST_OTHER_KEY")
WRITE_ONLY_KEY = env("AUTHZ_TEST_WRITE_ONLY_KEY")

# The policies the Node side installs (actions only; the rest is in the .ts file).
ALLOW = "orders.read"
DENY = "orders.delete"
REVIEW = "payments.refund"
CHARGE = "payments.charge"  # allow, USD budget 100 monthly
LIMITED = "reports.export"  # allow, 1 per minute
LLM = "llm.call"  # allow, session budgets of USD 1 and 10,000 tokens a day
FILES_READ = "files.read"  # allow, labels the session "private"
SEND = "email.send"  # allow, but denied once the session holds "untrusted"


def run_id() -> str:
    """A fresh session id (an agent run): tests never share sessions."""
    return f"run-{uuid.uuid4().hex[:12]}"


def agent(prefix: str = "py") -> str:
    """A fresh agent id: tests never share budgets or rate windows."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def api(method: str, path: str, body: Optional[Dict[str, Any]] = None, key: str = KEY) -> Tuple[int, Dict[str, Any]]:
    """A direct call to the service (not through the client under test): status and JSON body."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(URL + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {key}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            status, raw = answer.status, answer.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    return status, (json.loads(raw) if raw else {})


def decision(decision_id: str) -> Dict[str, Any]:
    status, body = api("GET", f"/v1/decisions/{decision_id}")
    assert status == 200, body
    return body


def decisions_of(agent_id: str) -> List[Dict[str, Any]]:
    status, body = api("GET", "/v1/decisions?limit=100&agent_id=" + urllib.parse.quote(agent_id))
    assert status == 200, body
    return body["data"]


def budgets_of(agent_id: str) -> List[Dict[str, Any]]:
    status, body = api("GET", "/v1/budgets?agent_id=" + urllib.parse.quote(agent_id))
    assert status == 200, body
    return body["data"]


def closed_port_url() -> str:
    """A loopback URL nothing listens on (bound then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class RecordingSleep:
    """A RetryPolicy sleep that records the waits asked for and does not wait."""

    def __init__(self) -> None:
        self.waits: List[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)

    async def async_sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


class _Quiet(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class FaultProxy:
    """A loopback proxy in front of the service that misbehaves on request.

    ``faults`` is consumed one per request (then requests pass through):
      None                        forward and relay the answer
      "drop_after_forward"        forward, then close the connection without answering
      "503_after_forward"         forward, then answer 503 (text body)
      "503"                       answer 503 without forwarding
      ("429", seconds)            answer 429 rate_limit.exceeded with Retry-After, without forwarding
      "strip_key_drop"            forward without the Idempotency-Key header, then drop
    ``attempts`` records each request: method, path, idempotency_key,
    request_body (parsed), and the upstream answer when it was forwarded (status, body, replayed).
    """

    def __init__(self, upstream: str = URL, faults: Optional[List[Any]] = None, always: Any = None) -> None:
        self.upstream = urllib.parse.urlsplit(upstream)
        self.faults = list(faults or [])
        self.always = always
        self.attempts: List[Dict[str, Any]] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(_Quiet):
            def _any(self) -> None:
                proxy._handle(self)

            do_GET = do_POST = do_PUT = do_DELETE = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> "FaultProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _forward(self, h: BaseHTTPRequestHandler, body: bytes, keep_key: bool) -> Tuple[int, Dict[str, str], bytes]:
        skip = {"host", "connection", "content-length"} | (set() if keep_key else {"idempotency-key"})
        headers = {k: v for k, v in h.headers.items() if k.lower() not in skip}
        conn = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=10)
        try:
            conn.request(h.command, h.path, body=body if body else None, headers=headers)
            answer = conn.getresponse()
            return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
        finally:
            conn.close()

    def _reply(self, h: BaseHTTPRequestHandler, status: int, headers: Dict[str, str], body: bytes) -> None:
        h.send_response(status)
        for name in ("content-type", "request-id", "retry-after", "idempotent-replayed"):
            if name in headers:
                h.send_header(name, headers[name])
        h.send_header("Content-Length", str(len(body)))
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(body)

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        with self._lock:
            fault = self.faults.pop(0) if self.faults else self.always
            record: Dict[str, Any] = {
                "method": h.command,
                "path": h.path,
                "idempotency_key": h.headers.get("Idempotency-Key"),
                "request_body": json.loads(body) if body else None,
            }
            self.attempts.append(record)
        if fault == "503" or (isinstance(fault, tuple) and fault[0] == "429"):
            if fault == "503":
                self._reply(h, 503, {"content-type": "text/plain"}, b"upstream unavailable")
            else:
                error = {"error": {"code": "rate_limit.exceeded", "message": "slow down (proxy)", "request_id": "req_proxy"}}
                headers = {"content-type": "application/json", "retry-after": str(fault[1])}
                self._reply(h, 429, headers, json.dumps(error).encode())
            return
        status, headers, answer = self._forward(h, body, keep_key=fault != "strip_key_drop")
        record.update(status=status, body=json.loads(answer) if answer else None, replayed=headers.get("idempotent-replayed"))
        if fault in ("drop_after_forward", "strip_key_drop"):
            h.close_connection = True
            return  # nothing written: the client sees the connection close
        if fault == "503_after_forward":
            self._reply(h, 503, {"content-type": "text/plain"}, b"upstream unavailable")
            return
        self._reply(h, status, headers, answer)


class Receiver:
    """A webhook receiver on 127.0.0.1 answering 200; keeps each delivery's headers and raw body."""

    def __init__(self) -> None:
        self.deliveries: List[Tuple[Dict[str, str], bytes]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(_Quiet):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    receiver.deliveries.append(({k: v for k, v in self.headers.items()}, raw))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> "Receiver":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, match: Callable[[Dict[str, Any]], bool], timeout: float = 30.0) -> Tuple[Dict[str, str], bytes]:
        """The first delivery whose parsed envelope satisfies ``match``; fails after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                found = [d for d in self.deliveries if match(json.loads(d[1]))]
            if found:
                return found[0]
            time.sleep(0.05)
        raise AssertionError(f"no matching delivery within {timeout} s ({len(self.deliveries)} received)")
