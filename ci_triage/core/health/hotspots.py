"""Contention hotspots: contention failures correlated with what else ran on their host at the time.

Every failure of a contention category (records.CONTENTION_CATEGORIES) on a known host is correlated
with the jobs of other runs that ran on that host at the same time, by the one vectorised engine
(evidence.timeline_frame.correlate, with the host as the pool, without later passes or baselines).
Each (host, pair of job names, category) counts the failed jobs it explains, with the PRs and the
ports or devices the classifier captured. The overlapping pairs are handled as codes; texts are made
for the jobs involved only, and PRs and ports for the hotspots kept only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ci_triage.core.evidence.timeline_frame import (
    CONCLUSIONS,
    MISSING,
    JobFrame,
    correlate,
)
from ci_triage.core.health.columns import (
    Codes,
    distinct,
    group_ids,
    pair_counts,
    segment_starts,
)
from ci_triage.core.health.records import CONTENTION_CATEGORIES, Hotspot

RECOMMENDATIONS = {
    "port_in_use": ("give each runner its own ports (derive MASTER_PORT and friends from RUNNER_NAME) or "
                    "serialise these jobs per host with a concurrency group named after the host"),
    "accelerator_oom": ("pin each runner to its own devices (ASCEND_RT_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES "
                        "per runner) or serialise these jobs per host with a concurrency group"),
    "host_oom": "run fewer of these jobs at once on one host (max-parallel, or a per-host concurrency group)",
    "collective_timeout": ("keep these jobs off one host at the same time (a per-host concurrency group) and "
                           "give each runner its own collective ports"),
}



def hotspots_of(frame: pd.DataFrame, failed: np.ndarray, conclusion: Codes, category: Codes, host: Codes,
                limit: int) -> tuple[Hotspot, ...]:
    """The `limit` most frequent hotspots (the count of each is exact), most failures first."""
    known_host = ~host.flags(lambda h: h == "")
    host_codes = np.where(known_host, host.codes, -1).astype(np.int64)
    contention = failed & category.flags(lambda c: c in CONTENTION_CATEGORIES) & known_host
    if not contention.any():
        return ()
    code_of = {value: code for code, value in enumerate(CONCLUSIONS)}
    conclusion_codes = np.array([code_of.get(c, -1) for c in conclusion.texts] + [-1], dtype=np.int64)
    start, end = frame["start"].to_numpy(np.int64), frame["end"].to_numpy(np.int64)
    # The host is the pool: every overlap the engine finds is on the failed job's host. The jobs of no
    # known host share one more code: none of them is asked about, so none is paired.
    jobs = JobFrame.from_arrays(
        job_id=frame["job_id"].to_numpy(np.int64), run_id=frame["run_id"].to_numpy(np.int64),
        pr=frame["pr"].to_numpy(np.int64), pool=np.where(host_codes >= 0, host_codes, len(host)),
        host=host_codes, start=_known(start), end=_known(end),
        conclusion=conclusion_codes[conclusion.codes], name=Codes(frame["name"]).codes, ticks_per_second=1.0)
    found = correlate(jobs, failed=np.flatnonzero(contention), window_s=0.0, cap=None, later=False,
                      baselines=False, in_flight=False)
    failed_pos = np.repeat(found.failed, np.diff(found.overlap_offsets))
    other_pos = found.overlap_job
    if not len(other_pos):
        return ()
    failed_index = np.repeat(np.arange(len(found.failed)), np.diff(found.overlap_offsets))
    # "workflow / name" of the jobs involved, as ranks in text order: the pair is (smaller, larger).
    involved, back = np.unique(np.concatenate((failed_pos, other_pos)), return_inverse=True)
    labels, label_rank = _labels(frame, involved)
    rank_a, rank_b = label_rank[back[:len(failed_pos)]], label_rank[back[len(failed_pos):]]
    first, second = np.minimum(rank_a, rank_b), np.maximum(rank_a, rank_b)
    host_rank, category_rank = host.ranks()[host.codes[failed_pos]], category.ranks()[category.codes[failed_pos]]
    group, groups = group_ids([host_rank, first, second, category_rank])  # in (host, first, second, category) order
    held = start[other_pos] <= start[failed_pos]  # the other job was there first: it held the port or device

    # Per group: failed jobs (distinct), and those of them that met a job already holding the host (any
    # of their pairs in the group held). One ranking both picks the `limit` kept and orders them.
    first_pair = np.unique(group * len(found.failed) + failed_index, return_index=True)[1]
    count = np.bincount(group[first_pair], minlength=groups)
    held_any = np.bincount(distinct(group[held] * len(found.failed) + failed_index[held]) // len(found.failed),
                           minlength=groups)
    kept = np.lexsort((np.arange(groups), -held_any, -count))[:limit]
    # The pairs of the kept groups, by group, in the engine's order within one.
    keep = np.zeros(groups, dtype=bool)
    keep[kept] = True
    pairs = np.flatnonzero(keep[group])
    pairs = pairs[np.argsort(group[pairs], kind="stable")]
    bounds = dict(zip(group[pairs][segment_starts(group[pairs])].tolist(),
                      zip(segment_starts(group[pairs]).tolist(),
                          [*segment_starts(group[pairs]).tolist()[1:], len(pairs)])))
    who = _who(frame, distinct(np.concatenate((failed_pos[pairs], other_pos[pairs]))))
    ports_column = frame["ports"].to_numpy()
    result = []
    for g in kept.tolist():
        lo, hi = bounds[g]
        members = pairs[lo:hi]
        sides = {who[p] for p in failed_pos[members].tolist()}
        prs = sorted((sides | {who[p] for p in other_pos[members].tolist()}) - {""}, key=_pr_order)
        ports = sorted({p for job in set(failed_pos[members].tolist()) for p in str(ports_column[job]).split(",")
                        if p}, key=lambda p: (len(p), p))
        at = int(failed_pos[members[0]])
        cat = category.names[category.codes[at]]
        result.append(Hotspot(host.names[host.codes[at]], (labels[int(first[members[0]])],
                                                          labels[int(second[members[0]])]),
                              cat, int(count[g]), tuple(prs), tuple(ports), RECOMMENDATIONS.get(cat, "")))
    return tuple(result)


def _known(moments: np.ndarray) -> np.ndarray:
    """records_frame's -1 for an unknown time as the engine's MISSING."""
    return moments if not len(moments) or moments.min() >= 0 else np.where(moments >= 0, moments, MISSING)


def _labels(frame: pd.DataFrame, rows: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The distinct "workflow / name" texts of these rows in text order, and each row's place in it."""
    workflow, name = Codes(frame["workflow"]), Codes(frame["name"])
    pair_workflow, pair_name, (_, pair) = pair_counts(workflow.wrapped(rows), name.wrapped(rows),
                                                      len(name) + 1, inverse=True)
    texts = [f"{w} / {n}" for w, n in zip(workflow.names[pair_workflow].tolist(), name.names[pair_name].tolist())]
    ordered = sorted(set(texts))
    place = {text: i for i, text in enumerate(ordered)}
    return ordered, np.array([place[text] for text in texts], dtype=np.int64)[pair]


def _who(frame: pd.DataFrame, rows: np.ndarray) -> dict[int, str]:
    """Per row: "#<pr>", else its branch (pandas' text for it)."""
    pr = frame["pr"].to_numpy(np.int64)[rows]
    branch = Codes(frame["branch"])
    return {row: f"#{number}" if number >= 0 else branch.names[code]
            for row, number, code in zip(rows.tolist(), pr.tolist(), branch.codes[rows].tolist())}


def _pr_order(who: str) -> tuple[int, int, str]:
    return (0, int(who[1:]), "") if who.startswith("#") and who[1:].isdigit() else (1, 0, who)
