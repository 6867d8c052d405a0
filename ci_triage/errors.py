"""One root error with a stable code and a hint; the CLI prints it as one line and exits non-zero."""

from __future__ import annotations

from datetime import datetime


class TriageError(Exception):
    """Anything a user can cause or fix. Carries a stable machine-readable code and a hint."""

    code = "error"
    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        text = self.message.rstrip(".")
        return f"{text}. {self.hint}" if self.hint else f"{text}."


class UsageError(TriageError):
    code = "usage"
    exit_code = 2


class ConfigError(TriageError):
    code = "config"
    exit_code = 2


class StoreError(TriageError):
    code = "store"


class CaseFileError(TriageError):
    code = "case_file"
    exit_code = 2


class GitHubError(TriageError):
    code = "github"

    def __init__(self, message: str, hint: str | None = None, status: int | None = None) -> None:
        super().__init__(message, hint)
        self.status = status


class NotFound(GitHubError):
    code = "not_found"


class Unauthorized(GitHubError):
    code = "unauthorized"


class Forbidden(GitHubError):
    code = "forbidden"


class RateLimited(GitHubError):
    code = "rate_limited"

    def __init__(
        self,
        message: str,
        reset_at: datetime | None = None,
        retry_after: float | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message, "Wait for the limit to reset or use a token with a higher limit.", status)
        self.reset_at = reset_at
        self.retry_after = retry_after


class LogExpired(GitHubError):
    code = "log_expired"


class Unavailable(GitHubError):
    """The API could not be reached or kept failing (connection errors, timeouts, 5xx)."""

    code = "unavailable"


class SecondaryRateLimited(RateLimited):
    """GitHub's secondary (abuse) limit: too many requests too fast, or too much content created.
    Docs: "Rate limits for the REST API" -- honour `retry-after`, else wait at least a minute."""

    code = "secondary_rate_limited"


class Gone(NotFound):
    """410: the resource existed and was removed (e.g. issues disabled on the repository)."""

    code = "gone"


class NoResponse(Unavailable):
    """The request may have reached GitHub but no answer came back (read timeout, connection dropped).
    A write in this state may or may not have happened: it is checked before being repeated."""

    code = "no_response"
