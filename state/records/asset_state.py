"""The asset state store (Airflow 3.3's asset-scoped state): string key -> JSON value per asset.

Unlike a task's state store, it outlives runs and is shared by every DAG that names the asset:
a producer keeps a watermark there, its consumer reads it. Writes are fenced by the writing try
(``assert_fence``): a try the scheduler gave up on cannot move a watermark.
"""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from state.core import Asset, AssetStateValue, Fence, assert_fence, utcnow
from state.records.assets import OutletEvent, asset_ids


def read_asset_state(session: Session, uri: str, key: str) -> str | None:
    """The JSON text of ``key`` in the state of asset ``uri``; None when it has none."""
    query = (
        select(AssetStateValue.value)
        .join(Asset, Asset.id == AssetStateValue.asset_id)
        .where(Asset.uri == uri, AssetStateValue.key == key)
    )
    return session.scalar(query)


def write_asset_state(session: Session, fence: Fence, uri: str, key: str, text: str) -> None:
    """Set ``key`` of asset ``uri``'s state (the asset is created if new)."""
    assert_fence(session, fence)
    asset_id = asset_ids(session, [OutletEvent(uri)])[uri]
    _delete(session, asset_id, key)
    session.add(AssetStateValue(asset_id=asset_id, key=key, value=text, updated_at=utcnow()))


def delete_asset_state(session: Session, fence: Fence, uri: str, key: str | None) -> None:
    """Delete ``key`` of asset ``uri``'s state, or all of it when ``key`` is None."""
    assert_fence(session, fence)
    asset_id = session.scalar(select(Asset.id).where(Asset.uri == uri))
    if asset_id is not None:
        _delete(session, asset_id, key)


def _delete(session: Session, asset_id: int, key: str | None) -> None:
    statement = delete(AssetStateValue).where(AssetStateValue.asset_id == asset_id)
    if key is not None:
        statement = statement.where(AssetStateValue.key == key)
    session.execute(statement)
