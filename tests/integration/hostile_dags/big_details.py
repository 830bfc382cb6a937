"""Tasks whose details are large: a run's conf, a DAG's params default (issue 26).

Each task returns what it saw (the length and a digest of the value), so a test can tell the
whole value reached the task process.
"""

from __future__ import annotations

import hashlib
import os
import time

from tradewind import dag, task

#: The DAG's params default: 300 KB, more than a SOCK_SEQPACKET packet can carry.
DEFAULT_BLOB = "p" * 300_000


def _seen(value: str) -> str:
    return f"{len(value)} {hashlib.sha256(value.encode()).hexdigest()}"


@task
def read_conf(dag_run=None) -> str:
    return _seen(dag_run.conf["blob"])


@task
def read_conf_param(params=None) -> str:
    return _seen(params["blob"])


@dag(dag_id="big_conf")
def big_conf():
    read_conf() >> read_conf_param()


big_conf()


@task
def read_default(params=None) -> str:
    return _seen(params["default_blob"])


@dag(dag_id="big_params_default", params={"default_blob": DEFAULT_BLOB})
def big_params_default():
    read_default()


big_params_default()


@task
def slow_read(params=None) -> str:
    """Reads its conf, then takes ``sleep`` seconds: a try in flight for the shutdown tests."""
    seen = _seen(params["blob"])
    time.sleep(float(params["sleep"]))
    return seen


@dag(dag_id="slow_big_conf")
def slow_big_conf():
    slow_read()


slow_big_conf()


@task
def first() -> int:
    return os.getpid()


@task
def second() -> int:
    return os.getpid()


@dag(dag_id="two_steps")
def two_steps():
    first() >> second()


two_steps()
