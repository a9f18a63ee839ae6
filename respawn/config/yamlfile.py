"""The one way Respawn reads its own YAML (the configuration, runbooks, progress patterns).

`yaml.safe_load` keeps the last of two equal keys in a mapping, so a file that
names a setting twice silently means something its reader may not expect (a
second `max_mode: action` lower down wins over the first). Here a duplicate key
is an error that names its line.
"""

from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node

try:  # libyaml's parser (PyYAML's wheels and Debian's package have it): several times faster, the same marks
    from yaml import CSafeLoader as _SafeLoader
except ImportError:  # a PyYAML built without libyaml
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]

_MERGE = "tag:yaml.org,2002:merge"


class DuplicateKeyError(ConstructorError):
    """A mapping names the same key twice; `line` is 1-based, where the second one is."""

    def __init__(self, key: Any, node: Node) -> None:
        super().__init__(None, None, f"duplicate key {key!r}", node.start_mark)
        self.key = key
        self.line = node.start_mark.line + 1

    def __str__(self) -> str:
        return f"line {self.line}: duplicate key '{self.key}'"


class StrictLoader(_SafeLoader):
    """SafeLoader whose mappings refuse a key given twice (merge keys `<<` may still be overridden)."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == _MERGE:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                except TypeError:  # unhashable: the base class says so, with its mark
                    break
                if duplicate:
                    raise DuplicateKeyError(key, key_node)
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load(text: str) -> Any:
    """Like `yaml.safe_load`, but a duplicate key raises DuplicateKeyError (a yaml.YAMLError)."""
    return yaml.load(text, Loader=StrictLoader)  # a SafeLoader: builds plain data only
