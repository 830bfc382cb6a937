"""PromQL's few functions the dashboard uses, computed over a series of scrapes of /metrics.

``bench/metrics_dashboard.py`` draws each Grafana panel with these (no Grafana, no Prometheus
here): a gauge, ``rate`` and ``increase`` over a window, and ``histogram_quantile`` over the
buckets' deltas in that window, interpolated within a bucket as Prometheus does.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass

#: The window of ``rate``, ``increase`` and the quantiles: the pictured run lasts a minute or two.
WINDOW_SECONDS = 10.0

Labels = tuple[tuple[str, str], ...]
Scrape = dict[tuple[str, Labels], float]


@dataclass(frozen=True)
class Series:
    """Scrapes over time: ``times[i]`` seconds since the first, ``scrapes[i]`` its samples."""

    times: list[float]
    scrapes: list[Scrape]

    def at(self, i: int, name: str, **labels: str) -> float:
        return self.scrapes[i].get((name, tuple(sorted(labels.items()))), math.nan)

    def label_values(self, name: str, label: str) -> list[str]:
        seen = {
            dict(key[1])[label]
            for scrape in self.scrapes
            for key in scrape
            if key[0] == name and label in dict(key[1])
        }
        return sorted(seen)

    def earlier(self, i: int) -> int:
        """The scrape a window before scrape ``i`` (the first, early on)."""
        return max(0, bisect.bisect_left(self.times, self.times[i] - WINDOW_SECONDS))


Line = tuple[str, list[float]]


# --- what the PromQL computes, over the scrapes -------------------------------------------------


def gauge(name: str, legend: str, **labels: str) -> Callable[[Series], list[Line]]:
    return lambda s: [(legend, [s.at(i, name, **labels) for i in range(len(s.times))])]


def gauge_by(
    name: str, label: str, suffix: str = "", only: str | None = None
) -> Callable[[Series], list[Line]]:
    """One line per value of ``label``; ``only``: that value alone (a dashboard variable)."""

    def draw(s: Series) -> list[Line]:
        return [
            (f"{value}{suffix}", [s.at(i, name, **{label: value}) for i in range(len(s.times))])
            for value in s.label_values(name, label)
            if only is None or value == only
        ]

    return draw


def _delta(s: Series, i: int, name: str, labels: dict[str, str]) -> tuple[float, float]:
    j = s.earlier(i)
    now, then = s.at(i, name, **labels), s.at(j, name, **labels)
    now, then = (0.0 if math.isnan(now) else now), (0.0 if math.isnan(then) else then)
    return now - then, s.times[i] - s.times[j]


def rate_by(name: str, label: str) -> Callable[[Series], list[Line]]:
    """``sum by (label) (rate(name[window]))``."""

    def draw(s: Series) -> list[Line]:
        lines = []
        for value in s.label_values(name, label):
            points = []
            for i in range(len(s.times)):
                change, seconds = _delta(s, i, name, {label: value})
                points.append(change / seconds if seconds else 0.0)
            lines.append((value, points))
        return lines

    return draw


def increase(name: str, legend: str) -> Callable[[Series], list[Line]]:
    return lambda s: [(legend, [_delta(s, i, name, {})[0] for i in range(len(s.times))])]


def quantile(
    q: float, name: str, legend: str, by: str | None = None
) -> Callable[[Series], list[Line]]:
    """``histogram_quantile(q, sum by (le[, by]) (rate(name_bucket[window])))``."""

    def one(s: Series, labels: dict[str, str]) -> list[float]:
        bounds = sorted(
            {dict(k[1])["le"] for sc in s.scrapes for k in sc if k[0] == f"{name}_bucket"},
            key=lambda le: math.inf if le == "+Inf" else float(le),
        )
        points = []
        for i in range(len(s.times)):
            cumulative = [
                (b, _delta(s, i, f"{name}_bucket", {**labels, "le": b})[0]) for b in bounds
            ]
            points.append(_histogram_quantile(q, cumulative))
        return points

    def draw(s: Series) -> list[Line]:
        if by is None:
            return [(legend, one(s, {}))]
        return [(f"{legend} {v}", one(s, {by: v})) for v in s.label_values(f"{name}_count", by)]

    return draw


def _histogram_quantile(q: float, buckets: list[tuple[str, float]]) -> float:
    """Prometheus's: linear within the bucket the rank falls in; NaN without observations."""
    if not buckets or buckets[-1][1] <= 0:
        return math.nan
    rank = q * buckets[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for le, count in buckets:
        upper = math.inf if le == "+Inf" else float(le)
        if count >= rank:
            if upper == math.inf:
                return lower_bound  # as Prometheus: the highest finite bound
            inside = count - lower_count
            share = (rank - lower_count) / inside if inside else 1.0
            return lower_bound + (upper - lower_bound) * share
        lower_bound, lower_count = upper, count
    return lower_bound
