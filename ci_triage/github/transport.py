"""The one retry policy for every request to GitHub: reads, writes and log downloads.

Which error an answer means and how long to wait are decided by the pure functions of
`core.github.protocol` (classify_response, is_safe_to_retry, retry_delay); this module only keeps
the state those decisions need across requests: the total wait budget of one command (`--max-wait`),
the clock, `sleep` and the random source, all passed in so tests never sleep for real.

GitHub's rules ("Rate limits for the REST API", "Best practices for using the REST API"):
- a primary limit: wait until `x-ratelimit-reset`; a secondary limit: `retry-after`, else at least a
  minute, growing exponentially; 5xx and transport errors: exponential backoff with full jitter;
- a wait that does not fit in what is left of the budget is not started: the command stops at once
  with RateLimited saying when the limit resets, instead of sleeping until the job's timeout kills it.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

from ci_triage.core.github import protocol
from ci_triage.errors import GitHubError, RateLimited

T = TypeVar("T")
log = logging.getLogger("ci_triage.github")

# The Action's job has `timeout-minutes: 15`; ten minutes of waiting leaves time to triage and comment.
DEFAULT_MAX_WAIT_S = 600.0


def _utcnow() -> datetime:
    return datetime.now(UTC)


class RetryPolicy:
    """Retries with GitHub's timing inside one total wait budget, shared by every client of a command."""

    def __init__(self, max_wait_s: float = DEFAULT_MAX_WAIT_S, *, max_attempts: int = protocol.MAX_ATTEMPTS,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], datetime] = _utcnow,
                 rng: protocol.RandomSource | None = None, base_delay_s: float = protocol.BASE_DELAY_S,
                 secrets: tuple[str | None, ...] = ()) -> None:
        self.max_wait_s = max(0.0, max_wait_s)
        self.max_attempts = max(1, max_attempts)
        self.sleep = sleep
        self.clock = clock
        self.rng = rng if rng is not None else random.Random()
        self.base_delay_s = base_delay_s
        self.secrets = secrets
        self.waited_s = 0.0
        self.waits: list[float] = []  # every wait taken, for tests and the debug log

    @property
    def remaining_s(self) -> float:
        return max(0.0, self.max_wait_s - self.waited_s)

    def delay(self, attempt: int, error: GitHubError) -> float | None:
        """Seconds to wait before trying again, or None to give up (raising a budget error when the
        only reason is the budget)."""
        delay = protocol.retry_delay(attempt, error, self.clock(), self.rng, base_s=self.base_delay_s,
                                     max_wait_s=float("inf"), max_attempts=self.max_attempts)
        if delay is None:
            return None
        if delay > self.remaining_s:
            raise self.over_budget(error, delay)
        return delay

    def over_budget(self, error: GitHubError, delay: float) -> GitHubError:
        if not isinstance(error, RateLimited):
            return error
        when = f" (it resets at {error.reset_at:%H:%M:%S} UTC)" if error.reset_at else ""
        message = (f"{error.message}{when}; waiting {delay:.0f} s would pass the wait budget of "
                   f"{self.max_wait_s:.0f} s ({self.remaining_s:.0f} s left)")
        budget = type(error)(message, reset_at=error.reset_at, retry_after=error.retry_after, status=error.status)
        budget.hint = "Nothing was rerun; try again after the reset, or raise --max-wait."
        budget.over_budget = True  # type: ignore[attr-defined]
        return budget

    def wait(self, delay: float, error: GitHubError) -> None:
        log.debug("%s; retrying in %.1f s", protocol.redact(error.message, self.secrets), delay)
        self.waited_s += delay
        self.waits.append(delay)
        self.sleep(delay)

    def call(self, fn: Callable[[], T], *, method: str = "GET", idempotent: bool | None = None) -> T:
        """`fn()` until it returns; it raises typed GitHubErrors, which are retried when safe."""
        attempt = 0
        while True:
            try:
                return fn()
            except GitHubError as error:
                if not protocol.is_safe_to_retry(method, error, idempotent):
                    raise
                delay = self.delay(attempt, error)
                if delay is None:
                    raise
                self.wait(delay, error)
                attempt += 1


def over_budget(error: BaseException) -> bool:
    """Whether `error` is a rate limit the command chose not to wait for (the wait budget ran out)."""
    return bool(getattr(error, "over_budget", False))
