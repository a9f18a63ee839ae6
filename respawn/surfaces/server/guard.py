"""The server's first look at every request: the token before the body, and bodies bounded.

FastAPI reads and parses a request's body before it runs an endpoint's
dependencies, so with auth as a dependency alone anyone who can reach the port
has their body read, buffered and parsed (as much as they care to send) before
being told 401. This pure ASGI middleware runs first:

- a request to a route that needs a scope (its endpoint depends on
  `require_read` or `require_write`, respawn/surfaces/server/auth.py) is authorized from
  its headers, with the same rules, answers (401, 403) and log lines as the
  dependency, before anything reads its body; routes without one (/healthz,
  /metrics, the console's page and assets, the OpenAPI description, and paths
  no route matches: 404, 405) stay as they were;
- a body longer than `server.max_body_bytes` gets 413: up front when its
  Content-Length says so, else as soon as the bytes read pass the bound (a
  chunked body). An answer given before the whole body arrived closes the
  connection, so the server does not go on reading what nobody will use.
"""

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import HTTPException, status
from fastapi.routing import iter_route_contexts
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from respawn.surfaces.server.auth import Scope as AccessScope
from respawn.surfaces.server.auth import authorize

log = logging.getLogger("respawn.surfaces.server.guard")

MAX_BODY_BYTES = 1024 * 1024


class RequestGuard:
    def __init__(self, app: ASGIApp, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self._routes: list[tuple[Any, tuple[AccessScope, ...]]] | None = None  # each route, the scopes it needs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)  # headers only: nothing here ever reads the body
        headers = Headers(scope=scope)
        declared = _content_length(headers)
        unbounded = declared is None and "chunked" in headers.get("transfer-encoding", "").lower()
        try:
            for needed in self._needed(scope):
                authorize(request, needed)
        except HTTPException as exc:
            # Close unless the body is small enough to be skipped on the way to the next request.
            close = unbounded or (declared or 0) > self.max_body_bytes
            await _answer(scope, receive, send, exc.status_code, exc.detail, exc.headers, close)
            return
        if declared is not None and declared > self.max_body_bytes:
            log.warning(
                "refused %s %s: a body of %d bytes (at most %d)",
                scope["method"],
                scope["path"],
                declared,
                self.max_body_bytes,
            )
            await _answer(scope, receive, send, *self._too_large(), close=True)
            return

        received = 0
        started = False

        async def bounded_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    log.warning(
                        "refused %s %s: a body longer than %d bytes",
                        scope["method"],
                        scope["path"],
                        self.max_body_bytes,
                    )
                    code, detail, extra = self._too_large()
                    raise HTTPException(code, detail, headers={**extra, "Connection": "close"})
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, bounded_receive, watched_send)
        except HTTPException as exc:  # raised by bounded_receive where no exception handler turned it into an answer
            if started or exc.status_code != status.HTTP_413_CONTENT_TOO_LARGE:
                raise
            await _answer(scope, receive, send, exc.status_code, exc.detail, exc.headers, close=True)

    def _too_large(self) -> tuple[int, str, dict[str, str]]:
        return (status.HTTP_413_CONTENT_TOO_LARGE, f"a request body is at most {self.max_body_bytes} bytes", {})

    def _needed(self, scope: Scope) -> tuple[AccessScope, ...]:
        """The scopes of the route the router will run for this request (the first that matches it fully)."""
        if self._routes is None:  # the routes are all there by the first request
            self._routes = [(route, _route_scopes(route)) for route in _all_routes(scope["app"])]
        for route, needed in self._routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return needed
        return ()


def _all_routes(app: Any) -> list[Any]:
    """The app's routes, those of included routers too, in the order the router tries them.
    (FastAPI 0.16x resolves included routers lazily: iter_route_contexts walks them.)"""
    return [context.original_route for context in iter_route_contexts(app.router.routes)]


def _route_scopes(route: Any) -> tuple[AccessScope, ...]:
    """What the route's endpoint depends on, at any depth: require_read, require_write (respawn_scope)."""
    found: set[AccessScope] = set()
    pending = [route.dependant] if hasattr(route, "dependant") else []
    while pending:
        dependant = pending.pop()
        if getattr(dependant.call, "respawn_scope", None):
            found.add(dependant.call.respawn_scope)
        pending.extend(dependant.dependencies)
    return tuple(sorted(found))  # read before write: the dependency order every endpoint uses


def _content_length(headers: Headers) -> int | None:
    try:
        return int(headers["content-length"])
    except (KeyError, ValueError):  # absent, or not a number (the HTTP server refuses those itself)
        return None


async def _answer(
    scope: Scope, receive: Receive, send: Send, code: int, detail: str, headers: Mapping[str, str] | None, close: bool
) -> None:
    """What FastAPI's own handler answers for an HTTPException ({"detail": ...}), here before any endpoint."""
    extra = dict(headers or {})
    if close:
        extra["Connection"] = "close"
    await JSONResponse({"detail": detail}, status_code=code, headers=extra)(scope, receive, send)
