"""``ObjectStoragePath`` on real filesystems: ``memory://``, ``file://`` and S3 (moto's server on a
loopback port), and its JSON form across XComs. The connection named in a URL is read inside a
running task only: ``tests/cli/test_object_storage_dags.py`` runs DAGs that use one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.worker.xcom_support import Moto, running_moto
from tradewind import ObjectStoragePath
from tradewind.connections import Connection
from tradewind.storage_options import storage_options
from tradewind.xcom_values import decode, encode


@pytest.fixture(scope="module")
def moto() -> Iterator[Moto]:
    with running_moto() as server:
        yield server


def memory_path(*parts: str) -> ObjectStoragePath:
    return ObjectStoragePath(f"memory://tw-{uuid.uuid4().hex[:8]}", *parts)


def test_a_url_names_its_connection_bucket_and_key_and_derived_paths_keep_them() -> None:
    base = ObjectStoragePath("s3://aws_default@my-bucket/")
    data = base / "raw" / "day.parquet"

    assert (data.protocol, data.conn_id, data.bucket, data.key) == (
        "s3",
        "aws_default",
        "my-bucket",
        "raw/day.parquet",
    )
    assert data.path == "my-bucket/raw/day.parquet"
    assert str(data) == "s3://aws_default@my-bucket/raw/day.parquet"
    assert ObjectStoragePath(str(data)) == data
    assert data.parent.conn_id == "aws_default"
    assert ObjectStoragePath("s3://my-bucket/k", conn_id="other").conn_id == "other"
    assert ObjectStoragePath(data, "more").key == "raw/day.parquet/more"
    assert ObjectStoragePath("s3://my-bucket/k") != ObjectStoragePath("s3://x@my-bucket/k")


def test_making_a_path_reads_no_connection_and_using_one_outside_a_task_says_why() -> None:
    path = ObjectStoragePath("s3://aws_default@my-bucket/key")  # as a DAG file does at parse

    with pytest.raises(RuntimeError, match="the connection 'aws_default' is read inside a running"):
        path.exists()


def test_read_write_list_and_delete_in_memory() -> None:
    base = memory_path()
    text, data = base / "d" / "a.txt", base / "d" / "b.bin"
    text.parent.mkdir(parents=True, exist_ok=True)

    text.write_text("hello")
    with data.open("wb") as out:
        out.write(b"\x00\x01")

    assert text.read_text() == "hello" and data.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in (base / "d").iterdir()) == ["a.txt", "b.bin"]
    assert [p.name for p in base.glob("**/*.txt")] == ["a.txt"]
    assert text.stat().st_size == 5 and text.stat()["protocol"] == "memory"
    text.unlink()
    assert not text.exists()
    with pytest.raises(FileNotFoundError):
        text.unlink()


def test_a_missing_object_raises_and_never_reads_as_its_path() -> None:
    missing = memory_path("nothing.txt")

    with pytest.raises(FileNotFoundError):
        missing.read_text()
    with pytest.raises(FileNotFoundError):
        missing.stat()
    with pytest.raises(FileNotFoundError, match="does not exist: nothing to copy"):
        missing.copy(memory_path("copy.txt"))


def test_copy_and_move_between_memory_and_a_local_folder(tmp_path: Path) -> None:
    source = memory_path("a.txt")
    source.write_text("across stores")

    local = source.copy(ObjectStoragePath(f"file://{tmp_path}/sub/a.txt"))
    into = source.copy(f"file://{tmp_path}/into/")  # a trailing "/": a folder, name kept
    moved = local.move(memory_path("moved.txt"))

    assert (tmp_path / "into" / "a.txt").read_text() == "across stores"
    assert into.key.endswith("into/a.txt")
    assert moved.read_text() == "across stores" and not local.exists()
    assert source.exists()


def test_a_folder_copies_recursively_only_when_asked(tmp_path: Path) -> None:
    folder = memory_path("folder")
    (folder / "x" / "1.txt").write_text("one")
    (folder / "2.txt").write_text("two")
    target = ObjectStoragePath(f"file://{tmp_path}/copy")

    with pytest.raises(IsADirectoryError, match="recursive=True"):
        folder.copy(target)
    folder.copy(target, recursive=True)

    assert (tmp_path / "copy" / "x" / "1.txt").read_text() == "one"
    assert (tmp_path / "copy" / "2.txt").read_text() == "two"


def test_s3_operations_against_a_real_s3_api(moto: Moto) -> None:
    base = ObjectStoragePath(f"s3://tw-{uuid.uuid4().hex[:12]}/", **moto.options())
    base.mkdir(exist_ok=True)  # makes the bucket
    report = base / "reports" / "r.txt"

    report.write_text("on s3")
    copied = report.copy(memory_path("r.txt"))
    back = copied.move(base / "back.txt")

    assert report.read_text() == "on s3" and report.exists()
    assert [p.key for p in (base / "reports").iterdir()] == ["reports/r.txt"]
    assert sorted(p.key for p in base.glob("**/*.txt")) == ["back.txt", "reports/r.txt"]
    assert report.stat().st_size == 5 and report.stat().st_mtime > 0
    assert back.read_text() == "on s3" and not copied.exists()
    with pytest.raises(FileNotFoundError):
        (base / "absent.txt").read_bytes()
    report.unlink()
    assert not report.exists()


def test_a_path_crosses_an_xcom_as_json_and_comes_back_a_path() -> None:
    path = ObjectStoragePath("s3://aws_default@bucket/k.csv")
    value = {"paths": [path, ObjectStoragePath("memory://m/x")], "n": 1}

    encoded = encode(value)
    form = dict(encoded["paths"][0])

    assert form == {
        "__tradewind_type__": "ObjectStoragePath",
        "version": 1,
        "url": "s3://bucket/k.csv",
        "conn_id": "aws_default",
        "storage_options": {},
    }
    decoded = decode(encoded)  # in place: a value fresh from JSON
    assert decoded == value and decoded["paths"][0].conn_id == "aws_default"
    assert decode([1, {"a": "b"}]) == [1, {"a": "b"}]
    with pytest.raises(ValueError, match="version 2: this Tradewind reads version 1"):
        decode({**form, "version": 2})


def test_a_connection_gives_s3_its_keys_endpoint_and_region() -> None:
    connection = Connection(
        "aws",
        login="AKIA",
        password="s3cret",
        extra={"endpoint_url": "http://127.0.0.1:9000", "region_name": "eu-west-1"},
    )

    assert storage_options("s3", connection) == {
        "key": "AKIA",
        "secret": "s3cret",
        "endpoint_url": "http://127.0.0.1:9000",
        "client_kwargs": {"region_name": "eu-west-1"},
    }
    assert storage_options("memory", connection) == {}
