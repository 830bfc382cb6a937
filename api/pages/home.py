"""``/`` (and ``/home``): the landing page after sign-in, as Airflow 3's home.

The components' health from their heartbeats (each kind: healthy, unhealthy or not running,
its hosts and their last beats), the DAGs with a run running or failed in the last day, the
day's runs by state, the newest runs and asset events, and the count of import errors. The
health is a partial of its own (``/home/health``), refreshed every few seconds. Every statement
is bounded whatever the history holds (``state.views.home``, ``state.records.jobs``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from api.deps import Context, DbSession, PageUser
from api.templating import render
from state.core import utcnow
from state.records import JobKind, is_alive, kinds_health, recent_jobs
from state.views import home_facts

router = APIRouter()
#: The runs, events and DAG names each list shows; the hosts shown per kind.
SHOWN = 10
HOSTS_SHOWN = 20
#: A job gone silent stays listed (as unhealthy) this long after its last beat.
SILENT_SHOWN = dt.timedelta(hours=1)
DAY = dt.timedelta(days=1)
#: The kinds in the order the page shows them, with their names for people.
KIND_NAMES = {
    JobKind.SCHEDULER: "Scheduler",
    JobKind.DAG_PROCESSOR: "DAG processor",
    JobKind.TRIGGERER: "Triggerer",
    JobKind.WORKER: "Workers",
    JobKind.API_SERVER: "API servers",
}


@dataclass(frozen=True)
class HostRow:
    hostname: str
    name: str | None
    pid: int
    started: dt.datetime
    latest_heartbeat: dt.datetime
    alive: bool


@dataclass(frozen=True)
class KindCard:
    kind: str
    title: str
    status: str | None
    latest_heartbeat: dt.datetime | None
    hosts: list[HostRow]

    @property
    def alive(self) -> int:
        return sum(host.alive for host in self.hosts)


@router.get("/", response_class=HTMLResponse)
@router.get("/home", response_class=HTMLResponse)
def home_page(request: Request, session: DbSession, context: Context, _user: PageUser) -> Response:
    now = utcnow()
    page = {
        "facts": home_facts(session, now, DAY, SHOWN),
        **_health(session, context.settings.job_health_threshold, now),
        "ago": lambda moment: ago(moment, now),
    }
    return render(request, "pages/home.html", page)


@router.get("/home/health", response_class=HTMLResponse)
def health_partial(
    request: Request, session: DbSession, context: Context, _user: PageUser
) -> Response:
    """The health cards alone, for the page's refresh."""
    now = utcnow()
    page = {
        **_health(session, context.settings.job_health_threshold, now),
        "ago": lambda moment: ago(moment, now),
    }
    return render(request, "partials/home_health.html", page)


def _health(session: Session, threshold: dt.timedelta, now: dt.datetime) -> dict[str, object]:
    kinds = kinds_health(session, threshold)
    jobs = recent_jobs(session, now - SILENT_SHOWN, HOSTS_SHOWN)
    cards = [
        KindCard(
            str(kind),
            title,
            kinds[kind].status,
            kinds[kind].latest_heartbeat,
            [
                HostRow(
                    job.hostname,
                    job.name,
                    job.pid,
                    job.start_date,
                    job.latest_heartbeat,
                    is_alive(job, threshold, now),
                )
                for job in jobs[kind]
            ],
        )
        for kind, title in KIND_NAMES.items()
    ]
    return {"cards": cards}


def ago(moment: dt.datetime | None, now: dt.datetime) -> str:
    """``moment`` as a person reads it next to now: "12 s ago", "5 min ago", "3 h ago"."""
    if moment is None:
        return "never"
    seconds = max(0, int((now - moment).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"
