"""The bundled demo case is what the generator makes, and keeps the seed's facts."""

import gzip
import json

from ci_triage.demo.build import bundled_path
from ci_triage.demo.scenario import build_case


def test_committed_case_is_what_the_generator_makes():
    committed = json.loads(gzip.decompress(bundled_path().read_bytes()))
    assert committed == build_case(), "run `python -m ci_triage.demo.build` and commit the result"


def test_case_keeps_the_seed_facts(demo_case):
    assert demo_case["source"]["kind"] == "reconstruction"
    jobs = {j["id"]: j for j in demo_case["jobs"]}
    runs = {r["id"]: r for r in demo_case["runs"]}
    pr_of = {p["head"]["sha"]: p["number"] for p in demo_case["pulls"]}

    def jobs_of_pr(number):
        return sorted((j for j in jobs.values() if pr_of.get(runs[j["run_id"]]["head_sha"]) == number
                       and j["workflow_name"] == "NPU vLLM examples"), key=lambda j: j["started_at"])

    # PR #63's serialized example jobs, at the times the seed gives.
    assert [(j["started_at"][11:19], j["completed_at"][11:19]) for j in jobs_of_pr(63)] == [
        ("11:25:05", "11:42:21"), ("11:42:46", "12:01:01"), ("12:01:27", "12:19:55")]
    # The seed's table: failing job and port of each PR.
    for pr, example, port in ((66, "eagle3", 36693), (67, "eagle3", 35191), (68, "dspark", 38527),
                              (70, "dflash", 39403)):
        failed = [j for j in jobs_of_pr(pr) if j["conclusion"] == "failure"]
        assert [j["name"] for j in failed] == [f"vllm-example ({example})"]
        assert f"port: {port}, useIpv6: false, code: -98" in demo_case["logs"][str(failed[0]["id"])]
    files = {p: [f["filename"].rsplit("/", 1)[1] for f in fs] for p, fs in demo_case["pull_files"].items()}
    assert files["67"] == ["llama_eagle.py", "modeling_peagle.py"]
    assert files["68"] == ["eagle3_trainer_backend.py"] and files["70"] == ["peagle_trainer_backend.py"]
    assert files["66"] == ["peagle_trainer_backend.py", "eagle3_trainer_backend.py"]


def test_logs_look_like_github_actions_logs(demo_case):
    for text in demo_case["logs"].values():
        assert text.startswith("\ufeff")
        first = text[1:].split("\n", 1)[0]
        assert first[:4].isdigit() and first[10] == "T" and first[27:29] == "Z "
        assert "##[group]" in text and "##[endgroup]" in text
    failed = [j for j in demo_case["jobs"] if j["conclusion"] == "failure"]
    assert all("##[error]Process completed with exit code 1." in demo_case["logs"][str(j["id"])] for j in failed)


def test_step_times_agree_with_the_job(demo_case):
    for job in demo_case["jobs"]:
        steps = job["steps"]
        assert steps[0]["started_at"] >= job["started_at"]
        assert steps[-1]["completed_at"] <= job["completed_at"]
        assert all(a["completed_at"] <= b["started_at"] for a, b in zip(steps, steps[1:]))
