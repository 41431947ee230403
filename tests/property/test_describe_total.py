"""``describe`` says something for every rule the oracle suite generates, never raising."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kalends.civil import describe, parse_rule
from kalends.civil.describe import _field

from .test_oracle_agreement import Scenario, any_kind, scenarios


@settings(max_examples=60)
@given(any_kind.flatmap(scenarios))
def test_every_generated_rule_has_a_sentence(s: Scenario) -> None:
    sentence = describe(parse_rule(s.rule))
    assert sentence and sentence[0].isupper()
    assert "None" not in sentence


def read_field(phrase: str | None, low: int, high: int, unit: str) -> set[int]:
    """The values a :func:`_field` phrase names, read back."""
    if phrase is None:
        return set(range(low, high + 1))
    words = phrase.split()
    if words[0] == "every":
        step = 1 if words[1] == unit else int(words[1][:-2])
        if words[-2] == "through":
            return set(range(int(words[-3]), int(words[-1]) + 1, step))
        return set(range(low, high + 1, step))
    assert words[0] == unit
    values: set[int] = set()
    for item in phrase.removeprefix(unit + " ").replace(" and ", ", ").split(", "):
        first, _, last = item.partition(" through ")
        values.update(range(int(first), int(last or first) + 1))
    return values


@given(st.sampled_from(((0, 59), (0, 23), (1, 31))).flatmap(
    lambda b: st.tuples(st.just(b), st.frozensets(st.integers(*b), min_size=1))
))  # fmt: skip
def test_a_field_phrase_names_exactly_its_values(
    case: tuple[tuple[int, int], frozenset[int]],
) -> None:
    (low, high), values = case
    assert read_field(_field(values, low, high, "unit"), low, high, "unit") == values
