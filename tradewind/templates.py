"""Jinja2 templates in a task's templated arguments, rendered in the task process before it runs.

What is templated, as in Airflow: a TaskFlow task's arguments and its ``templates_dict``, and a
classic operator's ``template_fields``. Strings are rendered with the try's context
(``{{ ds }}``, ``{{ params.x }}``, ``{{ ti.xcom_pull(...) }}``, ``{{ var.value.x }}``), in
Jinja's sandboxed environment; a string ending with one of ``templates_exts`` names a template
file, looked up in the DAG's ``template_searchpath`` and then beside the DAG file. Task results
(XComArgs) are resolved, never rendered again. With ``render_template_as_native_obj`` a template
gives the Python object it renders to (a list, a number) instead of its text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tradewind.exceptions import TradewindError
from tradewind.mapped_group import MappedArgument, group_resolver
from tradewind.mapping import KWARGS_LIST
from tradewind.xcom_arg import XComArg

if TYPE_CHECKING:
    import jinja2

Resolve = Callable[[Any], Any]  # an XComArg or a MappedArgument to its value
_MARKS = ("{{", "{%", "{#")


class TemplateError(TradewindError):
    """A template that cannot be read or rendered (syntax error, missing file)."""


def environment(dag: Any) -> jinja2.Environment:
    """The DAG's Jinja environment, made on first use (most tasks render nothing)."""
    cached: jinja2.Environment | None = getattr(dag, "_jinja_environment", None)
    if cached is not None:
        return cached
    import jinja2
    from jinja2.nativetypes import NativeCodeGenerator, NativeTemplate, native_concat
    from jinja2.sandbox import SandboxedEnvironment

    class NativeSandboxedEnvironment(SandboxedEnvironment):
        code_generator_class = NativeCodeGenerator
        concat = staticmethod(native_concat)  # type: ignore[assignment]
        template_class = NativeTemplate

    folders = [*dag.template_searchpath]
    if dag.fileloc:
        folders.append(str(Path(dag.fileloc).parent))
    kind = NativeSandboxedEnvironment if dag.render_template_as_native_obj else SandboxedEnvironment
    undefined = dag.template_undefined or jinja2.StrictUndefined
    built = kind(loader=jinja2.FileSystemLoader(folders), cache_size=0, undefined=undefined)
    built.globals.update(dag.user_defined_macros)
    built.filters.update(dag.user_defined_filters)
    dag._jinja_environment = built
    return built


def render_value(
    value: Any,
    context: dict[str, Any],
    dag: Any,
    resolve: Resolve,
    exts: Sequence[str] = (),
    where: str = "argument",
) -> Any:
    """``value`` with every string inside rendered and every XComArg resolved."""
    if isinstance(value, XComArg | MappedArgument):
        return resolve(value)
    if isinstance(value, str):
        return render_string(value, context, dag, exts, where)
    if isinstance(value, list | tuple):
        return type(value)(render_value(v, context, dag, resolve, exts, where) for v in value)
    if isinstance(value, dict):
        return {k: render_value(v, context, dag, resolve, exts, where) for k, v in value.items()}
    return value


def render_string(
    text: str, context: dict[str, Any], dag: Any, exts: Sequence[str] = (), where: str = "argument"
) -> Any:
    is_file = bool(exts) and text.endswith(tuple(exts))
    if not is_file and not any(mark in text for mark in _MARKS):
        return text
    import jinja2

    env = environment(dag)
    try:
        template = env.get_template(text) if is_file else env.from_string(text)
        return template.render(**context)
    except jinja2.TemplateSyntaxError as error:
        raise TemplateError(
            f"template syntax error in {where}: {error.message} (line {error.lineno})"
        ) from None
    except jinja2.TemplateNotFound as error:
        raise TemplateError(f"template file {error.name!r} of {where} not found") from None
    except jinja2.UndefinedError as error:
        raise TemplateError(f"template of {where}: {error.message}") from None


def kwargs_of_index(task: Any, context: dict[str, Any], resolve: Resolve) -> dict[str, Any]:
    """This map index's own arguments under ``.expand_kwargs``: its item of the list."""
    mapped = (task.mapping or {}).get("kwargs", {})
    if KWARGS_LIST not in mapped:
        return {}
    given = mapped[KWARGS_LIST]
    items = resolve(given) if isinstance(given, XComArg) else given
    item = render_value(list(items)[context["ti"].map_index], context, task.dag, resolve)
    if not isinstance(item, dict) or not all(isinstance(key, str) for key in item):
        raise TypeError(
            f"task {task.task_id}: .expand_kwargs() item {context['ti'].map_index} is a "
            f"{type(item).__name__}, not a dict of keyword arguments"
        )
    return item


def render_arguments(
    task: Any, context: dict[str, Any], resolve: Resolve
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A TaskFlow task's arguments rendered, its results resolved; ``templates_dict`` rendered
    into the context (the function gets it by naming a ``templates_dict`` parameter)."""
    exts = tuple(task.options.templates_exts or ())
    name = f"task {task.task_id}"
    resolve = group_resolver(task, context, resolve)
    args = render_value(task.args, context, task.dag, resolve, exts, name)
    kwargs = render_value(task.kwargs, context, task.dag, resolve, exts, name)
    kwargs.update(kwargs_of_index(task, context, resolve))
    if task.options.templates_dict is not None:
        where = f"{name} templates_dict"
        context["templates_dict"] = render_value(
            task.options.templates_dict, context, task.dag, resolve, exts, where
        )
    return args, kwargs
