"""The pure correlation, relatedness and policy steps, on small hand-made values."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from ci_triage.core.decide.policy import OutageGuard, Policy, decide
from ci_triage.core.evidence.frame_baselines import died_early
from ci_triage.core.evidence.hosts import host_of
from ci_triage.core.evidence.relate import exercised_files, job_tokens, relate
from ci_triage.core.evidence.window import baselines, correlate_window
from ci_triage.model import (
    BaseComparison,
    ChangedFile,
    Classification,
    Frame,
    Job,
    JobFacts,
    LogStatus,
    Relatedness,
    RootCause,
    Run,
    SimilarFailure,
    Verdict,
)

T0 = datetime(2026, 5, 12, 13, 0, tzinfo=UTC)


def job(job_id: int, run_id: int, start_min: float, end_min: float, runner: str, conclusion: str = "success",
        name: str = "vllm-example (eagle3)", labels: tuple[str, ...] = ("linux-aarch64-a2-8",)) -> Job:
    return Job(job_id, run_id, 1, "NPU", name, "completed", conclusion, T0,
               T0 + timedelta(minutes=start_min), T0 + timedelta(minutes=end_min), runner, "Default", labels,
               "sha", "branch", f"https://example/job/{job_id}")


def run(run_id: int, prs: tuple[int, ...] = (), branch: str = "feature") -> Run:
    return Run(run_id, 1, 1, "NPU", ".github/workflows/npu.yml", "pull_request", "completed", "failure", "sha",
               branch, "o/r", prs, T0, T0, f"https://example/run/{run_id}")


def correlated(failed: Job, others: list[Job], runs: dict[int, Run], window_s: float = 3600):
    """The engine's evidence for one failed job of run 10 against the other jobs of its workflow."""
    return correlate_window([(run(10, (67,)), failed)], others, runs, {}, later_window_s=window_s)[0]


def baseline_of(name: str, jobs: list[Job]):
    return baselines([(1, name)], jobs, {j.run_id: run(j.run_id) for j in jobs})[0]


def changed(*names: str) -> tuple[ChangedFile, ...]:
    return tuple(ChangedFile(n, "modified", 1, 1) for n in names)


def test_host_of_strips_only_a_separated_trailing_index():
    assert host_of("gpu-a-r0") == host_of("gpu-a-r1") == "gpu-a"
    assert host_of("node2") == "node2"
    assert host_of("linux-aarch64-a2-8-node2-r1") == "linux-aarch64-a2-8-node2"


def test_overlapping_jobs_are_on_the_same_pool_same_host_first():
    failed = job(1, 10, 0, 12, "pool-node2-r0", "failure")
    others = [
        job(2, 20, 5, 20, "pool-node2-r1"),  # same host, overlaps 7 min
        job(3, 30, -10, 11, "pool-node3-r0"),  # other host, overlaps 11 min
        job(4, 40, 13, 30, "pool-node2-r1"),  # after it: no overlap
        job(5, 50, 0, 12, "pool-node2-r1", labels=("ubuntu-latest",)),  # another pool
        job(6, 10, 0, 12, "pool-node2-r1"),  # the same run
    ]
    runs = {10: run(10, (67,)), 20: run(20, (66,)), 30: run(30, (), "main"), 40: run(40, (68,)), 50: run(50, (70,))}
    found = correlated(failed, others, runs)
    assert [(o.job_id, o.pr, o.same_host, o.overlap_s) for o in found.overlapping] == [
        (2, 66, True, 420.0), (3, None, False, 660.0)]
    assert found.in_flight_prs == (66,)
    assert [o.job_id for o in found.later_passed] == [4]


def test_duration_baseline_and_died_early():
    good = [job(i, 100 + i, 0, 17 + i * 0.1, "r") for i in range(5)]
    baseline = baseline_of("vllm-example (eagle3)", good)
    assert baseline.samples == 5 and abs(baseline.median_s - 17.2 * 60) < 1e-6
    assert died_early(job(9, 9, 0, 12, "r", "failure"), baseline)
    assert not died_early(job(9, 9, 0, 17.1, "r", "failure"), baseline)


def test_job_tokens_and_exercised_files():
    assert job_tokens("vllm-example (eagle3)") == {"eagle3", "eagle"}
    files = changed("verl_speco/models/eagle/llama_eagle.py", "verl_speco/trainer/peagle_trainer_backend.py")
    assert exercised_files("vllm-example (eagle3)", files) == ("verl_speco/models/eagle/llama_eagle.py",)
    assert exercised_files("vllm-example (dflash)", files) == ()


def test_relate_prefers_the_stack_over_the_job_name():
    files = changed("src/app/ports.py", "verl_speco/models/eagle/llama_eagle.py")
    frames = (Frame("src/app/ports.py", 3, "pick_port"), Frame("torch/x.py", 1, "f", "torch"))
    assert relate("vllm-example (eagle3)", frames, (), files) == (
        Relatedness.RELATED, ("src/app/ports.py",), "frame src/app/ports.py:3 in pick_port")
    assert relate("vllm-example (eagle3)", (), (), files)[0] is Relatedness.POSSIBLY_RELATED
    assert relate("vllm-example (dspark)", (), (), files) == (Relatedness.UNRELATED, (), None)
    assert relate("tests", (), ("tests/test_new.py::test_a",), changed("tests/test_new.py"))[0] is Relatedness.RELATED


def _facts(category: str, retryable: bool, frames=(), failed_tests=(), overlapping=(), base=None,
           log=LogStatus.AVAILABLE, name="vllm-example (dspark)") -> JobFacts:
    failed = job(1, 10, 0, 12, "pool-node2-r0", "failure", name=name)
    classification = Classification(category, retryable, "r", RootCause(5, "boom", "Run"), {}, tuple(frames),
                                    tuple(failed_tests), "v1:x")
    baseline = baseline_of(name, [job(i, 100 + i, 0, 17, "r", name=name) for i in range(4)])
    in_flight = tuple(sorted({o.pr for o in overlapping if o.pr}))
    return JobFacts(failed, run(10, (67,)), log, classification, tuple(overlapping), in_flight, (), baseline, base)


def judge(facts: JobFacts, files, policy: Policy = Policy(), outage: OutageGuard = OutageGuard()):
    c = facts.classification
    return decide(facts, relate(facts.job.name, c.frames, c.failed_tests, files), len(files), policy, outage)


def _other(pr: int):
    return correlated(job(1, 10, 0, 12, "pool-node2-r0", "failure"), [job(2, 20, 1, 20, "pool-node2-r1")],
                      {20: run(20, (pr,))}).overlapping


def test_port_clash_with_a_neighbour_and_unrelated_files_is_an_infra_flake():
    verdict = judge(_facts("port_in_use", True, overlapping=_other(66)), changed("docs/readme.md"))
    assert verdict.verdict is Verdict.INFRA_FLAKE and verdict.rerun_recommended
    assert {e.kind for e in verdict.evidence} >= {"root_cause", "contention", "died_early", "relatedness"}


def test_port_clash_inside_changed_code_is_the_prs_fault():
    verdict = judge(_facts("port_in_use", True, frames=[Frame("src/app/ports.py", 3, "bind")],
                            overlapping=_other(66)), changed("src/app/ports.py"))
    assert verdict.verdict is Verdict.PR_RELATED and not verdict.rerun_recommended


def test_no_rerun_without_the_log():
    verdict = judge(_facts("port_in_use", True, log=LogStatus.EXPIRED, overlapping=_other(66)), changed("x.py"))
    assert verdict.verdict is Verdict.NEEDS_REVIEW and not verdict.rerun_recommended


def test_oom_needs_a_competing_job_before_a_rerun():
    alone = judge(_facts("accelerator_oom", True), changed("x.py"))
    crowded = judge(_facts("accelerator_oom", True, overlapping=_other(66)), changed("x.py"))
    assert alone.verdict is Verdict.NEEDS_REVIEW and not alone.rerun_recommended
    assert crowded.verdict is Verdict.INFRA_FLAKE and crowded.rerun_recommended


def test_possibly_related_can_block_reruns_by_policy():
    facts = _facts("port_in_use", True, overlapping=_other(66), name="vllm-example (eagle3)")
    files = changed("verl_speco/models/eagle/llama_eagle.py")
    assert judge(facts, files).rerun_recommended
    assert not judge(facts, files, Policy(possibly_related_blocks_rerun=True)).rerun_recommended


def test_test_failures_against_the_base_branch():
    base = BaseComparison("main", 5, 6, "failure", ("tests/a.py::t1", "tests/a.py::t2"), "https://example/base")
    same = judge(_facts("test_failure", False, failed_tests=("tests/a.py::t1",), base=base), changed("src/x.py"))
    assert same.verdict is Verdict.BROKEN_BASE and not same.rerun_recommended
    new = judge(_facts("test_failure", False, failed_tests=("tests/a.py::t1", "tests/n.py::t"), base=base),
                 changed("tests/n.py"))
    assert new.verdict is Verdict.PR_RELATED and not new.rerun_recommended
    passing_base = replace(base, conclusion="success", failed_tests=())
    assert judge(_facts("test_failure", False, failed_tests=("tests/a.py::t1",), base=passing_base),
                  changed("src/x.py")).verdict is Verdict.PR_RELATED


def _similar(pr, minutes_after: float, on_base: bool = False) -> SimilarFailure:
    return SimilarFailure(pr, "main" if on_base else f"b{pr}", on_base, 900 + (pr or 0), 9000 + (pr or 0), "job",
                          T0 + timedelta(minutes=12 + minutes_after), f"https://example/{pr}")


def test_the_same_failure_on_other_prs_is_infra_evidence():
    facts = replace(_facts("port_in_use", True, overlapping=_other(66)), similar_failures=(_similar(66, -4), _similar(68, 30)))
    verdict = judge(facts, changed("docs/x.md"))
    [item] = [e for e in verdict.evidence if e.kind == "same_failure_elsewhere"]
    assert "#66, #68" in item.text and verdict.rerun_recommended


def test_an_outage_is_reported_not_rerun():
    many = tuple(_similar(60 + i, i) for i in range(5))
    verdict = judge(replace(_facts("port_in_use", True, overlapping=_other(66)), similar_failures=many), changed("x"))
    assert verdict.verdict is Verdict.INFRA_FLAKE and not verdict.rerun_recommended
    assert "outage" in [e.kind for e in verdict.evidence]
    spread = tuple(_similar(60 + i, i * 40) for i in range(5))  # one every 40 minutes: no outage
    assert judge(replace(_facts("port_in_use", True, overlapping=_other(66)), similar_failures=spread),
                 changed("x"), outage=OutageGuard(window_minutes=30)).rerun_recommended


def test_an_unexplained_failure_that_base_shares_is_broken_base():
    facts = replace(_facts("unknown", False), similar_failures=(_similar(None, -30, on_base=True),))
    verdict = judge(facts, changed("x.py"))
    assert verdict.verdict is Verdict.BROKEN_BASE and not verdict.rerun_recommended


def test_neighbour_named_in_the_log_is_contention_for_an_oom():
    facts = replace(_facts("accelerator_oom", True), neighbour_hints=("process 1 held 40 GiB on the device",))
    assert judge(facts, changed("x.py")).rerun_recommended
