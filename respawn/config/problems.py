"""What is wrong with a file an operator wrote (the cluster configuration, a runbook), as they
read it: every mistake at once, each on its line with where it is, and the key meant where a key
is misspelt. Fixing one mistake only to be shown the next is slow at 3 a.m."""

import difflib
from types import UnionType
from typing import Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails


def describe(path: object, exc: ValidationError, root: type[BaseModel]) -> str:
    """`path: where: what`, or `path: N problems:` and one indented line each."""
    problems = [_problem(e, root) for e in exc.errors()]
    if len(problems) == 1:
        return f"{path}: {problems[0]}"
    return f"{path}: {len(problems)} problems:\n" + "\n".join(f"  {p}" for p in problems)


def _problem(error: ErrorDetails, root: type[BaseModel]) -> str:
    loc = error["loc"]
    where = ".".join(str(p) for p in loc) or "(top)"
    if error["type"] == "extra_forbidden" and loc:
        known = _keys_at(root, loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), known, n=1)
        if close:
            return f"{where}: not a setting here; did you mean {close[0]!r}?"
        if known:
            return f"{where}: not a setting here (known: {', '.join(sorted(known))})"
    return f"{where}: {error['msg']}"


def _keys_at(root: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The keys the section at `loc` takes: fields of models, through the names of a mapping
    and the indexes of a list (none where the path leads to no model)."""
    node: object = root
    for part in loc:
        node = _unoptional(node)
        if isinstance(node, type) and issubclass(node, BaseModel):
            field = node.model_fields.get(str(part))
            if field is None:
                return []
            node = field.annotation
        elif get_origin(node) in (dict, list):
            node = get_args(node)[-1]  # a mapping's value, a list's item
        else:
            return []
    node = _unoptional(node)
    return list(node.model_fields) if isinstance(node, type) and issubclass(node, BaseModel) else []


def _unoptional(annotation: object) -> object:
    """`X` from `X | None`; anything else as it is."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    return args[0] if get_origin(annotation) in (Union, UnionType) and len(args) == 1 else annotation
