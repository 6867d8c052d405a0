"""The stable `--format json` contracts: `report`, `classify`, `clusters`, and the outcome of `triage`
and `bot` (also their `$GITHUB_OUTPUT` values). Add fields; never rename or remove one.

Every document leaves through `document()`: each string sanitised and redacted, since a consumer
may print `root_cause.text` as it is.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ci_triage.core.text import shown_tree
from ci_triage.core.timefmt import iso
from ci_triage.core.logs.values import Classification, RootCause

if TYPE_CHECKING:  # the report's values: `classify --format json` needs none of them
    from ci_triage.model import JobVerdict, PullReport

SCHEMA_VERSION = 1


def document(value: Any) -> str:
    """A JSON document as it leaves the process."""
    return json.dumps(shown_tree(value), indent=2, sort_keys=False) + "\n"


def root_cause_entry(root: RootCause | None) -> dict[str, Any] | None:
    return {"line": root.line, "text": root.text, "step": root.step} if root else None


def classification_entry(file: str, c: Classification) -> dict[str, Any]:
    """One saved log as `classify --format json` lists it."""
    return {"file": file, "category": c.category, "resembles": c.resembles, "retryable": c.retryable,
            "root_cause": root_cause_entry(c.root_cause), "captures": dict(c.captures),
            "fingerprint": c.fingerprint}


def outcome_dict(outcome: Any) -> dict[str, Any]:
    """What `triage` and `bot` did (an act.Outcome): plans, reruns, the comment, notes, verdicts."""
    report = outcome.report
    return {
        "repo": outcome.repo,
        "pr": outcome.pr,
        "run_id": outcome.run_id,
        "plans": [{"run_id": p.run_id, "attempt": p.attempt, "mode": p.mode, "job_ids": list(p.job_ids),
                   "reasons": list(p.reasons), "missing": list(p.missing)} for p in outcome.plans],
        "reruns": outcome.reruns,
        "comment": outcome.comment,
        "notes": outcome.notes,
        "verdicts": [{"job_id": v.facts.job.id, "run_id": v.facts.run.id, "name": v.facts.job.name,
                      "verdict": v.verdict.value, "rerun_recommended": v.rerun_recommended}
                     for v in (report.failed_jobs if report else ())],
    }


def outcome_outputs(outcome: Any) -> dict[str, str]:
    """The step outputs of `triage` and `bot` (`$GITHUB_OUTPUT`), documented in docs/action.md."""
    data = shown_tree(outcome_dict(outcome))
    return {"verdicts": json.dumps(data["verdicts"]), "reruns": json.dumps(data["reruns"]),
            "reran": "true" if data["reruns"] else "false", "comment": data["comment"]}


def job_entry(verdict: JobVerdict) -> dict[str, Any]:
    from ci_triage.core.render.common import root_cause_url  # the report's model: not for classify

    facts = verdict.facts
    job, run, c = facts.job, facts.run, facts.classification
    root = c.root_cause
    return {
        "run_id": run.id,
        "run_attempt": job.run_attempt,
        "job_id": job.id,
        "workflow": run.workflow_name,
        "name": job.name,
        "conclusion": job.conclusion,
        "started_at": iso(job.started_at),
        "completed_at": iso(job.completed_at),
        "duration_s": job.duration_s,
        "runner_name": job.runner_name,
        "labels": list(job.labels),
        "html_url": job.html_url,
        "log": facts.log_status.value,
        "category": c.category,
        "resembles": c.resembles,
        "retryable": c.retryable,
        "rule_id": c.rule_id,
        "root_cause_source": c.source,
        "root_cause": None if root is None else {**root_cause_entry(root), "url": root_cause_url(facts)},
        "captures": dict(c.captures),
        "fingerprint": c.fingerprint,
        "frames": [{"path": f.path, "line": f.line, "function": f.function, "package": f.package}
                   for f in c.frames],
        "failed_tests": list(c.failed_tests),
        "overlapping_jobs": [
            {"pr": o.pr, "branch": o.branch, "run_id": o.run_id, "job_id": o.job_id, "name": o.name,
             "runner_name": o.runner_name, "same_host": o.same_host, "conclusion": o.conclusion,
             "overlap_s": o.overlap_s, "html_url": o.html_url}
            for o in facts.overlapping_jobs
        ],
        "in_flight_prs": list(facts.in_flight_prs),
        "later_jobs_passed": [{"pr": o.pr, "run_id": o.run_id, "job_id": o.job_id, "name": o.name,
                               "html_url": o.html_url} for o in facts.later_jobs_passed],
        "baseline": None if facts.baseline is None else {
            "samples": facts.baseline.samples, "median_s": facts.baseline.median_s,
            "spread_s": facts.baseline.spread_s},
        "base_branch": None if facts.base_comparison is None else {
            "ref": facts.base_comparison.base_ref, "run_id": facts.base_comparison.run_id,
            "job_id": facts.base_comparison.job_id, "conclusion": facts.base_comparison.conclusion,
            "failed_tests": list(facts.base_comparison.failed_tests)},
        "relatedness": verdict.relatedness.value,
        "related_changed_files": list(verdict.related_changed_files),
        "related_by": verdict.related_by,  # the frame or test file that made it `related`, else null
        "verdict": verdict.verdict.value,
        "confidence": verdict.confidence,
        "rerun_recommended": verdict.rerun_recommended,
        "evidence": [e.text for e in verdict.evidence],
        "evidence_links": [{"kind": e.kind, "text": e.text, "url": e.url} for e in verdict.evidence],
    }


def report_dict(report: PullReport) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "repo": report.repo,
        "pr": report.pull.number,
        "title": report.pull.title,
        "head_sha": report.pull.head_sha,
        "head_repo": report.pull.head_repo,
        "base_ref": report.pull.base_ref,
        "html_url": report.pull.html_url,
        "changed_files": [f.filename for f in report.changed_files],
        "runs": [{"run_id": r.id, "run_attempt": r.attempt, "workflow": r.workflow_name, "status": r.status,
                  "conclusion": r.conclusion, "html_url": r.html_url} for r in report.runs],
        "failed_jobs": [job_entry(v) for v in report.failed_jobs],
        "contract_checks": [{"name": job.name, "job_id": job.id, "status": job.status,
                             "conclusion": job.conclusion, "html_url": job.html_url}
                            for job in report.contract_checks],
        "notes": list(report.notes),
    }


def render(report: PullReport) -> str:
    return document(report_dict(report))
