"""CPU by process, read from /proc, for the benchmarks: which process of a fleet spends what.

A snapshot reads ``utime + stime`` of each process of interest (``/proc/<pid>/stat``), and for a
fork server also ``cutime + cstime``: the CPU of the task processes it has reaped, which are gone
by the time the next snapshot is taken. The difference of two snapshots, by role, is what each
kind of process spent in between. ``peak_pss`` samples the proportional set size of a process
tree (``/proc/<pid>/smaps_rollup``): shared pages counted once across the tree.
"""

from __future__ import annotations

import os
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")
ROLES = (
    "celery main",
    "pool processes",
    "fork servers",
    "task processes",
    "scheduler",
    "watcher",
    "postgresql",
    "redis",
)


@dataclass(frozen=True)
class Stat:
    ppid: int
    own_ticks: int  # utime + stime
    children_ticks: int  # cutime + cstime: reaped children


def read_stat(pid: int) -> Stat | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2 :].split()  # fields 3.. of proc(5)
    return Stat(
        int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])
    )


def children_by_parent() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = defaultdict(list)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = read_stat(int(entry.name))
            if stat is not None:
                tree[stat.ppid].append(int(entry.name))
    return tree


def descendants(root: int, tree: dict[int, list[int]]) -> list[int]:
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(tree.get(pid, []))
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@dataclass
class Fleet:
    """The pids of one running fleet, found from its two roots (the worker and the scheduler)."""

    worker: int
    scheduler: int | None = None
    postgres_pids: Callable[[], Iterable[int]] = lambda: ()
    redis_pid: int | None = None
    watcher: int | None = None

    def roles(self) -> dict[int, str]:
        tree = children_by_parent()
        roles = {self.worker: "celery main"}
        for child in tree.get(self.worker, []):
            # Prefork: the worker's children are its pool processes, each with a fork server.
            # Threads: the fork servers are the worker's own children.
            if "worker.fork_server.main" in _cmdline(child):
                roles.update(_fork_server_tree(child, tree))
                continue
            roles[child] = "pool processes"
            for grandchild in tree.get(child, []):
                if "worker.fork_server.main" in _cmdline(grandchild):
                    roles.update(_fork_server_tree(grandchild, tree))
        for root, role in ((self.scheduler, "scheduler"), (self.watcher, "watcher")):
            if root is not None:
                roles.update(dict.fromkeys(descendants(root, tree), role))
        roles.update(dict.fromkeys(self.postgres_pids(), "postgresql"))
        if self.redis_pid is not None:
            roles[self.redis_pid] = "redis"
        return roles


def _fork_server_tree(server: int, tree: dict[int, list[int]]) -> dict[int, str]:
    return {server: "fork servers", **dict.fromkeys(tree.get(server, []), "task processes")}


@dataclass
class Snapshot:
    roles: dict[int, str]
    stats: dict[int, Stat] = field(default_factory=dict)

    @classmethod
    def take(cls, fleet: Fleet) -> Snapshot:
        roles = fleet.roles()
        stats = {pid: stat for pid in roles if (stat := read_stat(pid)) is not None}
        return cls(roles, stats)


def cpu_ms_by_role(before: Snapshot, after: Snapshot) -> dict[str, float]:
    """CPU spent between the snapshots, by role, in ms; a fork server's reaped children count
    as task processes."""
    spent: dict[str, float] = dict.fromkeys(ROLES, 0.0)
    for pid, stat in after.stats.items():
        role = after.roles[pid]
        earlier = before.stats.get(pid)
        if earlier is not None and earlier.own_ticks > stat.own_ticks:
            earlier = None  # the pid was reused by another process meanwhile
        spent[role] += (stat.own_ticks - (earlier.own_ticks if earlier else 0)) * TICK_MS
        if role == "fork servers":
            reaped = stat.children_ticks - (earlier.children_ticks if earlier else 0)
            spent["task processes"] += reaped * TICK_MS
    return spent


def pss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class PeakPss:
    """Samples the PSS of a fleet's worker tree every ``interval_s`` in a thread: the peak of the
    sum, and each kind of process's share of it then."""

    def __init__(self, fleet: Fleet, interval_s: float = 0.5) -> None:
        self._fleet, self._interval = fleet, interval_s
        self._stop = threading.Event()
        self.peak_kb = 0
        self.at_peak: dict[str, float] = {}  # role -> MB
        self.processes_at_peak = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        worker_roles = ("celery main", "pool processes", "fork servers", "task processes")
        while not self._stop.wait(self._interval):
            roles = {pid: role for pid, role in self._fleet.roles().items() if role in worker_roles}
            sizes = {pid: pss_kb(pid) for pid in roles}
            total = sum(sizes.values())
            if total > self.peak_kb:
                self.peak_kb, self.processes_at_peak = total, len(sizes)
                self.at_peak = dict.fromkeys(worker_roles, 0.0)
                for pid, kb in sizes.items():
                    self.at_peak[roles[pid]] += kb / 1024

    @property
    def peak_mb(self) -> float:
        return self.peak_kb / 1024

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
