"""The typed DAG structure: parsed once per version, defaults in the type, upstream-first order."""

from __future__ import annotations

from state.core.structure import parse_structure


def test_tasks_are_ordered_upstream_first_whatever_the_stored_key_order() -> None:
    # PostgreSQL's JSONB gives an object's keys back in its own order (shortest first).
    raw = {
        "dag_id": "etl",
        "tasks": {
            "load": {"upstream": ["transform"]},
            "report": {"upstream": ["load"]},
            "extract": {"downstream": ["transform"]},
            "transform": {"upstream": ["extract"], "downstream": ["load"]},
        },
    }
    raw["tasks"]["transform"]["downstream"] = ["load"]
    raw["tasks"]["load"]["downstream"] = ["report"]
    structure = parse_structure(raw)
    assert structure.upstream_first() == ["extract", "transform", "load", "report"]


def test_a_structure_is_parsed_once_per_version_and_keeps_its_defaults() -> None:
    raw = {"dag_id": "d", "tasks": {"a": {}}, "key_from_a_newer_authoring_api": 1}
    first = parse_structure(raw, "version-1")
    assert parse_structure({"dag_id": "other"}, "version-1") is first  # a hash names one structure
    spec = first.tasks["a"]
    assert (spec.pool, spec.queue, spec.trigger_rule, spec.max_tries) == (
        "default_pool",
        "default",
        "all_success",
        1,
    )
    assert first.max_active_tasks == 16
