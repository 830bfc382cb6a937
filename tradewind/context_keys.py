"""The context keys beyond the try's own ids: ``macros``, what is read of other rows on demand
(``prev_*_success``, ``expanded_ti_count``, ``triggering_asset_events``), and Airflow 2's date
keys (``execution_date``, ``next_ds``, ``prev_ds``, ``yesterday_ds``...).

The keys read from the store are lazy: each is a proxy that asks the supervisor (one
``GetRunFacts`` for all of them, once per try) the first time it is used, so a try that reads
none of them costs nothing more. As in Airflow, such a value is a proxy: compare it with ``==``,
not ``is None``.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

import lazy_object_proxy

from tradewind import macros
from tradewind.airflow2_names import AIRFLOW2_KEYS
from tradewind.asset_events import AssetEventView
from tradewind.assets import Asset, AssetAlias, InvalidAsset

#: The previous successful run's dates, by context key.
PREV_SUCCESS_KEYS = {
    "prev_start_date_success": "start_date",
    "prev_end_date_success": "end_date",
    "prev_data_interval_start_success": "data_interval_start",
    "prev_data_interval_end_success": "data_interval_end",
}


class FactsClient(Protocol):
    """The supervisor client's ``run_facts``: ``GetRunFacts``'s answer as a dict."""

    def run_facts(self) -> Mapping[str, Any]: ...


def context_keys(details: Any, client: FactsClient) -> dict[str, Any]:
    """The keys this module adds to a try's context (``details``: the ``TaskDetails``)."""
    facts = _once(client.run_facts)
    keys: dict[str, Any] = {"macros": macros, **airflow2_keys(details)}
    for key, field in PREV_SUCCESS_KEYS.items():
        keys[key] = _lazy(functools.partial(_prev_success, facts, field))
    keys["expanded_ti_count"] = _lazy(lambda: facts()["expanded_ti_count"])
    keys["triggering_asset_events"] = _lazy(
        lambda: TriggeringAssetEvents(facts()["triggering_asset_events"])
    )
    return keys


def _once(ask: Callable[[], Mapping[str, Any]]) -> Callable[[], Mapping[str, Any]]:
    """``ask``, called at most once (functools.cache costs more to make than a try uses)."""
    answer: list[Mapping[str, Any]] = []

    def facts() -> Mapping[str, Any]:
        if not answer:
            answer.append(ask())
        return answer[0]

    return facts


def _prev_success(facts: Callable[[], Mapping[str, Any]], field: str) -> dt.datetime | None:
    return _date((facts()["prev_success"] or {}).get(field))


def _lazy(make: Callable[[], Any]) -> Any:
    return lazy_object_proxy.Proxy(make)


def unwrap(value: Any) -> Any:
    """The value a lazy key stands for (a task returning ``expanded_ti_count`` returns an int,
    which JSON can hold; the proxy around it, JSON cannot)."""
    return value.__wrapped__ if type(value) is lazy_object_proxy.Proxy else value


def _date(text: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(text) if text else None


def airflow2_keys(details: Any) -> dict[str, Any]:
    """Airflow 2's date keys. As Airflow 2 had them: for a scheduled run the next date is the
    interval's end and the previous one an interval earlier; for a run made by hand both are
    the logical date itself."""
    logical = details.logical_date
    if logical is None:
        return dict.fromkeys(AIRFLOW2_KEYS)
    start, end = details.data_interval_start, details.data_interval_end
    if details.run_type in ("manual", "test") or start is None or end is None:
        following = previous = logical
    else:
        following, previous = end, logical - (end - start)
    keys: dict[str, Any] = {
        "execution_date": logical,
        "next_execution_date": following,
        "prev_execution_date": previous,
    }
    for name, when in (
        ("next", following),
        ("prev", previous),
        ("yesterday", logical - dt.timedelta(days=1)),
        ("tomorrow", logical + dt.timedelta(days=1)),
    ):
        ds = when.date().isoformat()  # a fifth of strftime's cost, on every try
        keys[f"{name}_ds"] = ds
        keys[f"{name}_ds_nodash"] = ds.replace("-", "")
    return keys


class TriggeringAssetEvents(Mapping[Any, list[AssetEventView]]):
    """``triggering_asset_events``: the asset events that created this run (an asset run),
    by asset, oldest first; keyed by ``Asset``, ``AssetAlias`` (the events through it), or URI."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._assets: dict[str, Asset] = {}
        self._events: dict[str, list[AssetEventView]] = {}
        for row in rows:
            fields = {key: value for key, value in row.items() if key != "name"}
            view = AssetEventView(**fields)
            self._assets.setdefault(row["uri"], Asset(name=row.get("name"), uri=row["uri"]))
            self._events.setdefault(row["uri"], []).append(view)
            if row.get("source_alias"):
                self._events.setdefault(f"alias:{row['source_alias']}", []).append(view)

    def __getitem__(self, key: Any) -> list[AssetEventView]:
        if isinstance(key, AssetAlias):
            return self._events[f"alias:{key.name}"]
        if isinstance(key, Asset):
            return self._events[str(key.uri)]
        if isinstance(key, str):
            return self._events[key]
        raise InvalidAsset(f"triggering_asset_events is keyed by Asset or AssetAlias, got {key!r}")

    def __iter__(self) -> Iterator[Asset]:
        return iter(self._assets.values())

    def __len__(self) -> int:
        return len(self._assets)
