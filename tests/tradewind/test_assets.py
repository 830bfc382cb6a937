"""Assets and their conditions: identity, URI checks, ``&`` / ``|``, and evaluation."""

from __future__ import annotations

import pytest

from state.records.assets import events_of_success
from tradewind import DAG, Asset, AssetAlias, AssetAll, AssetAny, task
from tradewind.assets import InvalidAsset, condition_of, evaluate, references
from tradewind.exceptions import DagDefinitionError

a, b, c = Asset("s3://b/a"), Asset("s3://b/b"), Asset(name="c", uri="file:///c")


def test_an_asset_takes_its_uri_from_its_name_and_back() -> None:
    assert (Asset("x").name, Asset("x").uri) == ("x", "x")
    assert (Asset(uri="s3://k").name, Asset(uri="s3://k").uri) == ("s3://k", "s3://k")
    assert Asset("s3://b/a") == a and hash(Asset("s3://b/a")) == hash(a)
    assert Asset(name="other", uri="s3://b/a") == a  # keyed by URI


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("", "non-empty"),
        ("has space", "ASCII without spaces"),
        ("s3://caf\u00e9", "ASCII without spaces"),
        ("airflow://x", "'airflow' scheme is reserved"),
        ("s3://" + "x" * 1600, "longer than 1500"),
    ],
)
def test_an_invalid_uri_is_refused_in_one_line(uri: str, message: str) -> None:
    with pytest.raises(InvalidAsset, match=message):
        Asset(uri=uri)


def test_operators_build_conditions_and_a_list_means_all() -> None:
    assert condition_of([a, b]) == {"all": [{"asset": "s3://b/a"}, {"asset": "s3://b/b"}]}
    nested = a | (b & AssetAlias("al"))
    assert condition_of(nested) == {
        "any": [{"asset": "s3://b/a"}, {"all": [{"asset": "s3://b/b"}, {"alias": "al"}]}]
    }
    assert isinstance(a & b, AssetAll) and isinstance(a | b, AssetAny)
    assert references(nested.as_condition()) == {"asset:s3://b/a", "asset:s3://b/b", "alias:al"}
    assert condition_of("@daily") is None


@pytest.mark.parametrize(
    ("condition", "updated", "holds"),
    [
        (a & b, {"s3://b/a"}, False),
        (a & b, {"s3://b/a", "s3://b/b"}, True),
        (a | b, {"s3://b/b"}, True),
        (a | (b & c), {"s3://b/b"}, False),
        (a | (b & c), {"s3://b/b", "file:///c"}, True),
        (AssetAlias("al") & a, {"s3://b/a", "s3://r"}, True),
        (AssetAlias("al") & a, {"s3://b/a"}, False),
    ],
)
def test_a_condition_holds_over_the_updated_assets(
    condition: AssetAll | AssetAny, updated: set[str], holds: bool
) -> None:
    assert evaluate(condition.as_condition(), updated, {"al": {"s3://r"}}) is holds


def test_bad_schedules_and_outlets_fail_the_dag_in_one_line() -> None:
    with pytest.raises(DagDefinitionError, match="a schedule list holds assets only"):
        DAG("mixed", schedule=[a, "@daily"])
    with pytest.raises(InvalidAsset, match="combines assets and aliases"):
        a & "s3://x"  # type: ignore[operator]
    with pytest.raises(InvalidAsset, match="AssetAlias needs a non-empty name"):
        AssetAlias("")
    with DAG("bad") as bad:
        task(lambda: None, task_id="t", outlets=["s3://x"])()
    with pytest.raises(InvalidAsset, match="outlets hold Asset and AssetAlias objects"):
        bad.structure()


def test_a_success_records_each_asset_outlet_and_each_asset_added_to_an_alias() -> None:
    outlets = [a.as_outlet(), AssetAlias("al").as_outlet()]
    sent = [
        {"uri": "s3://b/a", "extra": {"rows": 1}},
        {"uri": "s3://r", "name": "s3://r", "extra": {"via": 1}, "alias": "al"},
        {"uri": "s3://r2", "extra": {}, "alias": "not-an-outlet"},
    ]
    events = events_of_success(outlets, sent)
    assert [(e.uri, dict(e.extra), e.alias) for e in events] == [
        ("s3://b/a", {"rows": 1}, None),
        ("s3://r", {"via": 1}, "al"),
    ]
