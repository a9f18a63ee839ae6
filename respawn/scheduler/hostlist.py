"""Slurm hostlists: `node[1-3,5]` <-> ["node1", "node2", "node3", "node5"], by ClusterShell's NodeSet.

Node names reach `scontrol` argv and Slurm's own hostlist parser, so anything
that could be read as syntax there (brackets, commas, `=`, spaces, a leading
`-` that looks like an option) is rejected by `valid_node_name`, and every name
a hostlist expands to must pass it.

NodeSet itself materialises a range when it parses it (`node[1-99999999]` takes
minutes), and reads more than Slurm's syntax (`@group`, `!`, `&`, `^`). So a
hostlist is first checked here, cheaply, on its text: only Slurm's characters,
and the number of hosts it would expand to counted from the bracket ranges
before anything is expanded (`a[1-1500]b[1-1500]` is refused at once).
"""

import re

from ClusterShell.NodeSet import NodeSet, NodeSetException
from ClusterShell.RangeSet import RangeSetException

# A hostname-like label: starts alphanumeric, then letters, digits, `_`, `.`, `-`.
NODE_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
# Bound expansion so a hostile or mistyped `node[1-999999999]` cannot exhaust memory or time.
MAX_HOSTS = 65536
_SLURM_SYNTAX = re.compile(r"[A-Za-z0-9_.,\[\]-]*")
_RANGE_RE = re.compile(r"(\d+)(?:-(\d+))?")
_BRACKET = re.compile(r"\[([^\[\]]*)\]")


def valid_node_name(name: str) -> bool:
    return NODE_NAME_RE.fullmatch(name) is not None


def expand(hostlist: str) -> list[str]:
    """Every host of a hostlist expression, in the order of its comma-separated terms
    (within a term, in NodeSet's order); duplicates across terms are kept as written.

    Supports several bracket groups per term (`r[1-2]n[1-2]`) and zero padding
    (`gpu[01-10]`). Raises ValueError on bad syntax, an invalid name, or more than
    MAX_HOSTS hosts (counted before expanding).
    """
    text = hostlist.strip()
    if not _SLURM_SYNTAX.fullmatch(text):
        raise ValueError(f"not a Slurm hostlist: {text[:100]!r}")
    terms = _split_terms(text)
    total = 0
    for term in terms:
        total += _count(term)
        if total > MAX_HOSTS:
            raise ValueError(f"hostlist expands to more than {MAX_HOSTS} hosts")
    hosts: list[str] = []
    for term in terms:
        try:
            nodes = NodeSet(term)
        except (NodeSetException, RangeSetException) as exc:
            raise ValueError(f"bad hostlist term {term!r}: {exc}") from None
        for host in nodes:
            if not valid_node_name(host):
                raise ValueError(f"invalid node name {host!r} in hostlist term {term!r}")
            hosts.append(host)
    return hosts


def compress(hosts: list[str]) -> str:
    """The shortest usual form (NodeSet's): hosts sorted, deduplicated, numbers ranged
    (`node9,node10` -> `node[9-10]`, `gpu08,gpu09,gpu10` -> `gpu[08-10]`)."""
    for host in hosts:
        if not isinstance(host, str) or not valid_node_name(host):
            raise ValueError(f"invalid node name: {host!r}")
    if len(hosts) > MAX_HOSTS:
        raise ValueError(f"more than {MAX_HOSTS} hosts")
    return str(NodeSet.fromlist(hosts)) if hosts else ""


def _split_terms(hostlist: str) -> list[str]:
    """Top-level comma-separated terms; brackets must balance and not nest."""
    terms: list[str] = []
    depth = 0
    current: list[str] = []
    for char in hostlist:
        if char == "[":
            depth += 1
            if depth > 1:
                raise ValueError(f"nested brackets in hostlist: {hostlist[:100]!r}")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced brackets in hostlist: {hostlist[:100]!r}")
        if char == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise ValueError(f"unbalanced brackets in hostlist: {hostlist[:100]!r}")
    terms.append("".join(current))
    return [t for t in terms if t]


def _count(term: str) -> int:
    """How many hosts `term` names, from its bracket ranges' bounds alone (an upper
    bound: overlapping ranges are counted twice); ValueError on a malformed range."""
    count = 1
    for body in _BRACKET.findall(term):
        size = 0
        for item in body.split(","):
            match = _RANGE_RE.fullmatch(item)
            if match is None:
                raise ValueError(f"bad range {item!r} in hostlist term {term[:100]!r}")
            low, high = int(match[1]), int(match[2] or match[1])
            if high < low:
                raise ValueError(f"descending range {item!r} in hostlist term {term[:100]!r}")
            size += high - low + 1
            if size > MAX_HOSTS:
                raise ValueError(f"hostlist expands to more than {MAX_HOSTS} hosts")
        count *= size
        if count > MAX_HOSTS:
            raise ValueError(f"hostlist expands to more than {MAX_HOSTS} hosts")
    return count
