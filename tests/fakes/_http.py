"""What the fakes share: a stdlib HTTP server in a thread that records every request
and can be told to fail the ways a real server does (down, slow, 429, 5xx, a
connection dropped mid-answer, an answer dripped slower than a client waits).
Queries are GETs; POSTs are ingestion (each fake's `push` endpoint), recorded apart
and never given a query's fault, so a test's faults meet Respawn's requests only."""

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    params: list[tuple[str, str]]  # in order, repeated names kept (Loki's match[])
    headers: dict[str, str]  # names lower-cased
    body: bytes = b""  # a POST's (ingestion)

    def param(self, name: str) -> str | None:
        return next((v for k, v in self.params if k == name), None)


@dataclass(frozen=True)
class Fault:
    """What the next request gets instead of a good answer."""

    status: int | None = None  # 429, 500, 503 ...
    retry_after: str | None = None  # with a 429
    delay_s: float = 0.0  # before answering at all
    drop: bool = False  # send the headers and half the body, then close the connection
    drip_s: float = 0.0  # send the body a few bytes at a time, this long between pieces


@dataclass
class Answer:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


_MAX_BODY = 64 << 20  # of a push: the tests' shipper sends far less


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True


class FakeServer:
    """Subclasses implement `answer(request)`; tests push data, queue faults, read `requests`."""

    def __init__(self) -> None:
        self.requests: list[Request] = []  # queries
        self.pushes: list[Request] = []  # ingestion (tests/fakes/shipper.py)
        self.faults: deque[Fault] = deque()
        self.delay_s = 0.0  # every request, while set: a slow server
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self._connections: set[Any] = set()  # open client connections: a server going down closes them

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "FakeServer":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                with fake._lock:
                    fake._connections.add(self.connection)

            def finish(self) -> None:
                with fake._lock:
                    fake._connections.discard(self.connection)
                super().finish()

            def handle(self) -> None:
                try:
                    super().handle()
                except OSError:
                    pass  # the client hung up (a timeout, a refused answer): as a real server shrugs

            def do_GET(self) -> None:
                fake._serve(self)

            def do_POST(self) -> None:
                fake._serve(self)

        self._server = _Server(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def down(self) -> None:
        """Stop listening: connections are refused until `up`."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
            with self._lock:
                for connection in list(self._connections):
                    try:
                        connection.shutdown(2)
                    except OSError:
                        pass

    def up(self) -> None:
        if self._server is None:
            self.start()

    stop = down

    def fail_next(self, *faults: Fault) -> None:
        self.faults.extend(faults)

    def answer(self, request: Request) -> Answer:
        raise NotImplementedError

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        split = urlsplit(handler.path)
        size = int(handler.headers.get("Content-Length") or 0)
        request = Request(
            method=handler.command,
            path=split.path,
            params=parse_qsl(split.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=handler.rfile.read(min(size, _MAX_BODY)) if size else b"",
        )
        with self._lock:
            if request.method == "POST":  # ingestion: recorded apart, never given a query's fault
                self.pushes.append(request)
                fault = Fault()
            else:
                self.requests.append(request)
                fault = self.faults.popleft() if self.faults else Fault()
        time.sleep(self.delay_s + fault.delay_s)
        if fault.status is not None:
            answer = Answer(fault.status, b'{"error": "fault injected"}')
            if fault.retry_after is not None:
                answer.headers["Retry-After"] = fault.retry_after
        else:
            try:
                answer = self.answer(request)
            except ValueError as exc:  # what a real server says to a query it cannot parse
                answer = Answer(400, str(exc).encode(), "text/plain")
        try:
            handler.send_response(answer.status)
            handler.send_header("Content-Type", answer.content_type)
            handler.send_header("Content-Length", str(len(answer.body)))
            for name, value in answer.headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            if fault.drop:
                handler.wfile.write(answer.body[: len(answer.body) // 2])
                handler.wfile.flush()
                handler.close_connection = True
                handler.connection.shutdown(2)
                return
            if fault.drip_s:
                for at in range(0, len(answer.body), 16):
                    handler.wfile.write(answer.body[at : at + 16])
                    handler.wfile.flush()
                    time.sleep(fault.drip_s)
                return
            handler.wfile.write(answer.body)
        except OSError:
            pass  # the client gave up: so would a real server's write
