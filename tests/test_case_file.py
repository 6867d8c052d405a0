"""Case files whose big logs live beside them: written by dump_case, read by load_case, streamed by
the fake, and a case naming files outside its folder is refused with one line."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from ci_triage.demo.replay import FakeGitHub
from ci_triage.errors import CaseFileError
from ci_triage.github import case as case_module
from ci_triage.github.case import LogFile, dump_case, load_case


def _failed_job_with_log(case: dict[str, Any]) -> str:
    return next(str(j["id"]) for j in case["jobs"] if j["conclusion"] == "failure" and str(j["id"]) in case["logs"])


def test_a_log_over_the_inline_limit_is_written_beside_the_case_and_read_back(demo_case, tmp_path, monkeypatch) -> None:
    job_id = _failed_job_with_log(demo_case)
    text = demo_case["logs"][job_id]
    monkeypatch.setattr(case_module, "LOG_INLINE_LIMIT", len(text) - 1)
    target = tmp_path / "big.case.json.gz"
    dump_case(demo_case, target)
    beside = tmp_path / "big.case.json.gz.logs" / f"{job_id}.log"
    assert beside.read_text(encoding="utf-8") == text
    loaded = load_case(target)
    assert isinstance(loaded["logs"][job_id], LogFile) and loaded["logs"][job_id].path == beside
    # Written again (a re-record over the same path), the file stays where it is.
    dump_case(loaded, target)
    assert beside.read_text(encoding="utf-8") == text


def test_the_fake_streams_a_log_kept_in_a_file_byte_for_byte(demo_case, tmp_path) -> None:
    job_id = _failed_job_with_log(demo_case)
    case = copy.deepcopy(demo_case)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / f"{job_id}.log").write_bytes(case["logs"][job_id].encode())
    case["logs"][job_id] = {"file": f"logs/{job_id}.log"}
    path = tmp_path / "case.json"
    path.write_text(json.dumps(case), encoding="utf-8")
    with FakeGitHub(load_case(path)) as fake:
        owner_repo = case["repository"]["full_name"]
        with httpx.Client(follow_redirects=True) as http:
            answer = http.get(f"{fake.base_url}/repos/{owner_repo}/actions/jobs/{job_id}/logs")
    assert answer.status_code == 200
    assert answer.content == demo_case["logs"][job_id].encode()
    assert answer.headers["content-length"] == str(len(answer.content))


@pytest.mark.parametrize("entry", [{"file": "../outside.log"}, {"file": "/etc/passwd"}, {"file": "missing.log"},
                                   {"file": ""}, {"path": "x"}, 12, None])
def test_a_case_naming_a_log_outside_its_folder_or_nowhere_is_refused(demo_case, tmp_path, entry) -> None:
    (tmp_path / "outside.log").write_text("secret\n")
    folder = tmp_path / "cases"
    folder.mkdir()
    case = copy.deepcopy(demo_case)
    case["logs"][_failed_job_with_log(demo_case)] = entry
    path = folder / "case.json"
    path.write_text(json.dumps(case), encoding="utf-8")
    with pytest.raises(CaseFileError):
        load_case(path)
    result = subprocess.run([sys.executable, "-m", "ci_triage", "report", "--replay", str(path), "--pr", "67"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode not in (0, 70)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ci-triage: error: ") and "Traceback" not in result.stderr


def test_report_replays_a_case_with_its_log_beside_it_like_the_inline_one(demo_case, tmp_path) -> None:
    inline, beside = tmp_path / "inline.case.json", tmp_path / "beside.case.json"
    inline.write_text(json.dumps(demo_case), encoding="utf-8")
    case = copy.deepcopy(demo_case)
    for job_id, text in list(case["logs"].items()):
        Path(tmp_path / f"{job_id}.log").write_text(text, encoding="utf-8")
        case["logs"][job_id] = {"file": f"{job_id}.log"}
    beside.write_text(json.dumps(case), encoding="utf-8")

    def report(path: Path) -> str:
        done = subprocess.run([sys.executable, "-m", "ci_triage", "report", "--replay", str(path), "--pr", "67",
                               "--format", "json"], capture_output=True, text=True, timeout=120)
        assert done.returncode in (0, 1, 10), done.stderr
        # Each replay's fake listens on its own port.
        return re.sub(r"127\.0\.0\.1:\d+", "fake", json.dumps(json.loads(done.stdout)["failed_jobs"]))

    assert report(beside) == report(inline)
