"""The compose file and the Procfile run what they say: parsed, then started directly.

No Docker engine runs here, so the compose services' commands are started as processes against
this machine's PostgreSQL and Redis, in the order compose would start them.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
OUR_SERVICES = ("init", "scheduler", "worker", "api", "flower")


def _argv(command: list[str]) -> list[str]:
    """A compose command as a local argv (the venv's tradewind and celery)."""
    return [str(BIN / command[0]), *command[1:]]


def test_compose_has_every_service_with_a_healthcheck() -> None:
    services = COMPOSE["services"]
    assert set(services) == {"redis", "postgres", *OUR_SERVICES}
    assert "--appendonly" in services["redis"]["command"]
    for name in ("redis", "postgres", "scheduler", "worker", "api", "flower"):
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


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_compose_commands_run_a_dag(fleet) -> None:
    services = COMPOSE["services"]
    subprocess.run(_argv(services["init"]["command"]), env=fleet.env, check=True, timeout=60)
    fleet.env["FLOWER_UNAUTHENTICATED_API"] = "true"
    fleet.start("scheduler", _argv(services["scheduler"]["command"]))
    fleet.start("w1", _argv(services["worker"]["command"]))
    flower = [*_argv(services["flower"]["command"][:-1]), "--port=0", "--address=127.0.0.1"]
    fleet.start("flower", flower)
    port = _free_port()
    api = [*_argv(services["api"]["command"][:-4]), "--host", "127.0.0.1", "--port", str(port)]
    fleet.start("api", api)
    fleet.trigger("xcom_pipeline", "compose")
    assert fleet.wait_run("xcom_pipeline", "compose") == "success"
    fleet.wait_for(lambda: _health(port) == "healthy", 60, "the API server's health")


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_procfile_runs_a_dag_with_honcho(fleet) -> None:
    procfile = (ROOT / "Procfile").read_text()
    assert {line.split(":")[0] for line in procfile.splitlines() if line} == {
        "scheduler",
        "worker",
        "api",
        "flower",
    }
    fleet.env["PATH"] = f"{BIN}{os.pathsep}{fleet.env['PATH']}"
    fleet.env["FLOWER_PORT"] = "5599"
    fleet.env["FLOWER_UNAUTHENTICATED_API"] = "true"
    api_port = _free_port()
    fleet.env["TRADEWIND_API_PORT"] = str(api_port)
    subprocess.run([str(BIN / "tradewind"), "db", "migrate"], env=fleet.env, check=True, timeout=60)
    fleet.start(
        "honcho", [str(BIN / "honcho"), "start", "-f", str(ROOT / "Procfile"), "-d", str(ROOT)]
    )
    fleet.trigger("xcom_pipeline", "procfile")
    assert fleet.wait_run("xcom_pipeline", "procfile") == "success"
    fleet.wait_for(lambda: _flower_answers(5599), 60, "Flower's API")
    fleet.wait_for(lambda: _health(api_port) == "healthy", 60, "the API server's health")
    assert "worker.1" in fleet.log("honcho") and "scheduler.1" in fleet.log("honcho")
    assert "api.1" in fleet.log("honcho")


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


def _flower_answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/workers", timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


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
