"""A mapped task instance's name: its ``map_index_template`` rendered once its try has run.

Rendered after the task, with the context as the task left it (a task may set
``context["name"] = ...`` for its template to use, as in Airflow), whatever the try's end; the
supervisor records it (``SetRenderedMapIndex``) and the CLI, the UI and the API show it beside the
map index. A template that fails to render names nothing: a line on stderr, the try's end
unchanged.
"""

from __future__ import annotations

import sys
from typing import Any

from tradewind.task import Task
from tradewind.templates import TemplateError, render_string


def send_rendered_name(client: Any, task: Task, context: dict[str, Any]) -> None:
    """Render and send the name of a mapped task instance that has a ``map_index_template``."""
    template = task.options.map_index_template
    if not template or context["ti"].map_index < 0:
        return
    try:
        name = str(render_string(template, context, task.dag, (), "map_index_template"))
    except (TemplateError, TypeError, ValueError) as error:
        print(f"map_index_template not rendered: {error}", file=sys.stderr)
        return
    client.set_rendered_map_index(name)
