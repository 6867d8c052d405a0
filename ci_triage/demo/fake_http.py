"""The fake GitHub's answers as values, and the faults a test can make it answer with.

Faults (each applies to the next `times` matching requests, in the order injected):
- `inject(method, path_regex, status, times, headers, body)`: answer with that status instead; the
  request is not acted on. GitHub's limits, as "Rate limits for the REST API" describes them:
  primary:   `inject_primary_limit(method, path_regex, reset_in_s)` -> 403, x-ratelimit-remaining: 0,
             x-ratelimit-reset: now + reset_in_s, "API rate limit exceeded for ..." (or by hand:
             inject(m, p, 403, headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": "<epoch>"}));
  secondary: `inject_secondary_limit(method, path_regex, retry_after_s, status=403|429)` -> "You have
             exceeded a secondary rate limit...", with `retry-after` when retry_after_s is not None.
  Expired logs: inject("GET", r"/actions/jobs/[0-9]+/logs$", 410) (or 404; a lost runner's job has none).
- `inject_delay(method, path_regex, seconds, times)`: act on the request, then hold the answer back
  `seconds` -- a client with a shorter timeout sees a timeout after the write took effect.
- `inject_reset(method, path_regex, times, processed=False)`: close the connection (TCP reset) without
  an answer, before acting on the request or (processed=True) after.
`served()` records every request: host, method, path, query, status (0 when no answer was sent) and,
for writes, the decoded JSON body.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

DOCS = "https://docs.github.com/rest"


def send_body(handler: BaseHTTPRequestHandler, body: bytes | Path, write: bool = True) -> None:
    """Content-Length, the end of the headers, then the body; a file (a log kept beside its case)
    is streamed, never read whole."""
    handler.send_header("Content-Length", str(body.stat().st_size if isinstance(body, Path) else len(body)))
    handler.end_headers()
    if not write:
        return
    if isinstance(body, Path):
        with open(body, "rb") as source:
            shutil.copyfileobj(source, handler.wfile, 2**20)
    else:
        handler.wfile.write(body)


@dataclass(frozen=True)
class ServedRequest:
    host: str  # "api" or "logs"
    method: str
    path: str
    query: dict[str, list[str]]
    status: int
    authorization: bool  # whether an Authorization header arrived (it must never reach the log host)
    body: Any = None  # a write's JSON body as decoded (its text when it is not JSON)


@dataclass
class Fault:
    """kind "status": answer matching requests with `status` (and headers/body) instead of the real
    response; "delay": answer for real, `delay_s` late; "reset": close the connection without an answer
    (after acting on the request when `processed`)."""

    method: str
    path_pattern: re.Pattern[str]
    status: int
    times: int = 1
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    kind: str = "status"
    delay_s: float = 0.0
    processed: bool = False


class Response(Exception):
    def __init__(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        self.status, self.body, self.headers = status, body, headers or {}


def not_found() -> Response:
    return Response(404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})


def error(status: int, message: str, **extra: Any) -> Response:
    return Response(status, {"message": message, "documentation_url": DOCS, "status": str(status), **extra})


class FaultInjection:
    """The fake's test helpers: faults to answer with, and the log of requests served."""

    faults: list[Fault]
    requests: list[ServedRequest]

    def inject(self, method: str, path_regex: str, status: int, times: int = 1,
               headers: dict[str, str] | None = None, body: Any = None) -> None:
        with self._lock:
            self.faults.append(Fault(method, re.compile(path_regex), status, times, headers or {}, body))

    def inject_delay(self, method: str, path_regex: str, seconds: float, times: int = 1) -> None:
        """Act on matching requests, then hold each answer back `seconds` (a client timeout after the
        request took effect)."""
        with self._lock:
            self.faults.append(Fault(method, re.compile(path_regex), 0, times, kind="delay", delay_s=seconds))

    def inject_reset(self, method: str, path_regex: str, times: int = 1, processed: bool = False) -> None:
        """Reset the connection of matching requests without answering; `processed`: act on them first."""
        with self._lock:
            self.faults.append(Fault(method, re.compile(path_regex), 0, times, kind="reset", processed=processed))

    def inject_primary_limit(self, method: str, path_regex: str, reset_in_s: float, times: int = 1,
                             status: int = 403) -> None:
        """GitHub's primary limit: remaining 0 until `x-ratelimit-reset` (epoch seconds)."""
        reset = int(datetime.now(UTC).timestamp() + reset_in_s)
        headers = {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0", "X-RateLimit-Used": "5000",
                   "X-RateLimit-Reset": str(reset), "X-RateLimit-Resource": "core"}
        body = {"message": "API rate limit exceeded for installation ID 12345678. If you reach out to GitHub "
                           "Support for help, please include the request ID 0000:0000:0000:0000:0000.",
                "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
                "status": str(status)}
        self.inject(method, path_regex, status, times, headers, body)

    def inject_secondary_limit(self, method: str, path_regex: str, retry_after_s: int | None = 60,
                               times: int = 1, status: int = 403) -> None:
        """GitHub's secondary limit, with `retry-after` unless retry_after_s is None."""
        headers = {} if retry_after_s is None else {"Retry-After": str(retry_after_s)}
        body = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you "
                           "try again. If you reach out to GitHub Support for help, please include the "
                           "request ID 0000:0000:0000:0000:0000.",
                "documentation_url": "https://docs.github.com/free-pro-team@latest/rest/overview/"
                                     "rate-limits-for-the-rest-api#about-secondary-rate-limits",
                "status": str(status)}
        self.inject(method, path_regex, status, times, headers, body)

    def served(self, host: str = "api", path_regex: str | None = None, method: str | None = None) -> list[ServedRequest]:
        with self._lock:
            found = list(self.requests)
        pattern = re.compile(path_regex) if path_regex else None
        return [r for r in found if r.host == host and (pattern is None or pattern.search(r.path))
                and (method is None or r.method == method)]

    def reset_log(self) -> None:
        with self._lock:
            self.requests.clear()

    def _fault_for(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.times > 0 and fault.method == method and fault.path_pattern.search(path):
                    fault.times -= 1
                    return fault
        return None
