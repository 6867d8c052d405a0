"""Facts about a failed job + policy -> a verdict with its evidence and whether to rerun.

Pure. Every evidence item is a sentence a maintainer can check, with a link where there is one.
A rerun is never recommended on incomplete evidence: a log that could not be read is not evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_triage.core.categories import NEVER_RETRYABLE, describe_capture
from ci_triage.core.evidence.frame_baselines import died_early
from ci_triage.model import (
    Evidence,
    JobFacts,
    JobVerdict,
    LogStatus,
    OverlappingJob,
    Relatedness,
    Verdict,
)


@dataclass(frozen=True)
class Policy:
    """Defaults suit a busy repository with shared self-hosted runners."""

    # Categories an infra failure may have. Only these can lead to a rerun.
    retryable_categories: frozenset[str] = frozenset(
        {"port_in_use", "network", "runner_lost", "job_timeout", "disk_full", "container", "device_error",
         "collective_timeout", "accelerator_oom", "crash", "host_oom"}
    )
    # These may equally be the PR's fault (its model got bigger, it deadlocks): rerun only with
    # evidence that something else was competing for the runner at the time. The kernel's OOM
    # killer (host_oom) is resource exhaustion like a device OOM: the same evidence is needed.
    need_contention: frozenset[str] = frozenset({"accelerator_oom", "collective_timeout", "crash", "job_timeout",
                                                 "host_oom"})
    possibly_related_blocks_rerun: bool = False
    died_early_ratio: float = 0.85


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def _root_cause_evidence(facts: JobFacts) -> Evidence | None:
    c = facts.classification
    if c.root_cause is None:
        return None
    where = f"line {c.root_cause.line}" + (f" of step '{c.root_cause.step}'" if c.root_cause.step else "")
    facts_said = []
    if "port" in c.captures:
        facts_said.append(f"port {c.captures['port']}")
    if "errno" in c.captures:
        facts_said.append(f"code {describe_capture('errno', c.captures['errno'])}")
    detail = f" [{', '.join(facts_said)}]" if facts_said else ""
    kind = f"{c.category}; resembles {c.resembles}" if c.resembles else c.category
    text = f"Root cause ({kind}) at {where}{detail}: {c.root_cause.text.strip()}"
    return Evidence("root_cause", text, facts.job.html_url)


def _overlap_phrase(job: OverlappingJob) -> str:
    who = f"PR #{job.pr}" if job.pr else f"branch {job.branch}"
    return f"{job.name} of {who} on {job.runner_name}, {_minutes(job.overlap_s)}"


def _contention_evidence(facts: JobFacts) -> list[Evidence]:
    items = []
    others = [o for o in facts.overlapping_jobs if o.pr is not None or o.branch]
    if facts.in_flight_prs:
        prs = ", ".join(f"#{n}" for n in facts.in_flight_prs)
        same_host = [o for o in others if o.same_host]
        host_note = f", {len(same_host)} of them on the same host" if same_host else ""
        # The list is ordered same host first: the longest of all is looked for, not taken from the top.
        longest = max(others, key=lambda o: (o.overlap_s, -o.job_id), default=None)
        nearest = max(same_host, key=lambda o: (o.overlap_s, -o.job_id), default=None)
        text = (
            f"{len(facts.overlapping_jobs)} job(s) of other runs shared the runner pool while it ran{host_note}; "
            f"PRs in flight at once: {prs}"
        )
        said = []
        if nearest is not None:
            said.append(f"longest overlap on the same host: {_overlap_phrase(nearest)}")
        if longest is not None and longest is not nearest:
            said.append(f"longest of all: {_overlap_phrase(longest)}")
        if said:
            text += f" ({'; '.join(said)})"
        link = nearest or longest
        items.append(Evidence("contention", text + ".", link.html_url if link else None, Verdict.INFRA_FLAKE))
    if facts.later_jobs_passed:
        first = facts.later_jobs_passed[0]
        items.append(
            Evidence(
                "queue_drained",
                f"{len(facts.later_jobs_passed)} job(s) that started on the same pool after it ended passed.",
                first.html_url,
                Verdict.INFRA_FLAKE,
            )
        )
    return items


def _died_early_evidence(facts: JobFacts, policy: Policy) -> Evidence | None:
    baseline, duration = facts.baseline, facts.job.duration_s
    if baseline is None or duration is None:
        return None
    if died_early(facts.job, baseline, policy.died_early_ratio):
        return Evidence(
            "died_early",
            f"Died at {_minutes(duration)}; successful runs of '{baseline.job_name}' take "
            f"{_minutes(baseline.median_s)} (median of {baseline.samples}), so it failed before the real work.",
            facts.job.html_url,
            Verdict.INFRA_FLAKE,
        )
    return None


def _relatedness_evidence(relatedness: Relatedness, files: tuple[str, ...], n_changed: int,
                          decided_by: str | None = None) -> Evidence:
    if relatedness is Relatedness.RELATED:
        because = f" (decided by the {decided_by})" if decided_by else ""
        return Evidence("relatedness", f"The failure passes through changed code: {', '.join(files)}{because}.",
                        supports=Verdict.PR_RELATED)
    if relatedness is Relatedness.POSSIBLY_RELATED:
        return Evidence(
            "relatedness",
            f"The PR changes files this job exercises ({', '.join(files)}), but the failing stack never enters them.",
        )
    return Evidence(
        "relatedness", f"None of the PR's {n_changed} changed file(s) is on this job's code path.",
        supports=Verdict.INFRA_FLAKE,
    )


@dataclass(frozen=True)
class OutageGuard:
    """Many jobs or PRs failing the same way at once is an outage to report, not a wave of reruns."""

    max_failed_jobs: int = 6
    max_prs: int = 4
    window_minutes: int = 30


def _similar_evidence(facts: JobFacts) -> list[Evidence]:
    items = []
    other_prs = sorted({s.pr for s in facts.similar_failures if s.pr is not None and not s.on_base})
    if other_prs:
        first = next(s for s in facts.similar_failures if s.pr == other_prs[0])
        items.append(Evidence(
            "same_failure_elsewhere",
            f"The same failure (same fingerprint) hit {len(other_prs)} other PR(s) in the window: "
            f"{', '.join(f'#{n}' for n in other_prs)}. Those PRs change different code, so one change cannot "
            "explain them all: the cause is more likely the runners they share.",
            first.html_url, Verdict.INFRA_FLAKE,
        ))
    return items


def _outage(facts: JobFacts, guard: OutageGuard) -> Evidence | None:
    """Same-fingerprint failures within guard.window_minutes of this one, this one included."""
    end = facts.job.completed_at
    if end is None:
        return None
    near = [s for s in facts.similar_failures
            if s.completed_at is not None and abs((s.completed_at - end).total_seconds()) <= guard.window_minutes * 60]
    jobs = len(near) + 1
    prs = len({s.pr for s in near if s.pr is not None} | ({facts.run.pr_numbers[0]} if facts.run.pr_numbers else set()))
    if jobs >= guard.max_failed_jobs or prs >= guard.max_prs:
        return Evidence(
            "outage",
            f"{jobs} jobs across {prs} PR(s) failed this same way within {guard.window_minutes} min: that is an "
            "outage of the runners to report to their owners, not something reruns fix.",
            supports=Verdict.INFRA_FLAKE,
        )
    return None


RelationLike = tuple[Relatedness, tuple[str, ...]] | tuple[Relatedness, tuple[str, ...], str | None]


def decide(facts: JobFacts, relation: RelationLike, n_changed: int,
           policy: Policy = Policy(), outage: OutageGuard = OutageGuard()) -> JobVerdict:
    c = facts.classification
    # `relate()` gives (relatedness, files, what decided it); a bare (relatedness, files) pair decides nothing.
    relatedness, related_files = relation[0], relation[1]
    decided_by = relation[2] if len(relation) > 2 else None
    evidence: list[Evidence] = []
    root = _root_cause_evidence(facts)
    if root:
        evidence.append(root)

    def verdict(v: Verdict, confidence: float, rerun: bool) -> JobVerdict:
        return JobVerdict(facts, relatedness, related_files, v, round(confidence, 2), rerun, tuple(evidence),
                          decided_by if relatedness is Relatedness.RELATED else None)

    if facts.log_status is not LogStatus.AVAILABLE and c.source != "annotations":
        evidence.append(Evidence("missing", f"The job's log is {facts.log_status.value}: no rerun without it.",
                                 facts.job.html_url))
        return verdict(Verdict.NEEDS_REVIEW, 0.3, False)
    if facts.log_status is not LogStatus.AVAILABLE:
        # A lost runner uploads no log; GitHub's own annotation on the job is then the evidence.
        evidence.append(Evidence("missing", f"The job's log is {facts.log_status.value}; the cause comes from "
                                            "GitHub's annotation on the job.", facts.job.html_url))

    evidence.append(_relatedness_evidence(relatedness, related_files, n_changed, decided_by))

    on_base = [s for s in facts.similar_failures if s.on_base]
    if c.category in NEVER_RETRYABLE:
        return _decide_test_failure(facts, relatedness, evidence, verdict)

    retryable = c.category in policy.retryable_categories and c.retryable
    if on_base and not retryable:
        evidence.append(Evidence(
            "base_branch", f"The same failure (same fingerprint) happens on the base branch itself "
            f"({len(on_base)} run(s) in the window): it is not this PR's doing.", on_base[0].html_url,
            Verdict.BROKEN_BASE))
        return verdict(Verdict.BROKEN_BASE, 0.8, False)

    if not retryable:
        hint = (f" (its root-cause line resembles a {c.resembles} failure: {', '.join(c.resembling_words)};"
                " a hint, not evidence)" if c.resembles else "")
        evidence.append(Evidence("unclassified", f"No rule explains this failure{hint}; a person should look."))
        return verdict(Verdict.NEEDS_REVIEW, 0.4, False)

    if relatedness is Relatedness.RELATED:
        return verdict(Verdict.PR_RELATED, 0.8, False)

    contention = _contention_evidence(facts)
    early = _died_early_evidence(facts, policy)
    elsewhere = _similar_evidence(facts)
    evidence.extend(contention)
    for hint in facts.neighbour_hints:
        evidence.append(Evidence("neighbour_in_log", f"The log names another process on the device: {hint}",
                                 facts.job.html_url, Verdict.INFRA_FLAKE))
    if early:
        evidence.append(early)
    evidence.extend(elsewhere)
    has_contention = any(e.kind == "contention" for e in contention) or bool(facts.neighbour_hints)
    if c.category in policy.need_contention and not has_contention:
        evidence.append(Evidence("no_contention", f"A {c.category} needs a competing job as evidence; none was found."))
        return verdict(Verdict.NEEDS_REVIEW, 0.5, False)

    confidence = 0.6 + 0.15 * has_contention + 0.1 * (early is not None) + 0.05 * bool(facts.later_jobs_passed)
    confidence += 0.1 if relatedness is Relatedness.UNRELATED else 0.0
    confidence += 0.05 if elsewhere else 0.0
    rerun = not (relatedness is Relatedness.POSSIBLY_RELATED and policy.possibly_related_blocks_rerun)
    outage_evidence = _outage(facts, outage)
    if outage_evidence is not None:
        evidence.append(outage_evidence)
        rerun = False
    return verdict(Verdict.INFRA_FLAKE, min(confidence, 0.99), rerun)


def _decide_test_failure(facts, relatedness, evidence, verdict) -> JobVerdict:
    failing = set(facts.classification.failed_tests)
    base = facts.base_comparison
    if base is not None and base.conclusion in ("failure", "timed_out"):
        on_base = failing & set(base.failed_tests)
        new = sorted(failing - set(base.failed_tests))
        if failing and not new:
            evidence.append(Evidence(
                "base_branch",
                f"The same {len(on_base)} test(s) fail on {base.base_ref} too (run {base.run_id}): "
                "they fail before this PR and are not its doing.",
                base.html_url, Verdict.BROKEN_BASE,
            ))
            return verdict(Verdict.BROKEN_BASE, 0.9, False)
        if new:
            evidence.append(Evidence(
                "new_failures",
                f"{len(new)} failing test(s) do not fail on {base.base_ref}: {', '.join(new[:5])}"
                + (" ..." if len(new) > 5 else "") + ".",
                facts.job.html_url, Verdict.PR_RELATED,
            ))
    elif base is not None:
        evidence.append(Evidence(
            "base_branch", f"The same job passes on {base.base_ref} (run {base.run_id}).", base.html_url,
            Verdict.PR_RELATED,
        ))
    if relatedness is Relatedness.UNRELATED and base is None:
        return verdict(Verdict.NEEDS_REVIEW, 0.5, False)
    confidence = 0.9 if relatedness is Relatedness.RELATED else 0.7
    return verdict(Verdict.PR_RELATED, confidence, False)
