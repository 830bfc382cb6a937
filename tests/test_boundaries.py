"""The import boundaries of DESIGN.md §1, read from the source with ``ast`` (nothing is imported).

- ``state/`` imports neither the worker nor the scheduler, nor Celery or kombu; inside it, the
  core imports no other layer, the records only the core, the engine never the views and the
  views never the engine (docs/decisions/state-in-layers.md); every other part reaches the store
  through its faces (``state.core``, ``state.engine``, ``state.records``, ``state.views``), never
  a module behind one;
- the scheduler never imports the worker, and the worker never imports the scheduler;
- ``broker_config/`` imports no other part of Tradewind;
- ``api/`` (the API server) imports ``state/``, ``broker_config/`` and the authoring API, never
  the worker nor the scheduler;
- ``tradewind/`` (the authoring API) imports no other part, directly or through what it imports;
- no part imports the CLI (``cli/``), the roof; the CLI writes no SQL of its own: it imports no
  SQLAlchemy, and reads and writes through ``state/``'s functions as the API does;
- the worker's modules import one another without a cycle;
- the wire (``worker/wire/``), which every process of the worker loads, imports nothing of
  Tradewind but itself;
- the task side (``worker/task_runner/``, what a task process runs) never reaches SQL: neither
  ``state`` nor ``sqlalchemy``, directly or through the first-party modules it imports at module
  level, and importing all of it in a fresh interpreter loads neither; nor does importing the
  fork server, whose imports every task process it forks inherits.

Every import statement counts for the direct rules, including those inside functions and under
``TYPE_CHECKING``; the transitive rule follows the imports a module runs when it is imported (not
those under ``TYPE_CHECKING``: the store's faces name their modules there and import them lazily).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("tradewind", "scheduler", "worker", "state", "broker_config", "api", "cli", "triggerer")
#: The parts below the CLI (all of them but the roof itself).
FLOORS = tuple(part for part in PARTS if part != "cli")


@dataclass(frozen=True)
class Import:
    module: str  # absolute dotted name
    lineno: int
    top_level: bool  # at module level (not inside a function)
    typing_only: bool = False  # under ``if TYPE_CHECKING:``: never run


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _function_bodies(tree: ast.AST) -> set[int]:
    """ids of the import nodes that sit inside a function."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            inside.update(id(child) for child in ast.walk(node) if child is not node)
    return inside


def _typing_only(tree: ast.AST) -> set[int]:
    """ids of the nodes under an ``if TYPE_CHECKING:``."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            inside.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    return inside


def imports_of(path: Path, root: Path = ROOT) -> list[Import]:
    """Every import of a file as absolute names; ``from a import b`` yields ``a`` and ``a.b``."""
    tree = ast.parse(path.read_text(), str(path))
    in_functions = _function_bodies(tree)
    typing = _typing_only(tree)
    is_package = path.name == "__init__.py"
    package = module_name(path if is_package else path.parent, root)
    found = []
    for node in ast.walk(tree):
        top, unrun = id(node) not in in_functions, id(node) in typing
        if isinstance(node, ast.Import):
            found += [Import(alias.name, node.lineno, top, unrun) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.append(Import(base, node.lineno, top, unrun))
            found += [
                Import(f"{base}.{alias.name}", node.lineno, top, unrun) for alias in node.names
            ]
    return found


def files_of(part: str) -> list[Path]:
    base = ROOT / part
    if base.suffix == ".py":
        return [base]
    return sorted(p for p in base.rglob("*.py") if "__pycache__" not in p.parts)


def is_within(module: str, banned: str) -> bool:
    return module == banned or module.startswith(banned + ".")


def violations(part: str, banned: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{imp.lineno} imports {imp.module}"
        for path in files_of(part)
        for imp in imports_of(path)
        if any(is_within(imp.module, name) for name in banned)
    ]


@pytest.mark.parametrize(
    ("part", "banned"),
    [
        ("state", ("worker", "scheduler", "celery", "kombu")),
        ("scheduler", ("worker",)),
        ("worker", ("scheduler",)),
        ("broker_config", ("tradewind", "state", "worker", "scheduler")),
        ("worker/task_runner", ("state", "sqlalchemy")),
        ("api", ("worker", "scheduler", "celery")),
        ("tradewind", tuple(part for part in PARTS if part != "tradewind")),
        ("cli", ("sqlalchemy",)),
        ("triggerer", ("worker", "scheduler", "celery", "api")),
    ],
)
def test_a_part_never_imports_what_it_must_not(part: str, banned: tuple[str, ...]) -> None:
    assert files_of(part), f"{part} has no Python files: the check would prove nothing"
    assert violations(part, banned) == []


def test_the_wire_imports_nothing_of_tradewind_but_itself() -> None:
    assert files_of("worker/wire"), "worker/wire has no Python files: the check would prove nothing"
    found = [
        f"{path.relative_to(ROOT)}:{imp.lineno} imports {imp.module}"
        for path in files_of("worker/wire")
        for imp in imports_of(path)
        if any(is_within(imp.module, part) for part in PARTS)
        and not is_within(imp.module, "worker.wire")
    ]
    assert found == []


STATE_FACES = ("state.core", "state.engine", "state.records", "state.views")


@pytest.mark.parametrize(
    ("layer", "banned"),
    [
        ("state/core", ("state.engine", "state.records", "state.views")),
        ("state/records", ("state.engine", "state.views")),
        ("state/engine", ("state.views",)),
        ("state/views", ("state.engine",)),
    ],
)
def test_a_layer_of_the_store_imports_only_the_layers_beneath_it(
    layer: str, banned: tuple[str, ...]
) -> None:
    assert files_of(layer), f"{layer} has no Python files: the check would prove nothing"
    assert violations(layer, banned) == []


def past_a_face(path: Path, root: Path = ROOT) -> list[str]:
    """The imports of ``path`` that reach a module of the store other than through a face."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        found += [
            f"{path.relative_to(root)}:{node.lineno} imports {module}"
            for module in modules
            if is_within(module, "state") and module not in STATE_FACES
        ]
    return found


@pytest.mark.parametrize("part", [part for part in PARTS if part != "state"])
def test_every_other_part_reaches_the_store_through_its_faces(part: str) -> None:
    assert [line for path in files_of(part) for line in past_a_face(path)] == []


def test_the_face_rule_names_a_module_behind_a_face(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text(
        "from state.core import get_engine\nimport state.views\nfrom state.core.db import x\n"
    )
    assert past_a_face(module, tmp_path) == ["probe.py:3 imports state.core.db"]


@pytest.mark.parametrize("part", FLOORS)
def test_no_part_imports_the_cli(part: str) -> None:
    assert violations(part, ("cli",)) == []


def first_party_file(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def reached_from(start: str) -> Iterator[str]:
    """Every module name a first-party module imports when it is imported, transitively."""
    seen: set[str] = set()
    pending = [start]
    while pending:
        module = pending.pop()
        # Importing a.b.c runs a/__init__ and a/b/__init__ first.
        parents = [".".join(module.split(".")[:n]) for n in range(1, module.count(".") + 1)]
        for name in [*parents, module]:
            if name in seen:
                continue
            seen.add(name)
            yield name
            path = first_party_file(name)
            if path is not None:
                pending += [
                    imp.module for imp in imports_of(path) if imp.top_level and not imp.typing_only
                ]


TASK_RUNNER_MODULES = [module_name(path) for path in files_of("worker/task_runner")]
AUTHORING_MODULES = [module_name(path) for path in files_of("tradewind")]
OTHER_THAN_AUTHORING = tuple(part for part in PARTS if part != "tradewind")
# What a task process must never load: the SQL store, its driver layer, the supervisor's parts.
TASK_PROCESS_BANS = ("state", "sqlalchemy", "scheduler", "celery", "kombu")


@pytest.mark.parametrize(
    ("start", "banned"),
    [
        *((module, TASK_PROCESS_BANS) for module in TASK_RUNNER_MODULES),
        ("worker.fork_server.main", TASK_PROCESS_BANS),
        ("state.engine.scheduling", ("worker", "scheduler", "celery", "kombu")),
        ("scheduler.loop", ("worker",)),
        ("worker.supervisor.execute", ("scheduler",)),
        ("broker_config", ("tradewind", "state", "worker", "scheduler")),
        ("api.app", ("worker", "scheduler", "celery", "cli")),
        # The task process imports the authoring API: it must bring no other part nor SQL along.
        *((module, (*OTHER_THAN_AUTHORING, "sqlalchemy")) for module in AUTHORING_MODULES),
    ],
)
def test_what_a_module_pulls_in_at_import_keeps_the_boundaries(
    start: str, banned: tuple[str, ...]
) -> None:
    reached = list(reached_from(start))
    assert len(reached) > 1
    assert [m for m in reached if any(is_within(m, name) for name in banned)] == []


def test_the_checker_resolves_relative_function_level_and_from_imports(tmp_path: Path) -> None:
    module = tmp_path / "pkg" / "sub" / "mod.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "from . import sibling\n"
        "from ..other import thing\n"
        "import os.path\n"
        "def later():\n"
        "    from state import db\n"
    )
    found = {(imp.module, imp.top_level) for imp in imports_of(module, root=tmp_path)}
    assert found == {
        ("pkg.sub", True),
        ("pkg.sub.sibling", True),
        ("pkg.other", True),
        ("pkg.other.thing", True),
        ("os.path", True),
        ("state", False),
        ("state.db", False),
    }


def test_the_lazy_app_of_the_worker_package_is_not_a_module_level_import() -> None:
    imports = [imp for imp in imports_of(ROOT / "worker" / "__init__.py")]
    assert {imp.top_level for imp in imports if imp.module == "worker.celery_app"} == {False}


def loaded_by_importing(modules: list[str]) -> list[str]:
    """Every module in ``sys.modules`` once ``modules`` are imported in a fresh interpreter."""
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def test_importing_the_task_side_in_a_fresh_interpreter_loads_no_sql() -> None:
    """What the AST walk above cannot see (a dynamic import, a third-party module that imports
    SQLAlchemy) shows in ``sys.modules`` once the task side is really imported."""
    loaded = loaded_by_importing([*TASK_RUNNER_MODULES, "worker.fork_server.main"])
    assert "worker.task_runner.runner" in loaded
    assert [m for m in loaded if any(is_within(m, name) for name in TASK_PROCESS_BANS)] == []


def test_importing_the_authoring_api_in_a_fresh_interpreter_loads_no_other_part() -> None:
    """What DAG authors import stands alone: no module of it brings the store, the worker, the
    scheduler, the broker's contract, the API server or the CLI into their process."""
    loaded = loaded_by_importing(AUTHORING_MODULES)
    assert "tradewind.dag" in loaded
    assert [m for m in loaded if any(is_within(m, part) for part in OTHER_THAN_AUTHORING)] == []


def import_cycle(paths: list[Path], root: Path = ROOT) -> list[str]:
    """A cycle of module-level imports among the modules at ``paths`` (``TYPE_CHECKING`` ones
    count: a type that needs a cycle to be named is in the wrong module), or []."""
    modules = {module_name(path, root): path for path in paths}
    graph = {
        name: {
            imp.module
            for imp in imports_of(path, root)
            if imp.top_level and imp.module in modules and imp.module != name
        }
        for name, path in modules.items()
    }
    done: set[str] = set()

    def walk(name: str, path: list[str]) -> list[str]:
        if name in path:
            return [*path[path.index(name) :], name]
        if name in done:
            return []
        for imported in sorted(graph[name]):
            if cycle := walk(imported, [*path, name]):
                return cycle
        done.add(name)
        return []

    return next((cycle for name in sorted(graph) if (cycle := walk(name, []))), [])


def test_the_worker_modules_import_one_another_without_a_cycle() -> None:
    assert import_cycle(files_of("worker")) == []


def test_the_cycle_finder_names_a_cycle_through_type_checking(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n"
    )
    assert import_cycle(sorted(package.glob("*.py")), tmp_path) == ["pkg.a", "pkg.b", "pkg.a"]
