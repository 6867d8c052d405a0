"""GitHub's REST protocol without I/O: answers to typed errors, retry timing, Link paging, webhook
signatures, and scrubbing tokens out of text.

Everything here is a pure function of its arguments (the clock and the random source are passed in),
so it is tested with recorded real headers and bodies, as gidgethub's `sansio` module is.

References (docs.github.com, API version 2022-11-28):
- "Rate limits for the REST API", section "Exceeding the rate limit": a primary limit answers 403 or
  429 with `x-ratelimit-remaining: 0` -- do not retry before `x-ratelimit-reset` (UTC epoch seconds).
  A secondary limit answers 403 or 429 with a message saying so; honour `retry-after` (seconds) when
  present, else the reset when remaining is 0, else wait at least one minute, growing exponentially.
- "Using pagination in the REST API": `Link: <url>; rel="next", <url>; rel="last"`.
- "Validating webhook deliveries": `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from ci_triage import __version__
from ci_triage.core import redact as _redact
from ci_triage.errors import (
    Forbidden,
    GitHubError,
    Gone,
    LogExpired,
    NoResponse,
    NotFound,
    RateLimited,
    SecondaryRateLimited,
    Unauthorized,
    Unavailable,
)

# "API versions" (docs.github.com/en/rest/about-the-rest-api/api-versions): the version every request
# names in `X-GitHub-Api-Version`. `per_page` is at most 100 on every list endpoint we use.
API_VERSION = "2022-11-28"
PER_PAGE = 100
# GitHub asks for a User-Agent naming the application ("Getting started with the REST API").
USER_AGENT = f"ci-triage/{__version__}"

# Retry policy defaults. A wait longer than MAX_WAIT_S is not worth blocking a triage run for: the
# caller gets RateLimited with `reset_at` and can say when to come back.
BASE_DELAY_S = 1.0
MAX_BACKOFF_S = 60.0
MAX_WAIT_S = 300.0
MAX_ATTEMPTS = 5
# GitHub: "wait for at least one minute before retrying" a secondary limit that names no time.
SECONDARY_MIN_WAIT_S = 60.0
# Our clock and GitHub's differ a little; waiting a second past the reset avoids a wasted request.
CLOCK_SKEW_S = 1.0

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
# Scrubbing credentials out of text is the one redactor's job (core/redact.py: GitHub token formats,
# Authorization headers, URL userinfo and more); `redact` here keeps its name for the GitHub shell.
REDACTED = _redact.REDACTED

_LINK_PART = re.compile(r'<([^>]*)>\s*;\s*rel="([^"]+)"')


class RandomSource(Protocol):
    def random(self) -> float: ...


# --- secrets ------------------------------------------------------------------------------------

def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every given secret, and anything shaped like a credential, replaced by ***."""
    return _redact.redact(text, secrets)


def verify_signature(secret: str | bytes, body: bytes, header: str | None) -> bool:
    """Whether `header` (X-Hub-Signature-256) is the HMAC-SHA256 of the raw `body` under `secret`."""
    if not secret or not header or not header.startswith("sha256="):
        return False
    key = secret.encode() if isinstance(secret, str) else secret
    expected = "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
    # Constant time, so the signature cannot be guessed a byte at a time.
    return hmac.compare_digest(expected.encode(), header.strip().encode())


# --- answers ------------------------------------------------------------------------------------

def _lower(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    items = headers.items() if isinstance(headers, Mapping) else headers
    return {str(k).lower(): str(v) for k, v in items}


def message_of(body: Any) -> str | None:
    """GitHub's `message` from an error body (bytes, text or decoded JSON), if it has one."""
    if isinstance(body, bytes | bytearray):
        body = body.decode("utf-8", errors="replace")
    if isinstance(body, str):
        try:
            body = json.loads(body) if body.strip() else None
        except ValueError:
            return body.strip()[:200] or None
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    return None


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def reset_time(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> datetime | None:
    """`x-ratelimit-reset` (UTC epoch seconds) as an aware datetime."""
    reset = _number(_lower(headers).get("x-ratelimit-reset"))
    return datetime.fromtimestamp(reset, UTC) if reset is not None else None


def classify_response(status: int, headers: Mapping[str, str] | Iterable[tuple[str, str]], body: Any, *,
                      what: str = "GitHub API request", log: bool = False,
                      secrets: Iterable[str | None] = ()) -> None:
    """None for a success or a redirect; otherwise raise the typed error GitHub's answer means.

    `what` names the request in the message; `log=True` says the request was for a job's log, where
    410 means the log expired (GitHub keeps logs for a limited time) and 404 that there is none (yet):
    a runner lost before upload, or a log not yet archived -- worth asking again next time.
    """
    if status < 400:
        return
    lowered = _lower(headers)
    github_message = message_of(body)
    shown = redact(github_message, secrets) if github_message else None
    text = redact(f"{what}: GitHub answered {status}" + (f" ({shown})" if shown else ""), secrets)
    lowered_message = (github_message or "").lower()

    if status in (403, 429):
        remaining = lowered.get("x-ratelimit-remaining")
        retry_after = _number(lowered.get("retry-after"))
        reset_at = reset_time(lowered) if remaining == "0" else None
        if "secondary rate limit" in lowered_message or "abuse" in lowered_message:
            raise SecondaryRateLimited(text, reset_at=reset_at, retry_after=retry_after, status=status)
        if remaining == "0" or "rate limit" in lowered_message:
            # Primary: "API rate limit exceeded for <user or IP>." with remaining 0.
            raise RateLimited(text, reset_at=reset_at or reset_time(lowered), retry_after=retry_after,
                              status=status)
        if retry_after is not None or status == 429:
            raise SecondaryRateLimited(text, retry_after=retry_after, status=status)
        raise Forbidden(text, hint="Check that the token has the permission this needs.", status=status)
    if status == 401:
        raise Unauthorized(text, hint="Check GITHUB_TOKEN / GH_TOKEN.", status=status)
    if log and status == 410:
        raise LogExpired(text, hint="GitHub keeps job logs for a limited time.", status=status)
    if log and status == 404:
        raise NotFound(text, hint="The job has no log (yet): a lost runner uploads none.", status=status)
    if status == 404:
        text = redact(f"{what}: not found (GitHub answered 404)", secrets)
        raise NotFound(text, hint="Check the repository and number, and that the token can see it.",
                       status=status)
    if status == 410:
        raise Gone(text, status=status)
    if status >= 500:
        raise Unavailable(text, hint="GitHub is having trouble; try again later.", status=status)
    raise GitHubError(text, status=status)


# --- retrying -----------------------------------------------------------------------------------

def is_safe_to_retry(method: str, error: BaseException, idempotent: bool | None = None) -> bool:
    """Whether repeating the request cannot do anything twice.

    Reads (and PUT/DELETE) always can. A write that GitHub rejected before acting (a rate limit, a
    503, or a connection that never opened) can. A write that may have been acted on -- no answer
    came (NoResponse), or 500/502/504, which a proxy can send after the backend did the work -- cannot:
    the caller first checks whether it happened. `idempotent=True` marks writes that are safe to repeat
    anyway (PATCH of a comment body, adding a reaction, which answers 200 when it exists).
    """
    if not isinstance(error, (RateLimited, Unavailable)):
        return False
    if idempotent if idempotent is not None else method.upper() in IDEMPOTENT_METHODS:
        return True
    if isinstance(error, RateLimited):
        return True
    if isinstance(error, NoResponse):
        return False
    # An Unavailable without a status never reached GitHub (connect error or connect timeout).
    return error.status is None or error.status == 503


def retry_delay(attempt: int, error: BaseException, now: datetime, rng: RandomSource, *,
                base_s: float = BASE_DELAY_S, max_backoff_s: float = MAX_BACKOFF_S,
                max_wait_s: float = MAX_WAIT_S, max_attempts: int = MAX_ATTEMPTS) -> float | None:
    """Seconds to wait before trying again after `attempt` (0 = the first try) failed with `error`;
    None when it should not be retried (not a transient error, attempts used up, or the wait is longer
    than `max_wait_s`, e.g. a primary limit that resets in 40 minutes).

    5xx and transport errors: exponential backoff with full jitter, uniform in [0, min(cap, base*2^n)]
    ("Exponential Backoff And Jitter", AWS Architecture Blog). Rate limits: the time GitHub names.
    """
    if attempt + 1 >= max_attempts:
        return None
    if isinstance(error, RateLimited):
        if error.retry_after is not None:
            wait = max(0.0, error.retry_after)
        elif error.reset_at is not None:
            wait = max(0.0, (error.reset_at - now).total_seconds()) + CLOCK_SKEW_S
        else:
            # "Otherwise, wait for at least one minute before retrying. If your request continues to
            # fail due to a secondary rate limit, wait for an exponentially increasing amount of time."
            # A primary limit whose answer names no reset time is treated the same way.
            wait = SECONDARY_MIN_WAIT_S * 2**attempt
        return wait if wait <= max_wait_s else None
    if isinstance(error, Unavailable):
        return rng.random() * min(max_backoff_s, base_s * 2**attempt)
    return None


# --- paging -------------------------------------------------------------------------------------

def parse_link(header: str | None) -> dict[str, str]:
    """rel -> URL of a `Link` header (empty when there is none)."""
    return {rel: url for url, rel in _LINK_PART.findall(header or "")}


def same_origin(url: str, base: str) -> bool:
    """Whether `url` is on the API host of `base`: the only place a token may be sent."""
    def origin(text: str) -> str:
        found = re.match(r"^([a-z][a-z0-9+.-]*://[^/?#]+)", text, re.IGNORECASE)
        return found.group(1).lower() if found else ""

    return bool(origin(url)) and origin(url) == origin(base)


def malformed(what: str, exc: BaseException | str) -> Unavailable:
    """A success whose body cannot be decoded (truncated or corrupt JSON or gzip): a transient fault,
    retried like a 5xx, and missing evidence if it persists -- never an internal error."""
    detail = exc if isinstance(exc, str) else type(exc).__name__
    return Unavailable(f"{what}: GitHub's answer could not be decoded ({detail})",
                       hint="It was retried; try again later.")


def decode_json(what: str, body: bytes | str) -> Any:
    """The JSON of a success answer, or the Unavailable error `malformed` describes."""
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise malformed(what, exc) from None


def no_response(what: str, exc: BaseException, secrets: Iterable[str | None] = (), *, sent: bool) -> Unavailable:
    """The typed error of a transport failure: NoResponse when the request may have been delivered."""
    detail = redact(str(exc), secrets)
    detail = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    if sent:
        return NoResponse(f"{what}: no answer from GitHub ({detail})",
                          hint="The request may or may not have been acted on.")
    return Unavailable(f"{what}: cannot reach the GitHub API ({type(exc).__name__})",
                       hint="Check the network and GITHUB_API_URL.")


# --- job lists ------------------------------------------------------------------------------------

def jobs_of_attempt(jobs: Iterable[Mapping[str, Any]], attempt: int) -> list[Mapping[str, Any]]:
    """The jobs as they stood at `attempt` of a run, from `GET .../runs/{run_id}/jobs?filter=all`.

    The description of `filter` says `all` "returns all jobs for a workflow run, including from old
    executions"; it does not say whether `/attempts/{n}/jobs` lists the jobs *not* rerun in attempt n
    (one public report says it does not). Selecting, per job name, the newest execution no later than
    `attempt` gives the same answer under either reading: after a single-job rerun, the other job that
    still failed in attempt 1 stays in the list.
    """
    newest: dict[str, Mapping[str, Any]] = {}
    for job in jobs:
        ran_in = job.get("run_attempt") or 1
        if ran_in > attempt:
            continue
        name = str(job.get("name"))
        held = newest.get(name)
        if held is None or (ran_in, job.get("id") or 0) > (held.get("run_attempt") or 1, held.get("id") or 0):
            newest[name] = job
    return sorted(newest.values(), key=lambda j: j.get("id") or 0)
