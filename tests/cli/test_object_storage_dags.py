"""``ObjectStoragePath`` in DAGs run by ``tradewind dags test`` (real task processes, the SQL store)
against a real S3 API (moto's server on a loopback port): the connection named in the URL gives
the credentials, a path returned by one task reaches the next as a path, a missing object fails.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator

import pytest

from tests.worker.xcom_support import Moto, running_moto

from .conftest import CliEnv

RunCli = Callable[..., subprocess.CompletedProcess[str]]

OBJECT_DAGS = """
from tradewind import ObjectStoragePath, dag, task

base = ObjectStoragePath("s3://s3_test@{bucket}/")  # at parse time: no connection read yet


@task
def write() -> ObjectStoragePath:
    base.mkdir(exist_ok=True)  # makes the bucket, as Airflow's tutorial does
    path = base / "reports" / "day.txt"
    with path.open("wb") as file:
        file.write(b"written by write")
    return path


@task
def read(path: ObjectStoragePath) -> str:
    print("read got", type(path).__name__, path.conn_id, path.bucket, path.key)
    text = path.read_text()
    print("read text:", text)
    # What the tutorial hands duckdb: the filesystem, with the connection's credentials.
    print("through fs:", path.protocol, path.fs.cat_file(path.path).decode())
    return text


@task
def copy_out(path: ObjectStoragePath) -> list:
    kept = path.copy("s3://s3_test@{bucket}/kept/")  # a folder: the file keeps its name
    local = path.copy(ObjectStoragePath("file://{folder}/day.txt"))
    keyword = ObjectStoragePath("s3://{bucket}/reports/day.txt", conn_id="s3_test")
    print("by keyword:", keyword.read_text())
    return [kept, local]


@task
def show(paths: list) -> None:
    for path in paths:
        print("copied:", path, path.read_text())


@task
def named(name: str) -> ObjectStoragePath:
    path = ObjectStoragePath("s3://s3_test@{bucket}/items") / name
    path.write_text(name)
    return path


@task
def read_all(paths: list) -> None:
    print("items:", [(type(p).__name__, p.read_text()) for p in paths])


@task
def read_missing(path: ObjectStoragePath) -> str:
    return (path.parent / "absent.txt").read_text()


@task
def unknown_connection() -> bool:
    return ObjectStoragePath("s3://nobody@{bucket}/x").exists()


@dag(dag_id="objects_unknown_connection")
def objects_unknown_connection():
    unknown_connection()


@dag(dag_id="objects_pass")
def objects_pass():
    written = write()
    read(written)
    show(copy_out(written))
    read_all(named.iterate(name=["a", "b"]))  # through the iterable task's checkpoints too


@dag(dag_id="objects_missing")
def objects_missing():
    read_missing(write())


objects_pass()
objects_missing()
objects_unknown_connection()
"""


@pytest.fixture(scope="module")
def moto() -> Iterator[Moto]:
    with running_moto() as server:
        yield server


@pytest.fixture
def objects_env(env: CliEnv, run_cli: RunCli, moto: Moto) -> CliEnv:
    bucket = f"tw-{uuid.uuid4().hex[:12]}"
    folder = env.home.parent / "local"
    source = OBJECT_DAGS.format(bucket=bucket, folder=folder)
    (env.dags / "objects.py").write_text(source)
    extra = json.dumps({"endpoint_url": moto.endpoint})
    added = run_cli(
        "connections", "add", "s3_test", "--conn-type", "aws",
        "--login", "testing", "--password", "testing", "--extra", extra,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    return env


def output_of(done: subprocess.CompletedProcess[str]) -> str:
    return done.stdout + done.stderr


@pytest.mark.parametrize("backend", ["sql", "object_storage"])
def test_a_path_written_by_one_task_is_read_by_the_next_through_its_xcom(
    objects_env: CliEnv, run_cli: RunCli, backend: str
) -> None:
    # With the object-storage backend and no threshold, every XCom is an object of its own.
    xcoms = {
        "TRADEWIND_XCOM_BACKEND": backend,
        "TRADEWIND_OBJECT_STORAGE_URL": f"file://{objects_env.home}/xcoms",
        "TRADEWIND_XCOM_OBJECT_THRESHOLD_BYTES": "0",
    }
    done = run_cli("dags", "test", "objects_pass", extra_env=xcoms, timeout=180)
    output = output_of(done)

    assert done.returncode == 0, output
    assert "read got ObjectStoragePath s3_test tw-" in output
    assert "reports/day.txt" in output
    assert "read text: written by write" in output
    assert "through fs: s3 written by write" in output
    assert "copied: s3://s3_test@tw-" in output and "/kept/day.txt written by write" in output
    assert f"copied: file://{objects_env.home.parent}/local/day.txt written by write" in output
    assert "by keyword: written by write" in output
    assert "items: [('ObjectStoragePath', 'a'), ('ObjectStoragePath', 'b')]" in output
    stored = list((objects_env.home / "xcoms").rglob("return_value"))
    assert len(stored) == (4 if backend == "object_storage" else 0)  # write, read, copy_out, named


def test_a_missing_object_fails_the_task_in_one_line(objects_env: CliEnv, run_cli: RunCli) -> None:
    done = run_cli("dags", "test", "objects_missing", timeout=180)
    output = output_of(done)

    assert done.returncode == 1, output
    assert "read_missing try 1: failed  FileNotFoundError:" in output
    assert "reports/absent.txt" in output


def test_a_path_whose_connection_is_not_defined_fails_the_task_in_one_line(
    objects_env: CliEnv, run_cli: RunCli
) -> None:
    done = run_cli("dags", "test", "objects_unknown_connection", timeout=180)

    assert done.returncode == 1, output_of(done)
    assert (
        "unknown_connection try 1: failed  RequestFailed: connection 'nobody' is not defined"
        in output_of(done)
    )
