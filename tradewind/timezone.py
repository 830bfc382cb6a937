"""Airflow's ``timezone`` helpers (``airflow.utils.timezone``, the compat provider's ``timezone``):
aware datetimes in UTC, which is what every date of Tradewind is."""

from __future__ import annotations

import datetime as dt

utc = dt.UTC


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def datetime(*args: int, tzinfo: dt.tzinfo | None = None, **kwargs: int) -> dt.datetime:
    """A ``datetime`` whose zone is UTC unless ``tzinfo`` says otherwise."""
    return dt.datetime(*args, tzinfo=tzinfo or dt.UTC, **kwargs)  # type: ignore[arg-type,misc]


def is_localized(value: dt.datetime) -> bool:
    return value.utcoffset() is not None


def make_aware(value: dt.datetime, timezone: dt.tzinfo | None = None) -> dt.datetime:
    return value if is_localized(value) else value.replace(tzinfo=timezone or dt.UTC)


def convert_to_utc(value: dt.datetime) -> dt.datetime:
    return make_aware(value).astimezone(dt.UTC)


def parse(text: str) -> dt.datetime:
    """An ISO 8601 date or time, UTC unless it names its offset."""
    return make_aware(dt.datetime.fromisoformat(text))


def days_ago(n: int, hour: int = 0, minute: int = 0, second: int = 0) -> dt.datetime:
    """Airflow 2's ``airflow.utils.dates.days_ago``: midnight UTC today, ``n`` days back."""
    today = utcnow().replace(hour=hour, minute=minute, second=second, microsecond=0)
    return today - dt.timedelta(days=n)
