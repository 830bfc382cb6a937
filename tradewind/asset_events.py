"""The task side of assets: ``outlet_events`` and ``inlet_events`` in the context.

``outlet_events[asset].extra`` is the extra of the event a success records for that outlet;
``outlet_events[alias].add(asset, extra=...)`` resolves an alias to an asset and records an event
on it; ``yield Metadata(asset, extra)`` from the task does the same. What the task set goes to its
supervisor with its success (``SucceedTask.asset_events``), which records the events with the
try's end. ``inlet_events[asset]`` asks the supervisor for the asset's events (``GetAssetEvents``).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from tradewind.assets import Asset, AssetAlias, InvalidAsset, Metadata
from tradewind.partitions import run_partition_key


@dataclass
class OutletEventAccessor:
    """What one outlet's events will carry: its ``extra``, and for an alias the assets added."""

    key: Asset | AssetAlias
    extra: dict[str, Any] = field(default_factory=dict)
    added: list[tuple[Asset, dict[str, Any]]] = field(default_factory=list)
    partition_keys: list[str] = field(default_factory=list)

    def add_partitions(self, keys: str | list[str]) -> None:
        """The partitions this success wrote: one event per key (a key given twice is one)."""
        for key in [keys] if isinstance(keys, str) else list(keys):
            if not isinstance(key, str) or not key:
                raise InvalidAsset(f"a partition key is a non-empty string, got {key!r}")
            if key not in self.partition_keys:
                self.partition_keys.append(key)

    def add(self, asset: Asset, extra: Mapping[str, Any] | None = None) -> None:
        if not isinstance(self.key, AssetAlias):
            raise InvalidAsset(f"add() resolves an AssetAlias; {self.key!r} is an asset")
        if not isinstance(asset, Asset):
            raise InvalidAsset(f"an alias resolves to an Asset, got {asset!r}")
        self.added.append((asset, dict(extra or {})))


class OutletEventAccessors(Mapping[Any, OutletEventAccessor]):
    """``outlet_events``: one accessor per asset or alias, made when first asked for."""

    def __init__(self, outlets: tuple[Any, ...] = ()) -> None:
        self._outlets = outlets
        self._accessors: dict[Asset | AssetAlias, OutletEventAccessor] = {}

    def __getitem__(self, key: Any) -> OutletEventAccessor:
        if isinstance(key, str):  # Airflow accepts an asset's URI, or a name
            key = next((o for o in self._outlets if getattr(o, "uri", None) == key), Asset(key))
        if not isinstance(key, Asset | AssetAlias):
            raise InvalidAsset(f"outlet_events is keyed by Asset or AssetAlias, got {key!r}")
        if isinstance(key, AssetAlias) and key not in self._outlets:
            # Its events would be dropped: the supervisor records aliases of outlets only.
            raise InvalidAsset(f"unknown alias {key.name!r}: it is not among the task's outlets")
        if key not in self._accessors:
            self._accessors[key] = OutletEventAccessor(key)
        return self._accessors[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._accessors)

    def __len__(self) -> int:
        return len(self._accessors)

    def items_to_send(self) -> list[dict[str, Any]]:
        """What the supervisor needs: extras of assets, and the assets added to aliases."""
        sent: list[dict[str, Any]] = []
        for key, accessor in self._accessors.items():
            if isinstance(key, Asset):
                if accessor.extra or accessor.partition_keys:
                    item = {"uri": key.uri, "name": key.name, "extra": accessor.extra}
                    sent.append({**item, "partition_keys": accessor.partition_keys})
                continue
            for asset, extra in accessor.added:
                item = {"uri": asset.uri, "name": asset.name, "group": asset.group}
                sent.append({**item, "extra": extra, "alias": key.name})
        return sent


def take_metadata(result: Any, outlet_events: OutletEventAccessors) -> Any:
    """Run a generator task to its end, each ``Metadata`` it yields kept as an event's extra."""
    if not inspect.isgenerator(result):
        return result
    for item in result:
        if not isinstance(item, Metadata):
            raise InvalidAsset(f"a task yields Metadata(asset, extra) only, got {item!r}")
        if item.alias is not None:
            outlet_events[item.alias].add(item.asset, extra=item.extra)
        else:
            outlet_events[item.asset].extra.update(item.extra)
    return None


class EventReader(Protocol):
    def asset_events(self, uri: str) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class AssetEventView:
    """One event as a task reads it in ``inlet_events[asset]``."""

    uri: str
    extra: Mapping[str, Any]
    timestamp: Any
    source_dag_id: str | None = None
    source_run_id: str | None = None
    source_task_id: str | None = None
    source_map_index: int = -1
    source_alias: str | None = None
    partition_key: str | None = None

    @property
    def asset(self) -> Asset:
        return Asset(uri=self.uri)


class InletEventAccessors(Mapping[Any, list[AssetEventView]]):
    """``inlet_events``: an asset's events, oldest first, read from the store when asked for."""

    def __init__(self, reader: EventReader, inlets: tuple[Any, ...] = ()) -> None:
        self._reader, self._inlets = reader, inlets

    def __getitem__(self, key: Any) -> list[AssetEventView]:
        if isinstance(key, AssetAlias):
            rows = self._reader.asset_events(f"alias:{key.name}")
        elif isinstance(key, Asset):
            rows = self._reader.asset_events(str(key.uri))
        else:
            raise InvalidAsset(f"inlet_events is keyed by Asset or AssetAlias, got {key!r}")
        return [AssetEventView(**row) for row in reversed(rows)]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._inlets)

    def __len__(self) -> int:
        return len(self._inlets)


class AssetStateClient(Protocol):
    """What the task's channel to its supervisor offers (``worker/task_runner/runner.py``)."""

    def get_asset_state(self, uri: str, key: str) -> tuple[bool, Any]: ...

    def set_asset_state(self, uri: str, key: str, value: Any) -> None: ...

    def delete_asset_state(self, uri: str, key: str | None) -> None: ...


class AssetStateStore:
    """One asset's state store: ``get(key, default=...)``, ``set``, ``delete``, ``clear``."""

    def __init__(self, client: AssetStateClient, uri: str) -> None:
        self._client, self.uri = client, uri

    def get(self, key: str, default: Any = None) -> Any:
        found, value = self._client.get_asset_state(self.uri, key)
        return value if found else default

    def set(self, key: str, value: Any) -> None:
        self._client.set_asset_state(self.uri, key, value)

    def delete(self, key: str) -> None:
        self._client.delete_asset_state(self.uri, key)

    def clear(self) -> None:
        self._client.delete_asset_state(self.uri, None)


class AssetStateStoreAccessors:
    """``asset_state_store``: ``asset_state_store[asset]`` is that asset's state store."""

    def __init__(self, client: AssetStateClient) -> None:
        self._client = client

    def __getitem__(self, key: Any) -> AssetStateStore:
        if not isinstance(key, Asset):
            raise InvalidAsset(f"asset_state_store is keyed by Asset, got {key!r}")
        return AssetStateStore(self._client, str(key.uri))


def asset_context(context: Mapping[str, Any], dag: Any, task: Any, client: Any) -> dict[str, Any]:
    """The asset keys of a try's context: ``outlet_events``, ``inlet_events``,
    ``asset_state_store``, and the partition the run is (``dag_run.partition_key``,
    ``partition_key``), which its asset outlets' events carry: a partitioned DAG's run's stored
    key, or a ``CronPartitionTimetable`` DAG's scheduled run's logical date."""
    outlets, inlets = tuple(task.options.outlets), tuple(task.options.inlets)
    keys: dict[str, Any] = {
        "outlet_events": OutletEventAccessors(outlets),
        "inlet_events": InletEventAccessors(client, inlets),
        "asset_state_store": AssetStateStoreAccessors(client),
    }
    dag_run = context["dag_run"]
    key = dag_run.partition_key
    if key is None:
        key = run_partition_key(dag.schedule, dag_run.run_type, dag_run.logical_date)
        if key is not None:
            keys["dag_run"] = dataclasses.replace(
                dag_run, partition_key=key, partition_date=dag_run.logical_date
            )
    if key is not None:
        keys["partition_key"] = key
        for outlet in outlets:
            if isinstance(outlet, Asset):
                keys["outlet_events"][outlet].add_partitions(key)
    return keys
