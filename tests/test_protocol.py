"""The pure GitHub protocol: answers as recorded from api.github.com -> typed errors, retry timing,
Link paging, webhook signatures and token scrubbing. No network, no clock, no randomness of its own."""

from __future__ import annotations

import hashlib
import hmac
import json
import random
from datetime import UTC, datetime, timedelta

import pytest

from ci_triage.core.github.protocol import (
    classify_response,
    is_safe_to_retry,
    no_response,
    parse_link,
    redact,
    retry_delay,
    same_origin,
    verify_signature,
)
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

NOW = datetime(2026, 5, 12, 13, 0, 0, tzinfo=UTC)
RESET = int(NOW.timestamp()) + 1800

# Headers as api.github.com sends them with a primary limit (docs: "Rate limits for the REST API").
PRIMARY_HEADERS = {
    "Server": "github.com",
    "Content-Type": "application/json; charset=utf-8",
    "X-GitHub-Media-Type": "github.v3; format=json",
    "x-ratelimit-limit": "5000",
    "x-ratelimit-remaining": "0",
    "x-ratelimit-reset": str(RESET),
    "x-ratelimit-used": "5000",
    "x-ratelimit-resource": "core",
    "X-GitHub-Request-Id": "C5A4:2B5E:1E8F6A1:1F3A9C4:6650B1E2",
}
PRIMARY_BODY = json.dumps({
    "message": "API rate limit exceeded for user ID 1234567. If you reach out to GitHub Support for help, "
               "please include the request ID C5A4:2B5E:1E8F6A1:1F3A9C4:6650B1E2 and timestamp "
               "2026-05-12 13:00:00 UTC.",
    "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
    "status": "403",
}).encode()
UNAUTHENTICATED_BODY = {
    "message": "API rate limit exceeded for 203.0.113.7. (But here's the good news: Authenticated requests "
               "get a higher rate limit. Check out the documentation for more details.)",
    "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting",
}
SECONDARY_BODY = {
    "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
               "If you reach out to GitHub Support for help, please include the request ID "
               "D2A8:3C1F:9B2E4D:A1C3F2:6650B1E3.",
    "documentation_url": "https://docs.github.com/free-pro-team@latest/rest/overview/"
                         "rate-limits-for-the-rest-api#about-secondary-rate-limits",
}
# A secondary limit keeps the primary headers of the window, remaining well above 0.
SECONDARY_HEADERS = {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4873", "x-ratelimit-reset": str(RESET),
                     "x-ratelimit-used": "127", "x-ratelimit-resource": "core"}


class FixedRandom:
    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value


# --- classify_response --------------------------------------------------------------------------

@pytest.mark.parametrize("status", [200, 201, 204, 302, 304])
def test_successes_and_redirects_are_not_errors(status: int) -> None:
    assert classify_response(status, {}, b"") is None


@pytest.mark.parametrize("status", [403, 429])
def test_primary_limit_carries_the_reset_time(status: int) -> None:
    with pytest.raises(RateLimited) as caught:
        classify_response(status, PRIMARY_HEADERS, PRIMARY_BODY, what="run 5")
    error = caught.value
    assert type(error) is RateLimited and error.code == "rate_limited"
    assert error.reset_at == datetime.fromtimestamp(RESET, UTC)
    assert error.retry_after is None and error.status == status
    assert error.message.startswith("run 5: GitHub answered") and "API rate limit exceeded" in error.message


def test_unauthenticated_primary_limit_is_recognised_by_its_message_too() -> None:
    # Same limit, headers stripped by a proxy: the message alone says it.
    with pytest.raises(RateLimited) as caught:
        classify_response(403, {}, UNAUTHENTICATED_BODY)
    assert type(caught.value) is RateLimited and caught.value.reset_at is None


@pytest.mark.parametrize("status", [403, 429])
def test_secondary_limit_with_retry_after(status: int) -> None:
    with pytest.raises(SecondaryRateLimited) as caught:
        classify_response(status, {**SECONDARY_HEADERS, "Retry-After": "60"}, SECONDARY_BODY)
    assert caught.value.retry_after == 60.0 and caught.value.reset_at is None
    assert caught.value.code == "secondary_rate_limited"
    assert isinstance(caught.value, RateLimited)


def test_secondary_limit_without_retry_after_is_known_by_its_message() -> None:
    with pytest.raises(SecondaryRateLimited) as caught:
        classify_response(403, SECONDARY_HEADERS, json.dumps(SECONDARY_BODY))
    assert caught.value.retry_after is None and caught.value.reset_at is None


def test_secondary_limit_with_remaining_zero_carries_the_reset() -> None:
    headers = {**SECONDARY_HEADERS, "x-ratelimit-remaining": "0"}
    with pytest.raises(SecondaryRateLimited) as caught:
        classify_response(403, headers, SECONDARY_BODY)
    assert caught.value.reset_at == datetime.fromtimestamp(RESET, UTC)


def test_a_bare_429_is_a_limit_and_a_plain_403_is_a_permission_problem() -> None:
    with pytest.raises(SecondaryRateLimited):
        classify_response(429, {}, b"")
    body = {"message": "Resource not accessible by integration",
            "documentation_url": "https://docs.github.com/rest/actions/workflow-runs#re-run-a-job-from-a-workflow-run"}
    with pytest.raises(Forbidden) as caught:
        classify_response(403, SECONDARY_HEADERS, body)
    assert not isinstance(caught.value, RateLimited)
    assert "Resource not accessible by integration" in caught.value.message


@pytest.mark.parametrize("status,body,error", [
    (401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}, Unauthorized),
    (404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}, NotFound),
    (410, {"message": "Issues are disabled for this repo", "documentation_url": "https://docs.github.com/rest"}, Gone),
    (500, b"", Unavailable),
    (502, b"<html><body><h1>502 Bad Gateway</h1></body></html>", Unavailable),
    (503, {"message": "Service Unavailable"}, Unavailable),
    (422, {"message": "Validation Failed", "errors": [{"resource": "Reaction", "code": "invalid"}]}, GitHubError),
])
def test_status_to_typed_error(status: int, body: object, error: type[Exception]) -> None:
    raw = json.dumps(body).encode() if isinstance(body, dict) else body
    with pytest.raises(error) as caught:
        classify_response(status, {}, raw)
    assert type(caught.value) is error and caught.value.status == status


def test_a_gone_log_is_expired() -> None:
    with pytest.raises(LogExpired) as caught:
        classify_response(410, {}, b'{"message":"Gone"}', what="log of job 7", log=True)
    assert caught.value.code == "log_expired" and caught.value.hint


def test_a_log_not_found_is_missing_not_expired() -> None:
    # 404: no log (yet) -- a lost runner, or one not archived yet; asked again next time.
    with pytest.raises(NotFound) as caught:
        classify_response(404, {}, b'{"message":"Not Found"}', what="log of job 7", log=True)
    assert type(caught.value) is NotFound and caught.value.hint


def test_truncated_json_is_a_transient_fault_not_a_crash() -> None:
    from ci_triage.core.github.protocol import decode_json

    assert decode_json("runs", b'{"a": 1}') == {"a": 1}
    with pytest.raises(Unavailable, match="could not be decoded"):
        decode_json("runs", b'{"workflow_runs": [{"id": 1')


def test_a_message_echoing_the_token_is_scrubbed() -> None:
    token = "v1.0123456789abcdef0123456789abcdef01234567"
    with pytest.raises(GitHubError) as caught:
        classify_response(422, {}, {"message": f"token {token} is not valid here"}, secrets=[token])
    assert token not in caught.value.message and "***" in caught.value.message


# --- retry_delay --------------------------------------------------------------------------------

def test_primary_limit_waits_until_the_reset_plus_a_second() -> None:
    error = RateLimited("limited", reset_at=NOW + timedelta(seconds=2))
    assert retry_delay(0, error, NOW, FixedRandom(0.5)) == pytest.approx(3.0)


def test_a_reset_already_past_waits_only_for_the_skew() -> None:
    error = RateLimited("limited", reset_at=NOW - timedelta(seconds=30))
    assert retry_delay(0, error, NOW, FixedRandom(0.5)) == pytest.approx(1.0)


def test_a_reset_far_away_is_not_waited_for() -> None:
    error = RateLimited("limited", reset_at=NOW + timedelta(minutes=30))
    assert retry_delay(0, error, NOW, FixedRandom(0.5)) is None
    assert retry_delay(0, error, NOW, FixedRandom(0.5), max_wait_s=3600) == pytest.approx(1801.0)


def test_primary_limit_without_a_reset_waits_a_minute_then_longer() -> None:
    # GitHub: without retry-after or a reset time, "wait for at least one minute", then exponentially.
    assert retry_delay(0, RateLimited("limited"), NOW, FixedRandom(0.5)) == 60
    assert retry_delay(1, RateLimited("limited"), NOW, FixedRandom(0.5)) == 120


def test_retry_after_is_honoured_exactly() -> None:
    error = SecondaryRateLimited("slow down", retry_after=17)
    assert retry_delay(0, error, NOW, FixedRandom(0.9)) == 17


def test_secondary_limit_without_a_time_waits_a_minute_then_longer() -> None:
    error = SecondaryRateLimited("slow down")
    waits = [retry_delay(n, error, NOW, FixedRandom(0.5)) for n in range(3)]
    assert waits == [60.0, 120.0, 240.0]
    assert retry_delay(3, error, NOW, FixedRandom(0.5)) is None  # 480 s > max_wait_s


def test_retry_after_wins_over_the_minute_at_any_attempt() -> None:
    error = SecondaryRateLimited("slow down", retry_after=5)
    assert retry_delay(0, error, NOW, FixedRandom(0.5)) == 5
    assert retry_delay(2, error, NOW, FixedRandom(0.5)) == 5


@pytest.mark.parametrize("error", [Unavailable("502", status=502), NoResponse("timed out")])
def test_server_errors_back_off_exponentially_with_full_jitter(error: GitHubError) -> None:
    highest = [retry_delay(n, error, NOW, FixedRandom(0.999999)) for n in range(4)]
    assert highest == pytest.approx([1.0, 2.0, 4.0, 8.0], rel=1e-4)
    assert retry_delay(2, error, NOW, FixedRandom(0.0)) == 0.0
    rng = random.Random(3)
    sampled = [retry_delay(3, error, NOW, rng) for _ in range(200)]
    assert all(0 <= s <= 8 for s in sampled) and len(set(sampled)) > 150  # jittered, not fixed


def test_backoff_is_capped_and_attempts_are_limited() -> None:
    error = Unavailable("503", status=503)
    assert retry_delay(3, error, NOW, FixedRandom(0.999999), max_backoff_s=5, max_attempts=10) == pytest.approx(5, rel=1e-4)
    assert retry_delay(4, error, NOW, FixedRandom(0.5)) is None  # fifth attempt failed: give up


@pytest.mark.parametrize("error", [NotFound("x", status=404), Forbidden("x", status=403), Unauthorized("x"),
                                   LogExpired("x"), GitHubError("x", status=422), ValueError("x")])
def test_errors_a_retry_cannot_fix_are_not_retried(error: Exception) -> None:
    assert retry_delay(0, error, NOW, FixedRandom(0.5)) is None


# --- is_safe_to_retry ---------------------------------------------------------------------------

@pytest.mark.parametrize("error,get,post", [
    (Unavailable("connect", status=None), True, True),      # never reached GitHub
    (Unavailable("503", status=503), True, True),           # GitHub refused before acting
    (RateLimited("limit", status=403), True, True),
    (SecondaryRateLimited("limit", status=429), True, True),
    (NoResponse("read timeout"), True, False),             # may have been acted on
    (Unavailable("502", status=502), True, False),
    (Unavailable("504", status=504), True, False),
    (Unavailable("500", status=500), True, False),
    (NotFound("nope", status=404), False, False),
    (Forbidden("no", status=403), False, False),
])
def test_only_writes_that_cannot_have_happened_are_repeated(error: Exception, get: bool, post: bool) -> None:
    assert is_safe_to_retry("GET", error) is get
    assert is_safe_to_retry("POST", error) is post
    assert is_safe_to_retry("PATCH", error) is post


def test_idempotent_writes_are_repeated_after_a_timeout() -> None:
    assert is_safe_to_retry("PATCH", NoResponse("timeout"), idempotent=True)
    assert is_safe_to_retry("PUT", NoResponse("timeout"))
    assert not is_safe_to_retry("POST", NotFound("gone"), idempotent=True)


def test_transport_failures_name_whether_the_request_may_have_arrived() -> None:
    sent = no_response("rerun of run 5", TimeoutError("timed out"), sent=True)
    assert isinstance(sent, NoResponse) and "no answer" in sent.message
    unsent = no_response("rerun of run 5", ConnectionRefusedError("refused"), sent=False)
    assert type(unsent) is Unavailable and unsent.status is None


# --- Link, origin, signatures -------------------------------------------------------------------

def test_parse_link_reads_githubs_header() -> None:
    header = ('<https://api.github.com/repositories/1300192/issues/1/comments?per_page=100&page=2>; rel="next", '
              '<https://api.github.com/repositories/1300192/issues/1/comments?per_page=100&page=5>; rel="last"')
    links = parse_link(header)
    assert links == {"next": "https://api.github.com/repositories/1300192/issues/1/comments?per_page=100&page=2",
                     "last": "https://api.github.com/repositories/1300192/issues/1/comments?per_page=100&page=5"}
    assert parse_link(None) == {} and parse_link("") == {}


def test_same_origin_keeps_the_token_on_the_api_host() -> None:
    assert same_origin("https://api.github.com/repositories/1/x?page=2", "https://api.github.com")
    assert same_origin("http://127.0.0.1:8080/x", "http://127.0.0.1:8080/api/v3")
    assert not same_origin("https://api.github.com.evil.example/x", "https://api.github.com")
    assert not same_origin("/relative", "https://api.github.com")


# The example of GitHub's "Validating webhook deliveries": secret "It's a Secret to Everybody",
# payload "Hello, World!".
DOCS_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_signature_of_githubs_documented_example() -> None:
    assert verify_signature("It's a Secret to Everybody", b"Hello, World!", DOCS_SIGNATURE)


@pytest.mark.parametrize("secret,body,header", [
    ("It's a Secret to Everybody", b"Hello, World?", DOCS_SIGNATURE),
    ("another secret", b"Hello, World!", DOCS_SIGNATURE),
    ("It's a Secret to Everybody", b"Hello, World!", DOCS_SIGNATURE.replace("sha256=", "sha1=")),
    ("It's a Secret to Everybody", b"Hello, World!", DOCS_SIGNATURE[:-1]),
    ("It's a Secret to Everybody", b"Hello, World!", None),
    ("", b"Hello, World!", DOCS_SIGNATURE),
])
def test_a_wrong_signature_is_rejected(secret: str, body: bytes, header: str | None) -> None:
    assert verify_signature(secret, body, header) is False


def test_signature_takes_bytes_secrets() -> None:
    body = b'{"action":"created"}'
    header = "sha256=" + hmac.new(b"k3y", body, hashlib.sha256).hexdigest()
    assert verify_signature(b"k3y", body, header) and verify_signature("k3y", body, header)


# --- redact -------------------------------------------------------------------------------------

def test_redact_removes_named_secrets_and_token_shapes() -> None:
    text = ("calling with Authorization: Bearer plain-secret-123 and token ghs_16C7e42F292c6912E7710c838347Ae178B4a "
            "or github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz at https://x-access-token:s3cr3t@github.com/o/r")
    scrubbed = redact(text, ["plain-secret-123"])
    for secret in ("plain-secret-123", "ghs_16C7e42F292c6912E7710c838347Ae178B4a", "github_pat_11ABCDEFG",
                   "s3cr3t"):
        assert secret not in scrubbed
    assert "https://x-access-token:***@github.com/o/r" in scrubbed


def test_redact_leaves_ordinary_text_alone() -> None:
    text = "run 15003400145 of speco-demo/verl-speco: GitHub answered 502 (Server Error)"
    assert redact(text, [None, ""]) == text
