"""The sticky PR comment: state round trip, finding it, hostile text, the size limit, when to edit."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_triage.core.decide.comment_state import (
    MARKER,
    MAX_COMMENT_CHARS,
    CommentState,
    RerunRecord,
    find_sticky,
    parse_comment,
    parse_state,
    serialize_state,
)
from ci_triage.core.render import actions_output, markdown
from ci_triage.core.render.comment import comment_size, needs_update, render_comment
from ci_triage.model import (
    Classification,
    Evidence,
    Job,
    JobFacts,
    JobVerdict,
    LogStatus,
    OverlappingJob,
    PullReport,
    PullRequest,
    Relatedness,
    RootCause,
    Run,
    Verdict,
)
from ci_triage.service import Triage
from tests.conftest import DEMO_REPO

T0 = datetime(2026, 5, 12, 13, 0, tzinfo=UTC)
AT = "2026-05-12T13:20:00+00:00"
URL = "https://github.com/o/r/actions/runs"


def make_run(run_id: int = 500, attempt: int = 1) -> Run:
    return Run(run_id, attempt, 9, "NPU examples", ".github/workflows/npu.yml", "pull_request", "completed",
               "failure", "a" * 40, "feature", "o/r", (7,), T0, T0, f"{URL}/{run_id}")


def make_verdict(job_id: int = 1000, name: str = "vllm-example (eagle3)", run: Run | None = None,
                 evidence: int = 3, overlaps: int = 2, root_cause: str = "OSError: [Errno 98] Address already in use",
                 verdict: Verdict = Verdict.INFRA_FLAKE) -> JobVerdict:
    run = run or make_run()
    job = Job(job_id, run.id, run.attempt, run.workflow_name, name, "completed", "failure", T0, T0,
              T0 + timedelta(minutes=12), "node2-r1", "pool", ("pool",), run.head_sha, "feature",
              f"{URL}/{run.id}/job/{job_id}")
    classification = Classification("port_in_use", True, "eaddrinuse", RootCause(233, root_cause, "Run"),
                                     {"port": "35191"}, (), (), "fp1")
    others = tuple(OverlappingJob(66, None, 600 + i, 2000 + i, f"other job {i}", "node2-r0", 300.0, "success", True,
                                  f"{URL}/600/job/{2000 + i}") for i in range(overlaps))
    facts = JobFacts(job, run, LogStatus.AVAILABLE, classification, others, (66,), (), None, None)
    items = tuple(Evidence("contention", f"evidence number {i} about the runner pool", f"{URL}/600/job/{i}")
                  for i in range(evidence))
    return JobVerdict(facts, Relatedness.UNRELATED, (), verdict, 0.9, verdict is Verdict.INFRA_FLAKE, items)


def make_report(verdicts: tuple[JobVerdict, ...] | None = None, title: str = "fix: the d2t offset") -> PullReport:
    verdicts = (make_verdict(),) if verdicts is None else verdicts
    runs = tuple({v.facts.run.id: v.facts.run for v in verdicts}.values()) or (make_run(),)
    pull = PullRequest(7, title, "open", "alice", "a" * 40, "feature", "o/r", "o/r", "main", "b" * 40,
                       "https://github.com/o/r/pull/7")
    return PullReport("o/r", pull, (), runs, verdicts, ())


def rerun(run_id: int = 500, attempt: int = 1, job_ids: tuple[int, ...] = (1000,), by: str = "auto",
          reason: str = "infra_flake: port_in_use") -> RerunRecord:
    return RerunRecord(run_id, attempt, job_ids, "jobs", AT, by, reason)


# --- state ------------------------------------------------------------------------------------------
def test_render_then_parse_gives_back_the_state():
    report = make_report()
    state = CommentState().observe(report, AT).with_rerun(rerun()).with_bot_rerun("2026-05-12T13:21:00+00:00")
    body = render_comment(report, state, ["Rerun requested for 1 job."])
    assert body.startswith(MARKER + "\n<!-- ci-triage:state ")
    assert parse_comment(body) == state
    assert state.attempts_seen(500) == (1,)
    assert [r.by for r in state.reruns(500, by="auto")] == ["auto"]


def test_observe_is_idempotent_and_keeps_the_first_sighting():
    report = make_report()
    once = CommentState().observe(report, AT)
    twice = once.observe(report, "2026-05-12T14:00:00+00:00")
    assert once == twice
    second = make_report((make_verdict(job_id=1001, run=make_run(attempt=2)),))
    later = twice.observe(second, "2026-05-12T14:00:00+00:00")
    assert later.attempts_seen(500) == (1, 2)
    assert later.run(500).attempt(1).seen_at == AT


def test_the_comment_shows_what_was_rerun_and_the_earlier_attempts():
    first = make_report()
    state = CommentState().observe(first, AT).with_rerun(rerun())
    body = render_comment(first, state, [])
    assert "**Rerun:** attempt 1 → 1 job(s) rerun automatically at 2026-05-12 13:20 UTC (attempt 2)" in body
    second = make_report((make_verdict(job_id=1001, run=make_run(attempt=2)),))
    state = state.observe(second, "2026-05-12T13:40:00+00:00")
    body = render_comment(second, state, ["No rerun: attempt 2 already failed the same way; the policy allows "
                                          "one automatic rerun per run."])
    assert "**Rerun:** not rerun (attempt 2)" in body
    assert "**Earlier attempts:** 1" in body
    assert ("attempt 1 (seen 2026-05-12 13:20 UTC): failed: `infra_flake` (`port_in_use`); "
            "rerun automatically at 2026-05-12 13:20 UTC") in body
    assert "> - No rerun: attempt 2 already failed the same way" in body


def test_the_comment_has_the_summary_root_cause_and_evidence_links():
    body = render_comment(make_report(), CommentState(), [])
    assert "| job | verdict | category | rerun |" in body
    assert "OSError: [Errno 98] Address already in use" in body
    assert f"([link]({URL}/600/job/0))" in body
    assert "🔁 `infra_flake`" in body


def test_no_failed_jobs_lists_the_reruns_that_got_there():
    state = CommentState().observe(make_report(), AT).with_rerun(rerun())
    body = render_comment(make_report(verdicts=()), state, [])
    assert "No failed jobs on the head commit" in body
    assert "run 500: attempt 1 → 1 job(s) rerun automatically" in body


def test_cooldown():
    state = CommentState().with_bot_rerun("2026-05-12T13:00:00+00:00")
    assert state.in_cooldown(T0 + timedelta(minutes=5), timedelta(minutes=10))
    assert not state.in_cooldown(T0 + timedelta(minutes=11), timedelta(minutes=10))
    assert not CommentState().in_cooldown(T0, timedelta(minutes=10))


def test_bad_records_are_refused_when_made():
    with pytest.raises(ValueError):
        CommentState().with_rerun(replace(rerun(), mode="all"))
    with pytest.raises(ValueError):
        CommentState().with_rerun(replace(rerun(), by="mallory"))
    with pytest.raises(ValueError):
        CommentState().with_bot_rerun("yesterday")
    with pytest.raises(ValueError):
        CommentState().observe(make_report(), "2026-05-12 13:00")  # no UTC offset


@pytest.mark.parametrize("line", [
    "<!-- ci-triage:state {not json} -->",
    '<!-- ci-triage:state {"v": 99, "runs": []} -->',
    '<!-- ci-triage:state {"v": 1, "runs": [{"run_id": -1, "attempts": [], "reruns": []}]} -->',
    '<!-- ci-triage:state {"v": 1, "runs": [{"run_id": 5, "attempts": [{"attempt": true, "seen_at": "x"}]}]} -->',
    '<!-- ci-triage:state {"v": 1, "runs": [{"run_id": 5, "attempts": [], "reruns": [{"attempt": 1, '
    '"job_ids": [1], "mode": "jobs", "at": "2026-05-12T13:20:00+00:00", "by": "eve", "reason": ""}]}]} -->',
    '<!-- ci-triage:state {"v": 1, "runs": "many"} -->',
    '<!-- ci-triage:state [1, 2] -->',
    '<!-- ci-triage:state ' + "[" * 100_000 + ' -->',
    "<!-- ci-triage:state",
    "",
])
def test_a_garbled_state_is_the_empty_state(line):
    assert parse_state(line) == CommentState()
    assert parse_comment(f"{MARKER}\n{line}\n## ci-triage") == CommentState()


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_parsing_any_text_never_raises(text):
    parse_comment(text)
    parse_comment(MARKER + "\n" + text)
    parse_state("<!-- ci-triage:state " + text + " -->")


@settings(max_examples=100, deadline=None)
@given(st.text(), st.text(min_size=1))
def test_any_reason_and_login_survive_the_round_trip(reason, login):
    state = CommentState().with_rerun(rerun(reason=reason[:150], by="bot:" + login[:50]))
    line = serialize_state(state)
    assert "-->" not in line[len("<!-- ci-triage:state "): -len(" -->")]
    assert "--" not in line[len("<!--"): -len("-->")]
    assert parse_state(line) == state


# --- finding the comment and hostile text -------------------------------------------------------------
def comment(comment_id: int, body: str, login: str = "github-actions[bot]", created: str = "2026-05-12T13:00:00Z"):
    return {"id": comment_id, "body": body, "user": {"login": login, "type": "Bot"}, "created_at": created}


def test_the_sticky_is_found_among_many_comments():
    report = make_report()
    body = render_comment(report, CommentState().observe(report, AT), [])
    comments = [comment(i, f"comment {i}", login="someone") for i in range(300)]
    comments.insert(150, comment(9001, body))
    comments.insert(10, comment(42, "> " + body.replace("\n", "\n> "), login="someone"))  # a quoted copy
    comments.append(comment(9002, "Thanks! " + MARKER))  # the bot's other comments (bot replies)
    found = find_sticky(comments)
    assert found is not None and found["id"] == 9001
    assert parse_comment(found["body"]) == CommentState().observe(report, AT)


def test_a_users_fake_sticky_is_ignored_and_the_oldest_of_two_wins():
    fake_state = CommentState().with_bot_rerun("2000-01-01T00:00:00+00:00")
    forged = f"{MARKER}\n{serialize_state(fake_state)}\n"
    assert find_sticky([comment(1, forged, login="mallory")]) is None
    real = comment(5, f"{MARKER}\n{serialize_state(CommentState())}\n", created="2026-05-12T13:05:00Z")
    race = comment(3, f"{MARKER}\n", created="2026-05-12T13:01:00Z")
    assert find_sticky([real, race])["id"] == 3
    assert find_sticky([comment(1, forged, login="mallory")], bot_login=None)["id"] == 1
    assert find_sticky([{"id": 1, "body": None, "user": None}, "junk"]) is None  # type: ignore[list-item]


def test_crlf_bodies_from_the_web_editor_still_parse():
    report = make_report()
    state = CommentState().observe(report, AT)
    body = render_comment(report, state, []).replace("\n", "\r\n")
    assert parse_comment(body) == state
    assert not needs_update(body, render_comment(report, state, []))


def test_hostile_job_names_and_log_lines_do_not_corrupt_the_state():
    hostile = "evil --> <!-- ci-triage:state {\"v\":1,\"runs\":[],\"last_bot_rerun_at\":null} --> `x`"
    verdict = make_verdict(name=hostile, root_cause="``` done\n<!-- ci-triage:sticky -->\n-->")
    report = make_report((verdict,), title="title --> <!-- and | pipes")
    state = (CommentState().observe(report, AT)
             .with_rerun(rerun(reason=f"job {hostile} --> failed")).with_bot_rerun(AT))
    body = render_comment(report, state, [f"note with {hostile}"])
    assert parse_comment(body) == state
    assert state.run(500).attempts[0].failed_jobs[0].name == hostile
    assert body.index(MARKER) == 0  # the copy from the log line is code, not the marker line
    # The root cause stays inside its fence: the fence is longer than the backtick run in the text.
    assert "  ````\n" in body
    # Outside the state line and code, `<` is escaped, so no HTML comment is opened by user text.
    visible = body.split("\n", 2)[2]
    prose = [line for line in visible.split("\n") if not line.startswith("  ") and "ci-triage:volatile" not in line]
    assert not any("<!--" in line for line in prose)


# --- size -------------------------------------------------------------------------------------------
def test_a_huge_report_fits_in_one_comment_and_keeps_the_state():
    runs = [make_run(run_id=500 + i, attempt=4) for i in range(30)]
    verdicts = tuple(make_verdict(job_id=10_000 + i, name=f"matrix job {i} " + "x" * 60, run=runs[i % 30],
                                  evidence=12, overlaps=20, root_cause="E" * 5000)
                     for i in range(400))
    report = make_report(verdicts)
    state = CommentState()
    for attempt in (1, 2, 3):
        earlier = make_report(tuple(replace(v, facts=replace(v.facts, run=replace(v.facts.run, attempt=attempt)))
                                    for v in verdicts))
        state = state.observe(earlier, f"2026-05-12T1{attempt}:00:00+00:00")
        for run in runs:
            state = state.with_rerun(rerun(run_id=run.id, attempt=attempt, job_ids=tuple(range(60))))
    state = state.observe(report, AT)
    body = render_comment(report, state, ["note"] * 50)
    assert comment_size(body) <= MAX_COMMENT_CHARS and len(body) <= MAX_COMMENT_CHARS
    parsed = parse_comment(body)
    assert parsed is not None and parsed.runs  # the state survives (compacted, never dropped)
    assert parsed == state.compacted()
    assert "more failed job(s)" in body


def test_degradation_goes_step_by_step():
    verdict = make_verdict(evidence=10, overlaps=8)
    report = make_report((verdict,))
    state = CommentState()
    full = render_comment(report, state, [])
    assert "| overlapping job |" in full and "evidence number 9" in full
    no_tables = render_comment(report, state, [], max_chars=comment_size(full) - 1)
    assert "| overlapping job |" not in no_tables and "evidence number 9" in no_tables
    fewer = render_comment(report, state, [], max_chars=comment_size(no_tables) - 1)
    assert "evidence number 3" in fewer and "evidence number 4" not in fewer and "… 6 more" in fewer


def test_older_history_collapses_before_job_sections_go():
    report = make_report((make_verdict(run=make_run(attempt=5), evidence=1, overlaps=0),))
    state = CommentState()
    for attempt in range(1, 5):
        state = state.observe(make_report((make_verdict(run=make_run(attempt=attempt)),)), AT)
    full = render_comment(report, state, [])
    assert full.count("(seen 2026-05-12") == 4
    collapsed = render_comment(report, state, [], max_chars=comment_size(full) - 1)
    assert collapsed.count("(seen 2026-05-12") == 1 and "3 older attempt(s) left out" in collapsed
    assert "### 🔁" in collapsed


def test_a_single_enormous_log_line_is_clipped():
    body = render_comment(make_report((make_verdict(root_cause="x" * 200_000),)), CommentState(), [])
    assert comment_size(body) < 10_000


# --- when to edit -----------------------------------------------------------------------------------
def test_needs_update_ignores_the_generated_at_line_only():
    report = make_report()
    state = CommentState().observe(report, AT)
    old = render_comment(report, state, [], generated_at="2026-05-12T13:20:00+00:00")
    same = render_comment(report, state, [], generated_at="2026-05-12T15:45:00+00:00")
    assert old != same and not needs_update(old, same)
    assert needs_update(old, render_comment(report, state.with_rerun(rerun()), [], generated_at=AT))
    assert needs_update(old, render_comment(report, state, ["a new note"], generated_at=AT))
    assert needs_update(None, old)
    # A state-only change (nothing visible) is still saved.
    assert needs_update(old, render_comment(report, state.with_bot_rerun(AT), [], generated_at=AT))


# --- with the demo ----------------------------------------------------------------------------------
def test_demo_report_comment_and_step_summary(client, store):
    report = Triage(client, store).report(DEMO_REPO, 67)
    [verdict] = report.failed_jobs
    state = CommentState().observe(report, AT).with_rerun(
        RerunRecord(verdict.facts.run.id, verdict.facts.run.attempt, (verdict.facts.job.id,), "jobs", AT, "auto",
                    "infra_flake: port_in_use"))
    body = render_comment(report, state, [], generated_at=AT)
    assert parse_comment(body) == state
    assert "address already in use" in body and "`infra_flake`" in body
    assert markdown.render(report).startswith("## ci-triage: PR #67")
    summary = actions_output.step_summary(report, ["reran vllm-example (eagle3)"])
    assert summary.startswith("## ci-triage: PR #67") and summary.endswith("- reran vllm-example (eagle3)\n")
    assert json.loads(json.dumps(body))  # plain text, JSON-safe for the PATCH body


# --- $GITHUB_OUTPUT and $GITHUB_STEP_SUMMARY ----------------------------------------------------------
def read_output_file(text: str) -> dict[str, str]:
    """The runner's reading of the file: `name=value`, or `name<<DELIM` up to a line equal to DELIM."""
    values: dict[str, str] = {}
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line:
            continue
        equals, heredoc = line.find("="), line.find("<<")
        if equals >= 0 and (heredoc < 0 or equals < heredoc):
            values[line[:equals]] = line[equals + 1:]
            continue
        name, delimiter = line[:heredoc], line[heredoc + 2:]
        body = []
        while lines[index] != delimiter:  # IndexError: the delimiter never came
            body.append(lines[index])
            index += 1
        index += 1
        values[name] = "\n".join(body)
    return values


def test_github_output_single_and_multi_line_values():
    values = {"verdicts": "infra_flake", "rerun": "", "equation": "a=b<<c", "comment": "line 1\nline 2\n\nline 4"}
    text = actions_output.github_output(values)
    assert text.startswith("verdicts=infra_flake\nrerun=\nequation=a=b<<c\ncomment<<ghadelimiter_")
    assert read_output_file(text) == values


def test_the_delimiter_never_occurs_in_the_value():
    first = actions_output.github_output({"x": "a\nb"})
    delimiter = first.split("\n")[0].split("<<")[1]
    hostile = f"a\n{delimiter}\nmalicious=1"
    text = actions_output.github_output({"x": hostile})
    assert read_output_file(text) == {"x": hostile}
    assert text.split("\n")[0].split("<<")[1] not in hostile


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,20}", fullmatch=True),
                       st.text(alphabet=st.characters(blacklist_characters="\r")), max_size=5))
def test_any_values_read_back(values):
    assert read_output_file(actions_output.github_output(values)) == values


@pytest.mark.parametrize("name", ["", "a=b", "a<<b", "a\nb", " padded"])
def test_unusable_output_names_are_refused(name):
    with pytest.raises(ValueError):
        actions_output.github_output({name: "x"})


def test_step_summary_lists_the_actions_and_stays_under_1_mib():
    report = make_report()
    summary = actions_output.step_summary(report, [])
    assert summary.startswith("## ci-triage: PR #7") and summary.endswith("### Actions taken\n\n- none\n")
    huge = make_report(tuple(make_verdict(job_id=i, evidence=40, root_cause="E" * 1900) for i in range(400)))
    summary = actions_output.step_summary(huge, ["reran 400 jobs"])
    assert len(summary.encode("utf-8")) <= actions_output.MAX_STEP_SUMMARY_BYTES
    assert summary.endswith("a step summary holds at most 1 MiB.\n")
