"""`ci-triage classify` on saved logs and `ci-triage clusters` on the store, as subprocesses."""

import json

from tests.test_cli_e2e import _assert_one_line_error, run

PORT_CLASH = ("2024-01-01T00:00:00.0000000Z torch.distributed.DistNetworkError: The server socket has failed to "
              "listen on any local network address. port: 29500, useIpv6: false, code: -98, name: [::]:29500, "
              "message: address already in use\n2024-01-01T00:00:01.0000000Z ##[error]Process completed with exit "
              "code 1.\n")


def test_classify_json_contract(tmp_path):
    log = tmp_path / "job.log"
    log.write_bytes(b"\xef\xbb\xbf" + PORT_CLASH.encode() + b"\xff\xfe junk\n")
    unknown = tmp_path / "other.log"
    unknown.write_text("2024-01-01T00:00:00.0000000Z ##[error]Process completed with exit code 3.\n")
    result = run("classify", str(log), str(unknown), "--format", "json")
    assert result.returncode == 0, result.stderr
    first, second = json.loads(result.stdout)
    assert set(first) == {"file", "category", "resembles", "retryable", "root_cause", "captures", "fingerprint"}
    assert first["category"] == "port_in_use" and first["retryable"] is True
    assert first["root_cause"]["line"] == 1 and first["captures"]["port"] == "29500"
    assert second["category"] == "unknown" and second["captures"] == {"exit_code": "3"}
    assert first["resembles"] is None and second["resembles"] is None


def test_classify_missing_file(tmp_path):
    _assert_one_line_error(run("classify", str(tmp_path / "missing.log")), "cannot read")


def test_clusters_from_the_store(tmp_path):
    store = tmp_path / "s.sqlite3"
    for pr in ("67", "71"):
        assert run("report", "--pr", pr, "--demo", "--store", str(store), "--format", "json").returncode == 0
    found = json.loads(run("clusters", "--store", str(store), "--category", "all", "--format", "json").stdout)
    assert {c["category"] for c in found} == {"port_in_use", "test_failure"}
    assert all(c["count"] == 1 for c in found)
    assert json.loads(run("clusters", "--store", str(store), "--format", "json").stdout) == []


def test_rules_explain_shows_every_match_and_the_winner(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(PORT_CLASH)
    result = run("rules", "explain", str(log), env={"COLUMNS": "250"})
    assert result.returncode == 0, result.stderr
    assert "torch-dist-eaddrinuse" in result.stdout and "actions-exit-code" in result.stdout
    assert "##[error]Process completed" in result.stdout  # printed as text, not taken for markup
    assert "Root cause: line 1, rule torch-dist-eaddrinuse" in " ".join(result.stdout.split())
