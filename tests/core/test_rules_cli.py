"""`classify --rules` adds to the built-in rules, `--no-builtin` replaces them; `rules check` refuses
hazardous patterns; `rules explain` shows the scorer's choice. Real subprocesses."""

import json

from tests.test_cli_e2e import run

STAMP = "2024-01-01T00:00:00.0000000Z "
EXTRA = """
[[rule]]
id = "proxy-down"
category = "network"
retryable = true
patterns = ['corp proxy unreachable']
examples = ["corp proxy unreachable"]
near_misses = ["corp proxy ok"]
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_rules_file_adds_to_the_builtin_rules(tmp_path):
    rules = _write(tmp_path, "extra.toml", EXTRA)
    disk = _write(tmp_path, "disk.log", STAMP + "OSError: [Errno 28] No space left on device\n")
    proxy = _write(tmp_path, "proxy.log", STAMP + "corp proxy unreachable\n")
    added = json.loads(run("classify", str(disk), str(proxy), "--rules", str(rules), "--format", "json").stdout)
    # On b3c93e9 --rules replaced the built-ins: the full disk came out unknown.
    assert [entry["category"] for entry in added] == ["disk_full", "network"]
    alone = json.loads(run("classify", str(disk), "--rules", str(rules), "--no-builtin", "--format", "json").stdout)
    assert alone[0]["category"] == "unknown"


def test_no_builtin_needs_a_rules_file(tmp_path):
    log = _write(tmp_path, "x.log", "x\n")
    result = run("classify", str(log), "--no-builtin")
    assert result.returncode != 0 and "--no-builtin needs a --rules file" in result.stderr
    assert "Traceback" not in result.stderr


def test_rules_check_refuses_a_catastrophic_pattern_with_the_reason(tmp_path):
    rules = _write(tmp_path, "bad.toml", EXTRA.replace("'corp proxy unreachable'", r"'(\w+\s?)+ unreachable$'"))
    result = run("rules", "check", str(rules))
    assert result.returncode == 2
    assert "is refused" in result.stderr and "backtracking" in result.stderr
    assert "Traceback" not in result.stderr


def test_rules_check_names_a_misspelled_key(tmp_path):
    rules = _write(tmp_path, "typo.toml", EXTRA.replace("retryable = true", "retryabel = true"))
    result = run("rules", "check", str(rules))
    assert result.returncode == 2 and "unknown key 'retryabel'" in result.stderr and "retryable" in result.stderr


def test_rules_explain_shows_the_scorer_choice(tmp_path):
    log = _write(tmp_path, "job.log", "".join(STAMP + line + "\n" for line in (
        "Traceback (most recent call last):", '  File "x.py", line 1, in f', "KeyError: 'footer'",
        "##[error]Process completed with exit code 1.")))
    result = run("rules", "explain", str(log), env={"COLUMNS": "250"})
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "root cause at line 3 (the scorer's choice" in out
    assert "Scorer's candidates" in out and "ends a traceback" in out
