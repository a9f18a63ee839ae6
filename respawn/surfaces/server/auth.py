"""Bearer tokens with read and write scopes, checked on every API request.

The tokens come from the configuration (`server.tokens`). A request without a
token or with an unknown one gets 401; a known token without the scope an
endpoint needs gets 403. Every refusal is logged with the path and, when it is
known, the token's name; the token itself never is. The server checks a request
this way before anything reads its body (respawn/surfaces/server/guard.py), and the
endpoint's dependency checks it again.
"""

import hmac
import logging
from dataclasses import dataclass
from typing import Literal

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from starlette.requests import HTTPConnection

from respawn.config.cluster import ApiToken

log = logging.getLogger("respawn.surfaces.server.auth")

Scope = Literal["read", "write"]


@dataclass(frozen=True)
class Caller:
    """Who is calling: the name of the token they presented, and what it may do."""

    name: str
    scopes: frozenset[str]


class Tokens:
    """The configured tokens, resolved once when the server starts (a token file that cannot be read stops it)."""

    def __init__(self, tokens: list[ApiToken]) -> None:
        self._known = [(t.secret().encode(), Caller(t.name, frozenset(t.scopes))) for t in tokens]

    def caller(self, presented: str) -> Caller | None:
        found = None
        for secret, caller in self._known:  # constant time, and no early exit that times which token matched
            if hmac.compare_digest(secret, presented.encode()):
                found = caller
        return found


_bearer = HTTPBearer(auto_error=False, description="a token from the configuration's `server.tokens`")


def authorize(request: HTTPConnection, scope: Scope) -> Caller:
    """The caller of a request that needs `scope`, from its headers alone (never its body);
    HTTPException 401 or 403, logged, when it may not. The server's RequestGuard calls this
    before the body is read (respawn/surfaces/server/guard.py), the endpoints' dependency again."""
    client = request.client.host if request.client else "?"
    where = f"{request.scope.get('method', '?')} {request.url.path} from {client}"
    presented = _bearer_token(request.headers.get("Authorization"))
    if presented is None:
        log.warning("refused %s: no bearer token", where)
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED, "a bearer token is required", headers={"WWW-Authenticate": "Bearer"}
        )
    caller = request.app.state.tokens.caller(presented)
    if caller is None:
        log.warning("refused %s: unknown token", where)
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "unknown token", headers={"WWW-Authenticate": "Bearer"})
    if scope not in caller.scopes:
        log.warning("refused %s: token %s lacks the %s scope", where, caller.name, scope)
        raise HTTPException(status.HTTP_403_FORBIDDEN, f"token {caller.name} lacks the {scope} scope")
    return caller


def _bearer_token(authorization: str | None) -> str | None:
    """What HTTPBearer(auto_error=False) accepts: `Bearer <token>`, the scheme in any case."""
    scheme, credentials = get_authorization_scheme_param(authorization)
    if not (authorization and scheme and credentials) or scheme.lower() != "bearer":
        return None
    return credentials


def _requires(scope: Scope):
    # `credentials` only puts the bearer scheme in the OpenAPI description: authorize reads the header itself.
    def check(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> Caller:
        return authorize(request, scope)

    check.respawn_scope = scope  # type: ignore[attr-defined]  # how the RequestGuard finds, per route, the scope it needs
    return check


# Use as `caller: Caller = Depends(require_read)` or `dependencies=[Depends(require_write)]`.
require_read = _requires("read")
require_write = _requires("write")
