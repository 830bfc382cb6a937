"""The compose file and the Procfile run what they say: parsed, then started directly.

No Docker engine runs here, so the compose services' commands are started as processes against
this machine's PostgreSQL and Redis, in the order compose would start them, each with the
secrets its service is given (and no other).
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from base64 import b64encode
from pathlib import Path

import pytest
import yaml
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
OUR_SERVICES = ("init", "scheduler", "triggerer", "worker", "api", "flower")
#: What an operator puts in the compose file's `.env`: the secrets it requires.
SECRETS = {
    "TRADEWIND_FERNET_KEY": Fernet.generate_key().decode(),
    "TRADEWIND_API_SECRET_KEY": "compose-test-signing-key-" + "k" * 20,
    "FLOWER_BASIC_AUTH": "ops:flower-pw-61",
}


def _argv(command: list[str]) -> list[str]:
    """A compose command as a local argv (the venv's tradewind and celery)."""
    return [str(BIN / command[0]), *command[1:]]


def test_compose_has_every_service_with_a_healthcheck() -> None:
    services = COMPOSE["services"]
    assert set(services) == {"redis", "postgres", *OUR_SERVICES}
    assert "--appendonly" in services["redis"]["command"]
    for name in ("redis", "postgres", "scheduler", "triggerer", "worker", "api", "flower"):
        assert services[name]["healthcheck"]["test"], name
    assert "/api/v2/monitor/health" in " ".join(services["api"]["healthcheck"]["test"])
    assert services["api"]["depends_on"]["init"]["condition"] == "service_completed_successfully"
    assert services["init"]["command"] == ["tradewind", "db", "migrate"]
    assert (
        services["scheduler"]["depends_on"]["init"]["condition"] == "service_completed_successfully"
    )


@pytest.mark.parametrize("service", OUR_SERVICES)
def test_compose_commands_are_real_commands(service: str) -> None:
    command = COMPOSE["services"][service]["command"]
    words = [word for word in command if not word.startswith("--")][:4]
    result = subprocess.run([*_argv(words), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_compose_gives_each_secret_to_the_services_that_need_it_only() -> None:
    services = COMPOSE["services"]
    holders = {
        name: {key for key in services[name].get("environment", {}) if key in SECRETS}
        for name in OUR_SERVICES
    }
    assert holders == {
        "init": set(),
        "scheduler": set(),  # it imports DAG files: their code must not read a key
        "triggerer": set(),  # it runs trigger classes of DAG files: the same
        "worker": {"TRADEWIND_FERNET_KEY"},
        "api": {"TRADEWIND_FERNET_KEY", "TRADEWIND_API_SECRET_KEY"},
        "flower": {"FLOWER_BASIC_AUTH"},
    }
    for name in OUR_SERVICES:
        for key, value in services[name].get("environment", {}).items():
            if key in SECRETS:  # required from the operator's environment, never a default
                assert value.startswith("${" + key + ":?"), (name, key)
    assert services["flower"]["ports"] == ["127.0.0.1:5555:5555"]
    assert "FLOWER_UNAUTHENTICATED_API" not in services["flower"]["environment"]


def _service_env(base: dict[str, str], service: str) -> dict[str, str]:
    """``base`` with the secrets compose gives ``service`` (as its `.env` would), and no other."""
    env = {key: value for key, value in base.items() if key not in SECRETS}
    given = COMPOSE["services"][service].get("environment", {})
    return {**env, **{key: SECRETS[key] for key in given if key in SECRETS}}


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_compose_commands_run_a_dag(fleet) -> None:
    services = COMPOSE["services"]
    subprocess.run(_argv(services["init"]["command"]), env=fleet.env, check=True, timeout=60)
    base = dict(fleet.env)
    flower_port, port = _free_port(), _free_port()
    flower = [*_argv(services["flower"]["command"][:-1]), f"--port={flower_port}"]
    api = [*_argv(services["api"]["command"][:-4]), "--host", "127.0.0.1", "--port", str(port)]
    for name, argv in (
        ("scheduler", _argv(services["scheduler"]["command"])),
        ("triggerer", _argv(services["triggerer"]["command"])),
        ("worker", _argv(services["worker"]["command"])),
        ("flower", [*flower, "--address=127.0.0.1"]),
        ("api", api),
    ):
        fleet.env = _service_env(base, name)
        fleet.start(name, argv)
    fleet.env = base
    fleet.trigger("xcom_pipeline", "compose")
    assert fleet.wait_run("xcom_pipeline", "compose") == "success"
    fleet.wait_for(lambda: _health(port) == "healthy", 60, "the API server's health")
    for name in ("scheduler", "triggerer", "worker"):  # their healthchecks, as compose runs them
        probe = services[name]["healthcheck"]["test"]
        assert probe[0] == "CMD", name
        checked = subprocess.run(_argv(probe[1:]), env=fleet.env, capture_output=True, timeout=60)
        assert checked.returncode == 0, (name, checked.stderr)
    fleet.wait_for(lambda: _flower_status(flower_port, "ops:flower-pw-61") == 200, 60, "Flower")
    assert _flower_status(flower_port) == 401
    assert _flower_status(flower_port, "ops:wrong") == 401


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_procfile_runs_a_dag_with_honcho(fleet) -> None:
    procfile = (ROOT / "Procfile").read_text()
    assert {line.split(":")[0] for line in procfile.splitlines() if line} == {
        "scheduler",
        "triggerer",
        "worker",
        "api",
        "flower",
    }
    fleet.env["PATH"] = f"{BIN}{os.pathsep}{fleet.env['PATH']}"
    fleet.env.update(SECRETS)
    fleet.env["FLOWER_PORT"] = "5599"
    api_port = _free_port()
    fleet.env["TRADEWIND_API_PORT"] = str(api_port)
    subprocess.run([str(BIN / "tradewind"), "db", "migrate"], env=fleet.env, check=True, timeout=60)
    fleet.start(
        "honcho", [str(BIN / "honcho"), "start", "-f", str(ROOT / "Procfile"), "-d", str(ROOT)]
    )
    fleet.trigger("xcom_pipeline", "procfile")
    assert fleet.wait_run("xcom_pipeline", "procfile") == "success"
    credentials = SECRETS["FLOWER_BASIC_AUTH"]  # Flower reads FLOWER_BASIC_AUTH itself
    fleet.wait_for(lambda: _flower_status(5599, credentials) == 200, 60, "Flower's API")
    assert _flower_status(5599) == 401
    fleet.wait_for(lambda: _health(api_port) == "healthy", 60, "the API server's health")
    assert "worker.1" in fleet.log("honcho") and "scheduler.1" in fleet.log("honcho")
    assert "triggerer.1" in fleet.log("honcho")
    assert "api.1" in fleet.log("honcho")
    keys = {"TRADEWIND_API_SECRET_KEY", "TRADEWIND_FERNET_KEY"}
    held = {kind: names & keys for kind, names in _secrets_held(fleet.home).items()}
    assert held["api-server"] == {"TRADEWIND_API_SECRET_KEY", "TRADEWIND_FERNET_KEY"}
    assert held["worker"] == {"TRADEWIND_FERNET_KEY"}  # so none of its tasks has the API's key
    assert held["scheduler"] == held["flower"] == held["triggerer"] == set()


def test_the_procfile_gives_the_api_key_to_the_api_server_only() -> None:
    lines = dict(line.split(": ", 1) for line in (ROOT / "Procfile").read_text().splitlines())
    for name in ("scheduler", "triggerer", "worker", "flower"):
        assert lines[name].startswith("env -u TRADEWIND_API_SECRET_KEY "), name
    for name in ("scheduler", "triggerer", "flower"):
        assert "-u TRADEWIND_FERNET_KEY " in lines[name], name
    assert "--address=${FLOWER_ADDRESS:-127.0.0.1}" in lines["flower"]
    assert lines["api"].startswith('TRADEWIND_API_SECRET_KEY="${TRADEWIND_API_SECRET_KEY:?')


def _secrets_held(home: Path) -> dict[str, set[str]]:
    """For each kind of process of the fleet at ``home`` (by its command line), the secrets in
    the environment of any process of that kind (the shells honcho starts them with aside)."""
    kinds = {"api-server": "api-server", "worker worker": "worker", "scheduler": "scheduler",
             "flower": "flower", "tradewind triggerer": "triggerer"}  # fmt: skip
    held: dict[str, set[str]] = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if f"TRADEWIND_HOME={home}".encode() not in environ or command.startswith("/bin/sh"):
            continue
        names = {entry.split(b"=", 1)[0].decode() for entry in environ if b"=" in entry}
        for word, kind in kinds.items():
            if word in command and "honcho" not in command:
                held.setdefault(kind, set()).update(names & set(SECRETS))
    return held


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _health(port: int) -> str | None:
    """The store's status as the API server's health check reports it; None if it is not up."""
    url = f"http://127.0.0.1:{port}/api/v2/monitor/health"
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return str(json.loads(reply.read())["metadatabase"]["status"])
    except OSError:
        return None


def _flower_status(port: int, credentials: str | None = None) -> int | None:
    """The status of Flower's API (its workers) with ``user:password``; None if it is not up."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/workers")
    if credentials:
        request.add_header("Authorization", "Basic " + b64encode(credentials.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


def test_the_image_holds_every_package_the_distribution_ships() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    include = pyproject.split("include = [", 1)[1].split("]", 1)[0]
    packages = {name.strip(' "*') for name in include.split(",")}
    copied = {
        line.split()[1] for line in (ROOT / "Dockerfile").read_text().splitlines()
        if line.startswith("COPY ")
    }  # fmt: skip
    assert packages and packages <= copied, packages - copied


def test_procfile_commands_parse() -> None:
    for line in (ROOT / "Procfile").read_text().splitlines():
        name, command = line.split(":", 1)
        assert shlex.split(command), name
