"""Write job logs the way the GitHub Actions runner does, with steps timed to match the jobs API.

Each line carries the runner's timestamp prefix; each `run:` step opens with `##[group]Run ...`;
a failing step ends with `##[error]Process completed with exit code N.` The LogBuilder also returns
the step payloads, so the log's times and the API's step times agree, as they do on GitHub.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ci_triage.demo import payloads


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond:06d}0Z"


@dataclass
class LogBuilder:
    start: datetime
    lines: list[str] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    now: datetime = field(init=False)
    _step_start: datetime | None = field(default=None, init=False)
    _step_name: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.now = self.start

    def write(self, text: str, after_s: float = 0.0) -> None:
        self.now += timedelta(seconds=after_s)
        for line in text.split("\n"):
            self.lines.append(f"{stamp(self.now)} {line}")

    def advance_to(self, when: datetime) -> None:
        """Let time pass without output (a quiet stretch of a long step)."""
        self.now = max(self.now, when)

    def begin(self, name: str, after_s: float = 0.5) -> None:
        self.now += timedelta(seconds=after_s)
        self._step_start, self._step_name = self.now, name

    def end(self, conclusion: str = "success", after_s: float = 0.5) -> None:
        self.now += timedelta(seconds=after_s)
        assert self._step_start is not None and self._step_name is not None
        self.steps.append(payloads.step(len(self.steps) + 1, self._step_name, self._step_start.replace(microsecond=0),
                                        self.now.replace(microsecond=0), conclusion))
        self._step_start = self._step_name = None

    def skipped(self, name: str) -> None:
        at = self.now.replace(microsecond=0)
        self.steps.append(payloads.step(len(self.steps) + 1, name, at, at, "skipped"))

    def text(self) -> str:
        # Logs downloaded from GitHub start with a UTF-8 byte order mark.
        return "\ufeff" + "\n".join(self.lines) + "\n"


def set_up_job(log: LogBuilder, *, runner_name: str, machine: str, job_name: str, repo: str,
               hosted: bool) -> None:
    log.begin("Set up job", after_s=0)
    log.write("Current runner version: '2.321.0'")
    if hosted:
        log.write("##[group]Operating System\nUbuntu\n24.04.2\nLTS\n##[endgroup]")
        log.write("##[group]Runner Image\nImage: ubuntu-24.04\nVersion: 20250511.1.0\n##[endgroup]")
    log.write(f"Runner name: '{runner_name}'")
    log.write("Runner group name: 'Default'" if not hosted else "Runner group name: 'GitHub Actions'")
    log.write(f"Machine name: '{machine}'")
    log.write("##[group]GITHUB_TOKEN Permissions\nContents: read\nMetadata: read\n##[endgroup]")
    log.write("Secret source: None\nPrepare workflow directory\nPrepare all required actions")
    log.write("Getting action download info", after_s=0.3)
    log.write("Download action repository 'actions/checkout@v4' (SHA:11bd71901bbe5b1630ceea73d27597364c9af683)",
              after_s=0.4)
    log.write(f"Complete job name: {job_name}", after_s=0.2)
    log.end()


def checkout(log: LogBuilder, *, repo: str, workdir: str, head_sha: str) -> None:
    log.begin("Run actions/checkout@v4")
    log.write(f"##[group]Run actions/checkout@v4\nwith:\n  repository: {repo}\n  token: ***\n  ssh-strict: true\n"
              "  persist-credentials: true\n  clean: true\n  fetch-depth: 1\n##[endgroup]")
    log.write(f"Syncing repository: {repo}", after_s=0.1)
    log.write(f"##[group]Getting Git version info\nWorking directory is '{workdir}'\n"
              "[command]/usr/bin/git version\ngit version 2.43.0\n##[endgroup]", after_s=0.1)
    log.write(f"[command]/usr/bin/git -c protocol.version=2 fetch --no-tags --prune --no-recurse-submodules "
              f"--depth=1 origin +{head_sha}:refs/remotes/pull/merge", after_s=1.2)
    log.write(f"HEAD is now at {head_sha[:7]} Merge {head_sha} into main", after_s=2.1)
    log.end()
