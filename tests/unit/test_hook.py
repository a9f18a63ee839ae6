"""The attribution hook against a real HTTP service on 127.0.0.1 that speaks its contract.

The service runs in a thread (stdlib http.server). By default it judges as a
site's service might: a kernel log that reports an Xid blames that node's GPU.
Each test can replace its answer to play a broken or hostile service.
"""

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from respawn.activities.assessment import AssessmentActivities
from respawn.attribution.attribute import attribute
from respawn.attribution.hook import consult
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Action, Catalogue
from respawn.config.cluster import AttributionHook, ConfigError, Mode, load_config
from respawn.services import Services, build_services
from respawn.wire.attribution import Attribution, AttributionSource
from respawn.wire.evidence import Evidence, LineSource, LogLine
from respawn.wire.incident import AssessRequest, Gathered, IncidentInput
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.ports import unused_port

TIMEOUT = (
    "[rank{r}]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600231 "
    "milliseconds before timing out."
)
KERNEL_XID = "[ 811.2] NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python, GPU has fallen off the bus."
HOLD_S = 10.0  # how long a "slow" service holds its answer, unless the test ends first


@dataclass
class Reply:
    status: int = 200
    body: bytes = b"{}"
    hold_s: float = 0.0  # wait this long before answering
    drip: bool = False  # send the headers, then the body one byte at a time, slowly
    headers: dict[str, str] = field(default_factory=dict)


def judge(request: dict[str, Any]) -> Reply:
    """The contract, as a site's service might implement it."""
    xid_nodes = sorted({ln["node"] for ln in request["lines"] if ln["source"] == "kernel" and "Xid" in ln["text"]})
    if not xid_nodes:
        return Reply(body=b"{}")  # no opinion
    return Reply(
        body=json.dumps(
            {
                "failure_class": "gpu_hardware",
                "cause_layer": "hardware",
                "nodes": xid_nodes,
                "recoverable_by_restart": True,
                "rationale": f"kernel log of {', '.join(xid_nodes)} reports an Xid",
            }
        ).encode()
    )


class Service:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []  # {"path", "headers", "body"}
        self.answer: Callable[[dict[str, Any]], Reply] = judge
        self.release = threading.Event()  # set at teardown: slow handlers stop holding
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = json.loads(raw)
                service.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                reply = service.answer(body)
                service.release.wait(reply.hold_s)
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                for i in range(len(reply.body)) if reply.drip else ():
                    if service.release.wait(0.05):
                        return
                    self.wfile.write(reply.body[i : i + 1])
                    self.wfile.flush()
                if not reply.drip:
                    self.wfile.write(reply.body)

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that gave up closes the socket under a slow handler: expected here

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/judge"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def service() -> Iterator[Service]:
    s = Service()
    yield s
    s.close()


def evidence(kernel: dict[str, list[str]] | None = None) -> Evidence:
    """Rank 1 times out in a collective; the kernel logs say what the job's output cannot."""
    lines = [
        LogLine(text="[rank0]: step 40 loss 0.91", rank=0, node="node1", seq=0),
        LogLine(text=TIMEOUT.format(r=1), rank=1, node="node2", seq=1),
    ]
    for node, texts in (kernel or {}).items():
        lines += [LogLine(text=t, source=LineSource.KERNEL, node=node, seq=i) for i, t in enumerate(texts)]
    return Evidence(
        cluster="lab",
        job_id=12,
        attempt=1,
        job_state="FAILED",
        exit_code=1,
        nodes=["node1", "node2", "node3"],
        placement={0: "node1", 1: "node2", 2: "node3"},
        lines=lines,
        down_nodes=[],
    )


def hook(url: str, **fields: Any) -> AttributionHook:
    return AttributionHook.model_validate({"url": url, **fields})


def answer(payload: dict[str, Any] | bytes, **fields: Any) -> Callable[[dict[str, Any]], Reply]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return lambda _request: Reply(body=body, **fields)


async def until(predicate: Callable[[], bool], within_s: float = 5.0) -> None:
    deadline = time.monotonic() + within_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


async def own_and_hooked(
    catalogue: Catalogue, matcher: Matcher, h: AttributionHook, ev: Evidence
) -> tuple[Attribution, Attribution]:
    own = attribute(catalogue, matcher, ev)
    return own, await consult(h, catalogue, ev, own)


# The judgement is merged.


async def test_the_judgement_is_merged_and_the_request_follows_the_contract(service, catalogue, matcher):
    ev = evidence(
        kernel={
            "node3": ["[ 1.0] eth0: link up"],
            "node2": ["[ 810.0] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=python, Graphics SM"],
        }
    )
    own, got = await own_and_hooked(catalogue, matcher, hook(service.url), ev)
    # Xid 13 alone is ambiguous to the runbooks; the site's service knows better.
    assert own.failure_class is FailureClass.GPU_FAULT and own.source is AttributionSource.RUNBOOKS

    assert got.source is AttributionSource.HOOK and got.hook_error is None
    assert got.failure_class is FailureClass.GPU_HARDWARE and got.cause_layer is CauseLayer.HARDWARE
    assert got.nodes == ["node2"] and got.node_implicated and got.recoverable_by_restart is True
    assert got.pattern is None and got.line is None  # those were the evidence for gpu_fault
    assert got.hook_rationale == "kernel log of node2 reports an Xid" and got.hook_refused_nodes == []

    [request] = service.requests
    assert request["path"] == "/v1/judge" and request["headers"]["Content-Type"] == "application/json"
    assert "Authorization" not in request["headers"]
    body = request["body"]
    assert body["version"] == 1 and (body["cluster"], body["job_id"], body["attempt"]) == ("lab", 12, 1)
    assert (body["job_state"], body["exit_code"], body["down_nodes"]) == ("FAILED", 1, [])
    assert body["nodes"] == ["node1", "node2", "node3"]
    assert body["placement"] == {"0": "node1", "1": "node2", "2": "node3"}
    assert body["lines"][1] == {"text": TIMEOUT.format(r=1), "source": "job", "node": "node2", "rank": 1, "seq": 1}
    assert len(body["lines"]) == 4 and body["lines_omitted"] == 0
    assert body["attribution"]["failure_class"] == "gpu_fault"
    assert body["attribution"]["pattern"] == own.pattern


async def test_fields_left_out_keep_respawns_values_and_null_means_unknown(service, catalogue, matcher):
    service.answer = answer({"recoverable_by_restart": None, "rationale": "flaky fabric this week"})
    own, got = await own_and_hooked(catalogue, matcher, hook(service.url), evidence())
    assert got.source is AttributionSource.HOOK
    assert (got.failure_class, got.cause_layer, got.pattern, got.nodes) == (
        own.failure_class,
        own.cause_layer,
        own.pattern,
        own.nodes,
    )
    assert own.recoverable_by_restart is True and got.recoverable_by_restart is None


async def test_a_new_class_without_nodes_takes_its_runbooks_defaults_and_blames_no_one(service, catalogue, matcher):
    service.answer = answer({"failure_class": "app_error"})
    _, got = await own_and_hooked(catalogue, matcher, hook(service.url), evidence())
    book = catalogue.runbook(FailureClass.APP_ERROR)
    assert got.failure_class is FailureClass.APP_ERROR and got.cause_layer is book.cause_layer
    assert got.recoverable_by_restart is book.recoverable_by_restart
    assert got.nodes == [] and not got.node_implicated


async def test_evidence_lines_sent_are_bounded(service, catalogue, matcher):
    ev = evidence(kernel={"node1": [f"[ {i}.0] {'x' * 5000}" for i in range(50)]})
    await consult(hook(service.url, max_lines=10), catalogue, ev, attribute(catalogue, matcher, ev))
    body = service.requests[0]["body"]
    assert len(body["lines"]) == 10 and body["lines_omitted"] == len(ev.lines) - 10
    assert body["lines"][-1]["seq"] == 49 and max(len(ln["text"]) for ln in body["lines"]) == 1000


async def test_the_token_is_read_from_its_file_and_sent_as_bearer(service, catalogue, matcher, tmp_path):
    token = tmp_path / "hook.token"
    token.write_text("s3cr3t-t0ken\n")
    _, got = await own_and_hooked(catalogue, matcher, hook(service.url, token_file=token), evidence())
    assert got.source is AttributionSource.HOOK
    assert service.requests[0]["headers"]["Authorization"] == "Bearer s3cr3t-t0ken"


async def test_an_unreadable_token_file_falls_back_without_a_request(service, catalogue, matcher, tmp_path):
    _, got = await own_and_hooked(catalogue, matcher, hook(service.url, token_file=tmp_path / "gone"), evidence())
    assert got.source is AttributionSource.RUNBOOKS and "cannot read token file" in got.hook_error
    assert service.requests == []


# Nodes outside the allocation are refused.


async def test_a_node_outside_the_allocation_is_refused_and_noted(service, catalogue, matcher):
    service.answer = answer({"failure_class": "gpu_hardware", "nodes": ["node2", "login1", "node2"]})
    _, got = await own_and_hooked(catalogue, matcher, hook(service.url), evidence())
    assert got.source is AttributionSource.HOOK
    assert got.nodes == ["node2"] and got.node_implicated and got.hook_refused_nodes == ["login1"]


async def test_strangers_only_leave_respawns_nodes_as_they_were(service, catalogue, matcher):
    service.answer = answer({"nodes": ["node9.other-cluster", "node17"]})
    own, got = await own_and_hooked(catalogue, matcher, hook(service.url), evidence())
    assert (got.nodes, got.node_implicated) == (own.nodes, own.node_implicated)
    assert got.hook_refused_nodes == ["node17", "node9.other-cluster"]


async def test_an_empty_node_list_clears_the_blame(service, catalogue, matcher):
    service.answer = answer({"nodes": []})
    ev = evidence(kernel={"node3": [KERNEL_XID]})
    own, got = await own_and_hooked(catalogue, matcher, hook(service.url), ev)
    assert own.nodes == ["node3"]
    assert got.nodes == [] and not got.node_implicated and got.failure_class is own.failure_class


# Anything wrong with the service: Respawn's own attribution, and why.


async def test_a_slow_service_falls_back_within_the_timeout(service, catalogue, matcher):
    service.answer = lambda request: Reply(body=b'{"failure_class": "app_error"}', hold_s=HOLD_S)
    began = time.monotonic()
    own, got = await own_and_hooked(catalogue, matcher, hook(service.url, timeout_s=0.3), evidence())
    assert time.monotonic() - began < HOLD_S / 2
    assert got.source is AttributionSource.RUNBOOKS and got.hook_error == "timed out after 0.3 s"
    assert got.model_dump(exclude={"hook_error"}) == own.model_dump(exclude={"hook_error"})
    await until(lambda: len(service.requests) == 1)


async def test_a_dripping_body_is_bounded_by_the_whole_deadline(service, catalogue, matcher):
    # Every byte arrives well within httpx's per-read timeout; only a deadline on
    # the whole exchange stops this.
    service.answer = answer(json.dumps({"rationale": "x" * 500}).encode(), drip=True)
    began = time.monotonic()
    _, got = await own_and_hooked(catalogue, matcher, hook(service.url, timeout_s=0.5), evidence())
    assert time.monotonic() - began < 5
    assert got.source is AttributionSource.RUNBOOKS and got.hook_error == "timed out after 0.5 s"


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply(status=500, body=b'{"failure_class": "app_error"}'), "HTTP 500"),
        (Reply(status=307, headers={"Location": "http://127.0.0.1:9/steal"}), "HTTP 307"),
        (Reply(body=b"<html>502 Bad Gateway</html>"), "invalid body: (body): Invalid JSON"),
        (Reply(body=b'["gpu_hardware"]'), "invalid body: (body): Input should be an object"),
        (Reply(body=b'{"failure_class": "cosmic_ray"}'), "invalid body: failure_class: Input should be"),
        (Reply(body=b'{"failure_class": "gpu_hardware", "confidence": 0.9}'), "invalid body: confidence: Extra"),
        (Reply(body=b'{"recoverable_by_restart": "yes"}'), "invalid body: recoverable_by_restart: Input should be"),
        (Reply(body=b'{"nodes": "node2"}'), "invalid body: nodes: Input should be a valid array"),
        (Reply(body=json.dumps({"rationale": "x" * 70_000}).encode()), "invalid body: longer than 65536 bytes"),
    ],
    ids=[
        "500",
        "redirect",
        "garbage",
        "not-an-object",
        "unknown-class",
        "unknown-key",
        "bad-bool",
        "bad-nodes",
        "too-long",
    ],
)
async def test_a_bad_answer_falls_back_and_says_why(service, catalogue, matcher, reply, error):
    service.answer = lambda request: reply
    own, got = await own_and_hooked(catalogue, matcher, hook(service.url), evidence())
    assert got.source is AttributionSource.RUNBOOKS and got.hook_error.startswith(error), got.hook_error
    assert got.model_dump(exclude={"hook_error"}) == own.model_dump(exclude={"hook_error"})
    assert len(service.requests) == 1  # a redirect is not followed


async def test_nothing_listening_falls_back(catalogue, matcher):
    port = unused_port()
    _, got = await own_and_hooked(catalogue, matcher, hook(f"http://127.0.0.1:{port}/"), evidence())
    assert got.source is AttributionSource.RUNBOOKS and got.hook_error.startswith("request failed: ConnectError")


# The configuration.


def test_the_config_section_loads_with_its_defaults(tmp_path):
    path = tmp_path / "respawn.yaml"
    base = (
        "cluster: lab\nenvironments: {prod: {}}\nlogs: {job_output: '/x/{job_id}.out'}\n"
        f"audit_db: {tmp_path}/audit.db\n"
    )
    path.write_text(base)
    assert load_config(path).attribution_hook is None
    path.write_text(base + "attribution_hook: {url: 'https://judge.example/v1/judge', token_file: /etc/t}\n")
    h = load_config(path).attribution_hook
    assert str(h.url) == "https://judge.example/v1/judge" and h.timeout_s == 2.0 and h.token_file == Path("/etc/t")
    path.write_text(base + "attribution_hook: {url: 'https://judge.example/', token: s3cret}\n")
    with pytest.raises(ConfigError, match="never written in the configuration") as err:
        load_config(path)
    assert "s3cret" not in str(err.value)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"url": "http://judge.example/", "token_file": "/etc/t"}, "needs an https url"),
        ({"url": "https://bot:s3cret@judge.example/"}, "credentials in the url"),
        ({"url": "ftp://judge.example/"}, "URL scheme should be"),
        ({"url": "https://judge.example/", "timeout_s": 0}, "greater than 0"),
        ({"url": "https://judge.example/", "timeout_s": 60}, "less than or equal to 20"),
    ],
)
def test_unsafe_or_impossible_settings_are_refused(fields, message):
    with pytest.raises(ValidationError, match=message):
        AttributionHook.model_validate(fields)


def test_a_token_may_go_over_plain_http_to_loopback_only():
    for url in ("http://127.0.0.1:8080/", "http://localhost/", "http://[::1]:80/"):
        assert AttributionHook.model_validate({"url": url, "token_file": "/t"}).token_file == Path("/t")


# Through the assess activity, as the worker runs it.


def services_for(tmp_path: Path, hook_section: dict[str, Any] | None) -> Services:
    config = {
        "cluster": "lab",
        "environments": {"prod": {}},
        "logs": {"job_output": str(tmp_path / "{job_id}.out")},
        "audit_db": str(tmp_path / "audit.db"),
    }
    if hook_section is not None:
        config["attribution_hook"] = hook_section
    path = tmp_path / "respawn.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    return build_services(load_config(path))


def assess_request(ev: Evidence) -> AssessRequest:
    inp = IncidentInput(
        cluster="lab",
        job_id=ev.job_id,
        attempt=ev.attempt,
        environment="prod",
        mode=Mode.OBSERVE,
        settle_s=1,
        cascade_wait_s=0,
        follow_timeout_s=60,
    )
    gathered = Gathered(
        evidence=ev,
        log_end=0,
        checkpoint_step=None,
        cluster_nodes=["node1", "node2", "node3", "node4"],
        excluded_nodes=[],
        job_state="FAILED",
    )
    return AssessRequest(incident=inp, incident_id="incident-lab-12-1", gathered=gathered)


async def test_assess_merges_the_hook_and_decides_on_the_merged_judgement(service, tmp_path):
    services = services_for(tmp_path, {"url": service.url})
    try:
        ev = evidence(kernel={"node2": ["[ 810.0] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=python, Graphics SM"]})
        assessment = await AssessmentActivities(services).assess(assess_request(ev))
    finally:
        await services.close()
    assert assessment.attribution.source is AttributionSource.HOOK
    assert assessment.attribution.failure_class is FailureClass.GPU_HARDWARE
    assert assessment.decision.action is Action.RESTART_EXCLUDING and assessment.decision.exclude == ["node2"]
    assert len(service.requests) == 1


async def test_assess_without_a_hook_sends_nothing(service, tmp_path):
    services = services_for(tmp_path, None)
    try:
        assessment = await AssessmentActivities(services).assess(assess_request(evidence()))
    finally:
        await services.close()
    assert assessment.attribution.source is AttributionSource.RUNBOOKS and assessment.attribution.hook_error is None
    assert assessment.attribution.failure_class is FailureClass.COMM_TIMEOUT
    assert service.requests == []
