"""The repository's own config file (`.github/ci-triage.toml`): parse, validate, render, infer.

Pure: TOML or workflow YAML text in, values or text out; reading and writing files is the CLI's job
(ci_triage/cli/config.py). Every key is optional and its default is the value a busy repository
with shared self-hosted runners wants (docs/config.md says why for each). A mistake is a
ConfigError naming the file, the key path and the problem, so a typo never silently falls back to
a default.
"""

from __future__ import annotations

import difflib
import fnmatch
import itertools
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ci_triage.core.categories import CATEGORIES, NEVER_RETRYABLE
from ci_triage.core.decide.policy import OutageGuard, Policy
from ci_triage.core.evidence.globs import path_matches
from ci_triage.core.evidence.timeline import GENERIC_LABELS, host_of
from ci_triage.errors import ConfigError

DEFAULT_PATH = ".github/ci-triage.toml"
DEFAULT_WORKFLOWS_DIR = ".github/workflows"


# path_matches is the config file's glob semantics; it lives in core.globs, shared with workflow filters.
__all__ = ["JobOwnership", "OutageGuard", "RepoConfig", "default_repo_config", "infer_config", "matches_job",
           "owned_paths", "parse_repo_config", "path_matches", "render_default_config", "runner_host"]

@dataclass(frozen=True)
class JobOwnership:
    job: str  # fnmatch pattern on the job name, e.g. "vllm-example (eagle3)" or "vllm-example (*)"
    paths: tuple[str, ...]  # path globs (gitignore-like ** supported) of the code the job exercises


@dataclass(frozen=True)
class RepoConfig:
    policy: Policy = Policy()
    max_auto_reruns: int = 1  # automatic reruns per run
    host_pattern: str | None = None  # regex on runner_name; see runner_host()
    ownership: tuple[JobOwnership, ...] = ()
    include_jobs: tuple[str, ...] = ()  # fnmatch patterns; empty = all jobs
    exclude_jobs: tuple[str, ...] = ()
    outage: OutageGuard = OutageGuard()
    window_before_hours: float = 3.0
    window_after_hours: float = 2.0
    rules_file: str | None = None  # extra rules (TOML), relative to the repository root


def default_repo_config() -> RepoConfig:
    return RepoConfig()


# Section -> its keys. The one list the parser, the "did you mean" hints and the docs test share.
SCHEMA: dict[str, tuple[str, ...]] = {
    "policy": ("retryable_categories", "need_contention", "possibly_related_blocks_rerun", "died_early_ratio",
               "max_auto_reruns"),
    "runners": ("host_pattern",),
    "jobs": ("include", "exclude", "owns"),
    "outage": ("max_failed_jobs", "max_prs", "window_minutes"),
    "window": ("before_hours", "after_hours"),
    "rules": ("file",),
}
OWNS_KEYS = ("job", "paths")
# Categories that say nothing about the runner: rerunning them only hides the PR's fault (or, for
# "unknown", a failure nobody has explained yet).
NOT_RETRYABLE = NEVER_RETRYABLE | {"unknown"}
# A wider search window fetches more runs than contention evidence needs, and keeps datetime
# arithmetic far from its limits.
MAX_WINDOW_HOURS = 168.0

# ---------------------------------------------------------------------------------------------
# Parsing and validation


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date/time"


def _suggest(word: str, candidates: tuple[str, ...] | list[str]) -> str | None:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return close[0] if close else None


@dataclass(frozen=True)
class _Reader:
    origin: str

    def error(self, key: str, problem: str, hint: str | None = None) -> ConfigError:
        return ConfigError(f"{self.origin}: {key}: {problem}" if key else f"{self.origin}: {problem}", hint)

    def unknown(self, key: str, where: str, known: tuple[str, ...]) -> ConfigError:
        full = f"{where}.{key}" if where else key
        close = _suggest(key, known)
        if close:
            hint = f"Did you mean '{f'{where}.{close}' if where else close}'?"
        else:
            # The right key in the wrong section is the commonest slip.
            homes = [f"{section}.{key}" for section, keys in SCHEMA.items() if key in keys and section != where]
            hint = f"Did you mean '{homes[0]}'?" if homes else f"Known here: {', '.join(known)}."
        kind = "section" if not where else "key"
        return self.error(full, f"unknown {kind}", hint)

    def table(self, document: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
        value = document.get(key, {})
        if not isinstance(value, dict):
            raise self.error(where, f"must be a table ([{where}]), got {_kind(value)}")
        return value

    def integer(self, table: Mapping[str, Any], key: str, where: str, default: int, minimum: int) -> int:
        if key not in table:
            return default
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"{where}.{key}", f"must be an integer, got {_kind(value)}")
        if value < minimum:
            raise self.error(f"{where}.{key}", f"must be at least {minimum}, got {value}")
        return value

    def number(self, table: Mapping[str, Any], key: str, where: str, default: float) -> float:
        if key not in table:
            return default
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(f"{where}.{key}", f"must be a number, got {_kind(value)}")
        if not math.isfinite(value):
            raise self.error(f"{where}.{key}", f"must be a finite number, got {value}")
        return float(value)

    def boolean(self, table: Mapping[str, Any], key: str, where: str, default: bool) -> bool:
        if key not in table:
            return default
        value = table[key]
        if not isinstance(value, bool):
            raise self.error(f"{where}.{key}", f"must be true or false, got {_kind(value)}")
        return value

    def string(self, table: Mapping[str, Any], key: str, where: str) -> str | None:
        if key not in table:
            return None
        value = table[key]
        if not isinstance(value, str):
            raise self.error(f"{where}.{key}", f"must be a string, got {_kind(value)}")
        if not value.strip():
            raise self.error(f"{where}.{key}", "must not be empty")
        return value

    def strings(self, table: Mapping[str, Any], key: str, where: str) -> tuple[str, ...] | None:
        if key not in table:
            return None
        value = table[key]
        if not isinstance(value, list):
            raise self.error(f"{where}.{key}", f"must be an array of strings, got {_kind(value)}")
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise self.error(f"{where}.{key}[{index}]", f"must be a string, got {_kind(item)}")
            if not item.strip():
                raise self.error(f"{where}.{key}[{index}]", "must not be empty")
        return tuple(value)

    def check_keys(self, table: Mapping[str, Any], where: str, known: tuple[str, ...]) -> None:
        for key in table:
            if key not in known:
                raise self.unknown(key, where, known)


def parse_repo_config(text: str, origin: str = DEFAULT_PATH) -> RepoConfig:
    """TOML text -> RepoConfig. Raises ConfigError (and nothing else) on any problem."""
    reader = _Reader(origin)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise reader.error("", f"not valid TOML: {exc}") from None
    except RecursionError:  # arrays nested thousands deep exhaust tomllib's recursive parser
        raise reader.error("", "not valid TOML: nested too deeply") from None
    reader.check_keys(document, "", tuple(SCHEMA))
    sections = {name: reader.table(document, name, name) for name in SCHEMA}
    for name, table in sections.items():
        reader.check_keys(table, name, SCHEMA[name])

    policy_table = sections["policy"]
    policy, max_auto_reruns = _policy(reader, policy_table)
    jobs = sections["jobs"]
    outage = sections["outage"]
    window = sections["window"]
    return RepoConfig(
        policy=policy,
        max_auto_reruns=max_auto_reruns,
        host_pattern=_host_pattern(reader, sections["runners"]),
        ownership=_ownership(reader, jobs),
        include_jobs=reader.strings(jobs, "include", "jobs") or (),
        exclude_jobs=reader.strings(jobs, "exclude", "jobs") or (),
        outage=OutageGuard(
            # Zero would call every failure (or none) an outage: the thresholds start at one.
            max_failed_jobs=reader.integer(outage, "max_failed_jobs", "outage", OutageGuard.max_failed_jobs, 1),
            max_prs=reader.integer(outage, "max_prs", "outage", OutageGuard.max_prs, 1),
            window_minutes=reader.integer(outage, "window_minutes", "outage", OutageGuard.window_minutes, 1),
        ),
        window_before_hours=_hours(reader, window, "before_hours", RepoConfig.window_before_hours),
        window_after_hours=_hours(reader, window, "after_hours", RepoConfig.window_after_hours),
        rules_file=_rules_file(reader, sections["rules"]),
    )


def _categories(reader: _Reader, table: Mapping[str, Any], key: str) -> frozenset[str] | None:
    names = reader.strings(table, key, "policy")
    if names is None:
        return None
    for index, name in enumerate(names):
        if name not in CATEGORIES:
            close = _suggest(name, CATEGORIES)
            hint = f"Did you mean '{close}'?" if close else f"Known categories: {', '.join(CATEGORIES)}."
            raise reader.error(f"policy.{key}[{index}]", f"unknown category '{name}'", hint)
        if name in NOT_RETRYABLE:
            raise reader.error(f"policy.{key}[{index}]", f"category '{name}' is never retryable",
                               "A failing test, an import error or an unexplained failure is evidence about "
                               "the code, not the runner; rerunning it would hide that.")
    return frozenset(names)


def _policy(reader: _Reader, table: Mapping[str, Any]) -> tuple[Policy, int]:
    defaults = Policy()
    retryable = _categories(reader, table, "retryable_categories")
    need = _categories(reader, table, "need_contention")
    if retryable is None:
        retryable = defaults.retryable_categories
    if need is None:
        # Narrowing retryable_categories alone must not trip the subset rule below.
        need = defaults.need_contention & retryable
    outside = sorted(need - retryable)
    if outside:
        raise reader.error("policy.need_contention", f"'{outside[0]}' is not in policy.retryable_categories",
                           "Contention only matters for a category that may be rerun: add it to "
                           "retryable_categories or drop it here.")
    ratio = reader.number(table, "died_early_ratio", "policy", defaults.died_early_ratio)
    if not 0 < ratio <= 1:
        raise reader.error("policy.died_early_ratio", f"must be in (0, 1], got {ratio:g}",
                           "It is the fraction of a job's usual duration before which a failure counts as early.")
    policy = Policy(
        retryable_categories=retryable,
        need_contention=need,
        possibly_related_blocks_rerun=reader.boolean(table, "possibly_related_blocks_rerun", "policy",
                                                     defaults.possibly_related_blocks_rerun),
        died_early_ratio=ratio,
    )
    return policy, reader.integer(table, "max_auto_reruns", "policy", RepoConfig.max_auto_reruns, 0)


def _host_pattern(reader: _Reader, table: Mapping[str, Any]) -> str | None:
    source = reader.string(table, "host_pattern", "runners")
    if source is None:
        return None
    try:
        compiled = re.compile(source)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        raise reader.error("runners.host_pattern", f"does not compile as a regular expression: {exc}") from None
    if compiled.groups and "host" not in compiled.groupindex and compiled.groups != 1:
        raise reader.error("runners.host_pattern", f"has {compiled.groups} groups but none is named 'host'",
                           "Name the group that captures the host: (?P<host>...).")
    return source


def _ownership(reader: _Reader, jobs: Mapping[str, Any]) -> tuple[JobOwnership, ...]:
    entries = jobs.get("owns", [])
    if not isinstance(entries, list):
        raise reader.error("jobs.owns", f"must be an array of tables ([[jobs.owns]]), got {_kind(entries)}")
    owned = []
    for index, entry in enumerate(entries):
        where = f"jobs.owns[{index}]"
        if not isinstance(entry, dict):
            raise reader.error(where, f"must be a table with job and paths, got {_kind(entry)}")
        reader.check_keys(entry, where, OWNS_KEYS)
        job = reader.string(entry, "job", where)
        if job is None:
            raise reader.error(f"{where}.job", "is missing", "Give the job name or an fnmatch pattern on it.")
        paths = reader.strings(entry, "paths", where)
        if not paths:
            raise reader.error(f"{where}.paths", "is missing or empty",
                               "List the path globs of the code this job exercises.")
        for path_index, glob in enumerate(paths):
            problem = glob_problem(glob)
            if problem:
                raise reader.error(f"{where}.paths[{path_index}]", problem)
        owned.append(JobOwnership(job, paths))
    return tuple(owned)


def _hours(reader: _Reader, table: Mapping[str, Any], key: str, default: float) -> float:
    hours = reader.number(table, key, "window", default)
    if not 0 <= hours <= MAX_WINDOW_HOURS:
        raise reader.error(f"window.{key}", f"must be between 0 and {MAX_WINDOW_HOURS:g} hours, got {hours:g}")
    return hours


def _rules_file(reader: _Reader, table: Mapping[str, Any]) -> str | None:
    path = reader.string(table, "file", "rules")
    if path is None:
        return None
    # Read from the repository checkout: a path that leaves it would read whatever the runner has.
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", path) or ".." in re.split(r"[/\\]", path):
        raise reader.error("rules.file", f"must be a path inside the repository, got '{path}'",
                           "Give it relative to the repository root, e.g. .github/ci-triage-rules.toml.")
    return path


# ---------------------------------------------------------------------------------------------
# Pure helpers the service uses


def matches_job(config: RepoConfig, job_name: str) -> bool:
    """Whether ci-triage should look at this job: in `include` (or include is empty), not in `exclude`."""
    included = not config.include_jobs or any(fnmatch.fnmatchcase(job_name, p) for p in config.include_jobs)
    return included and not any(fnmatch.fnmatchcase(job_name, p) for p in config.exclude_jobs)


def owned_paths(config: RepoConfig, job_name: str) -> tuple[str, ...]:
    """The path globs of every [[jobs.owns]] entry whose job pattern matches, in file order, once each."""
    found: dict[str, None] = {}
    for entry in config.ownership:
        if fnmatch.fnmatchcase(job_name, entry.job):
            found.update(dict.fromkeys(entry.paths))
    return tuple(found)


def runner_host(config: RepoConfig, runner_name: str | None) -> str | None:
    """The host a runner runs on per host_pattern; None without a pattern (the caller's default applies)."""
    if not runner_name or config.host_pattern is None:
        return None
    return host_of(runner_name, re.compile(config.host_pattern))


def glob_problem(glob: str) -> str | None:
    if not glob.strip("/ "):
        return "must name a path, got an empty glob"
    if glob.startswith("!"):
        return "negated globs ('!...') are not supported; list only the paths the job exercises"
    return None


# ---------------------------------------------------------------------------------------------
# Rendering: the commented default file, and one inferred from the workflows


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


def analyse_workflows(workflows: Mapping[str, str]) -> tuple[InferredWorkflow, ...]:
    """Workflow files (path -> YAML text) -> what a config can say about them, sorted by path."""
    return tuple(_analyse(path, workflows[path]) for path in sorted(workflows))


def _analyse(path: str, text: str) -> InferredWorkflow:
    import yaml  # PyYAML: only `config init` needs it

    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        return InferredWorkflow(path, problem=f"not valid YAML{where}")
    except (RecursionError, ValueError, OverflowError) as exc:
        return InferredWorkflow(path, problem=f"not readable YAML: {type(exc).__name__}")
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


def infer_config(workflows: Mapping[str, str]) -> str:
    """Workflow files (path -> YAML text) -> a commented config to start from; `config check` accepts it."""
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
