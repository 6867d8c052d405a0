"""Issue 12 items 1 and 3: a credential or an escape sequence a log printed never leaves the process.

Every secret kind is checked in every output: the terminal, Markdown and JSON reports, the PR comment,
the step summary, `$GITHUB_OUTPUT`, and error lines. The token-shaped values are assembled from parts
so that this file itself does not look like a leak to a scanner.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from dataclasses import replace

import pytest
import typer
from rich.console import Console

from ci_triage.act import Outcome
from ci_triage.cli.common import OutputFormat, emit_outcome, fail
from ci_triage.core.decide.comment_state import CommentState, parse_comment
from ci_triage.core.render import actions_output, markdown, terminal
from ci_triage.core.render import json as render_json
from ci_triage.core.render.comment import render_comment
from ci_triage.model import Evidence
from tests.test_comment import make_report, make_verdict

B64 = "Zm9vYmFyYmF6cXV4" * 3  # 48 base64 characters
SECRETS = {  # kind: (what the log line says, the part that must never be shown)
    "github_token": ("ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8", None),
    "github_actions_token": ("ghs_" + "Q9w8E7r6T5" * 3 + "Y4u3I2", None),
    "fine_grained_pat": ("github_pat_" + "11ABCDEFG0" * 2 + "_" + "x1Y2z3W4v5" * 5, None),
    "aws_access_key_id": ("AKIA" + "IOSFODNN7Q2X4Z9W", None),
    "aws_secret_key": ("AWS_SECRET_ACCESS_KEY=" + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "QX7Zt3Kp9L",
                       "wJalrXUtnFEMI/K7MDENG/bPxRfiCYQX7Zt3Kp9L"),
    "bearer_jwt": ("Authorization: Bearer " + "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwiYWRtaW4iOnRydWV9"
                   + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    "private_key_block": ("-----BEGIN RSA " + "PRIVATE KEY----- MIIEowIBAAKCAQEA" + B64 + " -----END RSA PRIVATE KEY-----",
                          "MIIEowIBAAKCAQEA" + B64),
    "gcp_service_account": ('{"type": "service_account", "private_key": "-----BEGIN ' + 'PRIVATE KEY-----\\nMIIEvQIBADANBg'
                            + B64 + '\\n-----END PRIVATE KEY-----\\n"}', "MIIEvQIBADANBg" + B64),
    "gcp_api_key": ("key AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    "azure_connection_string": ("DefaultEndpointsProtocol=https;AccountName=ci;AccountKey=" + B64 + "Qw==;EndpointSuffix=core",
                                B64 + "Qw=="),
    "url_credentials": ("fatal: could not read from https://deploy:" + "s3cr3tP4ssw0rd" + "@git.example.com/o/r.git",
                        "s3cr3tP4ssw0rd"),
    "generic_key_value": ("export API_KEY=" + "9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
}
ESCAPES = {
    "osc52_clipboard": "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07",
    "osc0_title": "\x1b]0;you have been pwned\x07",
    "osc8_link": "\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\",
    "csi_clear": "\x1b[2J\x1b[H",
    "c1_csi": "\x9b2J",
    "bidi_override": "\u202e",
    "backspace": "\x08\x08\x08",
}
FORBIDDEN = ("\x1b", "\x9b", "\x9d", "\x07", "\u202e", "\x08")


def _secret(kind: str) -> str:
    line, core = SECRETS[kind]
    return core or line


def _report(text: str):
    verdict = make_verdict(root_cause=f"ERROR upload failed: {text}")
    verdict = replace(verdict, evidence=(Evidence("contention", f"the log said {text}", None),))
    return make_report((verdict,), title=f"fix {text}")


def _terminal(report) -> str:
    out = io.StringIO()
    Console(file=out, width=400, force_terminal=False, color_system=None).print(terminal.render(report))
    return out.getvalue()


def _outputs(report, tmp_path, monkeypatch) -> dict[str, str]:
    summary, output = tmp_path / "summary.md", tmp_path / "output.txt"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    verdict = report.failed_jobs[0]
    outcome = Outcome(report.repo, report.pull.number, report.runs[0].id, comment="created",
                      notes=[verdict.facts.classification.root_cause.text], report=report)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        emit_outcome(outcome, OutputFormat.json, [f"noted: {verdict.facts.classification.root_cause.text}"])
    # The step outputs carry no log text (verdicts name jobs): they can only be checked not to leak.
    return {"step_summary": summary.read_text(), "github_output": output.read_text(), "triage_json": printed.getvalue()}


def _every_output(report, tmp_path, monkeypatch) -> dict[str, str]:
    found = {
        "terminal": _terminal(report),
        "markdown": markdown.render(report),
        "json": json.dumps(json.loads(render_json.render(report)), ensure_ascii=False),
        "comment": render_comment(report, CommentState(), generated_at="2026-05-12T13:20:00+00:00"),
        "step_summary_direct": actions_output.step_summary(report, ["nothing"]),
    }
    found.update(_outputs(report, tmp_path, monkeypatch))
    return found


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_secret_is_redacted_in_every_output(kind, tmp_path, monkeypatch):
    line = SECRETS[kind][0]
    for name, text in _every_output(_report(line), tmp_path, monkeypatch).items():
        assert _secret(kind) not in text, f"{kind} leaks in {name}"
        assert "***" in text or name == "github_output", name


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_secret_is_redacted_in_error_lines(kind, capsys):
    with pytest.raises(typer.Exit):
        fail(f"cannot parse {SECRETS[kind][0]}", 2)
    err = capsys.readouterr().err
    assert _secret(kind) not in err and err.count("\n") == 1


def test_the_token_in_the_environment_is_redacted_from_errors_whatever_its_shape(capsys, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "plainwords-no-known-shape")
    with pytest.raises(typer.Exit):
        fail("GitHub refused https://api.example/?t=plainwords-no-known-shape", 4)
    assert "plainwords-no-known-shape" not in capsys.readouterr().err


def test_a_token_in_github_api_url_is_not_printed(tmp_path):
    """The issue's case: `GITHUB_API_URL=https://user:<token>@host` and a report that cannot reach it."""
    import subprocess
    import sys

    token = "ghp_" + "Z9y8X7w6V5" * 3 + "u4T3s2"
    env = {**os.environ, "GITHUB_API_URL": f"http://x-access-token:{token}@127.0.0.1:9", "GITHUB_TOKEN": "t",
           "CI_TRIAGE_STORE": str(tmp_path / "s.sqlite3")}
    result = subprocess.run([sys.executable, "-m", "ci_triage", "report", "--pr", "1", "--repo", "o/r"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert token not in result.stderr + result.stdout


@pytest.mark.parametrize("kind", sorted(ESCAPES))
def test_escape_sequences_are_neutralised_in_every_output(kind, tmp_path, monkeypatch):
    report = _report(f"before {ESCAPES[kind]} after")
    outputs = _every_output(report, tmp_path, monkeypatch)
    for name, text in outputs.items():
        assert not any(bad in text for bad in FORBIDDEN), f"{kind} reaches {name}: {text!r}"
        assert ("before" in text and "after" in text) or name == "github_output", name


def test_the_comment_state_survives_redaction_of_its_own_text():
    """The final pass over the comment must not corrupt the hidden state line."""
    report = _report(SECRETS["url_credentials"][0] + ' "a@b" token=' + "abc123XYZ789def456")
    body = render_comment(report, CommentState().observe(report, "2026-05-12T13:20:00+00:00"))
    assert parse_comment(body) is not None and parse_comment(body).runs


def test_redaction_does_not_touch_ordinary_log_text():
    from ci_triage.core.redact import redact

    for line in ("OSError: [Errno 98] Address already in use", "cache-key: linux-pip-3.11",
                 "error: invalid password: authentication failed", "Error: key not found: foo",
                 "https://github.com/o/r/actions/runs/1/job/2", "connection refused on 127.0.0.1:8080"):
        assert redact(line) == line


def test_sanitize_makes_controls_visible_and_keeps_text():
    from ci_triage.core.text import sanitize

    assert sanitize("a\x1b]0;t\x07b\x1b[31mc\x1b[0m") == "abc"
    assert sanitize("x\u202ey") == "x<U+202E>y"
    assert sanitize("unterminated \x1b]52;c;AAAA") == "unterminated \u241b]52;c;AAAA"
    assert sanitize("a\nb") == "a\u240ab" and sanitize("a\r\nb", keep_newlines=True) == "a\nb"


def test_a_secret_straddling_the_display_cut_is_redacted_before_the_cut():
    from ci_triage.core.text import shown

    token = SECRETS["github_token"][0]
    text = "x" * 1990 + token
    assert token[:10] not in shown(text, 2000)
