"""The server checks the token before anything reads a request body, and bounds bodies
(respawn/surfaces/server/guard.py): a real uvicorn server, spoken to over raw sockets so a test
controls how much of a body has been sent when the answer comes."""

import json
import logging
import re
import socket
import threading
import time

import pytest
import uvicorn

from respawn.config.cluster import ServerSettings
from respawn.surfaces.server.app import create_app
from tests.integration.test_advisor_api import READ, WRITE, FakeIngest, make_config

LIMIT = 64 * 1024  # server.max_body_bytes here: small, so the tests send little
DETECTION = json.dumps({"job_id": 1, "kind": "node_down", "node": "node2"}).encode()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    config = make_config(tmp_path_factory.mktemp("guard"))
    config = config.model_copy(update={"server": ServerSettings(tokens=config.server.tokens, max_body_bytes=LIMIT)})
    app = create_app(config)
    app.state.ingest = FakeIngest()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    served = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=served.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not served.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    yield app, sock.getsockname()[1]
    served.should_exit = True
    thread.join(timeout=10)
    sock.close()


class Answer:
    def __init__(self, raw: bytes, closed: bool) -> None:
        head, _, self.body = raw.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        self.closed = closed  # the server closed the connection after answering

    def json(self):
        return json.loads(self.body)


def request(port: int, method: str, path: str, headers: dict[str, str], *parts: bytes, linger: float = 0) -> Answer:
    """Send the head and then each part, then wait for the answer: whatever of the body was
    declared and not sent by then, the server answered without. With `linger`, wait that
    long after the answer to see whether the server closes the connection."""
    head = f"{method} {path} HTTP/1.1\r\nHost: guard\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(head.encode() + b"\r\n")
        for part in parts:
            s.sendall(part)
        raw = b""
        while b"\r\n\r\n" not in raw:
            chunk = s.recv(65536)
            assert chunk, f"closed without an answer: {raw!r}"
            raw += chunk
        length = int(Answer(raw, False).headers.get("content-length", 0))
        while len(raw.partition(b"\r\n\r\n")[2]) < length:
            raw += s.recv(65536)
        closed = None
        if linger:
            s.settimeout(linger)
            try:
                closed = s.recv(1) == b""
            except ConnectionResetError:
                # Closed with the declared body unread in its receive buffer, the server's kernel
                # resets the connection instead of a FIN (RFC 2525, 2.17): closed either way.
                closed = True
            except TimeoutError:
                closed = False
        return Answer(raw, closed)


def bearer(token: str, **more: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json", **more}


def test_a_wrong_token_is_refused_401_before_the_body_is_sent(server, caplog):
    app, port = server
    caplog.set_level(logging.WARNING, "respawn.surfaces.server.auth")
    delivered = len(app.state.ingest.delivered)
    started = time.monotonic()
    # 60 KiB declared (within the bound), 1 KiB sent: the answer comes while the client still owes the rest.
    answer = request(
        port,
        "POST",
        "/api/v1/detections",
        bearer("not-a-known-token", **{"Content-Length": "61440"}),
        DETECTION + b" " * (1024 - len(DETECTION)),
    )
    assert answer.status == 401 and answer.json() == {"detail": "unknown token"}
    assert answer.headers["www-authenticate"] == "Bearer"
    assert time.monotonic() - started < 3
    assert len(app.state.ingest.delivered) == delivered  # the endpoint never ran
    assert [r.getMessage() for r in caplog.records if r.name == "respawn.surfaces.server.auth"] == [
        "refused POST /api/v1/detections from 127.0.0.1: unknown token"
    ]


def test_no_token_with_a_huge_body_is_401_not_413_and_the_connection_closes(server):
    _, port = server
    answer = request(
        port,
        "POST",
        "/api/v1/detections",
        {"Content-Type": "application/json", "Content-Length": str(100 * 1024 * 1024)},
        b"{",
        linger=5,
    )
    assert answer.status == 401 and answer.json() == {"detail": "a bearer token is required"}
    assert answer.closed  # the server does not go on reading 100 MiB nobody will use
    chunked = request(
        port,
        "POST",
        "/api/v1/detections",
        bearer("not-a-known-token", **{"Transfer-Encoding": "chunked"}),
        b"400\r\n" + b" " * 1024 + b"\r\n",
        linger=5,
    )
    assert chunked.status == 401 and chunked.closed


def test_a_read_token_on_a_write_endpoint_is_403_before_the_body(server):
    _, port = server
    answer = request(port, "POST", "/console/api/jobs/7/override", bearer(READ, **{"Content-Length": "50000"}), b"{")
    assert answer.status == 403 and answer.json() == {"detail": "token reader lacks the write scope"}


def test_a_declared_oversized_body_with_a_good_token_is_413_up_front(server):
    app, port = server
    delivered = len(app.state.ingest.delivered)
    answer = request(port, "POST", "/api/v1/detections", bearer(WRITE, **{"Content-Length": str(LIMIT + 1)}), linger=5)
    assert answer.status == 413 and answer.json() == {"detail": f"a request body is at most {LIMIT} bytes"}
    assert answer.closed
    assert len(app.state.ingest.delivered) == delivered


def test_a_chunked_body_is_counted_and_refused_413_past_the_bound(server):
    app, port = server
    delivered = len(app.state.ingest.delivered)
    chunk = b" " * 8192
    parts = [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * (LIMIT // len(chunk) + 1)  # one chunk past the bound, no end
    answer = request(
        port, "POST", "/api/v1/detections", bearer(WRITE, **{"Transfer-Encoding": "chunked"}), *parts, linger=5
    )
    assert answer.status == 413 and answer.closed
    assert len(app.state.ingest.delivered) == delivered


def test_normal_requests_and_public_paths_work_as_before(server):
    app, port = server
    body = DETECTION
    answer = request(
        port, "POST", "/api/v1/detections", bearer(WRITE, **{"Content-Length": str(len(body))}), body, linger=0.3
    )
    assert answer.status == 202 and answer.json()["incident_id"] == "incident-c1-1-0" and not answer.closed
    assert app.state.ingest.delivered[-1][1] == "writer"
    chunked = request(
        port,
        "POST",
        "/api/v1/detections",
        bearer(WRITE, **{"Transfer-Encoding": "chunked"}),
        b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body),
    )
    assert chunked.status == 202
    assert request(port, "GET", "/api/v1/advice", bearer(READ)).status == 200
    for path in ("/healthz", "/metrics", "/console", "/console/console.js", "/openapi.json"):
        assert request(port, "GET", path, {}).status == 200, path
    assert request(port, "GET", "/api/v1/nothing-here", {}).status == 404
    assert request(port, "DELETE", "/api/v1/advice", {}).status == 405
    assert request(port, "GET", "/console/api/overview", {}).status == 401
    assert request(port, "GET", "/healthz", {"Content-Length": str(LIMIT + 1)}).status == 413  # bounded everywhere


def test_the_bound_defaults_to_one_mebibyte_and_is_itself_bounded():
    assert ServerSettings().max_body_bytes == 1024 * 1024
    with pytest.raises(ValueError):
        ServerSettings(max_body_bytes=10**12)


async def test_every_route_that_needs_a_token_refuses_before_anything_reads_its_body(server):
    from respawn.surfaces.server.guard import _all_routes, _route_scopes

    app, _ = server
    guarded = [(route, scopes) for route in _all_routes(app) if (scopes := _route_scopes(route))]
    assert {route.path for route, _ in guarded} >= {
        "/api/v1/advice",
        "/api/v1/detections",
        "/console/api/overview",
        "/console/api/jobs/{job_id}/override",
    }
    for route, scopes in guarded:
        # The rule the dependencies have always made: reading needs read, changing needs write.
        assert scopes == (("read",) if route.methods <= {"GET", "HEAD"} else ("write",)), route.path
        path = re.sub(r"\{[^}]+\}", "1", route.path)
        for method in route.methods:
            for token, expected in ((None, 401), ("not-a-known-token", 401), (READ, 403 if "write" in scopes else 0)):
                if not expected:
                    continue
                sent = []

                async def receive():
                    raise AssertionError(f"{method} {path}: the body was read before the token was checked")

                async def send(message):
                    sent.append(message)

                headers = [(b"host", b"guard"), (b"content-length", b"100")]
                if token:
                    headers.append((b"authorization", f"Bearer {token}".encode()))
                await app(
                    {
                        "type": "http",
                        "asgi": {"version": "3.0"},
                        "http_version": "1.1",
                        "method": method,
                        "scheme": "http",
                        "path": path,
                        "raw_path": path.encode(),
                        "root_path": "",
                        "query_string": b"",
                        "headers": headers,
                        "client": ("127.0.0.1", 1),
                        "server": ("guard", 80),
                    },
                    receive,
                    send,
                )
                assert sent[0]["status"] == expected, (method, path, token)
