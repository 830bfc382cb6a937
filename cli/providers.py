"""``tradewind providers install/list/uninstall``: Airflow's provider packages, without Airflow.

Register on the top-level app: ``app.add_typer(providers.app, name="providers")``. ``install``
fetches the provider and the providers it requires with ``--no-deps``, resolves their other
requirements with pip under Tradewind's own as constraints, and installs that plan: never
``apache-airflow``, ``-core`` or ``-task-sdk`` (``tradewind/providers/install.py``).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from cli.common import EXIT_BAD_INPUT, fail

app = typer.Typer(help="Install and list Airflow provider packages.", no_args_is_help=True)


@app.command("install")
def install(
    provider: Annotated[
        str,
        typer.Argument(
            help="apache-airflow-providers-NAME (or NAME), optionally ==VERSION or another "
            "version range."
        ),
    ],
    upgrade: Annotated[
        bool,
        typer.Option("--upgrade", help="Also move providers it requires to their newest fit."),
    ] = False,
) -> None:
    """Install a provider and its requirements into Tradewind's environment."""
    from tradewind.providers.install import ProviderInstallError, install_provider, parse_provider

    try:
        parse_provider(provider)
    except ProviderInstallError as error:
        fail(str(error), EXIT_BAD_INPUT)
    try:
        plan = install_provider(provider, upgrade=upgrade)
    except ProviderInstallError as error:
        fail(str(error))
    for name, version in plan.versions.items():
        typer.echo(f"installed {name} {version}")
    if plan.pins:
        typer.echo(f"with {', '.join(plan.pins)}")


@app.command("list")
def list_providers(
    deep: Annotated[
        bool,
        typer.Option("--deep", help="Import every module each provider lists (slower)."),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array.")] = False,
) -> None:
    """The installed providers: version, and usable or why not."""
    from tradewind.providers.status import provider_statuses

    statuses = provider_statuses(deep)
    if as_json:
        typer.echo(json.dumps([s.__dict__ for s in statuses], indent=2))
        return
    if not statuses:
        typer.echo("no provider installed (tradewind providers install NAME)")
        return
    width = max(len(s.name) for s in statuses)
    for status in statuses:
        verdict = "usable" if status.usable else "not usable"
        if status.usable and "fail" in status.why:
            verdict = "partly usable"
        typer.echo(f"{status.name:<{width}}  {status.version:<10} {verdict}: {status.why}")


@app.command("uninstall")
def uninstall(
    providers: Annotated[list[str], typer.Argument(help="The providers to remove.")],
) -> None:
    """Remove providers (their own requirements stay)."""
    from tradewind.providers.install import ProviderInstallError, uninstall_provider

    try:
        uninstall_provider(providers)
    except ProviderInstallError as error:
        fail(str(error))
    typer.echo(f"uninstalled {', '.join(providers)}")
