"""``tradewind standalone``: the whole fleet in one command, for a first run on a fresh machine.

It migrates the store, starts a real Celery worker as a subprocess (the same ``celery -A worker
worker`` as production, logging to ``TRADEWIND_HOME/worker.log``) and runs the scheduler loop
in a thread of this process. Serving (no ``--run``), it also starts ``tradewind api-server``
(logging to ``TRADEWIND_HOME/api-server.log``) and prints its URL; the first time, it creates
the ``admin`` user with a generated password, printed once and kept, readable by its owner
only, in ``TRADEWIND_HOME/standalone_admin_password``. Without ``TRADEWIND_FERNET_KEY`` it makes
a Fernet key once, kept in ``TRADEWIND_HOME/fernet_key`` (0600), which encrypts connection
passwords, extras and variables (every command on this home finds it there). The worker is
started without ``TRADEWIND_API_SECRET_KEY``: task code must not sign the API's tokens. With no
settings that is SQLite and kombu's filesystem broker under ``TRADEWIND_HOME`` (DESIGN.md §8).
The worker runs in its own session, so a Ctrl-C reaches only this process, which then stops the
worker itself: SIGTERM (Celery's warm shutdown, which lets running tasks finish), then SIGKILL to
its process group after ``WORKER_STOP_SECONDS`` or at a second Ctrl-C. SIGTERM to this process
counts as a Ctrl-C: every way out goes through that stop.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Annotated
from urllib.parse import quote

import typer
from rich.console import Console

from cli.common import EXIT_BAD_INPUT, fail, parse_conf, settings_or_exit, setup_logging
from cli.dags import create_manual_run
from cli.outcome import print_outcome
from cli.render import make_console
from cli.store import migrate_store
from cli.watch import WatchAborted, watch_run
from state.core import display_url
from tradewind.settings import Settings

WORKER_STOP_SECONDS = 10.0
#: Settings only the API server needs: the worker (and so every task it runs) never sees them.
API_ONLY_SETTINGS = ("TRADEWIND_API_SECRET_KEY",)
API_COMMAND = [sys.executable, "-P", "-m", "cli", "api-server"]
TRIGGERER_COMMAND = [sys.executable, "-P", "-m", "cli", "triggerer"]
ADMIN_PASSWORD_FILE = "standalone_admin_password"


@dataclass
class Fleet:
    """The worker subprocess and the scheduler thread of one ``standalone``."""

    worker: subprocess.Popen[bytes]
    worker_log: Path
    scheduler: threading.Thread
    stop: threading.Event
    api: subprocess.Popen[bytes] | None = None
    api_log: Path | None = None
    # The triggerer (deferred tasks, asset watchers): its own process, its log beside the worker's.
    triggerer: subprocess.Popen[bytes] | None = None
    triggerer_log: Path | None = None

    def problem(self) -> str | None:
        """Why the fleet cannot run anything any more, or None while it can."""
        code = self.worker.poll()
        if code is not None:
            return f"the Celery worker exited with code {code}: see {self.worker_log}"
        if self.api is not None and (code := self.api.poll()) is not None:
            return f"the API server exited with code {code}: see {self.api_log}"
        if self.triggerer is not None and (code := self.triggerer.poll()) is not None:
            return f"the triggerer exited with code {code}: see {self.triggerer_log}"
        if not self.scheduler.is_alive():
            return "the scheduler thread stopped: see the log lines above"
        return None


def worker_command(concurrency: int) -> list[str]:
    return [
        sys.executable, "-m", "celery", "-A", "worker", "worker",
        "-c", str(concurrency), "--loglevel", "WARNING",
    ]  # fmt: skip


def start_worker(settings: Settings, concurrency: int, log_file: Path) -> subprocess.Popen[bytes]:
    """Start ``celery -A worker worker`` with this process's settings, output to ``log_file``."""
    return start_child(settings, worker_command(concurrency), log_file, API_ONLY_SETTINGS)


def start_child(
    settings: Settings, argv: list[str], log_file: Path, without: tuple[str, ...] = ()
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a session of its own with this process's settings (less the variables
    named in ``without``), output to a file."""
    # Absolute paths: the child must find the same home and DAGs whatever its cwd resolves.
    env = {
        **{name: value for name, value in os.environ.items() if name not in without},
        "TRADEWIND_HOME": str(settings.resolved_home),
        "TRADEWIND_DAGS_FOLDER": str(settings.resolved_dags_folder),
    }
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as output:
        return subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop_worker(worker: subprocess.Popen[bytes], timeout_seconds: float) -> None:
    """SIGTERM (warm shutdown), then SIGKILL to the worker's whole process group."""
    if worker.poll() is not None:
        return
    worker.terminate()
    try:
        worker.wait(timeout=timeout_seconds)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        # A task still running after the grace period, or a second Ctrl-C: stop waiting.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()


@contextlib.contextmanager
def embedded_fleet(settings: Settings, concurrency: int, with_api: bool = False) -> Iterator[Fleet]:
    """A running worker and scheduler (and API server); all stopped on the way out."""
    from cli.api_server import purgers_for
    from scheduler import Scheduler  # brings Celery: only the commands that run DAGs import it

    log_file = settings.resolved_home / "worker.log"
    api_log = settings.resolved_home / "api-server.log"
    stop = threading.Event()
    scheduler = threading.Thread(
        target=Scheduler(settings, purgers=purgers_for(settings)).run_forever,
        args=(stop,),
        name="scheduler",
        daemon=True,
    )
    worker = start_worker(settings, concurrency, log_file)
    api = start_child(settings, API_COMMAND, api_log) if with_api else None
    triggerer_log = settings.resolved_home / "triggerer.log"
    triggerer = start_child(settings, TRIGGERER_COMMAND, triggerer_log, API_ONLY_SETTINGS)
    try:
        scheduler.start()
        yield Fleet(worker, log_file, scheduler, stop, api, api_log, triggerer, triggerer_log)
    finally:
        stop.set()
        stop_worker(triggerer, WORKER_STOP_SECONDS)
        if api is not None:
            stop_worker(api, WORKER_STOP_SECONDS)
        stop_worker(worker, WORKER_STOP_SECONDS)
        if scheduler.is_alive():
            scheduler.join(timeout=WORKER_STOP_SECONDS)


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    # SIGTERM takes the same way out as Ctrl-C, so the worker is stopped, never orphaned.
    raise KeyboardInterrupt


def standalone(
    run: Annotated[
        str | None, typer.Option("--run", help="Run this DAG once, print its result, exit 0/1.")
    ] = None,
    conf: Annotated[
        str | None, typer.Option("--conf", help="The --run's conf, a JSON object.")
    ] = None,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency", "-c", min=1, help="Tries the worker runs at once (its slots)."
        ),
    ] = 2,
) -> None:
    """Scheduler + Celery worker + embedded defaults in one command, for a first run."""
    parsed_conf = parse_conf(conf)
    if conf is not None and run is None:
        fail("--conf needs --run DAG_ID", EXIT_BAD_INPUT)
    settings = settings_or_exit()
    setup_logging(logging.WARNING)
    migrate_store(settings)
    ensure_fernet_key(settings)
    url = settings.sql_url
    # Created before the fleet starts: an unknown DAG fails here, with nothing to stop.
    run_id = create_manual_run(settings, url, run, parsed_conf) if run else None
    serving = not (run and run_id)
    # Before the fleet too: a Ctrl-C during the password's hashing has nothing to stop yet.
    admin_password = ensure_admin(settings) if serving else None
    console = make_console()
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        with embedded_fleet(settings, concurrency, with_api=serving) as fleet:
            describe(console, settings, fleet, concurrency)
            if serving:
                announce_api(settings, admin_password)
            code = run_once(url, run, run_id, fleet) if run and run_id else serve(fleet)
        if run and run_id:
            point_to_the_ui(settings, run, run_id)
    finally:
        signal.signal(signal.SIGTERM, previous)
    raise typer.Exit(code)


def describe(console: Console, settings: Settings, fleet: Fleet, concurrency: int) -> None:
    broker = settings.broker
    if broker.startswith("filesystem://"):
        broker += f" ({settings.broker_folder})"
    console.print(
        f"standalone: store {display_url(settings.sql_url)}, broker {broker}, "
        f"DAGs {settings.resolved_dags_folder}, worker -c {concurrency} "
        f"(log: {fleet.worker_log})"
    )


def ensure_fernet_key(settings: Settings) -> None:
    """Without ``TRADEWIND_FERNET_KEY``, make the home's key once (mode 0600) and encrypt what
    was stored in plaintext before it (a standalone of an older version)."""
    if settings.fernet_keys:
        return
    path = settings.fernet_key_file
    path.parent.mkdir(parents=True, exist_ok=True)
    from cryptography.fernet import Fernet

    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # made before, or by another standalone on this home just now
        return
    with os.fdopen(descriptor, "w") as out:
        out.write(Fernet.generate_key().decode() + "\n")
    from state.core import forget_keys, session_scope
    from state.records import connection_ids, reseal_connection, reseal_variable, variable_keys

    forget_keys()
    with session_scope(settings.sql_url) as session:
        for conn_id in connection_ids(session):
            reseal_connection(session, conn_id)
        for key in variable_keys(session):
            reseal_variable(session, key)


def ensure_admin(settings: Settings) -> str | None:
    """Create ``admin`` with a generated password the first time; returns that password once.

    The password is also kept in ``TRADEWIND_HOME/standalone_admin_password`` (mode 0600).
    """
    from api.security import hash_password
    from state.core import session_scope
    from state.records import Role, UserExists, create_user, get_user

    with session_scope(settings.sql_url) as session:
        if get_user(session, "admin") is not None:
            return None
    password = secrets.token_urlsafe(12)
    try:
        with session_scope(settings.sql_url) as session:
            create_user(session, "admin", hash_password(password), Role.ADMIN)
    except UserExists:  # another standalone on this home made it first
        return None
    path = settings.resolved_home / ADMIN_PASSWORD_FILE
    path.unlink(missing_ok=True)
    path.touch(mode=0o600)  # created private, before the password is in it
    path.write_text(password + "\n")
    return password


def announce_api(settings: Settings, password: str | None) -> None:
    url = f"http://{settings.api_host}:{settings.api_port}"
    kept = settings.resolved_home / ADMIN_PASSWORD_FILE
    if password is not None:
        typer.echo(f"API server: {url} (sign in as admin, password {password}; kept in {kept})")
    else:
        typer.echo(f"API server: {url} (admin's first password was kept in {kept})")


def point_to_the_ui(settings: Settings, dag_id: str, run_id: str) -> None:
    """After ``--run``: where to see that run in the browser, and how to sign in."""
    base = f"http://{settings.api_host}:{settings.api_port}"
    page = f"{base}/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"
    kept = settings.resolved_home / ADMIN_PASSWORD_FILE
    how = f"password kept in {kept}" if kept.is_file() else "its password is printed then"
    typer.echo(
        f"the UI: `tradewind standalone` serves it at {base}; this run is {page} "
        f"(sign in as admin, {how})"
    )


def serve(fleet: Fleet) -> int:
    """Run until Ctrl-C or SIGTERM (exit 0), or until the worker dies (exit 1)."""
    typer.echo("serving: trigger runs with `tradewind dags trigger DAG_ID`; Ctrl-C to stop")
    try:
        while True:
            # A plain sleep: the signal handler raises KeyboardInterrupt wherever this thread
            # is, and inside Event.wait that breaks the condition's lock ("release unlocked lock").
            time.sleep(0.5)
            reason = fleet.problem()
            if reason:
                typer.echo(f"error: {reason}", err=True)
                return 1
    except KeyboardInterrupt:
        typer.echo("stopping the worker and the scheduler")
    return 0


def run_once(url: str, dag_id: str, run_id: str, fleet: Fleet) -> int:
    """Watch the run to its end, print its task instances and result; 0 on success."""
    console = make_console()
    try:
        state = watch_run(url, dag_id, run_id, console, problem=fleet.problem)
    except KeyboardInterrupt:
        typer.echo(f"interrupted: run {run_id} goes on with the next scheduler and worker")
        return 130
    except WatchAborted as error:
        typer.echo(f"error: {error}", err=True)
        return 1
    print_outcome(console, url, dag_id, run_id)
    return 0 if state == "success" else 1
