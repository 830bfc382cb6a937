"""Which ``airflow.*`` module holds which of Tradewind's names.

Each row is one module of Airflow 3.3 (or one Airflow 2 module Airflow 3 dropped): its names and
where each lives in Tradewind (``"module:attribute"``). A row may delegate the names it does not
list to a Tradewind module (``airflow.sdk`` and everything below it is ``tradewind``). ``old``
marks what Airflow 2 spelled: still accepted, with a warning naming the Airflow 3 spelling.
The packages on the way to a row (``airflow.providers.standard``...) are rows without names.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Target:
    path: str  # "tradewind.module:attribute"
    airflow3: str | None = None  # set for an Airflow 2 name: what Airflow 3 calls it


@dataclass(frozen=True)
class ModuleRow:
    names: dict[str, Target] = field(default_factory=dict)
    delegate: str | None = None  # a Tradewind module answering the names not listed
    airflow3: str | None = None  # set for an Airflow 2 module: the Airflow 3 module


def old(path: str, airflow3: str) -> Target:
    return Target(path, airflow3)


def _row(
    delegate: str | None = None, airflow3: str | None = None, **names: str | Target
) -> ModuleRow:
    targets = {n: t if isinstance(t, Target) else Target(t) for n, t in names.items()}
    return ModuleRow(targets, delegate, airflow3)


#: The Airflow version Tradewind answers as (``airflow.__version__``): providers choose their
#: Airflow 3 code paths by it, and ``tradewind providers install`` checks their ranges against it.
AIRFLOW_VERSION = "3.3.2"

_STD = "airflow.providers.standard"
_TW_PROV = "tradewind.providers"
_TW_STD = "tradewind.standard"

#: The names of the standard provider, by its module (Airflow 3.3's home for the classic operators).
_STANDARD: dict[str, dict[str, str]] = {
    "operators.python": {
        "PythonOperator": f"{_TW_STD}.python:PythonOperator",
        "BranchPythonOperator": f"{_TW_STD}.python:BranchPythonOperator",
        "ShortCircuitOperator": f"{_TW_STD}.python:ShortCircuitOperator",
        "PythonVirtualenvOperator": f"{_TW_STD}.python_venv:PythonVirtualenvOperator",
        "ExternalPythonOperator": f"{_TW_STD}.python_venv:ExternalPythonOperator",
        "BranchPythonVirtualenvOperator": f"{_TW_STD}.python_venv:BranchPythonVirtualenvOperator",
        "BranchExternalPythonOperator": f"{_TW_STD}.python_venv:BranchExternalPythonOperator",
        "get_current_context": "tradewind:get_current_context",
    },
    "operators.bash": {"BashOperator": "tradewind:BashOperator"},
    "operators.empty": {"EmptyOperator": f"{_TW_STD}.empty:EmptyOperator"},
    "operators.smooth": {"SmoothOperator": f"{_TW_STD}.empty:SmoothOperator"},
    "operators.latest_only": {"LatestOnlyOperator": f"{_TW_STD}.latest_only:LatestOnlyOperator"},
    "operators.datetime": {
        "BranchDateTimeOperator": f"{_TW_STD}.datetime_branch:BranchDateTimeOperator",
        "target_times_as_dates": f"{_TW_STD}.datetime_branch:target_times_as_dates",
    },
    "operators.weekday": {
        "BranchDayOfWeekOperator": f"{_TW_STD}.datetime_branch:BranchDayOfWeekOperator",
    },
    "operators.branch": {"BaseBranchOperator": f"{_TW_STD}.branch:BaseBranchOperator"},
    "operators.hitl": {
        "HITLOperator": f"{_TW_STD}.hitl:HITLOperator",
        "ApprovalOperator": f"{_TW_STD}.hitl:ApprovalOperator",
        "HITLBranchOperator": f"{_TW_STD}.hitl:HITLBranchOperator",
        "HITLEntryOperator": f"{_TW_STD}.hitl:HITLEntryOperator",
    },
    "operators.trigger_dagrun": {
        "TriggerDagRunOperator": f"{_TW_STD}.trigger_dagrun:TriggerDagRunOperator",
        "DagIsPaused": f"{_TW_STD}.trigger_dagrun:DagIsPaused",
        "XCOM_RUN_ID": f"{_TW_STD}.trigger_dagrun:XCOM_RUN_ID",
    },
    "sensors.bash": {"BashSensor": f"{_TW_STD}.command_sensors:BashSensor"},
    "sensors.python": {"PythonSensor": f"{_TW_STD}.command_sensors:PythonSensor"},
    "sensors.filesystem": {"FileSensor": f"{_TW_STD}.file_sensor:FileSensor"},
    "sensors.date_time": {
        "DateTimeSensor": f"{_TW_STD}.time_sensors:DateTimeSensor",
        "DateTimeSensorAsync": f"{_TW_STD}.time_sensors:DateTimeSensorAsync",
    },
    "sensors.time": {
        "TimeSensor": f"{_TW_STD}.time_sensors:TimeSensor",
        "TimeSensorAsync": f"{_TW_STD}.time_sensors:TimeSensorAsync",
    },
    "sensors.time_delta": {
        "TimeDeltaSensor": f"{_TW_STD}.time_sensors:TimeDeltaSensor",
        "TimeDeltaSensorAsync": f"{_TW_STD}.time_sensors:TimeDeltaSensorAsync",
        "WaitSensor": f"{_TW_STD}.time_sensors:WaitSensor",
    },
    "sensors.weekday": {"DayOfWeekSensor": f"{_TW_STD}.time_sensors:DayOfWeekSensor"},
    "sensors.external_task": {
        "ExternalTaskSensor": f"{_TW_STD}.external_task:ExternalTaskSensor",
        "ExternalTaskMarker": f"{_TW_STD}.external_task:ExternalTaskMarker",
    },
    "utils.weekday": {"WeekDay": f"{_TW_STD}.weekday:WeekDay"},
    "triggers.temporal": {
        "DateTimeTrigger": "tradewind.triggers.temporal:DateTimeTrigger",
        "TimeDeltaTrigger": "tradewind.triggers.temporal:TimeDeltaTrigger",
    },
    "triggers.file": {
        "FileTrigger": "tradewind.triggers.file:FileTrigger",
        "FileDeleteTrigger": "tradewind.triggers.file:FileDeleteTrigger",
        "DirectoryFileDeleteTrigger": "tradewind.triggers.file:DirectoryFileDeleteTrigger",
    },
    "triggers.external_task": {
        "WorkflowTrigger": "tradewind.triggers.external_task:WorkflowTrigger",
        "DagStateTrigger": "tradewind.triggers.external_task:DagStateTrigger",
    },
    "exceptions": {
        name: f"{_TW_STD}.external_task:{name}"
        for name in (
            "ExternalDagNotFoundError",
            "ExternalTaskNotFoundError",
            "ExternalTaskGroupNotFoundError",
            "ExternalDagFailedError",
            "ExternalTaskFailedError",
            "ExternalTaskGroupFailedError",
        )
    }
    | {
        "AirflowExternalTaskSensorException": f"{_TW_STD}.external_task:ExternalTaskSensorError",
        "DuplicateStateError": f"{_TW_STD}.external_task:DuplicateStateError",
    }
    | {
        name: f"{_TW_STD}.hitl:{name}"
        for name in ("HITLRejectException", "HITLTimeoutError", "HITLTriggerEventError")
    },
    **{
        f"decorators.{module}": {name: f"{_TW_STD}.decorators:{name}"}
        for module, name in (
            ("python", "python_task"),
            ("bash", "bash_task"),
            ("sensor", "sensor_task"),
            ("python_virtualenv", "virtualenv_task"),
            ("external_python", "external_python_task"),
            ("branch_python", "branch_task"),
            ("short_circuit", "short_circuit_task"),
            ("branch_virtualenv", "branch_virtualenv_task"),
            ("branch_external_python", "branch_external_python_task"),
        )
    },
}

#: Airflow 3.3's deprecated homes of the standard provider's names, and Airflow 2's.
_MOVED: dict[str, str] = {
    # module below airflow.operators / airflow.sensors -> the provider's module
    "operators.python": "operators.python",
    "operators.bash": "operators.bash",
    "operators.empty": "operators.empty",
    "operators.latest_only": "operators.latest_only",
    "operators.datetime": "operators.datetime",
    "operators.weekday": "operators.weekday",
    "operators.trigger_dagrun": "operators.trigger_dagrun",
    "operators.branch": "operators.branch",
    "operators.smooth": "operators.smooth",
    "sensors.bash": "sensors.bash",
    "sensors.python": "sensors.python",
    "sensors.filesystem": "sensors.filesystem",
    "sensors.date_time": "sensors.date_time",
    "sensors.time_sensor": "sensors.time",
    "sensors.time_delta": "sensors.time_delta",
    "sensors.weekday": "sensors.weekday",
    "sensors.external_task": "sensors.external_task",
    # Airflow 2 only
    "operators.python_operator": "operators.python",
    "operators.bash_operator": "operators.bash",
    "operators.latest_only_operator": "operators.latest_only",
    "operators.dagrun_operator": "operators.trigger_dagrun",
    "operators.branch_operator": "operators.branch",
    "operators.weekday_operator": "operators.weekday",
    "operators.datetime_operator": "operators.datetime",
    "sensors.external_task_sensor": "sensors.external_task",
    "sensors.time_delta_sensor": "sensors.time_delta",
    "sensors.date_time_sensor": "sensors.date_time",
    "sensors.weekday_sensor": "sensors.weekday",
    "sensors.bash_sensor": "sensors.bash",
    "sensors.python_sensor": "sensors.python",
}

_BASE_TIMETABLE_NAMES = ("Timetable", "DagRunInfo", "DataInterval", "TimeRestriction")
_DUMMY = f"{_TW_STD}.empty:DummyOperator"  # notes its Airflow 2 spelling itself
_DATASET = old("tradewind:Asset", "Asset (airflow.sdk)")
_CORE: dict[str, ModuleRow] = {
    "airflow": _row(
        DAG="tradewind:DAG",
        Asset="tradewind:Asset",
        XComArg="tradewind.xcom_arg:XComArg",
        AirflowException="tradewind.exceptions:AirflowException",
        Dataset=_DATASET,
    ),
    "airflow.decorators": _row(delegate="tradewind"),
    "airflow.models": _row(
        DAG="tradewind:DAG",
        BaseOperator="tradewind:BaseOperator",
        Variable="tradewind:Variable",
        Param="tradewind:Param",
        Connection="tradewind:Connection",
        XComArg="tradewind.xcom_arg:XComArg",
        DagRun="tradewind.runtime_context:DagRunInfo",
        TaskInstance="tradewind.context:RuntimeTaskInstance",
    ),
    "airflow.models.dag": _row(DAG="tradewind:DAG"),
    "airflow.models.baseoperator": _row(
        BaseOperator="tradewind:BaseOperator",
        chain="tradewind:chain",
        cross_downstream="tradewind:cross_downstream",
    ),
    "airflow.models.param": _row(Param="tradewind:Param"),
    "airflow.models.variable": _row(Variable="tradewind:Variable"),
    "airflow.models.connection": _row(Connection="tradewind:Connection"),
    "airflow.models.xcom_arg": _row(XComArg="tradewind.xcom_arg:XComArg"),
    "airflow.models.dagrun": _row(DagRun="tradewind.runtime_context:DagRunInfo"),
    "airflow.models.taskinstance": _row(
        TaskInstance="tradewind.context:RuntimeTaskInstance",
        TaskInstanceKey=f"{_TW_PROV}.compat:TaskInstanceKey",
    ),
    "airflow.exceptions": _row(
        delegate="tradewind.exceptions",
        AirflowTimetableInvalid="tradewind.timetable_base:InvalidTimetable",
        TaskDeferred="tradewind.triggers.base:TaskDeferred",
    ),
    "airflow.providers.common.messaging.triggers.msg_queue": _row(
        MessageQueueTrigger="tradewind.triggers.queues:MessageQueueTrigger",
    ),
    "airflow.triggers.base": _row(
        BaseTrigger="tradewind.triggers.base:BaseTrigger",
        BaseEventTrigger="tradewind.triggers.base:BaseEventTrigger",
        TriggerEvent="tradewind.triggers.base:TriggerEvent",
        StartTriggerArgs=f"{_TW_PROV}.compat:StartTriggerArgs",
    ),
    "airflow.triggers.temporal": _row(
        airflow3=f"{_STD}.triggers.temporal",
        DateTimeTrigger="tradewind.triggers.temporal:DateTimeTrigger",
        TimeDeltaTrigger="tradewind.triggers.temporal:TimeDeltaTrigger",
    ),
    "airflow.triggers.file": _row(
        airflow3=f"{_STD}.triggers.file",
        FileTrigger="tradewind.triggers.file:FileTrigger",
    ),
    "airflow.triggers.external_task": _row(
        airflow3=f"{_STD}.triggers.external_task",
        WorkflowTrigger="tradewind.triggers.external_task:WorkflowTrigger",
        DagStateTrigger="tradewind.triggers.external_task:DagStateTrigger",
    ),
    "airflow.utils.trigger_rule": _row(TriggerRule="tradewind:TriggerRule"),
    "airflow.utils.task_group": _row(TaskGroup="tradewind:TaskGroup"),
    "airflow.utils.edgemodifier": _row(
        Label="tradewind:Label", EdgeModifier="tradewind:EdgeModifier"
    ),
    "airflow.utils.helpers": _row(
        chain=old("tradewind:chain", "airflow.sdk.chain"),
        cross_downstream=old("tradewind:cross_downstream", "airflow.sdk.cross_downstream"),
        **{n: f"{_TW_PROV}.compat:{n}" for n in ("merge_dicts", "prune_dict")},
        **{n: f"{_TW_PROV}.compat:{n}" for n in ("exactly_one", "at_most_one", "chunks")},
        **{n: f"{_TW_PROV}.compat:{n}" for n in ("is_container", "as_flattened_list")},
        convert_camel_to_snake=f"{_TW_PROV}.compat:convert_camel_to_snake",
        validate_key=f"{_TW_PROV}.compat:validate_key",
    ),
    "airflow.models.taskinstancekey": _row(TaskInstanceKey=f"{_TW_PROV}.compat:TaskInstanceKey"),
    "airflow.utils.operator_helpers": _row(determine_kwargs=f"{_TW_PROV}.compat:determine_kwargs"),
    "airflow.utils.yaml": _row(delegate="yaml"),
    "airflow.utils.platform": _row(getuser=f"{_TW_PROV}.compat:getuser"),
    "airflow.utils.process_utils": _row(patch_environ=f"{_TW_PROV}.compat:patch_environ"),
    "airflow.utils.deprecation_tools": _row(
        add_deprecated_classes=f"{_TW_PROV}.compat:add_deprecated_classes"
    ),
    "airflow.models.baseoperatorlink": _row(BaseOperatorLink=f"{_TW_PROV}.compat:BaseOperatorLink"),
    "airflow.utils.strings": _row(to_boolean=f"{_TW_PROV}.compat:to_boolean"),
    **{
        module: _row(timeout=f"{_TW_PROV}.compat:timeout")
        for module in ("airflow.utils.timeout", "airflow.sdk.execution_time.timeout")
    },
    "airflow.settings": _row(
        AIRFLOW_HOME=f"{_TW_PROV}.compat:AIRFLOW_HOME",
        pod_mutation_hook=f"{_TW_PROV}.compat:pod_mutation_hook",
    ),
    "airflow.notifications.basenotifier": _row(BaseNotifier="tradewind.notifier:BaseNotifier"),
    "airflow.utils.hashlib_wrapper": _row(md5=f"{_TW_PROV}.compat:md5"),
    "airflow.utils.dates": _row(
        days_ago=old("tradewind.timezone:days_ago", "pendulum.today('UTC').add(days=-N)"),
    ),
    "airflow.utils.timezone": _row(delegate="tradewind.timezone"),
    "airflow.utils.state": _row(delegate="tradewind.states"),
    "airflow.utils.context": _row(Context="tradewind.context:Context"),
    "airflow.utils.weekday": _row(WeekDay=f"{_TW_STD}.weekday:WeekDay"),
    "airflow.hooks.base": _row(BaseHook="tradewind.hooks:BaseHook"),
    "airflow.hooks.base_hook": _row(
        airflow3="airflow.sdk (BaseHook)", BaseHook="tradewind.hooks:BaseHook"
    ),
    "airflow.utils.decorators": _row(
        apply_defaults=old(
            "tradewind.airflow2_arguments:apply_defaults",
            "nothing: default_args apply by themselves",
        ),
    ),
    "airflow.datasets": _row(
        Dataset=_DATASET,
        DatasetAlias=old("tradewind:AssetAlias", "AssetAlias (airflow.sdk)"),
        DatasetAll=old("tradewind:AssetAll", "AssetAll (airflow.sdk)"),
        DatasetAny=old("tradewind:AssetAny", "AssetAny (airflow.sdk)"),
    ),
    "airflow.sensors.base": _row(
        BaseSensorOperator="tradewind:BaseSensorOperator",
        PokeReturnValue="tradewind:PokeReturnValue",
    ),
    "airflow.sensors.base_sensor_operator": _row(
        airflow3="airflow.sdk (BaseSensorOperator)",
        BaseSensorOperator="tradewind:BaseSensorOperator",
    ),
    "airflow.operators.dummy": _row(airflow3=f"{_STD}.operators.empty", DummyOperator=_DUMMY),
    "airflow.operators.dummy_operator": _row(
        airflow3=f"{_STD}.operators.empty", DummyOperator=_DUMMY
    ),
    "airflow.utils.email": _row(
        send_email="tradewind.emails:send_email",
        get_email_address_list="tradewind.emails:get_email_address_list",
        build_mime_message="tradewind.emails:build_mime_message",
    ),
    "airflow.operators.email": _row(
        airflow3="airflow.providers.smtp.operators.smtp",
        EmailOperator="tradewind.standard.email:EmailOperator",
    ),
    "airflow.operators.email_operator": _row(
        airflow3="airflow.providers.smtp.operators.smtp",
        EmailOperator="tradewind.standard.email:EmailOperator",
    ),
    "airflow.providers.smtp.operators.smtp": _row(
        EmailOperator="tradewind.standard.email:EmailOperator"
    ),
    "airflow.macros": _row(delegate="tradewind.macros"),
    "airflow.timetables.base": _row(
        **{n: f"tradewind.timetable_base:{n}" for n in _BASE_TIMETABLE_NAMES}
    ),
    "airflow.timetables.trigger": _row(
        CronTriggerTimetable="tradewind.timetable_trigger:CronTriggerTimetable",
        DeltaTriggerTimetable="tradewind.timetable_trigger:DeltaTriggerTimetable",
        MultipleCronTriggerTimetable="tradewind.timetable_trigger:MultipleCronTriggerTimetable",
    ),
    "airflow.timetables.interval": _row(
        CronDataIntervalTimetable="tradewind.timetable_interval:CronDataIntervalTimetable",
        DeltaDataIntervalTimetable="tradewind.timetable_interval:DeltaDataIntervalTimetable",
    ),
    "airflow.timetables.events": _row(EventsTimetable="tradewind.timetable_simple:EventsTimetable"),
    "airflow.timetables.assets": _row(
        AssetOrTimeSchedule="tradewind.timetable_simple:AssetOrTimeSchedule"
    ),
    "airflow.timetables.simple": _row(
        NullTimetable="tradewind.timetable_simple:NullTimetable",
        OnceTimetable="tradewind.timetable_simple:OnceTimetable",
        ContinuousTimetable="tradewind.timetable_simple:ContinuousTimetable",
    ),
    "airflow.task.priority_strategy": _row(
        PriorityWeightStrategy="tradewind.priority:PriorityWeightStrategy"
    ),
    "airflow.task.weight_rule": _row(WeightRule="tradewind.priority:WeightRule"),
    "airflow.utils.weight_rule": _row(WeightRule="tradewind.priority:WeightRule"),
    "airflow.configuration": _row(conf="tradewind.airflow_config:conf"),
    "airflow.example_dags": _row(),  # the DAGs folder (finder.py)
    "airflow.plugins_manager": _row(AirflowPlugin="tradewind.plugins:AirflowPlugin"),
    "airflow.utils.log.logging_mixin": _row(LoggingMixin="tradewind.logging_mixin:LoggingMixin"),
    "airflow.utils.module_loading": _row(
        import_string=f"{_TW_PROV}.compat:import_string",
        qualname=f"{_TW_PROV}.compat:qualname",
        iter_namespace=f"{_TW_PROV}.compat:iter_namespace",
    ),
    "airflow.sdk.module_loading": _row(
        import_string=f"{_TW_PROV}.compat:import_string",
        qualname=f"{_TW_PROV}.compat:qualname",
        iter_namespace=f"{_TW_PROV}.compat:iter_namespace",
    ),
    "airflow.utils.types": _row(
        NOTSET=f"{_TW_PROV}.compat:NOTSET",
        ArgNotSet=f"{_TW_PROV}.compat:ArgNotSet",
        DagRunType=f"{_TW_PROV}.compat:DagRunType",
    ),
    "airflow.sdk.definitions._internal.types": _row(
        NOTSET=f"{_TW_PROV}.compat:NOTSET",
        ArgNotSet=f"{_TW_PROV}.compat:ArgNotSet",
        is_arg_set=f"{_TW_PROV}.compat:is_arg_set",
    ),
    **{
        module: _row(
            XCOM_RETURN_KEY=f"{_TW_PROV}.compat:XCOM_RETURN_KEY", XCom=f"{_TW_PROV}.compat:XCom"
        )
        for module in ("airflow.models.xcom", "airflow.sdk.execution_time.xcom")
    },
    "airflow.providers_manager": _row(
        ProvidersManager=f"{_TW_PROV}.registry:ProvidersManager",
    ),
    **{
        module: _row(
            mask_secret=f"{_TW_PROV}.compat:mask_secret", redact=f"{_TW_PROV}.compat:redact"
        )
        for module in (
            "airflow.sdk.log",
            "airflow.sdk.execution_time.secrets_masker",
            "airflow.utils.log.secrets_masker",
        )
    },
    **{
        module: _row(
            **{
                n: f"{_TW_PROV}.compat:{n}"
                for n in ("NoOpCollector", "HookLineageCollector", "get_hook_lineage_collector")
            }
        )
        for module in ("airflow.sdk.lineage", "airflow.lineage.hook")
    },
    "airflow.version": _row(version=f"{_TW_PROV}.compat:AIRFLOW_VERSION"),
    # Served by the installed common-compat provider when there is one (finder.py).
    "airflow.providers.common.compat.sdk": _row(
        delegate="tradewind",
        timezone="tradewind.timezone",
        Context="tradewind.context:Context",
    ),
}


def _standard_rows() -> dict[str, ModuleRow]:
    rows = {f"{_STD}.{module}": _row(**names) for module, names in _STANDARD.items()}
    for moved, home in _MOVED.items():
        names = dict(_STANDARD[home])
        if home == "operators.empty":
            names["DummyOperator"] = _DUMMY
        rows[f"airflow.{moved}"] = _row(airflow3=f"{_STD}.{home}", **names)
    return rows


def _with_packages(rows: dict[str, ModuleRow]) -> dict[str, ModuleRow]:
    """``rows`` and every package on the way to one of them, as an empty row."""
    complete = dict(rows)
    for name in rows:
        parts = name.split(".")
        for depth in range(1, len(parts)):
            complete.setdefault(".".join(parts[:depth]), ModuleRow())
    return complete


#: ``airflow.sdk``'s public modules: each answers with Tradewind's whole authoring API.
_SDK_MODULES = [
    "api",
    "api.datamodels",
    "api.datamodels._generated",
    "bases",
    "bases.branch",
    "bases.decorator",
    "bases.hook",
    "bases.notifier",
    "bases.operator",
    "bases.operatorlink",
    "bases.sensor",
    "bases.skipmixin",
    "bases.timetable",
    "bases.xcom",
    "configuration",
    "definitions",
    "definitions.asset",
    "definitions.asset.decorators",
    "definitions.asset.metadata",
    "definitions.connection",
    "definitions.context",
    "definitions.dag",
    "definitions.decorators",
    "definitions.decorators.setup_teardown",
    "definitions.decorators.task_group",
    "definitions.edges",
    "definitions.mappedoperator",
    "definitions.param",
    "definitions.partition_mappers",
    "definitions.partition_mappers.allowed_key",
    "definitions.partition_mappers.base",
    "definitions.partition_mappers.fixed_key",
    "definitions.partition_mappers.identity",
    "definitions.partition_mappers.product",
    "definitions.partition_mappers.temporal",
    "definitions.partition_mappers.wait_policy",
    "definitions.partition_mappers.window",
    "definitions.retry_policy",
    "definitions.taskgroup",
    "definitions.template",
    "definitions.timetables",
    "definitions.timetables.assets",
    "definitions.timetables.events",
    "definitions.timetables.interval",
    "definitions.timetables.simple",
    "definitions.timetables.trigger",
    "definitions.variable",
    "definitions.xcom_arg",
    "exceptions",
    "execution_time",
    "execution_time.context",
    "execution_time.macros",
    "io",
    "io.path",
    "state",
    "timezone",
    "types",
]
_SDK = _row(
    delegate="tradewind",
    SkipMixin=f"{_TW_PROV}.compat:SkipMixin",
    poke_mode_only=f"{_TW_PROV}.compat:poke_mode_only",
    determine_kwargs=f"{_TW_PROV}.compat:determine_kwargs",
    is_async_callable=f"{_TW_PROV}.compat:is_async_callable",
    BaseNotifier="tradewind.notifier:BaseNotifier",
    BaseOperatorLink=f"{_TW_PROV}.compat:BaseOperatorLink",
    LoggingMixin="tradewind.logging_mixin:LoggingMixin",
    XComArg="tradewind.xcom_arg:XComArg",
    Context="tradewind.context:Context",
    BaseHook="tradewind.hooks:BaseHook",
    BaseBranchOperator=f"{_TW_STD}.branch:BaseBranchOperator",
    BaseTrigger="tradewind.triggers.base:BaseTrigger",
    TriggerEvent="tradewind.triggers.base:TriggerEvent",
    TaskDeferred="tradewind.triggers.base:TaskDeferred",
    TaskAwaitingInput="tradewind.exceptions:TaskAwaitingInput",
    TaskInstanceState="tradewind.states:TaskInstanceState",
    DagRunState="tradewind.states:DagRunState",
    timezone="tradewind.timezone",
)

ROWS: dict[str, ModuleRow] = _with_packages(
    {**_standard_rows(), **_CORE, **{f"airflow.sdk.{m}": _SDK for m in _SDK_MODULES}}
)
ROWS["airflow.sdk"] = _SDK
ROWS["airflow.sdk.execution_time.macros"] = _row(delegate="tradewind.macros")


def row_of(fullname: str) -> ModuleRow | None:
    """The row of the module ``fullname``, if it is one of the Airflow modules Tradewind has."""
    return ROWS.get(fullname)
