from datetime import UTC, datetime

from ci_triage.core.logs.logparse import parse_log
from ci_triage.model import Step


def _step(number: int, name: str, start: str, end: str) -> Step:
    day = "2024-01-01T"
    return Step(number, name, "completed", "success",
                datetime.fromisoformat(day + start).replace(tzinfo=UTC),
                datetime.fromisoformat(day + end).replace(tzinfo=UTC))


def test_prefix_bom_crlf_and_ansi_are_removed_and_line_numbers_kept():
    raw = ("\ufeff2024-01-01T00:00:00.0000000Z first\r\n"
           "2024-01-01T00:00:01.0000000Z \x1b[36;1mcoloured\x1b[0m\r\n"
           "continuation without a stamp\n")
    lines = list(parse_log(raw))
    assert [(l.number, l.text) for l in lines] == [(1, "first"), (2, "coloured"), (3, "continuation without a stamp")]
    assert lines[0].timestamp == "2024-01-01T00:00:00.0000000Z"
    # A continuation line keeps the timestamp of the line it continues.
    assert lines[2].timestamp == "2024-01-01T00:00:01.0000000Z"


def test_terminal_hyperlinks_and_other_escapes_are_removed_but_not_an_unended_one():
    # OSC 8 hyperlinks (ended by ST or BEL), a character-set designation and keypad mode around the text;
    # an OSC never ended is left as text (its ESC is for the renderer to neutralise), and no line is lost.
    raw = ("\x1b]8;;file:///w/web/app.js\x1b\\web/app.js\x1b]8;;\x1b\\ format\n"
           "\x1b(B\x1b=see \x1b]8;;https://example.org\x07docs\x1b]8;;\x07\n"
           "\x1b]0;title never ended\n"
           "last\n")
    lines = list(parse_log(raw))
    assert [(l.number, l.text) for l in lines] == [(1, "web/app.js format"), (2, "see docs"),
                                                   (3, "\x1b]0;title never ended"), (4, "last")]


def test_other_ci_systems_framing_is_cut_off_but_sets_no_timestamp():
    # Bamboo's build log (https://github.com/spring-projects/spring-boot/issues/8920) and the
    # `[ISO time] ` prefix of Buildkite's and Jenkins timestamper's views
    raw = ("build\t18-Apr-2017 03:28:13\torg.example.AppTest > testAdd FAILED\n"
           "error\t18-Apr-2017 03:28:56\t128 tests completed, 1 failed\n"
           "[2021-08-20T16:00:29.351Z] > Task :app:test FAILED\n"
           "building\tnot a Bamboo prefix\n")
    lines = list(parse_log(raw))
    assert [l.text for l in lines] == ["org.example.AppTest > testAdd FAILED", "128 tests completed, 1 failed",
                                       "> Task :app:test FAILED", "building\tnot a Bamboo prefix"]
    assert all(l.timestamp is None for l in lines)


def test_buildkite_apc_timestamps_teamcity_prefixes_and_gitlab_stream_metadata_are_cut_off():
    # The Buildkite agent's raw log starts each line with an APC timestamp (ESC _bk;t=ms BEL); TeamCity's downloaded
    # build log with `[time]flag:\t [Step n/m] `; GitLab Runner's FF_TIMESTAMPS log with a timestamp, then the
    # stream's metadata (stream id, O/E, a `+` for a continued line), which only follows a timestamp.
    raw = ("\x1b_bk;t=1733480000123\x07FAILED tests/a.py::t - assert 1 == 2\n"
           "[10:00:01]W:\t [Step 1/2] error[E0308]: mismatched types\n"
           "[10:00:02]E:\t [Step 1/2] Process exited with code 1\n"
           "2024-12-06T10:00:00.123456Z 00O FAILED tests/b.py::t\n"
           "2024-12-06T10:00:00.123457Z 01E+--- FAIL: TestX (0.00s)\n"
           "00O not after a timestamp\n"
           "[10:00:03] plain bracketed time\n")
    lines = list(parse_log(raw))
    assert [l.text for l in lines] == ["FAILED tests/a.py::t - assert 1 == 2", "error[E0308]: mismatched types",
                                       "Process exited with code 1", "FAILED tests/b.py::t", "--- FAIL: TestX (0.00s)",
                                       "00O not after a timestamp", "[10:00:03] plain bracketed time"]
    assert lines[3].timestamp == "2024-12-06T10:00:00.123456Z"


def test_zuul_taskcluster_tkn_cloud_build_and_kubectl_framing_is_cut_off():
    # Zuul's job-output.txt (zuul_stream: `{now} | {msg}`, a node's line `{host} | {line} `, `a -> b` for a delegated
    # host; str(datetime) without a fraction when the microseconds are 0 is not cut: an app's own log line has that shape), Taskcluster's generic-worker and run-task
    # prefixes, `tkn ... logs`' `[task : step] `, Cloud Build's `Step #N - "id": ` and `kubectl logs --prefix`' `[pod/p/c] `:
    # the tool's own text is what rules see.
    raw = ("2024-01-02 03:04:05.678901 | ubuntu-noble | ImportError while importing test module '/src/t/test_a.py'. \n"
           "2024-01-02 03:04:06.000002 | RUN END RESULT_TIMED_OUT: [untrusted : opendev.org/acme/w/playbooks/unit.yaml@master]\n"
           "2024-01-02 03:04:07.000001 | controller -> localhost | bad.c:2:26: error: 'x' undeclared\n"
           "[task 2024-01-02T03:04:05.678Z] FAILED tests/test_a.py::test_b - assert 1 == 2\n"
           "[taskcluster 2024-01-02T03:04:05.678Z] === Task Finished ===\n"
           "[taskcluster:warn 2024-01-02T03:04:05.678Z] Memory usage above 90%\n"
           "[unit-tests : pytest] E   ModuleNotFoundError: No module named 'w'\n"
           "2024-01-02 03:04:05.678 | ERROR    | app:main:12 - loguru keeps its frame\n"
           "[ERROR] [task] not a Taskcluster stamp\n"
           "2024-01-02 03:04:05 | ERROR | a logger's level stays\n"
           "2024-01-02 03:04:05 | poller | Timed out!\n"
           'Step #1 - "unit-tests": FAILED tests/test_a.py::test_b - assert 1 == 2\n'
           "Step #0: error[E0308]: mismatched types\n"
           "[pod/widgets-e2e-7c9f/app] --- FAIL: TestX (0.00s)\n")
    assert [l.text for l in parse_log(raw)] == [
        "ImportError while importing test module '/src/t/test_a.py'.",
        "RUN END RESULT_TIMED_OUT: [untrusted : opendev.org/acme/w/playbooks/unit.yaml@master]",
        "bad.c:2:26: error: 'x' undeclared", "FAILED tests/test_a.py::test_b - assert 1 == 2", "=== Task Finished ===",
        "Memory usage above 90%", "E   ModuleNotFoundError: No module named 'w'",
        "2024-01-02 03:04:05.678 | ERROR    | app:main:12 - loguru keeps its frame", "[ERROR] [task] not a Taskcluster stamp", "2024-01-02 03:04:05 | ERROR | a logger's level stays",
        "2024-01-02 03:04:05 | poller | Timed out!",
        "FAILED tests/test_a.py::test_b - assert 1 == 2", "error[E0308]: mismatched types", "--- FAIL: TestX (0.00s)"]


def test_lines_are_mapped_to_steps_by_the_jobs_api_timings():
    steps = [_step(1, "Set up job", "00:00:00", "00:00:02"), _step(2, "Run tests", "00:00:03", "00:01:00"),
             _step(3, "Complete job", "00:01:01", "00:01:01")]
    raw = ("2024-01-01T00:00:00.5000000Z Current runner version: '2.321.0'\n"
           "2024-01-01T00:00:03.1000000Z ##[group]Run pytest\n"
           "2024-01-01T00:00:59.9000000Z FAILED tests/test_a.py::test_x\n"
           "2024-01-01T00:01:01.0000000Z Cleaning up orphan processes\n")
    assert [l.step for l in parse_log(raw, steps)] == ["Set up job", "Run tests", "Run tests", "Complete job"]


def test_without_step_timings_the_group_header_names_the_step():
    raw = ("2024-01-01T00:00:00.0000000Z ##[group]Run bash run.sh\n"
           "2024-01-01T00:00:01.0000000Z boom\n")
    assert [l.step for l in parse_log(raw)] == ["Run bash run.sh", "Run bash run.sh"]


def test_empty_and_unterminated_logs():
    assert list(parse_log("")) == []
    assert [l.text for l in parse_log("no newline at the end")] == ["no newline at the end"]
