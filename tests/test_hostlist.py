import pytest

from respawn.hostlist import compress, expand, valid_node_name


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
