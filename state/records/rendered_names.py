"""A mapped task instance's name: its ``map_index_template`` as its try rendered it (Airflow's
``rendered_map_index``), shown where the map index is (runs show, the UI, the API)."""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.orm import Session

from state.core import Fence, TaskInstance, assert_fence

#: Longer names are cut here: the column's width.
MAX_NAME_CHARS = 250


def set_rendered_map_index(session: Session, fence: Fence, name: str) -> None:
    """Record the name, fenced by the try: a try given up names nothing."""
    assert_fence(session, fence)
    session.execute(
        update(TaskInstance)
        .where(TaskInstance.id == fence.ti_id)
        .values(rendered_map_index=name[:MAX_NAME_CHARS])
        .execution_options(synchronize_session=False)
    )
