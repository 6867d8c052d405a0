"""The bundled demo: a RECONSTRUCTION of the scenario in the seed write-up (shared/seed/), not a recording.

What the seed states, and this case keeps: the NPU vLLM example workflow runs an eagle3/dflash/dspark
matrix serialized with `max-parallel: 1` (on PR #63: 11:25:05-11:42:21, 11:42:46-12:01:01,
12:01:27-12:19:55); PRs #66, #67, #68 and #70 each lost one example job to
`DistNetworkError ... code: -98` (EADDRINUSE) on ports 36693, 35191, 38527 and 39403, in the window
where three PRs had example jobs in flight at once; failed jobs died after about 12 minutes against
about 17 for good ones; jobs that started after the queue drained passed; the changed files of
each PR are those of the seed's table; the CPU suite's nine pre-existing failures are the seed's.

What is invented to make it a whole repository: the date, the repository and user names, ids,
runner host names, the exact minutes of the contention window, the log text around the quoted
error lines, a push to main that makes the CPU suite's nine failures appear in CI, PR #71 (a
change that meets them: broken base) and PR #72 (whose own new test fails: its fault).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ci_triage.demo import logs as logtext
from ci_triage.demo import payloads as gh
from ci_triage.demo.logs import LogBuilder
from ci_triage.github.case import CASE_FORMAT, CASE_VERSION

REPO = "speco-demo/verl-speco"
REPO_ID = 873_215_640
DAY = datetime(2026, 5, 12, tzinfo=UTC)
POOL_LABEL = "linux-aarch64-a2-8"
WORKDIR = "/home/ci/actions-runner/_work/verl-speco/verl-speco"
SITE = "/usr/local/python3.10/lib/python3.10/site-packages"

EXAMPLE_WORKFLOW = ".github/workflows/npu_vllm_examples.yml"
CPU_WORKFLOW = ".github/workflows/cpu_unit_tests.yml"

# The nine pre-existing failures, as listed in the seed's "Test suite before/after".
PRE_EXISTING_FAILURES = (
    "tests/integration/test_drafter_runtime_control_contract.py::test_target_head_sync_defers_for_all_lm_head_drafters[DSPARK-veomni-npu-veomni_lm_head_full]",
    "tests/integration/test_drafter_runtime_control_contract.py::test_target_head_sync_defers_for_all_lm_head_drafters[DFLASH-veomni-npu-veomni_lm_head_sparse]",
    "tests/integration/test_drafter_runtime_control_contract.py::test_target_head_sync_defers_for_all_lm_head_drafters[EAGLE3-veomni-cuda-veomni_lm_head_full]",
    "tests/integration/test_drafter_runtime_control_contract.py::test_target_head_sync_defers_for_all_lm_head_drafters[EAGLE1-fsdp-npu-engine_full_param]",
    "tests/integration/test_drafter_runtime_control_contract.py::test_target_head_sync_defers_for_all_lm_head_drafters[DOMINO-fsdp2-cuda-engine_full_param]",
    "tests/integration/test_drafter_runtime_control_contract.py::test_target_head_transfer_waits_after_actor_update",
    "tests/integration/test_drafter_runtime_control_contract.py::test_async_publish_sets_pending_ref_and_waits_before_next_publish",
    "tests/integration/test_dspark_trainer_backend.py::test_dspark_checkpoint_preserves_source_config_and_vllm_weight_names",
    "tests/integration/test_verl_npu_vllm_compat.py::test_factory_fused_moe_survives_verl_npu_patch_import",
)
NEW_TEST_OF_72 = "tests/integration/test_dflash_block_mask.py::test_block_mask_respects_draft_length"


def at(hms: str) -> datetime:
    h, m, s = (int(x) for x in hms.split(":"))
    return DAY.replace(hour=h, minute=m, second=s)


@dataclass(frozen=True)
class PullSpec:
    number: int
    title: str
    author: str
    fork: bool
    head_ref: str
    files: tuple[tuple[str, int, int], ...]  # filename, additions, deletions
    opened: str


PULLS = (
    PullSpec(63, "feat(dspark): stream draft logits to the rollout worker", "erin-ci", False,
             "feat/dspark-stream-logits", (("verl_speco/models/dspark/modeling_dspark.py", 48, 12),), "10:58:00"),
    PullSpec(66, "refactor(peagle): share the trainer backend's checkpoint hooks", "alice-npu", True,
             "peagle-ckpt-hooks",
             (("verl_speco/trainer/backends/peagle_trainer_backend.py", 64, 30),
              ("verl_speco/trainer/backends/eagle3_trainer_backend.py", 1, 1)), "12:55:00"),
    PullSpec(67, "fix(eagle3,peagle): default d2t to the offset identity instead of arange", "khazic", True,
             "fix/d2t-offset-identity",
             (("verl_speco/models/eagle/llama_eagle.py", 4, 1),
              ("verl_speco/models/peagle/modeling_peagle.py", 4, 1)), "12:58:00"),
    PullSpec(68, "fix(eagle3): keep the optimizer state dtype on resume", "bob-drafts", True,
             "eagle3-resume-dtype",
             (("verl_speco/trainer/backends/eagle3_trainer_backend.py", 22, 6),), "12:57:00"),
    PullSpec(70, "fix(peagle): log the parallel draft depth once per step", "carol-spec", False,
             "peagle-log-depth",
             (("verl_speco/trainer/backends/peagle_trainer_backend.py", 3, 2),), "13:25:00"),
    PullSpec(71, "docs(data): explain the offset convention of generated d2t", "dave-kernels", True,
             "docs-d2t-convention", (("verl_speco/data/preprocessing.py", 9, 2),), "15:20:00"),
    PullSpec(72, "feat(dflash): respect the draft length in the block mask", "alice-npu", True,
             "dflash-block-mask-length",
             (("verl_speco/models/dflash/block_mask.py", 31, 8),
              ("tests/integration/test_dflash_block_mask.py", 57, 0)), "15:40:00"),
)

# One example job: (matrix value, runner, start, end, outcome). outcome is "success" or a port number:
# the job died at engine start-up with EADDRINUSE on that port.
ExampleJob = tuple[str, str, str, str, "str | int"]


@dataclass(frozen=True)
class ExampleRun:
    pr: int | None  # None: a push to main
    created: str
    jobs: tuple[ExampleJob, ...]


EXAMPLE_RUNS = (
    # The seed's serialized reference run on PR #63.
    ExampleRun(63, "11:24:31", (("eagle3", "node1-r0", "11:25:05", "11:42:21", "success"),
                                ("dflash", "node1-r0", "11:42:46", "12:01:01", "success"),
                                ("dspark", "node1-r0", "12:01:27", "12:19:55", "success"))),
    ExampleRun(None, "12:31:10", (("eagle3", "node3-r0", "12:31:40", "12:48:55", "success"),
                                  ("dflash", "node3-r0", "12:49:20", "13:06:31", "success"),
                                  ("dspark", "node3-r0", "13:06:58", "13:24:40", "success"))),
    # The contention window: #66, #67, #68 and #70 have example jobs in flight at once; each loses
    # one job at engine start-up on a host it shares with another PR's job.
    ExampleRun(68, "13:00:02", (("eagle3", "node1-r0", "13:00:31", "13:17:50", "success"),
                                ("dflash", "node1-r0", "13:18:15", "13:35:40", "success"),
                                ("dspark", "node1-r0", "13:36:05", "13:48:15", 38527))),
    ExampleRun(66, "13:02:09", (("eagle3", "node2-r0", "13:02:40", "13:14:52", 36693),
                                ("dflash", "node2-r0", "13:15:20", "13:32:41", "success"),
                                ("dspark", "node2-r0", "13:33:05", "13:50:30", "success"))),
    ExampleRun(67, "13:05:31", (("eagle3", "node2-r1", "13:06:02", "13:18:11", 35191),
                                ("dflash", "node2-r1", "13:18:40", "13:35:58", "success"),
                                ("dspark", "node2-r1", "13:36:20", "13:53:44", "success"))),
    ExampleRun(70, "13:27:01", (("eagle3", "node3-r0", "13:27:30", "13:44:52", "success"),
                                ("dflash", "node1-r1", "13:45:20", "13:57:31", 39403),
                                ("dspark", "node1-r1", "13:57:55", "14:15:20", "success"))),
    # After the queue drained, everything passes.
    ExampleRun(None, "14:40:12", (("eagle3", "node2-r0", "14:40:44", "14:58:02", "success"),
                                  ("dflash", "node2-r0", "14:58:30", "15:16:41", "success"),
                                  ("dspark", "node2-r0", "15:17:05", "15:34:29", "success"))),
    ExampleRun(72, "15:41:03", (("eagle3", "node2-r1", "15:41:35", "15:58:40", "success"),
                                ("dflash", "node2-r1", "15:59:02", "16:17:10", "success"),
                                ("dspark", "node2-r1", "16:17:36", "16:35:01", "success"))),
)

# CPU unit tests: (pr or None for main, created, start, end, failures)
CPU_RUNS = (
    (63, "10:58:40", "10:59:02", "11:00:31", ()),
    (66, "12:55:40", "12:56:01", "12:57:29", ()),
    (67, "12:58:35", "12:59:00", "13:00:27", ()),
    (68, "12:57:40", "12:58:05", "12:59:33", ()),
    (70, "13:25:41", "13:26:02", "13:27:31", ()),
    # A push to main that bumps the NPU stack pin: from here on the nine tests fail in CI too.
    (None, "15:05:02", "15:05:25", "15:06:52", PRE_EXISTING_FAILURES),
    (71, "15:20:39", "15:21:00", "15:22:29", PRE_EXISTING_FAILURES),
    (72, "15:41:02", "15:41:24", "15:42:55", PRE_EXISTING_FAILURES + (NEW_TEST_OF_72,)),
)

# The d2t contract suite (workflows/d2t-contract.yml) runs on PRs that touch drafter model code:
# (pr, created, start, end). Both pass: #67 is the fix that makes d2t the offset identity.
D2T_RUNS = (
    (67, "12:58:37", "12:59:01", "12:59:52"),
    (72, "15:41:04", "15:41:27", "15:42:14"),
)
D2T_WORKFLOW = ".github/workflows/d2t-contract.yml"

USERS = {"speco-demo": 190_000_001, "erin-ci": 190_000_012, "alice-npu": 190_000_013, "khazic": 190_000_014,
         "bob-drafts": 190_000_015, "carol-spec": 190_000_016, "dave-kernels": 190_000_017,
         "github-actions[bot]": 41_898_282}


class _Ids:
    def __init__(self, start: int) -> None:
        self.value = start

    def next(self) -> int:
        self.value += 1 + (self.value * 7919) % 97  # sparse, like real ids
        return self.value


def _example_log(log: LogBuilder, *, example: str, runner: str, outcome: str | int, head_sha: str,
                 end: datetime) -> None:
    job_name = f"vllm-example ({example})"
    logtext.set_up_job(log, runner_name=f"{POOL_LABEL}-{runner}", machine=f"a2-8-{runner.split('-')[0]}",
                       job_name=job_name, repo=REPO, hosted=False)
    logtext.checkout(log, repo=REPO, workdir=WORKDIR, head_sha=head_sha)
    log.begin("Install verl-speco with the NPU extras")
    log.write("##[group]Run pip install -e '.[npu,test]'\n\x1b[36;1mpip install -e '.[npu,test]'\x1b[0m\n"
              "shell: /usr/bin/bash -e {0}\n##[endgroup]")
    log.write("Obtaining file:///home/ci/actions-runner/_work/verl-speco/verl-speco", after_s=1)
    log.write("  Installing build dependencies: started", after_s=0.5)
    log.write("  Installing build dependencies: finished with status 'done'", after_s=14)
    log.write("Requirement already satisfied: torch==2.5.1 in " + SITE + " (from verl-speco==0.3.0.dev0) (2.5.1)", after_s=3)
    log.write("Requirement already satisfied: torch-npu==2.5.1 in " + SITE + " (2.5.1)")
    log.write("Requirement already satisfied: vllm==0.9.1 in " + SITE + " (0.9.1)")
    log.write("Requirement already satisfied: vllm-ascend==0.9.1rc1 in " + SITE + " (0.9.1rc1)")
    log.write("Successfully installed verl-speco-0.3.0.dev0", after_s=38)
    log.end()
    log.begin("Run example script")
    log.write(f"##[group]Run bash examples/npu/run_vllm_example.sh {example}\n"
              f"\x1b[36;1mbash examples/npu/run_vllm_example.sh {example}\x1b[0m\n"
              "shell: /usr/bin/bash -e {0}\nenv:\n  ASCEND_RT_VISIBLE_DEVICES: 0,1,2,3\n  HCCL_BUFFSIZE: 512\n"
              "##[endgroup]")
    log.write(f"+ python examples/npu/vllm_rollout_example.py --drafter {example} --config "
              f"examples/npu/configs/{example}_qwen3_8b.yaml", after_s=0.4)
    log.write("INFO 05-12 [__init__.py:39] Available plugins for group vllm.platform_plugins:", after_s=6)
    log.write("INFO 05-12 [__init__.py:41] - ascend -> vllm_ascend:register")
    log.write("INFO 05-12 [__init__.py:239] Automatically detected platform npu.", after_s=1)
    log.write(f"[verl_speco] loading drafter '{example}' from examples/npu/configs/{example}_qwen3_8b.yaml", after_s=2)
    # Training the drafter for a few steps takes most of the job; a clash hits when the rollout engine starts.
    steps = 140
    for index in range(1, steps + 1):
        log.write(f"[verl_speco] step {index:4d}/{steps} | loss {2.9 - index * 0.011:.4f} | "
                  f"acc_len {1.4 + index * 0.006:.3f} | lr 2.0e-05", after_s=4.1)
    log.write("[verl_speco] starting vLLM rollout engine for speculative decoding eval", after_s=1)
    log.write("WARNING 05-12 [config.py:4231] The 'eagle3' drafter uses a draft vocabulary mapping; "
              "error checking of mapped ids is left to the engine.", after_s=1)
    log.write("INFO 05-12 [llm_engine.py:240] Initializing a V0 LLM engine (v0.9.1) with config: "
              "model='/data/models/Qwen3-8B', speculative_config=SpeculativeConfig(method='eagle3')", after_s=2)
    if outcome == "success":
        log.advance_to(end - timedelta(seconds=200))
        log.write("INFO 05-12 [parallel_state.py:1077] rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, "
                  "TP rank 0", after_s=9)
        for index in range(1, 61):
            log.write(f"Processed prompts: {index * 100 // 60:3d}%| {index}/60 [00:{index:02d}<00:00]", after_s=2.9)
        log.write("[verl_speco] eval: mean acceptance length 2.87, draft acceptance rate 0.62", after_s=1)
        log.write("+ echo 'example finished'\nexample finished")
        log.end()
    else:
        port = outcome
        log.advance_to(end - timedelta(seconds=22))
        log.write("[W512 ProcessGroupHCCL.cpp:1162] Warning: HCCL_ASYNC_ERROR_HANDLING is deprecated", after_s=8)
        log.write("Traceback (most recent call last):", after_s=1)
        frames = [
            (f"{WORKDIR}/examples/npu/vllm_rollout_example.py", 88, "<module>", "    main()"),
            (f"{WORKDIR}/examples/npu/vllm_rollout_example.py", 71, "main", "    engine = build_rollout_engine(cfg)"),
            (f"{WORKDIR}/verl_speco/rollout/vllm_rollout.py", 142, "build_rollout_engine", "    return LLM(**engine_kwargs)"),
            (f"{SITE}/vllm/entrypoints/llm.py", 243, "__init__", "    self.llm_engine = LLMEngine.from_engine_args("),
            (f"{SITE}/vllm/engine/llm_engine.py", 501, "from_engine_args", "    return engine_cls.from_vllm_config("),
            (f"{SITE}/vllm/executor/executor_base.py", 53, "__init__", "    self._init_executor()"),
            (f"{SITE}/vllm/executor/uniproc_executor.py", 47, "_init_executor", '    self.collective_rpc("init_device")'),
            (f"{SITE}/vllm/worker/worker_base.py", 604, "init_device", "    self.worker.init_device()  # type: ignore"),
            (f"{SITE}/vllm_ascend/worker/worker.py", 218, "init_device", "    self._init_worker_distributed_environment()"),
            (f"{SITE}/vllm_ascend/worker/worker.py", 531, "_init_worker_distributed_environment",
             "    init_distributed_environment(self.parallel_config.world_size, self.rank,"),
            (f"{SITE}/vllm/distributed/parallel_state.py", 995, "init_distributed_environment",
             "    torch.distributed.init_process_group("),
            (f"{SITE}/torch/distributed/c10d_logger.py", 81, "wrapper", "    return func(*args, **kwargs)"),
            (f"{SITE}/torch/distributed/c10d_logger.py", 95, "wrapper", "    func_return = func(*args, **kwargs)"),
            (f"{SITE}/torch/distributed/distributed_c10d.py", 1710, "init_process_group",
             "    store, rank, world_size = next(rendezvous_iterator)"),
            (f"{SITE}/torch/distributed/rendezvous.py", 278, "_tcp_rendezvous_handler",
             "    store = _create_c10d_store("),
            (f"{SITE}/torch/distributed/rendezvous.py", 198, "_create_c10d_store", "    return TCPStore("),
        ]
        for path, line, function, code in frames:
            log.write(f'  File "{path}", line {line}, in {function}')
            log.write(code)
        log.write("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
                  f"address. port: {port}, useIpv6: false, code: -98, name: [::]:{port}, message: address already in use")
        log.write(f"[ERROR] {log.now.strftime('%Y-%m-%d-%H:%M:%S')} (PID:2231188, Device:0, RankID:-1) "
                  "ERR99999 UNKNOWN application exception", after_s=0.3)
        log.write("##[error]Process completed with exit code 1.", after_s=0.4)
        log.end("failure")
    log.begin("Upload example logs")
    log.write("##[group]Run actions/upload-artifact@v4\nwith:\n  name: example-logs\n  path: outputs/logs\n##[endgroup]")
    log.write("With the provided path, there will be 3 files uploaded", after_s=0.3)
    log.write("Artifact example-logs has been successfully uploaded! Final size is 18234 bytes.", after_s=1.1)
    log.end()
    log.begin("Post Run actions/checkout@v4")
    log.write("Post job cleanup.")
    log.write("[command]/usr/bin/git version\ngit version 2.43.0", after_s=0.1)
    log.end()
    log.begin("Complete job")
    log.write("Cleaning up orphan processes")
    log.end()


def _cpu_log(log: LogBuilder, *, failures: tuple[str, ...], runner: str, head_sha: str, end: datetime) -> None:
    logtext.set_up_job(log, runner_name=runner, machine="fv-az1272-311", job_name="cpu-unit-tests", repo=REPO,
                       hosted=True)
    logtext.checkout(log, repo=REPO, workdir="/home/runner/work/verl-speco/verl-speco", head_sha=head_sha)
    log.begin("Install")
    log.write("##[group]Run pip install -e '.[test]'\n\x1b[36;1mpip install -e '.[test]'\x1b[0m\n"
              "shell: /usr/bin/bash -e {0}\n##[endgroup]")
    log.write("Successfully installed verl-speco-0.3.0.dev0", after_s=41)
    log.end()
    log.begin("Run CPU unit tests")
    log.write("##[group]Run python -m pytest tests/integration tests/compat tests/config tests/examples -q\n"
              "\x1b[36;1mpython -m pytest tests/integration tests/compat tests/config tests/examples -q\x1b[0m\n"
              "shell: /usr/bin/bash -e {0}\n##[endgroup]")
    log.write("============================= test session starts ==============================", after_s=1)
    log.write("platform linux -- Python 3.10.16, pytest-8.3.5, pluggy-1.5.0\nrootdir: "
              "/home/runner/work/verl-speco/verl-speco\nconfigfile: pyproject.toml")
    total = 254 + (1 if len(failures) > 9 else 0)
    log.write(f"collected {total} items", after_s=2)
    log.write("", after_s=0.1)
    dots = "." * 60
    for _ in range(3):
        log.write(dots + " [ 23%]", after_s=6)
    log.write("." * 20 + "F" * min(len(failures), 9) + "." * 12 + " [ 94%]", after_s=8)
    log.advance_to(end - timedelta(seconds=6))
    if failures:
        log.write("", after_s=1)
        log.write("=================================== FAILURES ===================================")
        for test in failures:
            name = test.split("::", 1)[1]
            log.write(f"_{'_' * 10} {name} {'_' * 10}")
            if test == NEW_TEST_OF_72:
                log.write(f"{WORKDIR.replace('/home/ci/actions-runner/_work', '/home/runner/work')}/"
                          "tests/integration/test_dflash_block_mask.py:41: in test_block_mask_respects_draft_length")
                log.write("    assert mask.sum(dim=-1).max() == draft_length")
                log.write("E   AssertionError: assert tensor(9) == 8")
            else:
                log.write("E   ModuleNotFoundError: No module named 'veomni'" if "veomni" in test
                          else "E   RuntimeError: NPU vLLM stack not importable: vllm_ascend is not installed")
        log.write("=========================== short test summary info ============================")
        for test in failures:
            reason = "AssertionError: assert tensor(9) == 8" if test == NEW_TEST_OF_72 else "RuntimeError"
            log.write(f"FAILED {test} - {reason}")
        log.write(f"{len(failures)} failed, {total - len(failures)} passed, 2 warnings in 33.60s", after_s=0.2)
        log.write("##[error]Process completed with exit code 1.", after_s=0.3)
        log.end("failure")
    else:
        log.write(f"{total} passed, 2 warnings in 31.12s", after_s=1)
        log.end()
    log.begin("Post Run actions/checkout@v4")
    log.write("Post job cleanup.")
    log.end()
    log.begin("Complete job")
    log.write("Cleaning up orphan processes")
    log.end()


def _d2t_log(log: LogBuilder, *, runner: str, head_sha: str) -> None:
    logtext.set_up_job(log, runner_name=runner, machine="fv-az1272-402", job_name="d2t-contract", repo=REPO,
                       hosted=True)
    logtext.checkout(log, repo=REPO, workdir="/home/runner/work/verl-speco/verl-speco", head_sha=head_sha)
    log.begin("ci-triage d2t check")
    log.write("##[group]Run ci-triage d2t check $CHECKPOINTS --format json > d2t-report.json\n"
              "shell: /usr/bin/bash -e {0}\n##[endgroup]")
    log.write("tests/fixtures/drafters/eagle3_full_vocab: ok (offsets; max engine target id 151935 < vocab_size 151936)",
              after_s=2)
    log.write("tests/fixtures/drafters/peagle_reduced: ok (offsets; max engine target id 151642 < vocab_size 151936)")
    log.end()
    log.begin("Complete job")
    log.write("Cleaning up orphan processes")
    log.end()


def _repository_files() -> dict[str, str]:
    """Files of the demo repository's default branch: its workflows and its ci-triage config."""
    from importlib import resources

    folder = resources.files("ci_triage.demo").joinpath("repo_files")
    return {
        EXAMPLE_WORKFLOW: folder.joinpath("npu_vllm_examples.yml").read_text(encoding="utf-8"),
        CPU_WORKFLOW: folder.joinpath("cpu_unit_tests.yml").read_text(encoding="utf-8"),
        ".github/ci-triage.toml": folder.joinpath("ci-triage.toml").read_text(encoding="utf-8"),
    }


def build_case() -> dict[str, Any]:
    users = {login: gh.user(login, uid, "Organization" if login == "speco-demo" else
                            "Bot" if login.endswith("[bot]") else "User") for login, uid in USERS.items()}
    repo = gh.repository(REPO, REPO_ID, users["speco-demo"], created=datetime(2025, 9, 2, tzinfo=UTC),
                         pushed=at("15:05:00"),
                         description="Speculative-decoding drafter training (EAGLE-3, DSpark, DFlash) — "
                                     "ci-triage demo reconstruction")
    forks = {}
    ids = _Ids(873_215_700)
    pulls: list[dict[str, Any]] = []
    pull_files: dict[str, list[dict[str, Any]]] = {}
    heads: dict[int, str] = {}
    base_sha = gh.sha_of("main@12:00")
    for spec in PULLS:
        head_sha = gh.sha_of(f"pr-{spec.number}-head")
        heads[spec.number] = head_sha
        if spec.fork:
            forks[spec.author] = forks.get(spec.author) or gh.repository(
                f"{spec.author}/verl-speco", ids.next(), users[spec.author], fork=True,
                created=datetime(2026, 3, 1, tzinfo=UTC), pushed=at(spec.opened))
            head_repo = forks[spec.author]
        else:
            head_repo = repo
        files = [gh.changed_file(REPO, head_sha, name, additions=a, deletions=d,
                                 status="added" if name.endswith("test_dflash_block_mask.py") else "modified")
                 for name, a, d in spec.files]
        pull_files[str(spec.number)] = files
        pulls.append(gh.pull_request(
            repo, spec.number, 2_500_000_000 + spec.number, title=spec.title, author=users[spec.author],
            head_repo=head_repo, head_ref=spec.head_ref, head_sha=head_sha, base_sha=base_sha,
            created=at(spec.opened), updated=at(spec.opened) + timedelta(minutes=1),
            additions=sum(f["additions"] for f in files), deletions=sum(f["deletions"] for f in files),
            changed_files=len(files)))
    pull_by_number = {p["number"]: p for p in pulls}
    spec_by_number = {s.number: s for s in PULLS}

    example_wf = gh.workflow(REPO, 158_204_117, "NPU vLLM examples", EXAMPLE_WORKFLOW, datetime(2025, 11, 3, tzinfo=UTC))
    cpu_wf = gh.workflow(REPO, 158_204_118, "CPU unit tests", CPU_WORKFLOW, datetime(2025, 9, 2, tzinfo=UTC))

    runs: list[dict[str, Any]] = []
    jobs: list[dict[str, Any]] = []
    logs: dict[str, str] = {}
    run_ids = _Ids(15_003_400_000)
    job_ids = _Ids(42_118_900_000)
    d2t_wf = gh.workflow(REPO, 158_204_119, "d2t contract", D2T_WORKFLOW, datetime(2026, 5, 1, tzinfo=UTC))
    run_numbers = {example_wf["id"]: 411, cpu_wf["id"]: 1290, d2t_wf["id"]: 17}

    def make_run(wf: dict[str, Any], pr: int | None, created: datetime, started: datetime, finished: datetime,
                 conclusion: str) -> dict[str, Any]:
        run_numbers[wf["id"]] += 1
        if pr is None:
            head_sha, head_branch, head_repo, event = gh.sha_of(f"main@{created}"), "main", repo, "push"
            actor, title, linked = users["speco-demo"], "Merge pull request: bump the NPU stack pin", []
        else:
            spec = spec_by_number[pr]
            head_sha, head_branch, event = heads[pr], spec.head_ref, "pull_request"
            head_repo = forks[spec.author] if spec.fork else repo
            actor, title = users[spec.author], spec.title
            # GitHub fills pull_requests only for heads in the base repository: fork PRs get [].
            linked = [] if spec.fork else [pull_by_number[pr]]
        run = gh.workflow_run(repo, wf, run_ids.next(), run_number=run_numbers[wf["id"]], attempt=1, event=event,
                              head_branch=head_branch, head_sha=head_sha, head_repo=head_repo, pulls=linked,
                              actor=actor, title=title, status="completed", conclusion=conclusion,
                              created=created, started=started, updated=finished + timedelta(seconds=4))
        runs.append(run)
        return run

    for example_run in EXAMPLE_RUNS:
        outcomes = [job[4] for job in example_run.jobs]
        conclusion = "success" if all(o == "success" for o in outcomes) else "failure"
        created = at(example_run.created)
        run = make_run(example_wf, example_run.pr, created, created, at(example_run.jobs[-1][3]), conclusion)
        for example, runner, start, end, outcome in example_run.jobs:
            log = LogBuilder(at(start))
            _example_log(log, example=example, runner=runner, outcome=outcome, head_sha=run["head_sha"], end=at(end))
            job_id = job_ids.next()
            jobs.append(gh.job(run, job_id, name=f"vllm-example ({example})", status="completed",
                               conclusion="success" if outcome == "success" else "failure",
                               created=created, started=at(start), completed=at(end), labels=[POOL_LABEL],
                               runner_id=int(runner[4]) * 10 + int(runner[-1]),
                               runner_name=f"{POOL_LABEL}-{runner}", runner_group="Default",
                               steps=log.steps))
            logs[str(job_id)] = log.text()

    for pr, created, start, end, failures in CPU_RUNS:
        conclusion = "failure" if failures else "success"
        run = make_run(cpu_wf, pr, at(created), at(created), at(end), conclusion)
        runner = f"GitHub Actions {1000 + len(jobs)}"
        log = LogBuilder(at(start))
        _cpu_log(log, failures=failures, runner=runner, head_sha=run["head_sha"], end=at(end))
        job_id = job_ids.next()
        jobs.append(gh.job(run, job_id, name="cpu-unit-tests", status="completed", conclusion=conclusion,
                           created=at(created), started=at(start), completed=at(end), labels=["ubuntu-latest"],
                           runner_id=1000 + len(jobs), runner_name=runner, runner_group="GitHub Actions",
                           steps=log.steps))
        logs[str(job_id)] = log.text()

    for pr, created, start, end in D2T_RUNS:
        run = make_run(d2t_wf, pr, at(created), at(created), at(end), "success")
        runner = f"GitHub Actions {1000 + len(jobs)}"
        log = LogBuilder(at(start))
        _d2t_log(log, runner=runner, head_sha=run["head_sha"])
        job_id = job_ids.next()
        jobs.append(gh.job(run, job_id, name="d2t-contract", status="completed", conclusion="success",
                           created=at(created), started=at(start), completed=at(end), labels=["ubuntu-latest"],
                           runner_id=1000 + len(jobs), runner_name=runner, runner_group="GitHub Actions",
                           steps=log.steps))
        logs[str(job_id)] = log.text()

    # The runner annotates every failed job's check run with the failing step's exit.
    annotations = {str(job["id"]): [gh.annotation(REPO, job["head_sha"], "Process completed with exit code 1.")]
                   for job in jobs if job["conclusion"] == "failure"}

    return {
        "format": CASE_FORMAT,
        "version": CASE_VERSION,
        "source": {
            "kind": "reconstruction",
            "description": "Reconstruction of the scenario in the seed write-up (PR #67's port-contention "
                           "argument), built by ci_triage/demo/scenario.py. Names, ids, dates and log text "
                           "around the quoted error lines are invented; see that module's docstring.",
            "seed": "shared/seed/000_d875c78f1975d31e.txt",
        },
        "repository": repo,
        "pulls": pulls,
        "pull_files": pull_files,
        "workflows": [example_wf, cpu_wf, d2t_wf],
        "runs": runs,
        "jobs": jobs,
        "logs": logs,
        "annotations": annotations,
        "files": _repository_files(),
    }
