"""A PR's correlation window -> for each failed job, what ran beside it, what passed after it, its baseline.

Pure. The report asks the one engine (timeline_frame) once for all its failed jobs: one frame of the
window's jobs, scoped by workflow (a failed job is compared only with jobs of its own workflow's runs).
A failed job the window holds as it is is asked at its place; any other is added as a row of its own.
Such a row could pass for a neighbour of a failed job of another run of the same workflow (a workflow
run twice for one head, by two events), so those runs are asked of separate frames.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ci_triage.core.evidence.frame_baselines import baselines_by_name
from ci_triage.core.evidence.timeline_frame import JobFrame, correlate
from ci_triage.model import DurationBaseline, Job, OverlappingJob, Run


@dataclass(frozen=True)
class WindowEvidence:
    """One failed job against its window."""

    overlapping: tuple[OverlappingJob, ...]  # other runs' jobs on its pool while it ran: same host first, longest
    in_flight_prs: tuple[int, ...]  # other PRs among them, ascending
    later_passed: tuple[OverlappingJob, ...]  # other runs' jobs on its pool that started within the window after
    baseline: DurationBaseline | None  # its name's successful durations in its workflow's window (see correlate_window)


def _scoped(window_jobs: Sequence[Job], window_runs: Mapping[int, Run]) -> tuple[list[Job], list[int]]:
    """The window's jobs whose run is known, and each one's workflow."""
    jobs = [job for job in window_jobs if job.run_id in window_runs]
    return jobs, [window_runs[job.run_id].workflow_id for job in jobs]


def baselines(wanted: Sequence[tuple[int, str]], window_jobs: Sequence[Job], window_runs: Mapping[int, Run],
              more: Mapping[int, Sequence[Job]] | None = None) -> list[DurationBaseline | None]:
    """The baseline of each (workflow id, job name): its successful jobs in the window, and in `more`
    (jobs by workflow id, e.g. of recent successful runs) when given."""
    jobs, scopes = _scoped(window_jobs, window_runs)
    for workflow_id, extra in (more or {}).items():
        jobs += extra
        scopes += [workflow_id] * len(extra)
    frame = JobFrame.from_jobs(jobs, {}, scopes=scopes)
    code = {}
    for position, (scope, job) in enumerate(zip(scopes, jobs)):
        code.setdefault((scope, job.name), int(frame.name[position]))
    found = baselines_by_name(frame)
    return [found.get(code[key]) if key in code else None for key in wanted]


def correlate_window(failed: Sequence[tuple[Run, Job]], window_jobs: Sequence[Job], window_runs: Mapping[int, Run],
                     pr_of_run: Mapping[int, int | None], *, later_window_s: float,
                     host_pattern: re.Pattern[str] | None = None, min_baseline_samples: int = 0,
                     more_baseline_jobs: Mapping[int, Sequence[Job]] | None = None) -> list[WindowEvidence]:
    """The evidence of each failed (run, job), in order. `pr_of_run` names the PR of every run (fork runs
    name none themselves); a failed job's own PR is not "in flight". A baseline with fewer than
    `min_baseline_samples` samples is taken again with `more_baseline_jobs` of its workflow added."""
    jobs, scopes = _scoped(window_jobs, window_runs)
    held: dict[int, int] = {}
    for position, job in enumerate(jobs):
        held.setdefault(job.id, position)

    def place(run: Run, job: Job) -> int | None:
        at = held.get(job.id)
        return at if at is not None and jobs[at] == job and scopes[at] == run.workflow_id else None

    # Where a workflow needs added rows, each of its runs is asked of a frame of its own (batch k: the
    # k-th run of every such workflow); all other failed jobs are asked of the first.
    runs_of: dict[int, list[int]] = {}
    for run, _ in failed:
        if run.id not in runs_of.setdefault(run.workflow_id, []):
            runs_of[run.workflow_id].append(run.id)
    split = {run.workflow_id for run, job in failed if place(run, job) is None}
    batch_of = [runs_of[run.workflow_id].index(run.id) if run.workflow_id in split else 0 for run, _ in failed]

    found: dict[int, WindowEvidence] = {}
    for batch in sorted(set(batch_of)):
        asked = [i for i, b in enumerate(batch_of) if b == batch]
        rows, row_scopes, positions = list(jobs), list(scopes), []
        for i in asked:
            run, job = failed[i]
            at = place(run, job)
            if at is None:
                at = len(rows)
                rows.append(job)
                row_scopes.append(run.workflow_id)
            positions.append(at)
        frame = JobFrame.from_jobs(rows, window_runs, pr_of_run, host_pattern, scopes=row_scopes)
        result = correlate(frame, failed=positions, window_s=later_window_s, cap=None)
        for i, position in zip(asked, positions):
            index = result.at_position(position)
            found[i] = WindowEvidence(result.overlapping_at(index), result.in_flight_of(index),
                                      result.later_passed_at(index), result.baseline_at(index))

    evidence = [found[i] for i in range(len(failed))]
    thin = [i for i, item in enumerate(evidence)
            if item.baseline is None or item.baseline.samples < min_baseline_samples]
    if thin:
        wanted = [(failed[i][0].workflow_id, failed[i][1].name) for i in thin]
        for i, baseline in zip(thin, baselines(wanted, window_jobs, window_runs, more_baseline_jobs)):
            evidence[i] = WindowEvidence(evidence[i].overlapping, evidence[i].in_flight_prs, evidence[i].later_passed,
                                         baseline)
    return evidence
