"""Writing `.github/ci-triage.toml`: the documented default file, and one inferred from the repository's
workflows (runner pools, matrix job names, `paths` filters become ownership globs).

Pure: workflow YAML text in, TOML text out. The CLI (`ci-triage config init`) reads and writes the files.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ci_triage.core.categories import CATEGORIES
from ci_triage.core.config.repo_config import RepoConfig, glob_problem
from ci_triage.core.decide.policy import OutageGuard, Policy
from ci_triage.core.evidence.hosts import GENERIC_LABELS


def _toml_str(value: str) -> str:
    """A TOML string: literal ('...') when it can be, so regexes keep their backslashes readable."""
    if "'" not in value and not any(ord(c) < 0x20 or ord(c) == 0x7F for c in value if c != "\t"):
        return f"'{value}'"
    escaped = []
    for char in value:
        if char in '"\\':
            escaped.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            escaped.append(f"\\u{ord(char):04x}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def _toml_list(values: tuple[str, ...] | list[str]) -> str:
    one_line = "[" + ", ".join(_toml_str(v) for v in values) + "]"
    if len(one_line) <= 80:
        return one_line
    return "[\n" + "".join(f"    {_toml_str(v)},\n" for v in values) + "]"


def _comment(text: str) -> str:
    """One comment line; control characters (a newline in a job name!) would end the comment early."""
    return "# " + re.sub(r"[\x00-\x08\x0a-\x1f\x7f]", " ", text) if text else "#"


_DEFAULT_HOST_PATTERN = r"^(?P<host>.+?)[-_.]r?\d+$"


def render_default_config() -> str:
    """The default file: every key with its default value and why, ready to edit."""
    return _render(runners_notes=(), owns_lines=(), jobs_notes=())


def _render(runners_notes: tuple[str, ...], owns_lines: tuple[str, ...], jobs_notes: tuple[str, ...]) -> str:
    policy = Policy()
    outage = OutageGuard()
    ordered = lambda names: [c for c in CATEGORIES if c in names]  # noqa: E731 - stable, readable order
    lines = [
        "# ci-triage: how to judge this repository's failed CI jobs (is it the PR's fault or the runner's?).",
        "# Every key is optional; the values below are the defaults. Reference: docs/config.md.",
        "# Check this file with `ci-triage config check`.",
        "",
        "[policy]",
        "# Failure categories that can be the runner's fault. Only these can lead to a rerun.",
        f"retryable_categories = {_toml_list(ordered(policy.retryable_categories))}",
        "# Of those, the ones that may equally be the PR's fault (a bigger model, a deadlock): rerun only",
        "# when another job was competing for the same runners at the time.",
        f"need_contention = {_toml_list(ordered(policy.need_contention))}",
        "# true: a failure in a job that exercises changed files is not rerun even when its stack never",
        "# enters them.",
        f"possibly_related_blocks_rerun = {'true' if policy.possibly_related_blocks_rerun else 'false'}",
        "# A job that failed before this fraction of its usual (median successful) duration died early,",
        "# before the real work: evidence against the PR's code. In (0, 1].",
        f"died_early_ratio = {policy.died_early_ratio}",
        "# Automatic reruns of one workflow run; 0 turns automatic reruns off.",
        f"max_auto_reruns = {RepoConfig.max_auto_reruns}",
        "",
        "[runners]",
        "# Jobs on one machine compete for its ports, memory and devices. Without host_pattern, runners",
        "# whose names differ only by a trailing index (node2-r0, node2-r1) are taken to share a host.",
        "# Otherwise: a regex on the runner name whose group `host` (or only group) is the machine.",
        *runners_notes,
        f"# host_pattern = {_toml_str(_DEFAULT_HOST_PATTERN)}",
        "",
        "[jobs]",
        "# fnmatch patterns on job names; an empty include means every job.",
        "include = []",
        "exclude = []",
        "# Which code each job exercises, to tell whether a PR's change can be behind its failure.",
        "# `job` is an fnmatch pattern on the job name; `paths` are globs anchored at the repository root",
        "# (** crosses directories; a directory covers everything beneath it).",
        *jobs_notes,
        *(owns_lines or (
            "# [[jobs.owns]]",
            "# job = 'vllm-example (eagle3)'",
            "# paths = ['verl_speco/models/eagle/**']",
        )),
        "",
        "[outage]",
        "# This many jobs failing the same way (same fingerprint) within window_minutes, or that failure",
        "# across max_prs distinct PRs, is an outage: reported as one, and no reruns are recommended.",
        f"max_failed_jobs = {outage.max_failed_jobs}",
        f"max_prs = {outage.max_prs}",
        f"window_minutes = {outage.window_minutes}",
        "",
        "[window]",
        "# How far before a failed job started and after it ended to look for competing jobs.",
        f"before_hours = {RepoConfig.window_before_hours}",
        f"after_hours = {RepoConfig.window_after_hours}",
        "",
        "[rules]",
        "# Extra classification rules (TOML, same format as the built-in ones), relative to the repository",
        "# root. A rule with a built-in rule's id replaces it; new rules are added.",
        "# file = '.github/ci-triage-rules.toml'",
        "",
    ]
    return "\n".join(lines)


# --- workflows -> facts -> config -----------------------------------------------------------------

# GitHub-hosted runner images: a fresh VM per job, so there is no host to share.
_HOSTED_LABEL = re.compile(r"^(ubuntu|windows|macos)-", re.IGNORECASE)
_EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
_MATRIX_REF = re.compile(r"^\s*matrix\.([A-Za-z_][A-Za-z0-9_-]*)\s*$")
_MAX_MATRIX = 256  # GitHub's limit on jobs per matrix; a larger product is not a real matrix


@dataclass(frozen=True)
class InferredJob:
    job_id: str
    names: tuple[str, ...]  # the job names GitHub would show, one per matrix combination
    pattern: str  # an fnmatch pattern covering all of them
    labels: tuple[str, ...]  # runs-on labels, matrix expressions resolved where possible
    max_parallel: int | None


@dataclass(frozen=True)
class InferredWorkflow:
    path: str
    jobs: tuple[InferredJob, ...] = ()
    pr_paths: tuple[str, ...] = ()  # on.pull_request(.target).paths, usable as ownership globs
    skipped_paths: tuple[str, ...] = ()  # negated or empty entries of those filters
    problem: str | None = None  # why the file was skipped


@dataclass(frozen=True)
class Unreadable:
    """A workflow file whose YAML could not be read (the shell's parser says why)."""

    problem: str


def analyse_workflows(workflows: Mapping[str, Any]) -> tuple[InferredWorkflow, ...]:
    """Parsed workflow files (path -> YAML document, or Unreadable) -> what a config can say about them,
    sorted by path. `ci_triage.workflow_yaml.parse_all` turns file texts into these."""
    return tuple(_analyse(path, workflows[path]) for path in sorted(workflows))


def _analyse(path: str, document: Any) -> InferredWorkflow:
    if isinstance(document, Unreadable):
        return InferredWorkflow(path, problem=document.problem)
    if not isinstance(document, dict) or not isinstance(document.get("jobs"), dict):
        return InferredWorkflow(path, problem="not a workflow (no `jobs:` mapping)")
    # YAML 1.1, which PyYAML speaks, reads a bare `on:` key as the boolean true.
    triggers = document.get("on", document.get(True))
    pr_paths, skipped = _pr_paths(triggers)
    jobs = tuple(_job(str(job_id), spec) for job_id, spec in document["jobs"].items() if isinstance(spec, dict))
    return InferredWorkflow(path, jobs, pr_paths, skipped)


def _pr_paths(triggers: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if not isinstance(triggers, dict):
        return (), ()
    kept: dict[str, None] = {}
    skipped: dict[str, None] = {}
    for event in ("pull_request", "pull_request_target"):
        spec = triggers.get(event)
        paths = spec.get("paths") if isinstance(spec, dict) else None
        for entry in paths if isinstance(paths, list) else [paths] if isinstance(paths, str) else []:
            if not isinstance(entry, str | int | float) or isinstance(entry, bool):
                continue
            glob = str(entry)
            bad = glob_problem(glob) or (None if glob.isprintable() else "control characters")
            (skipped if bad else kept)[glob] = None
    return tuple(kept), tuple(skipped)


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return None


def _combinations(matrix: Any) -> list[dict[str, Any]] | None:
    """The matrix's combinations per GitHub's include/exclude rules; None when it cannot be known here."""
    if not isinstance(matrix, dict):
        return None  # e.g. `matrix: ${{ fromJSON(needs.setup.outputs.matrix) }}`
    axes = {str(k): v for k, v in matrix.items() if k not in ("include", "exclude")}
    if any(not isinstance(values, list) for values in axes.values()):
        return None
    if math.prod(len(values) for values in axes.values()) > _MAX_MATRIX:
        return None
    combos = [dict(zip(axes, values)) for values in itertools.product(*axes.values())] if axes else []
    excludes = matrix.get("exclude") if isinstance(matrix.get("exclude"), list) else []
    combos = [c for c in combos if not any(
        isinstance(ex, dict) and ex and all(c.get(str(k)) == v for k, v in ex.items()) for ex in excludes)]
    includes = matrix.get("include") if isinstance(matrix.get("include"), list) else []
    original = len(combos)
    for entry in includes[:_MAX_MATRIX]:
        if not isinstance(entry, dict):
            continue
        entry = {str(k): v for k, v in entry.items()}
        # An include extends every original combination whose original values it does not change;
        # one that extends none becomes a combination of its own.
        targets = [c for c in combos[:original] if all(c[k] == v for k, v in entry.items() if k in axes)]
        for combo in targets:
            combo.update({k: v for k, v in entry.items() if k not in axes})
        if not targets:
            combos.append(dict(entry))
    return combos[:_MAX_MATRIX]


def _substitute(template: str, combo: Mapping[str, Any] | None) -> str | None:
    """Resolve ${{ matrix.x }} from one combination; None if any other expression remains."""
    unresolved = False

    def value(found: re.Match[str]) -> str:
        nonlocal unresolved
        ref = _MATRIX_REF.match(found.group(1))
        resolved = _scalar(combo.get(ref.group(1))) if ref and combo is not None else None
        if resolved is None:
            unresolved = True
            return ""
        return resolved

    text = _EXPRESSION.sub(value, template)
    return None if unresolved else text


def _fnmatch_literal(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def _job(job_id: str, spec: Mapping[str, Any]) -> InferredJob:
    strategy = spec.get("strategy") if isinstance(spec.get("strategy"), dict) else {}
    matrix = strategy.get("matrix")
    combos = _combinations(matrix) if matrix is not None else None
    template = _scalar(spec.get("name")) or job_id
    has_expression = bool(_EXPRESSION.search(template))
    names: list[str] = []
    if matrix is None:
        resolved = _substitute(template, None)
        names = [resolved] if resolved and not has_expression else []
    elif combos:
        for combo in combos:
            if has_expression:
                resolved = _substitute(template, combo)
            else:
                # GitHub appends the combination's values to a name that does not use them.
                shown = [v for v in map(_scalar, combo.values()) if v is not None]
                resolved = f"{template} ({', '.join(shown)})" if shown else template
            if resolved and resolved not in names:
                names.append(resolved)
    parts = _EXPRESSION.split(template)  # literal, expression, literal, ...
    pattern = "".join(_fnmatch_literal(p) if i % 2 == 0 else "*" for i, p in enumerate(parts))
    if matrix is not None and not has_expression:
        pattern += " (*)"
    if "uses" in spec:
        # A job that calls a reusable workflow shows as "<caller> / <called job>".
        pattern, names = f"{pattern} / *", []
    return InferredJob(job_id, tuple(names), pattern.strip() or "*", _labels(spec.get("runs-on"), combos),
                       strategy.get("max-parallel") if type(strategy.get("max-parallel")) is int else None)


def _labels(runs_on: Any, combos: list[dict[str, Any]] | None) -> tuple[str, ...]:
    if isinstance(runs_on, dict):  # runs-on: {group: ..., labels: ...}
        runs_on = runs_on.get("labels")
    raw = runs_on if isinstance(runs_on, list) else [runs_on]
    found: dict[str, None] = {}
    for entry in raw:
        template = _scalar(entry)
        if template is None:
            continue
        for combo in combos or [None]:
            label = _substitute(template, combo)
            if label and label.isprintable():
                found[label] = None
    return tuple(found)


def _pool_labels(job: InferredJob) -> tuple[str, ...]:
    return tuple(label for label in job.labels
                 if label.lower() not in GENERIC_LABELS and not _HOSTED_LABEL.match(label))


def _regex_literal(text: str) -> str:
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", text)


def infer_config(workflows: Mapping[str, Any]) -> str:
    """Parsed workflow files (as for `analyse_workflows`) -> a commented config to start from; `config check`
    accepts it."""
    analysed = analyse_workflows(workflows)
    jobs_notes: list[str] = [_comment(f"Jobs found in {len(analysed)} workflow file(s):")] if analysed else [
        "# No workflow files were found to infer job names from."]
    owns_lines: list[str] = []
    pools: dict[str, list[str]] = {}
    for workflow in analysed:
        if workflow.problem:
            jobs_notes.append(_comment(f"  {workflow.path}: skipped, {workflow.problem}"))
            continue
        jobs_notes.append(_comment(f"  {workflow.path}:"))
        for job in workflow.jobs:
            shown = ", ".join(job.names) if job.names else f"{job.pattern} (names decided at run time)"
            extras = [f"runs-on {', '.join(job.labels)}"] if job.labels else []
            if job.max_parallel is not None:
                extras.append(f"max-parallel {job.max_parallel}")
            jobs_notes.append(_comment(f"    {shown}" + (f"  [{'; '.join(extras)}]" if extras else "")))
            for label in _pool_labels(job):
                pools.setdefault(label, []).append(job.pattern)
        if workflow.skipped_paths:
            jobs_notes.append(_comment(f"    left out of ownership (negated or empty paths filter entries): "
                                       f"{', '.join(workflow.skipped_paths)}"))
        if not workflow.pr_paths:
            jobs_notes.append("#    (no pull_request paths filter: which code these jobs exercise is not inferred)")
            continue
        for job in workflow.jobs:
            owns_lines += [
                "",
                _comment(f"From the pull_request paths filter of {workflow.path}: the job runs when these change."),
                "[[jobs.owns]]",
                f"job = {_toml_str(job.pattern)}",
                f"paths = {_toml_list(workflow.pr_paths)}",
            ]
    runners_notes = []
    for label, patterns in sorted(pools.items()):
        runners_notes.append(_comment(f"Self-hosted label {label}: {', '.join(dict.fromkeys(patterns))}."))
    if pools:
        suggestion = "^" + _regex_literal(sorted(pools)[0]) + r"-(?P<host>.+?)-r?\d+$"
        runners_notes += [
            "# If runner names are <label>-<host>-r<N>, for example:",
            f"# host_pattern = {_toml_str(suggestion)}",
            "# or, more generally:",
        ]
    return _render(tuple(runners_notes), tuple(owns_lines), tuple(jobs_notes))
