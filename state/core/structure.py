"""A DAG's serialized structure as typed, frozen objects: parsed once per version hash.

The authoring API writes the structure as JSON (``tradewind.dag.DAG.structure``); everything
that reads it (the scheduler's passes, a supervisor's end, the CLI) reads these objects instead
of the dict, so each default lives here once and mypy sees the types. Keys this module does not
know are ignored: a newer authoring API may add some before the readers need them.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from functools import cached_property
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from state.core.models import DEFAULT_POOL, DagModel

DEFAULT_MAX_ACTIVE_TASKS = 16
DEFAULT_MAX_ACTIVE_RUNS = 16


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class MappedSource(_Frozen):
    """Where one mapped argument's items come from: an upstream task's XCom, or a literal."""

    task_id: str | None = None
    key: str = "return_value"
    length: int | None = None
    # XComArg.zip(): the parts side by side, as many items as the shortest (or the longest).
    zip: tuple[MappedSource, ...] = ()
    zip_longest: bool = False


class MappingSpec(_Frozen):
    """How a task maps over its input: a task instance per item, or one iterating them all."""

    kind: Literal["expand", "iterate"]
    batch_size: int | None = None
    sources: Mapping[str, MappedSource] = {}
    # Set for the tasks of a mapped task group: they map over the group's arguments.
    group: str | None = None

    @property
    def expands(self) -> bool:
        """Whether the task has several task instances (``.expand``, or ``.batch``)."""
        return self.kind == "expand" or self.batch_size is not None


class MarkerSpec(_Frozen):
    """An ``ExternalTaskMarker``'s target: a task of another DAG, at a logical date (templates,
    rendered with the marker's run when a clear reaches it: ``state.engine.marker_clear``)."""

    external_dag_id: str
    external_task_id: str
    logical_date: str
    recursion_depth: int = 10


class TaskSpec(_Frozen):
    """One task of the structure: its place in the graph and the options the store acts on."""

    upstream: tuple[str, ...] = ()
    downstream: tuple[str, ...] = ()
    trigger_rule: str = "all_success"
    retries: int = 0
    retry_delay_seconds: float = 0.0
    execution_timeout_seconds: float | None = None
    queue: str = "default"
    pool: str = DEFAULT_POOL
    runtime: bool = False
    mapping: MappingSpec | None = None
    # Retry waits grow by this factor per failed try (0: they do not), up to the cap.
    retry_exponential_backoff: float = 0.0
    max_retry_delay_seconds: float | None = None
    # For display (dags show, the UI): the task group, the id given, Airflow's labels.
    group: str | None = None
    label: str = ""
    display_name: str | None = None
    owner: str = "airflow"
    upstream_labels: Mapping[str, str] = {}
    doc_md: str | None = None
    # What a success updates: ``{"asset": uri, ...}`` or ``{"alias": name}`` (tradewind/assets.py).
    outlets: tuple[Mapping[str, Any], ...] = ()
    # Control flow: @task.branch / @task.short_circuit, and setup / teardown tasks.
    kind: Literal["task", "branch", "short_circuit"] = "task"
    ignore_downstream_trigger_rules: bool = True
    is_setup: bool = False
    is_teardown: bool = False
    on_failure_fail_dagrun: bool = False
    external_marker: MarkerSpec | None = None
    # Across runs (state/engine/past.py): wait for the previous run's try of this task (and of
    # its downstream); no task instance in a run whose logical date is after end_date.
    depends_on_past: bool = False
    wait_for_downstream: bool = False
    ignore_first_depends_on_past: bool = False
    end_date: str | None = None
    # Slots (tradewind/priority.py): the total weight, higher first for a slot; the slots of its
    # pool one instance takes; its instances queued or running at most, in the DAG and per run.
    priority_weight: int = 1
    pool_slots: int = 1
    max_active_tis_per_dag: int | None = None
    max_active_tis_per_dagrun: int | None = None

    @property
    def capped(self) -> bool:
        """Whether a try of the task takes other than one slot or has a cap of its own."""
        caps = (self.max_active_tis_per_dag, self.max_active_tis_per_dagrun)
        return self.pool_slots != 1 or caps != (None, None)

    @property
    def decides_run(self) -> bool:
        """Whether the task's state counts in the run's (a teardown's does not, by default)."""
        return not self.is_teardown or self.on_failure_fail_dagrun

    @property
    def max_tries(self) -> int:
        return self.retries + 1


class GroupSpec(_Frozen):
    """A task group, for display: its parent group and its own tasks."""

    parent: str | None = None
    label: str = ""
    tooltip: str = ""
    display_name: str | None = None
    ui_color: str | None = None
    ui_fgcolor: str | None = None
    tasks: tuple[str, ...] = ()
    mapped: bool = False


class ParamSpec(_Frozen):
    """A DAG parameter's JSON Schema (``tradewind.params``), for forms and validation."""

    schema_: Mapping[str, Any] = Field(default={}, alias="schema")
    has_default: bool = True


class DagStructure(_Frozen):
    """A whole DAG: its options and its tasks by id (in the order they were serialized)."""

    dag_id: str
    schedule: str | None = None
    # An asset condition (tradewind/assets.py) the DAG's runs wait on, instead of a time schedule.
    asset_condition: Mapping[str, Any] | None = None
    start_date: str | None = None
    catchup: bool = False
    max_active_tasks: int = DEFAULT_MAX_ACTIVE_TASKS
    max_active_runs: int = DEFAULT_MAX_ACTIVE_RUNS
    params: Mapping[str, Any] = {}
    param_specs: Mapping[str, ParamSpec] = {}
    tags: tuple[str, ...] = ()
    tasks: Mapping[str, TaskSpec] = {}
    groups: Mapping[str, GroupSpec] = {}
    description: str | None = None
    doc_md: str | None = None
    display_name: str | None = None
    owner_links: Mapping[str, str] = {}  # each owner's page (a URL or a mailto: link)
    # A PartitionedAssetTimetable's mappers (tradewind/partition_specs.py): runs per partition.
    partition_mappers: Mapping[str, Any] | None = None
    # A CronPartitionTimetable: each scheduled or backfilled run is the partition of its date.
    partitioned_by_cron: bool = False
    # A timetable object's stored form (tradewind/timetable_store.py), instead of ``schedule``.
    timetable: Mapping[str, Any] | None = None
    # The timezone a cron ``schedule`` is read in (the start date's), when not UTC.
    timezone: str = "UTC"
    # A run's life (state/engine/run_life.py): failed when running longer than the timeout; no
    # scheduled run after end_date; the first failure stops the rest of the run (fail_fast).
    dagrun_timeout_seconds: float | None = None
    end_date: str | None = None
    fail_fast: bool = False

    @cached_property
    def memo(self) -> dict[Any, Any]:
        """Answers derived from this structure alone, kept with it (``state.engine.end_plan``)."""
        return {}

    @property
    def schedule_summary(self) -> str | None:
        """The schedule as shown: its text, or a timetable object's summary; None: manual only."""
        if self.timetable is not None:
            summary = self.timetable.get("display", {}).get("summary")
            return str(summary or self.timetable.get("type"))
        return self.schedule

    @property
    def schedule_zone(self) -> str | None:
        """The timezone the schedule is read in, when it is not UTC (the pages name it)."""
        stored = self.timetable or {}
        zone = stored.get("timezone") or self.timezone  # a built-in timetable's, or a cron text's
        return zone if zone and zone != "UTC" and self.schedule_summary else None

    def upstream_first(self) -> list[str]:
        """The task ids, each after all its upstream ones, ties by id (kept in ``memo``).

        The stored structure's key order is not the authoring order everywhere (PostgreSQL's
        JSONB keeps an object's keys in its own order), so the order is derived from the graph.
        """
        if "upstream_first" not in self.memo:
            self.memo["upstream_first"] = _upstream_first(self.tasks)
        order: list[str] = self.memo["upstream_first"]
        return order

    @property
    def capped(self) -> bool:
        """Whether a task of the DAG takes other than one slot or has a cap of its own: an end
        then never hands its slot over in SQL, a pass counts what each try takes."""
        if "capped" not in self.memo:
            self.memo["capped"] = any(spec.capped for spec in self.tasks.values())
        capped: bool = self.memo["capped"]
        return capped

    def leaves(self) -> list[str]:
        """The tasks nothing depends on, in the structure's order."""
        return [task_id for task_id, spec in self.tasks.items() if not spec.downstream]


def _upstream_first(tasks: Mapping[str, TaskSpec]) -> list[str]:
    waiting = {task_id: len(set(spec.upstream) & set(tasks)) for task_id, spec in tasks.items()}
    ready = [task_id for task_id, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        task_id = heapq.heappop(ready)
        order.append(task_id)
        for child in tasks[task_id].downstream:
            if child in waiting:
                waiting[child] -= 1
                if waiting[child] == 0:
                    heapq.heappush(ready, child)
    return order + sorted(set(tasks) - set(order))  # a cycle cannot be stored, but be total


#: Parsed structures by version hash: a hash names one structure for good.
_PARSED: dict[str, DagStructure] = {}
_MAX_PARSED = 256


def parse_structure(raw: Mapping[str, Any], version_hash: str | None = None) -> DagStructure:
    """The typed form of ``raw``; with ``version_hash``, parsed once per hash in this process."""
    if version_hash is None:
        return DagStructure.model_validate(raw)
    parsed = _PARSED.get(version_hash)
    if parsed is None:
        if len(_PARSED) >= _MAX_PARSED:
            _PARSED.clear()
        parsed = _PARSED[version_hash] = DagStructure.model_validate(raw)
    return parsed


class _Stored(Protocol):
    """What ``structure_of`` reads of a stored DAG (``state.core.models.DagModel``)."""

    @property
    def structure(self) -> Mapping[str, Any]: ...

    @property
    def version_hash(self) -> str | None: ...


def structure_of(dag_model: _Stored) -> DagStructure:
    """The typed structure of a stored DAG, parsed once per version.

    A version already parsed is not read again: with the column deferred (``state.views.listing.
    get_dag``), a DAG of 5,000 tasks is not fetched and decoded from JSON on every request.
    """
    version = dag_model.version_hash
    parsed = _PARSED.get(version) if version is not None else None
    return parsed if parsed is not None else parse_structure(dag_model.structure, version)


def structures_of(session: Session, versions: Mapping[str, str | None]) -> dict[str, DagStructure]:
    """The structures of the DAGs ``versions`` names (DAG id -> version hash), each fetched only
    the first time this process sees its version: a loop over many DAGs reads their hashes alone.
    """
    missing = [dag_id for dag_id, version in versions.items() if version not in _PARSED]
    if missing:
        rows = session.execute(
            select(DagModel.version_hash, DagModel.structure).where(DagModel.dag_id.in_(missing))
        )
        for version, raw in rows:
            parse_structure(raw, version)
    return {
        dag_id: _PARSED[version]
        for dag_id, version in versions.items()
        if version is not None and version in _PARSED
    }
