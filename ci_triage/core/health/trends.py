"""Runner health per UTC day: a host x day grid of infra failures, and what reruns cost each day.

Pure: the same JobRecords `analysis.analyse` reads, and its HealthReport for which hosts matter and in
what order; a DailyTrends out, for the `runners --format html` page and its PNG.

- A job belongs to the day it started (UTC; its completion when it has no start); jobs outside the
  window's days are left out. Only jobs that ran to an end count (records.COUNTED_CONCLUSIONS), as in
  the health tables.
- Reruns: attempt n > 1 of a run is a rerun, on the day its first job started, `automatic` and
  `rescued` read exactly as analysis reads them (so the days add up to the report's rerun totals), its
  runner-minutes the durations of its jobs.
- The heatmap's rows (`heatmap_rows`): the hosts of every pool that had an infra failure in the
  window, in the report's order (sick first, then by evidence), at most MAX_HOSTS; the rest are summed
  into one row. A pool without any infra failure (GitHub's ephemeral runners, one job per host) says
  nothing per host and would bury the hosts that matter.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from ci_triage.core.evidence.hosts import host_of
from ci_triage.core.health.records import COUNTED_CONCLUSIONS, HealthReport, JobRecord, is_infra

MAX_DAYS = 62  # about two months of columns still read in one picture; a longer window keeps its last days
MAX_HOSTS = 30


@dataclass(frozen=True)
class DayReruns:
    requested: int = 0
    automatic: int = 0
    rescued: int = 0
    automatic_minutes: float = 0.0
    manual_minutes: float = 0.0

    @property
    def manual(self) -> int:
        return self.requested - self.automatic

    @property
    def runner_minutes(self) -> float:
        return self.automatic_minutes + self.manual_minutes


@dataclass(frozen=True)
class DayTotals:
    jobs: int = 0
    failures: int = 0
    infra_failures: int = 0


@dataclass(frozen=True)
class DailyTrends:
    days: tuple[date, ...]
    # host -> one count per day (same order as `days`); every host that ran a counted job
    host_jobs: dict[str, tuple[int, ...]]
    host_infra: dict[str, tuple[int, ...]]
    totals: tuple[DayTotals, ...]
    reruns: tuple[DayReruns, ...]
    clipped_days: int = 0  # days of the window before `days[0]` left out (MAX_DAYS)


@dataclass(frozen=True)
class HeatmapRow:
    host: str
    infra: tuple[int, ...]
    jobs: tuple[int, ...]
    sick: bool = False
    merged: int = 0  # > 0: this row sums that many hosts


def _day_range(records: list[JobRecord], since: datetime | None, until: datetime | None) -> tuple[date, ...]:
    moments = [m for r in records if (m := r.started_at or r.completed_at) is not None]
    first = since.date() if since is not None else (min(moments).date() if moments else None)
    # `until` is an instant; a window ending at midnight does not include the day that starts then.
    last = (until - timedelta(microseconds=1)).date() if until is not None else (
        max(moments).date() if moments else None)
    if first is None or last is None or last < first:
        return ()
    return tuple(first + timedelta(days=i) for i in range((last - first).days + 1))


def daily_trends(records: Iterable[JobRecord], *, since: datetime | None = None, until: datetime | None = None,
                 host_pattern: re.Pattern[str] | None = None,
                 automatic: Mapping[tuple[int, int], bool] | None = None) -> DailyTrends:
    rows = list(records)
    all_days = _day_range(rows, since, until)
    days = all_days[-MAX_DAYS:]
    index = {day: i for i, day in enumerate(days)}
    width = len(days)
    automatic = automatic or {}

    jobs_of: dict[str, list[int]] = defaultdict(lambda: [0] * width)
    infra_of: dict[str, list[int]] = defaultdict(lambda: [0] * width)
    jobs, failures, infra = [0] * width, [0] * width, [0] * width
    # Per (run, attempt): its first start, minutes, whether a job in it failed (as analysis reads it:
    # every job of the attempt, counted or not, and wherever its day falls).
    attempt_start: dict[tuple[int, int], datetime] = {}
    attempt_minutes: dict[tuple[int, int], float] = defaultdict(float)
    attempt_failed: dict[tuple[int, int], bool] = defaultdict(bool)
    hosts: dict[str | None, str] = {}
    for record in rows:
        key = (record.run_id, record.attempt)
        attempt_failed[key] |= record.failed
        attempt_minutes[key] += record.minutes
        moment = record.started_at or record.completed_at
        if moment is not None and (key not in attempt_start or moment < attempt_start[key]):
            attempt_start[key] = moment
        day = index.get(moment.date()) if moment is not None else None
        if day is None or record.conclusion not in COUNTED_CONCLUSIONS:
            continue
        host = hosts.get(record.runner_name)
        if host is None:
            host = hosts[record.runner_name] = host_of(record.runner_name, host_pattern) or ""
        bad = record.failed and is_infra(record.category)
        jobs[day] += 1
        failures[day] += record.failed
        infra[day] += bad
        if host:
            jobs_of[host][day] += 1
            infra_of[host][day] += bad

    per_day: list[dict[str, float]] = [defaultdict(float) for _ in range(width)]
    for key, start in attempt_start.items():
        if key[1] < 2:
            continue
        day = index.get(start.date())
        if day is None:
            continue
        auto = bool(automatic.get(key, False))
        before_failed = attempt_failed.get((key[0], key[1] - 1), True)  # no earlier attempt kept: it was red
        tally = per_day[day]
        tally["requested"] += 1
        tally["automatic"] += auto
        tally["rescued"] += before_failed and not attempt_failed[key]
        tally["automatic_minutes" if auto else "manual_minutes"] += attempt_minutes[key]
    return DailyTrends(
        days=days,
        host_jobs={host: tuple(counts) for host, counts in sorted(jobs_of.items())},
        host_infra={host: tuple(infra_of[host]) for host in sorted(jobs_of)},
        totals=tuple(DayTotals(j, f, i) for j, f, i in zip(jobs, failures, infra)),
        reruns=tuple(DayReruns(int(t["requested"]), int(t["automatic"]), int(t["rescued"]),
                               round(t["automatic_minutes"], 1), round(t["manual_minutes"], 1)) for t in per_day),
        clipped_days=len(all_days) - len(days))


def heatmap_rows(trends: DailyTrends, report: HealthReport, max_hosts: int = MAX_HOSTS) -> tuple[HeatmapRow, ...]:
    """The hosts worth a row: those of pools with an infra failure, sick first (the report's order)."""
    infra_pools = {h.pool for h in report.hosts if h.infra_failures}
    wanted = [h for h in report.hosts if h.pool in infra_pools and h.key in trends.host_jobs]
    rows = [HeatmapRow(h.key, trends.host_infra[h.key], trends.host_jobs[h.key], h.sick) for h in wanted]
    if len(rows) <= max_hosts:
        return tuple(rows)
    kept, rest = rows[: max_hosts - 1], rows[max_hosts - 1:]
    summed = HeatmapRow(f"{len(rest)} other hosts", tuple(map(sum, zip(*(r.infra for r in rest)))),
                        tuple(map(sum, zip(*(r.jobs for r in rest)))), merged=len(rest))
    return (*kept, summed)
