"""What a catalogue round's source lines must read as: the check the rounds' tests share."""

from respawn.attribution.attribute import classify_text
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue
from respawn.wire.taxonomy import CauseLayer, FailureClass


def assert_decided(
    catalogue: Catalogue, matcher: Matcher, text: str, cls: FailureClass, layer: CauseLayer, pattern: str
) -> None:
    got = classify_text(catalogue, matcher, text)
    assert (got.failure_class, got.cause_layer, got.pattern) == (cls, layer, pattern)


def assert_benign(catalogue: Catalogue, matcher: Matcher, text: str) -> None:
    """A benign look-alike: the excerpt reads as no failure (the pattern that took it, if not)."""
    got = classify_text(catalogue, matcher, text)
    assert got.failure_class is FailureClass.BENIGN, (got.failure_class, got.pattern)
