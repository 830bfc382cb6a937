"""XCom backends: one contract run against every backend, then what object storage adds.

Object storage runs against ``file://`` and a real S3 API (moto's server on loopback).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.worker.xcom_support import Moto, address, s3_backend
from tradewind.connections import Connection
from tradewind.settings import Settings, SettingsError
from worker.xcom import (
    SqlXComBackend,
    StubXComBackend,
    XComBackend,
    XComBackendError,
    backend_class,
    make_backend,
    runs_in_helper,
)
from worker.xcom.object_storage import REFERENCE_KEY, ObjectStorageXComBackend

THRESHOLD = 64
SMALL = {"n": 1, "s": "é", "xs": [1.5, None, True]}
LARGE = {"rows": [{"i": i, "text": "x" * 20} for i in range(40)]}


@pytest.fixture(params=["sql", "stub", "file", "s3"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[XComBackend]:
    if request.param == "sql":
        yield SqlXComBackend()
    elif request.param == "stub":
        yield StubXComBackend()
    elif request.param == "file":
        yield ObjectStorageXComBackend(f"file://{tmp_path}/xcoms", THRESHOLD)
    else:
        yield s3_backend(request.getfixturevalue("moto"), THRESHOLD)


def roundtrip(backend: XComBackend, value: Any, key: str = "k") -> Any:
    # Rows travel as JSON text (the SQL column, a frame): make sure the row survives that.
    row = json.loads(json.dumps(backend.store(address(key), value)))
    return backend.load(address(key), row)


# --- the contract -------------------------------------------------------------------------


def test_small_and_large_values_come_back_equal(backend: XComBackend) -> None:
    assert roundtrip(backend, SMALL) == SMALL
    assert roundtrip(backend, LARGE) == LARGE
    assert roundtrip(backend, "plain string") == "plain string"


def test_load_many_keeps_the_order_of_its_rows(backend: XComBackend) -> None:
    values = [LARGE, 1, {"i": 2}, {**LARGE, "tag": 3}, "four"]
    rows = [
        (address("k", map_index=i), backend.store(address("k", map_index=i), v))
        for i, v in enumerate(values)
    ]
    assert backend.load_many(rows) == values
    assert backend.load_many(list(reversed(rows))) == list(reversed(values))


def test_purge_twice_is_harmless(backend: XComBackend) -> None:
    row = backend.store(address(), LARGE)
    backend.purge(address(), row)
    backend.purge(address(), row)


def test_a_purged_reference_no_longer_loads(backend: XComBackend) -> None:
    if isinstance(backend, SqlXComBackend):
        pytest.skip("the SQL backend keeps the value in the row: purging is deleting the row")
    row = backend.store(address(), LARGE)
    backend.purge(address(), row)
    with pytest.raises(XComBackendError, match="missing"):
        backend.load(address(), row)


# --- object storage -----------------------------------------------------------------------


@pytest.fixture(params=["file", "s3"])
def objects(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStorageXComBackend:
    if request.param == "file":
        return ObjectStorageXComBackend(f"file://{tmp_path}/xcoms", THRESHOLD)
    return s3_backend(request.getfixturevalue("moto"), THRESHOLD)


def test_values_over_the_threshold_go_to_a_deterministic_path(
    objects: ObjectStorageXComBackend,
) -> None:
    where = address("result", task_id="extract", map_index=3)
    row = objects.store(where, LARGE)
    expected = f"{objects.url}/d/manual__2024-01-01T00:00:00+00:00/extract/3/result"
    assert row == {REFERENCE_KEY: expected, "bytes": len(json.dumps(LARGE, separators=(",", ":")))}
    assert json.loads(objects.fs.cat_file(objects.fs._strip_protocol(expected))) == LARGE
    # Below the threshold the value stays in the row.
    assert objects.store(where, SMALL) == SMALL


def test_a_missing_object_is_an_error_naming_its_path_never_the_path(
    objects: ObjectStorageXComBackend,
) -> None:
    row = objects.store(address(), LARGE)
    objects.fs.rm_file(objects.fs._strip_protocol(row[REFERENCE_KEY]))
    with pytest.raises(XComBackendError) as caught:
        objects.load(address(), row)
    assert row[REFERENCE_KEY] in str(caught.value)
    assert "is missing" in str(caught.value)
    with pytest.raises(XComBackendError, match="is missing"):
        objects.load_many(
            [(address("other"), objects.store(address("other"), LARGE)), (address(), row)]
        )


def test_an_unreadable_object_is_an_error_naming_its_path(
    objects: ObjectStorageXComBackend,
) -> None:
    row = objects.store(address(), LARGE)
    objects.fs.pipe_file(objects.fs._strip_protocol(row[REFERENCE_KEY]), b"\x00not json")
    with pytest.raises(XComBackendError, match="is not JSON") as caught:
        objects.load(address(), row)
    assert row[REFERENCE_KEY] in str(caught.value)


def test_a_value_shaped_like_a_reference_is_stored_as_an_object(
    objects: ObjectStorageXComBackend,
) -> None:
    sneaky = {REFERENCE_KEY: "s3://elsewhere/secret"}
    row = objects.store(address(), sneaky)
    assert row[REFERENCE_KEY] != sneaky[REFERENCE_KEY]
    assert objects.load(address(), row) == sneaky


def test_a_slash_in_a_run_id_does_not_make_a_deeper_path(tmp_path: Path) -> None:
    objects = ObjectStorageXComBackend(f"file://{tmp_path}", 0)
    row = objects.store(address().__class__("d", "a/b", "t", -1, "k"), [1])
    assert row[REFERENCE_KEY] == f"file://{tmp_path}/d/a%2Fb/t/-1/k"


def test_a_value_the_store_cannot_take_fails_with_the_url(moto: Moto) -> None:
    objects = ObjectStorageXComBackend("s3://no-such-bucket/x", 0, moto.options())
    with pytest.raises(XComBackendError, match=r"could not store .* at s3://no-such-bucket/x/d/"):
        objects.store(address(), LARGE)


class FakeLookups:
    def __init__(self, connections: dict[str, Connection]) -> None:
        self.connections = connections
        self.asked: list[str] = []

    def get_connection(self, conn_id: str) -> Connection:
        self.asked.append(conn_id)
        return self.connections[conn_id]

    def get_variable(self, key: str) -> str | None:
        return None


def test_credentials_and_endpoint_come_from_the_named_connection(moto: Moto) -> None:
    bucket = moto.new_bucket()
    connection = Connection(
        "store", "aws", login="testing", password="testing", extra={"endpoint_url": moto.endpoint}
    )
    lookups = FakeLookups({"store": connection})
    settings = Settings(
        xcom_backend="object_storage",
        object_storage_url=f"s3://{bucket}/x",
        object_storage_conn_id="store",
        xcom_object_threshold_bytes=8,
    )
    made = make_backend(settings, lookups)
    assert lookups.asked == ["store"]
    row = made.store(address(), LARGE)
    assert row[REFERENCE_KEY].startswith(f"s3://{bucket}/x/d/")
    listed = moto.client().list_objects_v2(Bucket=bucket)["Contents"]
    assert [o["Key"] for o in listed] == ["x/d/manual__2024-01-01T00:00:00+00:00/t/-1/return_value"]


def test_object_storage_without_a_url_is_a_settings_error() -> None:
    with pytest.raises(SettingsError, match="TRADEWIND_OBJECT_STORAGE_URL"):
        make_backend(Settings(xcom_backend="object_storage"), FakeLookups({}))


# --- naming a backend ---------------------------------------------------------------------


def test_built_in_names_and_dotted_paths_resolve() -> None:
    assert backend_class("sql") is SqlXComBackend
    assert backend_class("stub") is StubXComBackend
    assert backend_class("object_storage") is ObjectStorageXComBackend
    assert backend_class("worker.xcom.stub.StubXComBackend") is StubXComBackend
    assert backend_class("worker.xcom.stub:StubXComBackend") is StubXComBackend
    assert not runs_in_helper(SqlXComBackend)
    assert runs_in_helper(ObjectStorageXComBackend)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("no_such_package.backends.Mine", "no_such_package.backends does not import"),
        ("worker.xcom.stub.Missing", "worker.xcom.stub has no 'Missing'"),
        ("json.dumps", "json.dumps is not an XCom backend"),
        ("tests.worker.xcom_support.NOT_A_BACKEND", "is not an XCom backend"),
        ("plain", "use sql, object_storage, stub, or a dotted path"),
    ],
)
def test_a_name_that_is_no_backend_is_a_clear_settings_error(name: str, message: str) -> None:
    with pytest.raises(SettingsError, match="TRADEWIND_XCOM_BACKEND") as caught:
        backend_class(name)
    assert message in str(caught.value)
