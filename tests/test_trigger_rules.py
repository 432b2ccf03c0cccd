"""The trigger matching rules against the shared vectors the widget's tests also run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentsvc.services.triggers import rules as trigger_rules

VECTORS = json.loads((Path(__file__).parent / "vectors" / "trigger_rules.json").read_text("utf-8"))


def _id(case: dict) -> str:
    return json.dumps({k: v for k, v in case.items() if k != "expected"}, ensure_ascii=False)


@pytest.mark.parametrize("case", VECTORS["glob"], ids=_id)
def test_glob_vectors(case):
    assert trigger_rules.glob_error(case["pattern"]) is None
    assert trigger_rules.glob_matches(case["pattern"], case["path"]) is case["expected"]


@pytest.mark.parametrize("case", VECTORS["invalidGlobs"], ids=_id)
def test_invalid_globs_are_refused(case):
    assert trigger_rules.glob_error(case["pattern"])


@pytest.mark.parametrize("case", VECTORS["eventData"], ids=_id)
def test_event_data_vectors(case):
    assert trigger_rules.event_data_error(case["conditions"]) is None
    matched = trigger_rules.event_data_matches(case["conditions"], case["data"])
    assert matched is case["expected"]


@pytest.mark.parametrize("case", VECTORS["invalidConditions"], ids=_id)
def test_invalid_conditions_are_refused(case):
    assert trigger_rules.event_data_error(case["conditions"])


def test_every_operator_has_a_vector():
    used = {
        op
        for case in VECTORS["eventData"]
        for c in case["conditions"].values()
        if isinstance(c, dict)
        for op in c
        if op.startswith("$")
    }
    assert used == set(trigger_rules.OPERATORS)


def test_custom_event_needs_the_same_name():
    conditions = {"event": "added_to_cart", "eventData": {"total": {"$gt": 50}}}
    assert trigger_rules.custom_event_matches(conditions, "added_to_cart", {"total": 60})
    assert not trigger_rules.custom_event_matches(conditions, "added_to_cart", {"total": 10})
    assert not trigger_rules.custom_event_matches(conditions, "Added_to_cart", {"total": 60})
    assert trigger_rules.custom_event_matches({"event": "signup"}, "signup", None)
