"""Classify a job from its check run annotations and conclusion, for when the log says nothing.

A runner that is lost uploads no log, and a job cancelled at its time limit often ends before the
log shows why; GitHub still writes an annotation on the job's check run ("The self-hosted runner:
X lost communication with the server", "The job running on runner X has exceeded the maximum
execution time of N minutes"). Those messages go through the same rules as log lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.fingerprint import fingerprint
from ci_triage.core.logs.rules import RuleSet
from ci_triage.core.logs.values import Classification, LogLine, RootCause

ANNOTATION_STEP = "(annotation)"


def classify_annotations(annotations: Sequence[dict[str, Any]], job_conclusion: str | None,
                         rule_set: RuleSet) -> Classification | None:
    """A classification from annotations, or None when they explain nothing the log did not."""
    lines = [
        LogLine(number=index, text=(item.get("message") or "").strip(), step=ANNOTATION_STEP)
        for index, item in enumerate(annotations, start=1)
        if item.get("annotation_level") in ("failure", "warning", None) and item.get("message")
    ]
    result = classify(lines, rule_set) if lines else None
    if result is not None and result.category != "unknown":
        return _from_annotations(result)
    if job_conclusion == "timed_out":
        # The jobs API says it hit its time limit even when no annotation or line says so.
        text = next((line.text for line in lines), "The job exceeded its maximum execution time.")
        return Classification(
            category="job_timeout", retryable=True, rule_id="job-conclusion-timed-out",
            root_cause=RootCause(0, text, ANNOTATION_STEP), captures={}, frames=(), failed_tests=(),
            fingerprint=fingerprint("job_timeout", text), source="annotations",
        )
    return None


def _from_annotations(result: Classification) -> Classification:
    return replace(result, source="annotations")
