"""Slurm hostlists: `node[1-3,5]` <-> ["node1", "node2", "node3", "node5"].

Node names reach `scontrol` argv and Slurm's own hostlist parser, so anything
that could be read as syntax there (brackets, commas, `=`, spaces, a leading
`-` that looks like an option) is rejected by `valid_node_name`.
"""

import re
from itertools import product

# A hostname-like label: starts alphanumeric, then letters, digits, `_`, `.`, `-`.
NODE_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
_RANGE_RE = re.compile(r"(\d+)(?:-(\d+))?")
_TRAILING_NUMBER_RE = re.compile(r"^(.*?)(\d+)$")
# Bound expansion so a hostile or mistyped `node[1-999999999]` cannot exhaust memory.
MAX_HOSTS = 65536


def valid_node_name(name: str) -> bool:
    return NODE_NAME_RE.fullmatch(name) is not None


def expand(hostlist: str) -> list[str]:
    """Every host of a hostlist expression, in order; duplicates are kept as written.

    Supports comma-separated terms, several bracket groups per term
    (`r[1-2]n[1-2]`) and zero padding (`gpu[01-10]`). Raises ValueError on bad syntax.
    """
    hosts: list[str] = []
    for term in _split_terms(hostlist.strip()):
        hosts.extend(_expand_term(term))
        if len(hosts) > MAX_HOSTS:
            raise ValueError(f"hostlist expands to more than {MAX_HOSTS} hosts")
    return hosts


def compress(hosts: list[str]) -> str:
    """The shortest usual form: hosts sorted, deduplicated, trailing numbers ranged.

    Names with the same prefix and the same number width share brackets
    (`node01,node02` -> `node[01-02]`, but `node9,node10` -> `node[9-10]`, since
    unpadded numbers of any width read back the same).
    """
    groups: dict[tuple[str, int], set[int]] = {}
    plain: set[str] = set()
    for host in hosts:
        if not valid_node_name(host):
            raise ValueError(f"invalid node name: {host!r}")
        match = _TRAILING_NUMBER_RE.match(host)
        if match is None:
            plain.add(host)
            continue
        prefix, digits = match.groups()
        # Width 0 marks unpadded numbers, which must not be zero-filled on the way back.
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
        groups.setdefault((prefix, width), set()).add(int(digits))
    # An unpadded number with at least w digits prints the same at width w, so it
    # can join the padded group (`node[01-10]` round-trips as one group).
    for prefix, width in sorted(groups):
        if width == 0:
            continue
        loose = groups.get((prefix, 0), set())
        joining = {n for n in loose if len(str(n)) >= width}
        groups[(prefix, width)] |= joining
        loose -= joining
    parts = sorted(plain)
    for (prefix, width), numbers in sorted(groups.items()):
        if not numbers:
            continue
        ranges = _ranges(sorted(numbers))
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            parts.append(f"{prefix}{ranges[0][0]:0{width}d}")
            continue
        text = ",".join(f"{a:0{width}d}" if a == b else f"{a:0{width}d}-{b:0{width}d}" for a, b in ranges)
        parts.append(f"{prefix}[{text}]")
    return ",".join(sorted(parts))


def _split_terms(hostlist: str) -> list[str]:
    terms: list[str] = []
    depth = 0
    current: list[str] = []
    for char in hostlist:
        if char == "[":
            depth += 1
            if depth > 1:
                raise ValueError(f"nested brackets in hostlist: {hostlist!r}")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced brackets in hostlist: {hostlist!r}")
        if char == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise ValueError(f"unbalanced brackets in hostlist: {hostlist!r}")
    terms.append("".join(current))
    return [t for t in (t.strip() for t in terms) if t]


def _expand_term(term: str) -> list[str]:
    # Alternate literal text and bracket bodies: "r", "1-2", "n", "1-2", "".
    pieces = re.split(r"\[([^\]]*)\]", term)
    choices: list[list[str]] = []
    for index, piece in enumerate(pieces):
        choices.append(_expand_ranges(piece, term) if index % 2 else [piece])
    hosts = ["".join(parts) for parts in product(*choices)]
    for host in hosts:
        if not valid_node_name(host):
            raise ValueError(f"invalid node name {host!r} in hostlist term {term!r}")
    return hosts


def _expand_ranges(body: str, term: str) -> list[str]:
    values: list[str] = []
    for item in body.split(","):
        match = _RANGE_RE.fullmatch(item.strip())
        if match is None:
            raise ValueError(f"bad range {item!r} in hostlist term {term!r}")
        low, high = match.group(1), match.group(2) or match.group(1)
        start, end = int(low), int(high)
        if end < start:
            raise ValueError(f"descending range {item!r} in hostlist term {term!r}")
        if end - start + len(values) >= MAX_HOSTS:
            raise ValueError(f"hostlist expands to more than {MAX_HOSTS} hosts")
        # Slurm pads to the width of the lower bound when it has leading zeros.
        width = len(low) if low.startswith("0") else 0
        values.extend(f"{n:0{width}d}" for n in range(start, end + 1))
    return values


def _ranges(numbers: list[int]) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    for n in numbers:
        if ranges and n == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], n)
        else:
            ranges.append((n, n))
    return ranges
