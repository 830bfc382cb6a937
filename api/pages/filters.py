"""A browse's filters and order, read from its URL: what a person can bookmark or send.

``Filters`` reads the query string a browse's form sends (GET, so the filters live in the URL)
and keeps a one-line error for each value it cannot read (a date that is no date, a state that
does not exist): the page shows them above its list and drops that filter alone, never a 500.
``Order`` is the list's ``order_by`` and the links of its column headings, each of which sorts
by its column and, clicked again, the other way.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

from starlette.datastructures import QueryParams

from state.views import NO_SPAN, Span


@dataclass
class Filters:
    """The query parameters of one request, read once, with the errors of those unreadable."""

    params: QueryParams
    errors: list[str] = field(default_factory=list)

    def text(self, name: str) -> str | None:
        value = self.params.get(name, "").strip()
        return value or None

    def many(self, name: str, allowed: Collection[str] | None = None) -> list[str]:
        """Every value of ``name`` (repeated, or one comma-separated), each one allowed."""
        values = [v.strip() for raw in self.params.getlist(name) for v in raw.split(",")]
        kept = [value for value in values if value]
        if allowed is None:
            return kept
        wrong = [value for value in kept if value not in allowed]
        if wrong:
            self.errors.append(f"{name}: {wrong[0]!r} is not one of {', '.join(sorted(allowed))}")
        return [value for value in kept if value in allowed]

    def choice(self, name: str, allowed: Collection[str]) -> str | None:
        chosen = self.many(name, allowed)
        return chosen[0] if chosen else None

    def boolean(self, name: str) -> bool | None:
        """``true``/``false`` (a select's values); anything else is no filter."""
        value = self.choice(name, ("true", "false"))
        return None if value is None else value == "true"

    def moment(self, name: str) -> dt.datetime | None:
        """A date (``2026-12-04``) or a date and time, in UTC unless it names its zone; a date
        alone as the upper end of a range (``_lte``) is the end of that day."""
        raw = self.text(name)
        if raw is None:
            return None
        try:
            value = dt.datetime.fromisoformat(raw)
        except ValueError:
            self.errors.append(
                f"{name}: {raw!r} is not a date (write 2026-12-04 or 2026-12-04T13:30)"
            )
            return None
        try:
            if name.endswith("_lte") and len(raw) == len("2026-12-04"):
                value += dt.timedelta(days=1, microseconds=-1)  # "to" a day: the whole day
            return value.astimezone(dt.UTC) if value.tzinfo else value.replace(tzinfo=dt.UTC)
        except OverflowError:  # 9999-12-31 as an end, 0001-01-01 east of UTC
            self.errors.append(f"{name}: {raw!r} is out of range")
            return None

    def span(self, name: str) -> Span:
        """``{name}_gte`` and ``{name}_lte`` as a range of dates."""
        gte, lte = self.moment(f"{name}_gte"), self.moment(f"{name}_lte")
        return Span(gte, lte) if gte or lte else NO_SPAN

    def seconds(self, name: str) -> Span:
        """``{name}_gte`` and ``{name}_lte`` as a range of seconds."""
        ends: list[float | None] = []
        for bound in (f"{name}_gte", f"{name}_lte"):
            raw = self.text(bound)
            try:
                ends.append(float(raw) if raw is not None else None)
            except ValueError:
                self.errors.append(f"{bound}: {raw!r} is not a number of seconds")
                ends.append(None)
        return Span(ends[0], ends[1]) if ends[0] is not None or ends[1] is not None else NO_SPAN

    @property
    def active(self) -> bool:
        """Whether any filter is set (the empty state then says "no match", not "none yet")."""
        return any(
            value.strip() for key, value in self.params.multi_items() if key not in _NOT_FILTERS
        )


_NOT_FILTERS = {"page", "order_by"}


@dataclass(frozen=True)
class Order:
    """The list's order (one field, ``-`` in front for descending) and its headings' links."""

    path: str
    params: tuple[tuple[str, str], ...]
    field: str
    default: str

    @classmethod
    def of(cls, path: str, filters: Filters, allowed: Sequence[str], default: str) -> Order:
        chosen = filters.text("order_by") or default
        if chosen.removeprefix("-") not in allowed:
            filters.errors.append(
                f"order_by: cannot sort by {chosen!r}; sort by {', '.join(allowed)}"
            )
            chosen = default
        params = tuple(
            (k, v) for k, v in filters.params.multi_items() if k not in ("page", "order_by")
        )
        return cls(path, params, chosen, default)

    @property
    def order_by(self) -> tuple[str, ...]:
        return (self.field,)

    def href(self, name: str) -> str:
        """Sort by ``name``: descending first (newest, longest), ascending when clicked again."""
        wanted = name if self.field == f"-{name}" else f"-{name}"
        return f"{self.path}?{urlencode([*self.params, ('order_by', wanted)])}"

    def mark(self, name: str) -> str:
        if self.field == name:
            return "▲"
        return "▼" if self.field == f"-{name}" else ""
