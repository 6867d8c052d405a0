"""Stored failures -> clusters by fingerprint, so new flaky signatures surface on their own."""

from __future__ import annotations

from collections.abc import Iterable

from ci_triage.model import Cluster, StoredFailure


def cluster(failures: Iterable[StoredFailure]) -> list[Cluster]:
    """Group by fingerprint; biggest first, then most recent."""
    groups: dict[str, list[StoredFailure]] = {}
    for failure in failures:
        if failure.fingerprint:
            groups.setdefault(failure.fingerprint, []).append(failure)
    clusters = []
    for key, members in groups.items():
        seen = sorted(m.failed_at for m in members if m.failed_at)
        clusters.append(Cluster(
            fingerprint=key,
            category=members[0].category,
            count=len(members),
            prs=tuple(sorted({m.pr for m in members if m.pr is not None})),
            job_names=tuple(sorted({m.job_name for m in members})),
            first_seen=seen[0] if seen else None,
            last_seen=seen[-1] if seen else None,
            sample=members[-1].root_cause,
            example_url=members[-1].html_url,
        ))
    clusters.sort(key=lambda c: c.last_seen or "", reverse=True)
    clusters.sort(key=lambda c: c.count, reverse=True)  # stable: equal counts stay most recent first
    return clusters
