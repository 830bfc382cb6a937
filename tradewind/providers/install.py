"""``tradewind providers install``: a provider and its own requirements, never Airflow itself.

Every provider wheel declares ``Requires-Dist: apache-airflow>=2.11``, so a plain ``pip install``
brings Airflow in. The route here splits what a provider needs in two:

1. **Providers** (``apache-airflow-providers-*``, the one asked for and those it requires, to any
   depth): each wheel is fetched with ``pip download --no-deps`` and its metadata read. A
   requirement on ``apache-airflow``, ``-core`` or ``-task-sdk`` is checked against the Airflow
   version Tradewind answers for (``AIRFLOW_VERSION``) and then dropped; a specifier that excludes
   it, or a provider Tradewind cannot serve (``UNSERVED``), refuses the install in one line.
2. **Everything else** (boto3, psycopg, sqlparse...) is resolved by pip once, as one set, with
   ``--dry-run --report`` and Tradewind's own requirements (and those of the providers already
   installed) as constraints, so nothing Tradewind or another provider runs on is moved out of its
   range. Should the resolution reach an Airflow distribution all the same (a third-party package
   requiring it), the install is refused, naming the package.

Then pip installs exactly that plan: the resolved third-party pins and the provider wheels, both
with ``--no-deps``. pip never resolves a provider wheel's own metadata, so Airflow never comes in.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from email.parser import Parser
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tradewind.airflow_paths.names import AIRFLOW_VERSION

PROVIDER_PREFIX = "apache-airflow-providers-"
#: The distributions of Airflow itself: never installed, Tradewind answers for their names.
AIRFLOW_ITSELF = frozenset({"apache-airflow", "apache-airflow-core", "apache-airflow-task-sdk"})
#: Providers whose work is a part of Airflow Tradewind replaces, and why they cannot run on it.
UNSERVED = {
    "apache-airflow-providers-fab": "it is an auth manager for Airflow's own API server",
    "apache-airflow-providers-celery": "it is Airflow's Celery executor (Tradewind runs its own)",
    "apache-airflow-providers-edge3": "it is Airflow's edge executor and worker",
    "apache-airflow-providers-keycloak": "it is an auth manager for Airflow's own API server",
}

#: Providers Tradewind has built in: ``airflow.providers.standard.*`` are Tradewind's own classes.
BUILT_IN = {
    "apache-airflow-providers-standard": "its operators, sensors and decorators are Tradewind's",
}
#: Airflow's own requirements that providers import without declaring them (Airflow brings them):
#: added to every install, so a provider finds them as it would beside Airflow.
AIRFLOW_RUNTIME = (
    "deprecated>=1.2.13",
    "tenacity>=8.3.0",
    "attrs>=22.1.0",
    "python-dateutil>=2.7.0",
    "tabulate>=0.9.0",
    "methodtools>=0.4.7",
    "asgiref>=2.3.0",
    "python-slugify>=5.0",
    "pyyaml>=6.0",
)


class ProviderInstallError(Exception):
    """A provider that cannot be installed: the message is one line saying why."""


@dataclass
class Plan:
    """What one install puts into the environment."""

    wheels: dict[str, Path] = field(default_factory=dict)  # provider name -> its wheel
    versions: dict[str, str] = field(default_factory=dict)  # provider name -> version
    requirements: list[Requirement] = field(default_factory=list)  # third-party, unresolved
    pins: list[str] = field(default_factory=list)  # third-party, resolved: "name==version"


def parse_provider(spec: str) -> Requirement:
    """``apache-airflow-providers-x[==version]`` (or a short ``x``) as a requirement."""
    try:
        requirement = Requirement(spec.strip())
    except InvalidRequirement as error:
        raise ProviderInstallError(f"{spec!r} is not a package name: {error}") from None
    name: str = canonicalize_name(requirement.name)
    if name in AIRFLOW_ITSELF:
        raise ProviderInstallError(
            f"{name} is Airflow itself: Tradewind answers for its names, install a provider"
        )
    if not name.startswith(PROVIDER_PREFIX):
        name = PROVIDER_PREFIX + name
    requirement.name = name
    if requirement.url or requirement.extras:
        raise ProviderInstallError(f"{spec!r}: give a provider's name and version, no URL or extra")
    return requirement


def _pip(python: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def _pip_error(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
    return lines[0].removeprefix("ERROR: ") if lines else f"pip exited {result.returncode}"


def _wheel_metadata(wheel: Path) -> tuple[str, str, list[str]]:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        message = Parser().parsestr(archive.read(name).decode())
    return message["Name"], message["Version"], message.get_all("Requires-Dist") or []


def _applies(requirement: Requirement, python_env: dict[str, Any]) -> bool:
    if requirement.marker is None:
        return True
    return requirement.marker.evaluate({**python_env, "extra": ""})


def _check_airflow(provider: str, requirement: Requirement) -> None:
    if requirement.specifier and not requirement.specifier.contains(
        AIRFLOW_VERSION, prereleases=True
    ):
        raise ProviderInstallError(
            f"{provider} needs {requirement}, and Tradewind answers as Airflow {AIRFLOW_VERSION}"
        )


def _installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def plan_providers(spec: str, python: str, folder: Path, upgrade: bool = False) -> Plan:
    """Fetch the provider ``spec`` and the providers it requires into ``folder``; read them."""
    plan = Plan()
    python_env: dict[str, Any] = dict(default_environment())
    queue = [parse_provider(spec)]
    top = True
    while queue:
        requirement = queue.pop(0)
        if _already_planned(requirement, plan, top, upgrade):
            continue
        name = canonicalize_name(requirement.name)
        top = False
        result = _pip(
            python,
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--quiet",
            "-d",
            str(folder),
            str(requirement),
        )
        if result.returncode != 0:
            raise ProviderInstallError(f"{requirement}: {_pip_error(result)}")
        wheel = _find_wheel(folder, name, requirement)
        _, version, requires = _wheel_metadata(wheel)
        plan.wheels[name] = wheel
        plan.versions[name] = version
        for line in requires:
            dependency = Requirement(line)
            if not _applies(dependency, python_env):
                continue
            dependency_name = canonicalize_name(dependency.name)
            if dependency_name in AIRFLOW_ITSELF:
                _check_airflow(f"{name} {version}", dependency)
            elif dependency_name.startswith(PROVIDER_PREFIX):
                queue.append(dependency)
            else:
                plan.requirements.append(dependency)
    return plan


def _already_planned(requirement: Requirement, plan: Plan, top: bool, upgrade: bool) -> bool:
    """Whether the provider ``requirement`` needs no fetching; refused if it cannot be had."""
    name = canonicalize_name(requirement.name)
    if name in UNSERVED:
        raise ProviderInstallError(f"{name} cannot run on Tradewind: {UNSERVED[name]}")
    if name in BUILT_IN:
        if top:
            raise ProviderInstallError(f"{name} is built into Tradewind: {BUILT_IN[name]}")
        return True
    if name in plan.versions:
        if not requirement.specifier.contains(plan.versions[name], prereleases=True):
            raise ProviderInstallError(
                f"{name} is required as {requirement} and as {plan.versions[name]}"
            )
        return True
    installed = _installed_version(name)
    # A required provider already there, in range, is left as it is.
    return (
        not top
        and not upgrade
        and installed is not None
        and requirement.specifier.contains(installed, prereleases=True)
    )


def _find_wheel(folder: Path, name: str, requirement: Requirement) -> Path:
    stem = name.replace("-", "_")
    matches = []
    for wheel in folder.glob("*.whl"):
        distribution, version = wheel.name.split("-")[:2]
        if canonicalize_name(distribution) == name and requirement.specifier.contains(
            version, prereleases=True
        ):
            matches.append((Version(version), wheel))
    if not matches:
        raise ProviderInstallError(f"{requirement}: pip fetched no wheel of {stem}")
    return max(matches)[1]


def _constraints() -> list[str]:
    """Tradewind's own requirements and those of the installed providers, as constraints."""
    lines: list[str] = []
    python_env: dict[str, Any] = dict(default_environment())
    names = ["tradewind"] + [
        d.metadata["Name"]
        for d in metadata.distributions()
        if canonicalize_name(d.metadata["Name"] or "").startswith(PROVIDER_PREFIX)
    ]
    for distribution in names:
        for line in metadata.requires(distribution) or []:
            requirement = Requirement(line)
            if not _applies(requirement, python_env):
                continue
            name = canonicalize_name(requirement.name)
            if name in AIRFLOW_ITSELF or name.startswith(PROVIDER_PREFIX):
                continue
            if requirement.specifier:
                lines.append(f"{name}{requirement.specifier}")
    return lines


def resolve_requirements(plan: Plan, python: str, folder: Path) -> None:
    """Resolve the plan's third-party requirements with pip; refuse one that reaches Airflow."""
    if not plan.wheels:
        return
    plan.requirements.extend(Requirement(r) for r in AIRFLOW_RUNTIME)
    constraints = folder / "constraints.txt"
    constraints.write_text("\n".join(_constraints()) + "\n")
    report = folder / "report.json"
    result = _pip(
        python,
        "install",
        "--dry-run",
        "--quiet",
        "--report",
        str(report),
        "-c",
        str(constraints),
        *[str(r) for r in plan.requirements],
    )
    if result.returncode != 0:
        asked = next(iter(plan.versions))
        raise ProviderInstallError(
            f"{asked}: its requirements do not resolve: {_pip_error(result)}"
        )
    for item in json.loads(report.read_text()).get("install", []):
        name = canonicalize_name(item["metadata"]["name"])
        if name in AIRFLOW_ITSELF or name.startswith(PROVIDER_PREFIX):
            wanted = ", ".join(str(r) for r in plan.requirements)
            asked = next(iter(plan.versions))
            raise ProviderInstallError(f"{asked}: its requirements ({wanted}) bring {name} in")
        plan.pins.append(f"{name}=={item['metadata']['version']}")


def install_plan(plan: Plan, python: str) -> None:
    """Install the plan's pins and wheels, both without pip resolving anything further."""
    for what in (plan.pins, [str(w) for w in plan.wheels.values()]):
        if not what:
            continue
        result = _pip(python, "install", "--no-deps", "--quiet", *what)
        if result.returncode != 0:
            raise ProviderInstallError(f"pip could not install {what[0]}...: {_pip_error(result)}")


def install_provider(spec: str, python: str = sys.executable, upgrade: bool = False) -> Plan:
    """Install the provider ``spec`` and its requirements into ``python``'s environment."""
    with tempfile.TemporaryDirectory(prefix="tradewind-providers-") as tmp:
        folder = Path(tmp)
        plan = plan_providers(spec, python, folder, upgrade)
        resolve_requirements(plan, python, folder)
        install_plan(plan, python)
    return plan


def uninstall_provider(names: Sequence[str], python: str = sys.executable) -> None:
    result = _pip(python, "uninstall", "--yes", "--quiet", *[parse_provider(n).name for n in names])
    if result.returncode != 0:
        raise ProviderInstallError(_pip_error(result))
