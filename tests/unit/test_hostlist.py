import time

import pytest

from respawn.scheduler.hostlist import compress, expand, valid_node_name


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("node[1-3,5]", ["node1", "node2", "node3", "node5"]),
        ("node1", ["node1"]),
        ("node[1-2],login", ["node1", "node2", "login"]),
        ("gpu[08-11]", ["gpu08", "gpu09", "gpu10", "gpu11"]),
        ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
        ("a[1-2]-ib,b3", ["a1-ib", "a2-ib", "b3"]),
        ("node1,node2", ["node1", "node2"]),
        ("", []),
    ],
)
def test_expand(text: str, hosts: list[str]) -> None:
    assert expand(text) == hosts


@pytest.mark.parametrize(
    ("hosts", "text"),
    [
        (["node1", "node2", "node3", "node5"], "node[1-3,5]"),
        (["node5", "node3", "node1", "node2", "node2"], "node[1-3,5]"),
        (["node4"], "node4"),
        (["node9", "node10"], "node[9-10]"),
        (["gpu01", "gpu02", "gpu03"], "gpu[01-03]"),
        (["gpu08", "gpu09", "gpu10"], "gpu[08-10]"),
        (["login", "node1", "node2"], "login,node[1-2]"),
        ([], ""),
    ],
)
def test_compress(hosts: list[str], text: str) -> None:
    assert compress(hosts) == text


@pytest.mark.parametrize(
    "hosts", [["node1", "node3", "node4"], ["gpu001", "gpu002", "gpu100"], ["a1", "b2", "b3", "c"]]
)
def test_round_trip(hosts: list[str]) -> None:
    assert expand(compress(hosts)) == sorted(hosts)


@pytest.mark.parametrize(
    "text", ["node[1-3", "node1-3]", "node[3-1]", "node[a-b]", "node[1-2][", "node[[1]]", "no de1", "node[1-99999999]"]
)
def test_expand_refuses_bad_syntax(text: str) -> None:
    with pytest.raises(ValueError):
        expand(text)


@pytest.mark.parametrize("name", ["node1", "gpu-07", "rack1.node2", "n_1", "A"])
def test_valid_node_names(name: str) -> None:
    assert valid_node_name(name)


@pytest.mark.parametrize(
    "name",
    ["", "-w", "node1,node2", "node[1-2]", "node1;id", "$(id)", "node 1", "a=b", "node1\n", "n'1", "x" * 64],
)
def test_hostile_node_names(name: str) -> None:
    assert not valid_node_name(name)
    with pytest.raises(ValueError):
        compress([name])


@pytest.mark.parametrize(
    "text",
    [
        "a[1-1500]b[1-1500]",
        "node[1-99999999]",
        "n[1-65537]",
        "n[1-40000],m[1-40000]",
        "n[1-300]x[1-300]",
        "n[1-10,1-65530]",
    ],
)
def test_a_huge_hostlist_is_refused_before_anything_is_expanded(text: str) -> None:
    started = time.perf_counter()
    with pytest.raises(ValueError, match="more than 65536"):
        expand(text)
    assert time.perf_counter() - started < 0.05


def test_the_largest_allowed_hostlist() -> None:
    hosts = expand("n[1-65536]")
    assert len(hosts) == 65536 and hosts[0] == "n1" and hosts[-1] == "n65536"


@pytest.mark.parametrize(
    "text",
    [
        "@gpus",
        "node[1-3]!node2",
        "node[1-3]&node2",
        "node1^node2",
        "node1 node2",
        "node1;id",
        "$(id)",
        "-w",
        "node[1-2]=x",
        "-n[1-2]",
        "node[01-02]x'",
    ],
)
def test_expand_refuses_what_is_not_a_slurm_hostlist_of_valid_names(text: str) -> None:
    with pytest.raises(ValueError):
        expand(text)


def test_terms_keep_their_order_and_mixed_padding_round_trips() -> None:
    assert expand("node3,node[1-2],node3") == ["node3", "node1", "node2", "node3"]
    hosts = ["node01", "node02", "node1", "node100"]
    assert sorted(expand(compress(hosts))) == sorted(hosts)
