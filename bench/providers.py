"""The providers yardstick: of the 20 most downloaded providers, which install and import on
Tradewind, and how many of the example DAGs that need no internet load and run.

Each provider is installed with ``tradewind providers install`` into one venv cached under
``~/.cache/tradewind-bench/`` (it sees this checkout's packages), then ``tradewind providers
list --deep --json`` imports every module each lists. The example DAGs are the yardstick's own
(``bench/provider_dags/``; the provider wheels ship none of theirs: Airflow keeps them in its
source tree's ``tests/system/``), run with ``tradewind dags test`` on a SQLite store.

    python bench/providers.py [--only NAME,...]

Prints a Markdown table (docs/providers.md has the last one) and writes
bench/results/providers.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.providers_env import make_venv  # noqa: E402

#: The 20 providers with the most downloads on PyPI (pypistats, monthly, late 2026), most first.
TOP20 = (
    "common-sql",
    "http",
    "ftp",
    "imap",
    "sqlite",
    "smtp",
    "common-io",
    "common-compat",
    "fab",
    "standard",
    "amazon",
    "google",
    "cncf-kubernetes",
    "snowflake",
    "databricks",
    "openlineage",
    "postgres",
    "microsoft-azure",
    "ssh",
    "slack",
)
DAGS = ROOT / "bench" / "provider_dags"


def _cli(
    python: str, *args: str, env: dict[str, str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "-m", "cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
        check=False,
    )


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="Comma-separated provider short names.")
    parser.add_argument("--fresh", action="store_true", help="Rebuild the cached venv.")
    parser.add_argument(
        "--no-install", action="store_true", help="Check the venv as it is (after a full run)."
    )
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(TOP20)
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = root / "tradewind-bench" / "providers-top20"
    python = str(root / "bin" / "python")
    if args.fresh or not Path(python).exists():
        python = make_venv(root)
    results: dict[str, dict[str, object]] = {}
    previous = ROOT / "bench" / "results" / "providers.json"
    if args.no_install and previous.exists():
        results = {k: v for k, v in json.loads(previous.read_text()).items() if k in names}
        names = []
    for name in names:
        result = _cli(python, "providers", "install", name)
        installed = result.returncode == 0
        why = "" if installed else _last_line(result.stderr).removeprefix("error: ")
        results[name] = {"installed": installed, "install": why or _last_line(result.stdout)}
        print(f"{name}: {'installed' if installed else 'refused: ' + why}", flush=True)
    listing = _cli(python, "providers", "list", "--deep", "--json")
    statuses = {s["name"]: s for s in json.loads(listing.stdout or "[]")}
    for name in results:
        status = statuses.get(f"apache-airflow-providers-{name}")
        if status is not None:
            results[name].update(
                version=status["version"], usable=status["usable"], status=status["why"]
            )
    results["_dags"] = run_examples(python)
    out = ROOT / "bench" / "results" / "providers.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))


def run_examples(python: str) -> dict[str, object]:
    """Load the example DAGs and run each with ``dags test``: how many load, how many succeed."""
    with tempfile.TemporaryDirectory(prefix="tw-bench-providers-") as tmp:
        home = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRADEWIND_")}
        env.update(TRADEWIND_HOME=str(home), TRADEWIND_DAGS_FOLDER=str(DAGS))
        _cli(python, "db", "migrate", env=env)
        _cli(
            python,
            "connections",
            "add",
            "lite",
            "--conn-type",
            "sqlite",
            "--host",
            str(home / "lite.db"),
            env=env,
        )
        checked = _cli(python, "dags", "check", "--json", env=env)
        try:
            files = json.loads(checked.stdout)["files"]
            dag_ids = [dag_id for f in files for dag_id in f["dags"]]
        except (json.JSONDecodeError, KeyError, TypeError):
            dag_ids = []
        runs = {}
        for dag_id in dag_ids:
            result = _cli(python, "dags", "test", dag_id, "--no-logs", env=env, timeout=300)
            runs[dag_id] = (
                "success" if result.returncode == 0 else _last_line(result.stdout + result.stderr)
            )
        shutil.rmtree(home, ignore_errors=True)
    return {
        "loaded": len(dag_ids),
        "succeeded": sum(v == "success" for v in runs.values()),
        "runs": runs,
    }


def table(results: dict[str, dict[str, object]]) -> str:
    rows = ["| # | provider | version | installs | imports (deep) |", "|---|---|---|---|---|"]
    for number, name in enumerate(n for n in results if not n.startswith("_")):
        r = results[name]
        installs = "yes" if r["installed"] else f"refused: {r['install']}"
        usable = r.get("usable")
        imports = (
            "—" if usable is None else ("yes: " if usable else "no: ") + str(r.get("status", ""))
        )
        rows.append(f"| {number + 1} | {name} | {r.get('version', '—')} | {installs} | {imports} |")
    dags = results["_dags"]
    rows.append("")
    rows.append(f"Example DAGs: {dags['loaded']} loaded, {dags['succeeded']} ran to success.")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
