"""Assets (Airflow 3's data-aware scheduling): ``Asset``, ``AssetAlias`` and their conditions.

An asset is named data a task updates (``outlets=[...]``); a DAG whose ``schedule`` is an asset,
a list of them, or an ``&`` / ``|`` expression over them runs when that condition holds over the
asset updates since its last asset-triggered run. What is stored is JSON only: a condition is
serialized here and evaluated by ``evaluate`` in the scheduler (``scheduler/asset_runs.py``)
without importing any DAG file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tradewind.exceptions import DagDefinitionError

#: The longest URI the store keeps (its ``asset.uri`` column).
MAX_URI_LENGTH = 1500
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


class InvalidAsset(DagDefinitionError):
    """An asset, alias or asset condition that cannot be stored or scheduled on."""


class BaseAsset:
    """What may stand in a ``schedule``: combined with ``&`` (all) and ``|`` (any)."""

    def __and__(self, other: BaseAsset) -> AssetAll:
        return AssetAll(self, _checked(other))

    def __or__(self, other: BaseAsset) -> AssetAny:
        return AssetAny(self, _checked(other))

    def as_condition(self) -> dict[str, Any]:
        raise NotImplementedError


def _checked(other: object) -> BaseAsset:
    if not isinstance(other, BaseAsset):
        raise InvalidAsset(f"an asset condition combines assets and aliases, got {other!r}")
    return other


@dataclass(frozen=True, eq=False)
class Asset(BaseAsset):
    """Named data: ``Asset("s3://bucket/key")``, ``Asset(name=..., uri=...)``.

    Given only one of them, the other takes its value, as Airflow 3 does. Two assets are the
    same asset when their URIs are (the store keys assets by URI).
    """

    name: str | None = None
    uri: str | None = None
    group: str = "asset"
    extra: Mapping[str, Any] = field(default_factory=dict)
    watchers: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        name, uri = self.name, self.uri
        if name is None and uri is None:
            raise InvalidAsset("Asset needs a name or a uri")
        object.__setattr__(self, "name", name if name is not None else uri)
        object.__setattr__(self, "uri", check_uri(uri if uri is not None else str(name)))
        object.__setattr__(self, "extra", dict(self.extra or {}))
        object.__setattr__(self, "watchers", tuple(self.watchers or ()))
        for watcher in self.watchers:
            if not isinstance(watcher, AssetWatcher):
                raise InvalidAsset(
                    f"Asset {self.name!r}: watchers holds AssetWatcher(name, trigger) only, "
                    f"got {watcher!r}"
                )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Asset) and other.uri == self.uri

    def __hash__(self) -> int:
        return hash(("asset", self.uri))

    def __repr__(self) -> str:
        return f"Asset(name={self.name!r}, uri={self.uri!r})"

    @property
    def key(self) -> str:
        assert self.uri is not None
        return self.uri

    def as_condition(self) -> dict[str, Any]:
        return {"asset": self.key}

    def as_outlet(self) -> dict[str, Any]:
        return {"asset": self.key, "name": self.name, "group": self.group, "extra": self.extra}

    @staticmethod
    def ref(*, name: str | None = None, uri: str | None = None) -> BaseAsset:
        """An asset named by its name (or URI) alone, defined elsewhere (``Asset.ref``)."""
        if uri is not None:
            return Asset(uri=uri)
        if not name:
            raise InvalidAsset("Asset.ref() needs a name or a uri")
        return AssetNameRef(name)


@dataclass(frozen=True)
class AssetNameRef(BaseAsset):
    """An asset known here by its name only: it holds when an asset of that name is updated."""

    name: str

    def as_condition(self) -> dict[str, Any]:
        return {"asset_name": self.name}


def check_uri(uri: str) -> str:
    """``uri`` if an asset may have it; otherwise ``InvalidAsset`` says why."""
    if not isinstance(uri, str) or not uri.strip():
        raise InvalidAsset(f"asset uri must be a non-empty string, got {uri!r}")
    if not uri.isascii() or any(char.isspace() for char in uri):
        raise InvalidAsset(f"invalid asset uri {uri!r}: ASCII without spaces only")
    if len(uri) > MAX_URI_LENGTH:
        raise InvalidAsset(f"invalid asset uri {uri[:40]!r}...: longer than {MAX_URI_LENGTH}")
    scheme = _SCHEME.match(uri)
    if scheme is not None and scheme.group(1).lower() == "airflow":
        raise InvalidAsset(f"invalid asset uri {uri!r}: the 'airflow' scheme is reserved")
    return uri


@dataclass(frozen=True)
class AssetAlias(BaseAsset):
    """A name a task resolves at run time to the assets it updates (``outlet_events[a].add``)."""

    name: str
    group: str = "asset"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidAsset(f"AssetAlias needs a non-empty name, got {self.name!r}")

    def as_condition(self) -> dict[str, Any]:
        return {"alias": self.name}

    def as_outlet(self) -> dict[str, Any]:
        return {"alias": self.name}


class _Combined(BaseAsset):
    kind = ""

    def __init__(self, *objects: BaseAsset) -> None:
        if not objects:
            raise InvalidAsset(f"Asset{self.kind.title()}() needs at least one asset")
        self.objects = tuple(_checked(item) for item in objects)

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self.objects!r}"

    def as_condition(self) -> dict[str, Any]:
        return {self.kind: [item.as_condition() for item in self.objects]}


class AssetAll(_Combined):
    """Every one of its parts updated: ``a & b``, or a list given as ``schedule``."""

    kind = "all"


class AssetAny(_Combined):
    """Any of its parts updated: ``a | b``."""

    kind = "any"


@dataclass(frozen=True)
class Metadata:
    """Yielded from a task: the extra of its event on ``asset`` (or through ``alias``)."""

    asset: Asset
    extra: Mapping[str, Any] = field(default_factory=dict)
    alias: AssetAlias | None = None


@dataclass(frozen=True)
class AssetWatcher:
    """``AssetWatcher(name, trigger)`` on an ``Asset``'s ``watchers``: the triggerer runs the
    trigger, and each event it yields is an event of the asset, so the DAGs scheduled on the
    asset run (docs/triggerer.md)."""

    name: str
    trigger: Any

    def __post_init__(self) -> None:
        from tradewind.triggers.base import BaseTrigger

        if not isinstance(self.name, str) or not self.name:
            raise InvalidAsset(f"AssetWatcher needs a name, got {self.name!r}")
        if not isinstance(self.trigger, BaseTrigger):
            raise InvalidAsset(
                f"AssetWatcher {self.name!r}: trigger must be a BaseTrigger (an event trigger), "
                f"got {type(self.trigger).__name__}"
            )

    def structure(self, asset: Asset) -> dict[str, Any]:
        from tradewind.triggers.base import serialized

        classpath, kwargs = serialized(self.trigger)
        return {
            "uri": asset.uri,
            "asset_name": asset.name,
            "name": self.name,
            "classpath": classpath,
            "kwargs": kwargs,
        }


def watchers_of(schedule: Any) -> list[dict[str, Any]]:
    """The stored watchers of the assets a ``schedule`` names (in order, each once)."""
    found: dict[tuple[str | None, str], dict[str, Any]] = {}

    def walk(item: Any) -> None:
        if isinstance(item, Asset):
            for watcher in item.watchers:
                found.setdefault((item.uri, watcher.name), watcher.structure(item))
        elif isinstance(item, _Combined):
            for part in item.objects:
                walk(part)
        elif isinstance(item, list | tuple):
            for part in item:
                walk(part)

    walk(schedule)
    return list(found.values())


def condition_of(schedule: Any) -> dict[str, Any] | None:
    """The stored condition of a ``schedule``; None when it is not about assets."""
    if isinstance(schedule, BaseAsset):
        return schedule.as_condition()
    if isinstance(schedule, list | tuple) and schedule:
        if all(isinstance(item, BaseAsset) for item in schedule):
            return AssetAll(*schedule).as_condition()
        odd = next(item for item in schedule if not isinstance(item, BaseAsset))
        raise InvalidAsset(f"a schedule list holds assets only, got {odd!r}")
    return None


def references(condition: Mapping[str, Any]) -> set[str]:
    """What a condition waits on, as ``asset:<uri>`` and ``alias:<name>`` strings."""
    if "asset" in condition:
        return {f"asset:{condition['asset']}"}
    if "alias" in condition:
        return {f"alias:{condition['alias']}"}
    if "asset_name" in condition:
        return {f"name:{condition['asset_name']}"}
    parts = condition.get("all") or condition.get("any") or []
    return set().union(*(references(part) for part in parts))


def evaluate(
    condition: Mapping[str, Any], updated: set[str], aliases: Mapping[str, set[str]]
) -> bool:
    """Whether ``condition`` holds when the asset URIs ``updated`` have new events (and the
    asset names, as ``name:<name>``, for ``Asset.ref(name=...)``).

    An alias holds when any asset it has resolved to (``aliases``: alias name -> URIs) is updated.
    """
    if "asset" in condition:
        return condition["asset"] in updated
    if "alias" in condition:
        return bool(aliases.get(condition["alias"], set()) & updated)
    if "asset_name" in condition:
        return f"name:{condition['asset_name']}" in updated
    if "all" in condition:
        return all(evaluate(part, updated, aliases) for part in condition["all"])
    return any(evaluate(part, updated, aliases) for part in condition["any"])


def outlets_structure(outlets: Iterable[Any] | None) -> list[dict[str, Any]]:
    """The stored form of a task's ``outlets`` (assets and aliases; anything else refused)."""
    stored = []
    for outlet in outlets or ():
        if not isinstance(outlet, Asset | AssetAlias):
            raise InvalidAsset(f"outlets hold Asset and AssetAlias objects, got {outlet!r}")
        stored.append(outlet.as_outlet())
    return stored
