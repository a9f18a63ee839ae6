"""`logs.source`, `logs.server`, `logs.labels`, `logs.bounds`: what a site may write, and what it may not."""

import pytest
from pydantic import ValidationError

from respawn.config.cluster import LogSettings, LogSource
from respawn.sources.logstream import Selector, open_stream
from respawn.sources.logstream.loki import LokiStream
from respawn.sources.logstream.victorialogs import VictoriaLogsStream


def settings(**logs: object) -> LogSettings:
    return LogSettings.model_validate({"job_output": "/shared/{job_id}.out", **logs})


def test_files_stay_the_default_and_open_no_stream() -> None:
    files = settings()
    assert files.source is LogSource.FILES and files.server is None
    assert open_stream(files) is None


def test_a_log_server_source_needs_its_url() -> None:
    with pytest.raises(ValidationError, match=r"logs\.source loki needs logs\.server"):
        settings(source="loki")
    with pytest.raises(ValidationError):
        settings(source="victorialogs", server={"url": "http://user:secret@logs:9428"})
    with pytest.raises(ValidationError):
        settings(source="loki", server={"url": "logs:3100"})


def test_label_names_are_plain_and_lokis_have_no_dots() -> None:
    with pytest.raises(ValidationError, match="no dots"):
        settings(source="loki", server={"url": "http://loki:3100"}, labels={"node": "host.name"})
    with pytest.raises(ValidationError):
        settings(source="loki", server={"url": "http://loki:3100"}, labels={"job_id": 'job"} or {a="b'})
    dotted = settings(source="victorialogs", server={"url": "http://vl:9428"}, labels={"node": "host.name"})
    assert dotted.labels.node == "host.name"


def test_each_source_opens_its_client() -> None:
    loki = open_stream(settings(source="loki", server={"url": "http://loki:3100", "tenant": "team-a"}))
    vl = open_stream(settings(source="victorialogs", server={"url": "http://vl:9428"}))
    assert isinstance(loki, LokiStream) and isinstance(vl, VictoriaLogsStream)
    assert loki.describe(Selector.job(7)) == '{job_id="7"}'
    assert vl.describe(Selector.kernel("node1")) == '{stream="kernel", node="node1"}'
    loki.close()
    vl.close()


def test_a_selector_takes_only_a_job_id_or_a_host_name() -> None:
    assert Selector.job(12).key == "12"
    for bad in ['node1"}', "node 1", "", "-node", "a" * 300]:
        with pytest.raises(ValueError):
            Selector.kernel(bad)
