"""Task arguments real DAGs set on every operator and ``@task``: ``on_execute_callback``,
``do_xcom_push`` and the documentation fields (``doc``, ``doc_md``, ``doc_rst``, ``doc_json``,
``doc_yaml``).

They live in ``TaskOptions``; this module checks them at load and says what each means where it
is used: the callbacks run in the task process before the task's work, as in Airflow (a callback
that raises is logged, the task still runs), and the documentation is kept with the task in the
one place a task's documentation is shown (its ``doc_md``), the other formats fenced as code.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import Any

from tradewind.exceptions import DagDefinitionError

#: The documentation fields besides ``doc_md``, and how each is shown in Markdown.
_FENCED = (("doc_rst", "rst"), ("doc", ""), ("doc_json", "json"), ("doc_yaml", "yaml"))


def check_task_options(options: Any) -> None:
    """Refuse a value of these arguments Airflow itself would not take."""
    if not isinstance(options.do_xcom_push, bool):
        raise DagDefinitionError(
            f"do_xcom_push must be True or False, got {options.do_xcom_push!r}"
        )
    callbacks(options.on_execute_callback, "on_execute_callback")
    for name in ("doc_md", *(field for field, _ in _FENCED)):
        value = getattr(options, name)
        if value is not None and not isinstance(value, str):
            raise DagDefinitionError(f"{name} must be a string, got {type(value).__name__}")


def callbacks(value: Any, name: str) -> list[Callable[..., Any]]:
    """A callback argument as a list: Airflow takes one callable or a list of them."""
    if value is None:
        return []
    listed = list(value) if isinstance(value, list | tuple) else [value]
    if not all(callable(each) for each in listed):
        raise DagDefinitionError(f"{name} must be a callable or a list of callables, got {value!r}")
    return listed


def run_execute_callbacks(options: Any, context: dict[str, Any]) -> None:
    """Call the task's ``on_execute_callback``\\ (s) with the context, before its work."""
    for callback in callbacks(options.on_execute_callback, "on_execute_callback"):
        try:
            callback(context)
        except Exception:
            # As in Airflow: a broken callback is logged; the task runs all the same.
            print("on_execute_callback failed:", file=sys.stderr)
            traceback.print_exc()


def task_doc_md(options: Any) -> str | None:
    """The task's documentation as Markdown: ``doc_md``, then each other format given, fenced."""
    parts = [options.doc_md] if options.doc_md else []
    for name, language in _FENCED:
        text = getattr(options, name)
        if text:
            parts.append(f"```{language}\n{text.strip()}\n```")
    return "\n\n".join(parts) or None


def check_owner_links(dag_id: str, links: Any) -> dict[str, str]:
    """``owner_links``: each owner's page, an http(s) URL or a ``mailto:`` link, as in Airflow."""
    if links is None:
        return {}
    if not isinstance(links, dict):
        raise DagDefinitionError(
            f"DAG {dag_id}: owner_links must be a dict of owner to link, got {links!r}"
        )
    for owner, link in links.items():
        if not isinstance(link, str) or not link.startswith(("http://", "https://", "mailto:")):
            raise DagDefinitionError(
                f"DAG {dag_id}: owner_links[{owner!r}] must be an http(s) URL or a mailto: "
                f"link, got {link!r}"
            )
    return dict(links)
