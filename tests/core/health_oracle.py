"""The pandas reading of runner health that core/health/analysis.py replaced (issue 14's scale work),
kept as the test oracle: tests/core/test_health_scale.py checks that the vectorised analysis gives the
same HealthReport on random fleets. No product module imports this.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import numpy as np
import pandas as pd

from ci_triage.core.evidence.timeline_frame import CONCLUSIONS, MISSING, JobFrame, correlate
from ci_triage.core.health.analysis import (
    DEFAULT_ALPHA,
    DEFAULT_MIN_INFRA_FAILURES,
    MAX_HOTSPOTS,
    RECOMMENDATIONS,
    UNCLASSIFIED,
)
from ci_triage.core.health.records import (
    CONTENTION_CATEGORIES,
    COUNTED_CONCLUSIONS,
    FlakyJob,
    HealthReport,
    Hotspot,
    RerunSummary,
    RunnerHealth,
    is_infra,
)
from ci_triage.core.health.stats import sick_mask
from ci_triage.model import FAILED_CONCLUSIONS


def analyse_frame(frame: pd.DataFrame, *, repo: str, since: datetime | None = None,
                  until: datetime | None = None, automatic: Mapping[tuple[int, int], bool] | None = None,
                  alpha: float = DEFAULT_ALPHA, min_infra_failures: int = DEFAULT_MIN_INFRA_FAILURES,
                  hotspots: bool = True) -> HealthReport:
    conclusion = frame["conclusion"].astype(str)
    counted = conclusion.isin(COUNTED_CONCLUSIONS).to_numpy()
    failed = conclusion.isin(FAILED_CONCLUSIONS).to_numpy()
    category = frame["category"]
    infra_of_category = {c: is_infra(c) for c in category.cat.categories if c}
    infra = failed & category.map(lambda c: infra_of_category.get(c, False)).astype(bool).to_numpy()
    work = pd.DataFrame({"runner": frame["runner"], "host": frame["host"], "pool": frame["pool"],
                         "labels": frame["labels"], "category": category, "failed": failed, "infra": infra})
    work = work[counted]
    runners = _health(work, "runner", alpha, min_infra_failures)
    hosts = _health(work, "host", alpha, min_infra_failures)
    notes = []
    if (failed & (category.astype(str) == UNCLASSIFIED).to_numpy()).any():
        notes.append("Some failures were not classified (their logs were not read): they count as failures, "
                     "not as infra failures.")
    return HealthReport(
        repo=repo, since=since, until=until, runners=runners, hosts=hosts,
        hotspots=_hotspots(frame, failed) if hotspots else (),
        reruns=_reruns(frame, failed, automatic or {}), flaky_jobs=_flaky(frame, failed, counted),
        alpha=alpha, min_infra_failures=min_infra_failures, notes=tuple(notes))


def _health(work: pd.DataFrame, key: str, alpha: float, min_infra: int) -> tuple[RunnerHealth, ...]:
    known = work[work[key].astype(str) != ""]
    if not len(known):
        return ()
    by_key = known.groupby(key, observed=True)
    totals = by_key.agg(jobs=("failed", "size"), failures=("failed", "sum"), infra=("infra", "sum"))
    # The entity's pool: the pool most of its jobs ran on; the test reads its jobs on that pool only.
    per_pool = known.groupby([key, "pool"], observed=True).agg(n=("infra", "size"), k=("infra", "sum")).reset_index()
    per_pool = per_pool.sort_values([key, "n", "pool"], ascending=[True, False, True], kind="stable")
    main = per_pool.drop_duplicates(key).set_index(key)
    pool_totals = known.groupby("pool", observed=True).agg(N=("infra", "size"), K=("infra", "sum"))
    members = known.groupby("pool", observed=True)[key].nunique()
    main = main.join(pool_totals, on="pool").join(members.rename("members"), on="pool")
    main = main.reindex(totals.index)
    n, k = main["n"].to_numpy(np.int64), main["k"].to_numpy(np.int64)
    N, K = main["N"].to_numpy(np.int64), main["K"].to_numpy(np.int64)
    alone = main["members"].to_numpy(np.int64) < 2  # nothing to compare with
    p, q, sick = sick_mask(k, n, K, N, alpha=alpha, min_infra_failures=min_infra, comparable=~alone)
    rest_jobs, rest_infra = N - n, K - k
    rest_rate = np.where(rest_jobs > 0, rest_infra / np.maximum(rest_jobs, 1), 0.0)

    failed_rows = known[known["failed"]]
    categories: dict[str, dict[str, int]] = {}
    for (entity, cat), count in failed_rows.groupby([key, "category"], observed=True).size().items():
        if count:
            categories.setdefault(str(entity), {})[str(cat)] = int(count)
    labels_of = _mode(known, key, "labels")
    host_of = _mode(known, key, "host") if key == "runner" else None
    runners_of: dict[str, tuple[str, ...]] = {}
    if key == "host":
        pairs = known[["host", "runner"]].drop_duplicates()
        for host, runner in sorted(zip(pairs["host"].astype(str), pairs["runner"].astype(str))):
            runners_of.setdefault(host, ())
            runners_of[host] += (runner,)
    found = []
    for i, entity in enumerate(totals.index):
        name = str(entity)
        jobs = int(totals["jobs"].iloc[i])
        infra_count = int(totals["infra"].iloc[i])
        labels = labels_of.get(name, "")
        found.append(RunnerHealth(
            key=name, host=(host_of.get(name) or None) if host_of is not None else name,
            labels=tuple(labels.split(",")) if labels else (), pool=str(main["pool"].iloc[i]),
            jobs=jobs, failures=int(totals["failures"].iloc[i]), infra_failures=infra_count,
            infra_failure_rate=infra_count / jobs if jobs else 0.0, pool_jobs=int(N[i]),
            pool_infra_failures=int(K[i]), pool_infra_failure_rate=float(rest_rate[i]), p_value=float(p[i]),
            q_value=float(q[i]), sick=bool(sick[i]),
            categories=dict(sorted(categories.get(name, {}).items(), key=lambda kv: (-kv[1], kv[0]))),
            runners=runners_of.get(name, ())))
    # Sick first, then by evidence, then by name: the order a reader wants.
    found.sort(key=lambda h: (not h.sick, h.p_value, -h.infra_failure_rate, h.key))
    return tuple(found)


def _mode(known: pd.DataFrame, key: str, column: str) -> dict[str, str]:
    """Per entity, its most frequent value of `column` (ties: the smallest)."""
    sizes = known.groupby([key, column], observed=True).size().reset_index(name="n")
    sizes = sizes.assign(value=sizes[column].astype(str)).sort_values([key, "n", "value"],
                                                                       ascending=[True, False, True], kind="stable")
    first = sizes.drop_duplicates(key)
    return dict(zip(first[key].astype(str), first["value"]))


def _hotspots(frame: pd.DataFrame, failed: np.ndarray) -> tuple[Hotspot, ...]:
    host_codes = frame["host"].cat.codes.to_numpy(np.int64)
    known_host = frame["host"].astype(str).to_numpy() != ""
    host_codes = np.where(known_host, host_codes, -1)
    contention = failed & frame["category"].astype(str).isin(CONTENTION_CATEGORIES).to_numpy() & known_host
    if not contention.any():
        return ()
    conclusion_codes = {value: code for code, value in enumerate(CONCLUSIONS)}
    conclusion = np.array([conclusion_codes.get(c, -1) for c in frame["conclusion"].astype(str)], dtype=np.int64)
    # The host is the pool: every overlap the engine finds is on the failed job's host.
    jobs = JobFrame.from_arrays(
        job_id=frame["job_id"].to_numpy(np.int64), run_id=frame["run_id"].to_numpy(np.int64),
        pr=frame["pr"].to_numpy(np.int64), pool=np.where(host_codes >= 0, host_codes, len(frame) + 1),
        host=host_codes, start=np.where(frame["start"] >= 0, frame["start"], MISSING).astype(np.int64),
        end=np.where(frame["end"] >= 0, frame["end"], MISSING).astype(np.int64),
        conclusion=conclusion, name=frame["name"].cat.codes.to_numpy(np.int64), ticks_per_second=1.0)
    found = correlate(jobs, failed=np.flatnonzero(contention), window_s=0.0, cap=None)
    lengths = np.diff(found.overlap_offsets)
    failed_pos = np.repeat(found.failed, lengths)
    other_pos = found.overlap_job
    if not len(other_pos):
        return ()
    label = (frame["workflow"].astype(str) + " / " + frame["name"].astype(str)).to_numpy()
    who = np.where(frame["pr"].to_numpy() >= 0, "#" + frame["pr"].astype(str), frame["branch"].astype(str))
    a, b = label[failed_pos], label[other_pos]
    pairs = pd.DataFrame({
        "host": frame["host"].astype(str).to_numpy()[failed_pos], "first": np.minimum(a, b), "second": np.maximum(a, b),
        "category": frame["category"].astype(str).to_numpy()[failed_pos], "failed": failed_pos,
        "who_failed": who[failed_pos], "who_other": who[other_pos],
        "ports": frame["ports"].to_numpy()[failed_pos],
        # The other job was already running when the failed one started: it held the port or device first.
        "held": frame["start"].to_numpy()[other_pos] <= frame["start"].to_numpy()[failed_pos]})
    keys = ["host", "first", "second", "category"]
    distinct = pairs.drop_duplicates([*keys, "failed"])
    counts = distinct.groupby(keys, sort=False).size().rename("count")
    held_pairs = pairs[pairs["held"]].drop_duplicates([*keys, "failed"])  # any pair of the failed job held
    held = held_pairs.groupby(keys, sort=False).size().rename("held_count")
    ranked = pd.concat([counts, held], axis=1).fillna(0).reset_index()
    ranked = ranked.sort_values(["count", "held_count", *keys], ascending=[False, False, True, True, True, True],
                                kind="stable").head(MAX_HOTSPOTS)
    pairs = pairs.merge(ranked[keys], on=keys)
    result = []
    for (host, first, second, cat), group in pairs.groupby(keys, sort=True):
        prs = sorted((set(group["who_failed"]) | set(group["who_other"])) - {""}, key=_pr_order)
        ports = sorted({p for value in group.drop_duplicates("failed")["ports"] for p in value.split(",") if p},
                       key=lambda p: (len(p), p))
        held = int(group.loc[group["held"], "failed"].nunique())
        result.append((held, Hotspot(str(host), (str(first), str(second)), str(cat), int(group["failed"].nunique()),
                                     tuple(prs), tuple(ports), RECOMMENDATIONS.get(str(cat), ""))))
    # Most failures first; of equal counts, the pair whose other job was there first more often.
    result.sort(key=lambda item: (-item[1].count, -item[0], item[1].host, item[1].jobs, item[1].category))
    return tuple(spot for _, spot in result)


def _pr_order(who: str) -> tuple[int, int, str]:
    return (0, int(who[1:]), "") if who.startswith("#") and who[1:].isdigit() else (1, 0, who)


def _reruns(frame: pd.DataFrame, failed: np.ndarray, automatic: Mapping[tuple[int, int], bool]) -> RerunSummary:
    minutes = np.where((frame["start"] >= 0) & (frame["end"] >= frame["start"]),
                       (frame["end"] - frame["start"]) / 60.0, 0.0)
    per_attempt = pd.DataFrame({"run_id": frame["run_id"], "attempt": frame["attempt"], "failed": failed,
                                "minutes": minutes}).groupby(["run_id", "attempt"]).agg(
        failed=("failed", "any"), minutes=("minutes", "sum")).reset_index()
    reruns = per_attempt[per_attempt["attempt"] > 1]
    if not len(reruns):
        return RerunSummary(0, 0, 0, 0, 0.0)
    failed_of = {(int(r), int(a)): bool(f) for r, a, f in
                 zip(per_attempt["run_id"], per_attempt["attempt"], per_attempt["failed"])}
    auto = rescued = 0
    for run_id, attempt, rerun_failed in zip(reruns["run_id"], reruns["attempt"], reruns["failed"]):
        key = (int(run_id), int(attempt))
        auto += bool(automatic.get(key, False))
        # The attempt before may hold no job of its own in the window (then it is taken to have failed:
        # a rerun is asked for a red run).
        before = failed_of.get((key[0], key[1] - 1), True)
        rescued += bool(before and not rerun_failed)
    requested = len(reruns)
    return RerunSummary(requested, auto, requested - auto, rescued, round(float(reruns["minutes"].sum()), 1))


def _flaky(frame: pd.DataFrame, failed: np.ndarray, counted: np.ndarray) -> tuple[FlakyJob, ...]:
    work = pd.DataFrame({"workflow": frame["workflow"].astype(str), "name": frame["name"].astype(str),
                         "sha": frame["head_sha"].astype(str), "order": frame["end"] * 1000 + frame["attempt"],
                         "failed": failed, "passed": frame["conclusion"].astype(str).to_numpy() == "success"})[counted]
    if not len(work):
        return ()
    work = work.sort_values(["workflow", "name", "sha", "order"], kind="stable")
    keys = ["workflow", "name", "sha"]
    # Failed then passed on one SHA: some pass comes after the first failure.
    first_fail = work["order"].where(work["failed"]).groupby([work[k] for k in keys]).transform("min")
    late_pass = work["passed"] & (work["order"] > first_fail)
    per_sha = work.assign(late_pass=late_pass).groupby(keys).agg(flaky=("late_pass", "any")).reset_index()
    per_job = per_sha.groupby(["workflow", "name"]).agg(runs=("sha", "size"), flaky=("flaky", "sum")).reset_index()
    found = [FlakyJob(str(w), str(n), int(r), int(f), f / r if r else 0.0)
             for w, n, r, f in zip(per_job["workflow"], per_job["name"], per_job["runs"], per_job["flaky"])]
    found.sort(key=lambda j: (-j.flaky_runs, -j.rate, j.workflow, j.name))
    return tuple(found)
