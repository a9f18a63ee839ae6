"""The external attribution hook: a second opinion from a service the site runs.

When the cluster configuration names one (`attribution_hook`), the assess
activity POSTs the incident's evidence and Respawn's own attribution to it and
merges the service's judgement (docs/attribution-hook.md is the contract).
The hook can only ever refine what Respawn decides, never stall or widen it:

- It has one deadline for the whole exchange (connect, send, wait, read): a
  slow or dripping service costs at most `timeout_s`, well inside the assess
  activity's own timeout.
- Any failure (timeout, connection, non-2xx, redirect, a body that is not
  the contract) falls back to the runbooks' attribution and says why, in the
  attribution itself, so the audit trail shows it.
- The service can blame only nodes of the attempt's allocation, as a job's
  own log lines can; other names are dropped, and listed for the audit trail.
"""

import asyncio
import logging
from pathlib import Path
from typing import Annotated, Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from respawn.attribution.runbook import Catalogue
from respawn.config.cluster import AttributionHook
from respawn.wire.attribution import Attribution, AttributionSource
from respawn.wire.evidence import Evidence
from respawn.wire.taxonomy import CauseLayer, FailureClass

log = logging.getLogger(__name__)

CONTRACT_VERSION = 1
_MAX_LINE = 1000  # characters of each evidence line sent
_MAX_RESPONSE = 64 * 1024  # bytes of response read at most: a judgement is small
_MAX_RATIONALE = 1000  # characters of the service's rationale kept for the audit trail
_MAX_NODES = 1024
_MAX_REFUSED = 32  # refused node names noted at most
_MAX_ERROR = 300  # characters of a fallback reason


_Node = Annotated[str, StringConstraints(min_length=1, max_length=253)]


class Judgement(BaseModel):
    """What the service may answer. Every field is optional: absent means "no opinion"."""

    model_config = ConfigDict(extra="forbid", strict=True)
    failure_class: FailureClass | None = None
    cause_layer: CauseLayer | None = None
    nodes: list[_Node] | None = Field(default=None, max_length=_MAX_NODES)
    # `null` says "unknown", which overrides; absent keeps Respawn's verdict.
    recoverable_by_restart: bool | None = None
    rationale: str | None = None


class HookError(Exception):
    """Why the service's judgement cannot be used; the message goes to the audit trail."""


async def consult(hook: AttributionHook, catalogue: Catalogue, evidence: Evidence, own: Attribution) -> Attribution:
    """`own` with the service's judgement merged in, or `own` with the reason it was not."""
    try:
        async with asyncio.timeout(hook.timeout_s):
            body = await _post(hook, request_body(hook, evidence, own))
        return merge(catalogue, evidence, own, _judgement(body))
    except (TimeoutError, httpx.TimeoutException):
        reason = f"timed out after {hook.timeout_s:g} s"
    except httpx.HTTPError as exc:
        reason = f"request failed: {type(exc).__name__}: {exc}"
    except HookError as exc:
        reason = str(exc)
    reason = reason[:_MAX_ERROR]
    log.warning("attribution hook %s: %s; using the runbooks' attribution", hook.url, reason)
    return own.model_copy(update={"source": AttributionSource.RUNBOOKS, "hook_error": reason})


def request_body(hook: AttributionHook, evidence: Evidence, own: Attribution) -> dict[str, Any]:
    """The request: the evidence, bounded, and Respawn's own attribution."""
    lines = evidence.lines[-hook.max_lines :]
    return {
        "version": CONTRACT_VERSION,
        "cluster": evidence.cluster,
        "job_id": evidence.job_id,
        "attempt": evidence.attempt,
        "job_state": evidence.job_state,
        "exit_code": evidence.exit_code,
        "nodes": evidence.nodes,
        "placement": {str(rank): node for rank, node in evidence.placement.items()},
        "down_nodes": evidence.down_nodes,
        "lines": [
            {"text": ln.text[:_MAX_LINE], "source": ln.source.value, "node": ln.node, "rank": ln.rank, "seq": ln.seq}
            for ln in lines
        ],
        "lines_omitted": len(evidence.lines) - len(lines),
        "attribution": own.model_dump(
            mode="json",
            include={
                "failure_class",
                "cause_layer",
                "node_implicated",
                "nodes",
                "recoverable_by_restart",
                "pattern",
                "line",
            },
        ),
    }


async def _post(hook: AttributionHook, payload: dict[str, Any]) -> bytes:
    headers = {"Accept": "application/json"}
    if hook.token_file is not None:
        headers["Authorization"] = f"Bearer {_token(hook.token_file)}"
    # No redirects: a 3xx must not carry the token, or the evidence, elsewhere.
    async with httpx.AsyncClient(timeout=hook.timeout_s, follow_redirects=False) as client:
        async with client.stream("POST", str(hook.url), json=payload, headers=headers) as response:
            if not response.is_success:
                raise HookError(f"HTTP {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > _MAX_RESPONSE:
                    raise HookError(f"invalid body: longer than {_MAX_RESPONSE} bytes")
            return bytes(body)


def _token(path: Path) -> str:
    try:
        token = path.read_text().strip()
    except OSError as exc:
        raise HookError(f"cannot read token file {path}: {exc.strerror}") from None
    if not token or any(c.isspace() for c in token):
        # Never echo the file's content: it is a secret, even when malformed.
        raise HookError(f"token file {path}: expected one token on one line")
    return token


def _judgement(body: bytes) -> Judgement:
    try:
        return Judgement.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(body)"
        raise HookError(f"invalid body: {where}: {first['msg']}") from None


def merge(catalogue: Catalogue, evidence: Evidence, own: Attribution, judgement: Judgement) -> Attribution:
    """Respawn's attribution with what the service said laid over it.

    A different class brings its runbook's cause layer and restart verdict, and
    no pattern, deciding line or nodes of the old class: they were evidence for
    another failure. Fields the service leaves out keep their value.
    """
    update: dict[str, Any] = {
        "source": AttributionSource.HOOK,
        "hook_error": None,
        "hook_rationale": judgement.rationale[:_MAX_RATIONALE] if judgement.rationale else None,
    }
    new_class = judgement.failure_class
    if new_class is not None and new_class is not own.failure_class:
        book = catalogue.runbooks.get(new_class)
        if book is None:
            raise HookError(f"invalid body: failure_class: no runbook for {new_class.value}")
        update |= {
            "failure_class": new_class,
            "cause_layer": book.cause_layer,
            "pattern": None,
            "line": None,
            "recoverable_by_restart": book.recoverable_by_restart,
            "nodes": [],
            "node_implicated": False,
        }
    if judgement.cause_layer is not None:
        update["cause_layer"] = judgement.cause_layer
    if "recoverable_by_restart" in judgement.model_fields_set:
        update["recoverable_by_restart"] = judgement.recoverable_by_restart
    if judgement.nodes is not None:
        allocation = set(evidence.nodes)
        accepted = sorted({n for n in judgement.nodes if n in allocation})
        refused = sorted({n for n in judgement.nodes if n not in allocation})
        # A list of strangers only is no judgement on nodes at all; an empty
        # list is one: "blame none".
        if accepted or not refused:
            update |= {"nodes": accepted, "node_implicated": bool(accepted)}
        update["hook_refused_nodes"] = refused[:_MAX_REFUSED]
    return own.model_copy(update=update)
