"""Multi-process launchers: the cause is one worker's own error above the launcher's summary, not the summary
(core/logs/scorer.py, peer_lost.py, launcher_kills.py, rules launcher-child-failed and worker-died-unexpectedly).

The logs are cut from real runs made here (torch 2.13 CPU wheel, gloo, torchrun and torch.multiprocessing.spawn; Ray
2.60; accelerate 1.16; 2026-12-06) and from SGLang's messages as its source prints them."""

import pytest

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.launcher_kills import own_kills
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.matcher import find_matches, relevant_lines
from ci_triage.core.logs.rules import builtin_rules
from ci_triage.core.logs.scorer import bare, candidates

RULES = builtin_rules()
GLOO_CLOSED = ("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by "
               "peer [127.0.0.1]:20171. This is typically caused by a remote worker crashing. Check the logs of the remote "
               "worker before reporting an error. GLHF!")
SUMMARY = (
    "E1206 03:52:15.694000 16999 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 1 "
    "(pid: 17204) of binary: /venv/bin/python3",
    "Traceback (most recent call last):",
    '  File "/venv/bin/torchrun", line 8, in <module>',
    "    sys.exit(main())",
    '  File "/venv/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 383, in launch_agent',
    "    raise ChildFailedError(",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "============================================================",
    "train.py FAILED",
    "Root Cause (first observed failure):",
    "[0]:",
    "  exitcode  : 1 (pid: 17204) ",
    "  error_file: <N/A>",
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    "============================================================",
)


def _rank_traceback(rank: str, *last: str) -> tuple[str, ...]:
    return tuple(f"{rank}{line}" for line in (
        "Traceback (most recent call last):", '  File "/work/train.py", line 53, in <module>', "    main()",
        '  File "/work/train.py", line 17, in main', *last))


def _classify(*lines: str):
    return classify(list(parse_log("\n".join(lines) + "\n")), RULES)


def _root(found) -> str:
    return found.root_cause.text


def test_a_ranks_own_error_is_the_cause_not_the_survivors_peer_lost_report_nor_the_summary():
    found = _classify(
        "rank 1: step 0 loss=2.3031",
        *_rank_traceback("[rank1]: ", '    raise ValueError("Expected input batch_size (16) to match target batch_size (12).")',
                         "ValueError: Expected input batch_size (16) to match target batch_size (12)."),
        *_rank_traceback("[rank0]: ", "    dist.barrier()", GLOO_CLOSED),
        *SUMMARY)
    assert (found.category, _root(found)) == (
        "unknown", "[rank1]: ValueError: Expected input batch_size (16) to match target batch_size (12).")


def test_a_peer_lost_report_yields_to_a_ranks_failure_a_rule_names():
    found = _classify(
        *_rank_traceback("[default0]:[rank0]: ", "    import flash_attn_interface",
                         "ModuleNotFoundError: No module named 'flash_attn_interface'"),
        *_rank_traceback("[default1]:[rank1]: ", "    dist.all_reduce(t)", GLOO_CLOSED), *SUMMARY)
    assert (found.category, _root(found)) == (
        "import_error", "[default0]:[rank0]: ModuleNotFoundError: No module named 'flash_attn_interface'")


def test_a_peer_lost_report_alone_stays_the_cause():
    found = _classify(*_rank_traceback("[rank0]: ", "    dist.barrier()", GLOO_CLOSED), *SUMMARY)
    assert found.category == "collective_timeout" and "Connection closed by peer" in _root(found)


def test_the_launchers_summary_is_boilerplate_with_its_exit_code():
    found = _classify(*SUMMARY)  # the summary alone: no rule names a cause, the exit code is captured
    assert (found.rule_id, found.category, found.captures.get("exit_code")) == (None, "unknown", "1")


@pytest.mark.parametrize("line, category", [
    ("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL", "host_oom"),
    ("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGSEGV", "crash"),
    ("[2026-12-06 03:30:41,701] [ERROR] [launch.py:341:sigkill_handler] ['/usr/bin/python3', '-u', 'train.py'] exits "
     "with return code = -9", "host_oom"),
    ("[2026-12-06 03:30:41,701] [ERROR] [launch.py:341:sigkill_handler] ['/usr/bin/python3', '-u', 'train.py'] exits "
     "with return code = -11", "crash"),
    ("(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the "
     "problem, check the logs for the dead worker.", "crash"),
])
def test_a_launchers_report_of_a_signal_names_it(line, category):
    assert _classify("training", line).category == category


def test_a_wrapper_printed_above_the_error_it_quotes_is_not_the_cause():
    # torch.multiprocessing.spawn: the parent's exception quotes the child's traceback under it; no step line follows
    found = _classify(
        "rank 0: step 0 loss=2.3031", "Traceback (most recent call last):",
        '  File "/work/train.py", line 51, in <module>', "    mp.spawn(main, args=(2,), nprocs=2)",
        '  File "/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", line 211, in join',
        "    raise ProcessRaisedException(msg, error_index, failed_process.pid)",
        "torch.multiprocessing.spawn.ProcessRaisedException: ", "", "-- Process 0 terminated with the following error:",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", line 87, in _wrap', "    fn(i, *args)",
        '  File "/work/train.py", line 41, in main',
        '    raise RuntimeError("shape mismatch: value tensor of shape [8, 512] cannot be broadcast")',
        "RuntimeError: shape mismatch: value tensor of shape [8, 512] cannot be broadcast", "")
    assert _root(found) == "RuntimeError: shape mismatch: value tensor of shape [8, 512] cannot be broadcast"


def test_a_frames_source_line_is_a_stack_frame_not_a_cause():
    lines = list(parse_log("\n".join([
        "Traceback (most recent call last):", '  File "/work/pool.py", line 10, in work',
        '    return int("n/a")', "ValueError: invalid literal for int() with base 10: 'n/a'",
        "[rank0]:   File \"/work/train.py\", line 17, in main", "[rank0]:     raise KeyError(name)",
        '  File "<string>", line 1, in <module>', "NameError: name 'x' is not defined"]) + "\n"))
    scored = {s.line.number: s for s in candidates(lines, [], set(), lines[-1])}
    assert any("source line" in reason for reason in scored[3].reasons)
    assert any("source line" in reason for reason in scored[6].reasons)
    assert not any("source line" in reason for reason in scored[8].reasons)  # a frame without source: the exception
    assert scored[8].score > 5


def test_the_scorer_reads_a_ranks_line_without_its_prefix():
    assert bare("[rank1]: ValueError: boom") == "ValueError: boom"
    assert bare("[default0]:[rank0]: KeyError: 'x'") == "KeyError: 'x'"
    assert bare("(Trainer pid=21888) FileNotFoundError: x") == "FileNotFoundError: x"
    lines = list(parse_log("[rank1]: Traceback (most recent call last):\n[rank1]:   File \"/t.py\", line 3, in f\n"
                           "[rank1]:     g()\n[rank1]: KeyError: 'optimizer'\n"))
    best = candidates(lines, [], set(), lines[-1])[0]
    assert best.line.number == 4 and any("ends a traceback" in reason for reason in best.reasons)


def test_accelerates_called_process_error_does_not_outrank_the_scripts_error():
    found = _classify(
        "process 0: device=cpu", "Traceback (most recent call last):", '  File "/work/acc.py", line 8, in <module>',
        '    raise KeyError("input_ids")', "KeyError: 'input_ids'", "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/accelerate/commands/launch.py", line 1049, in _run_subprocess',
        "    raise subprocess.CalledProcessError(",
        "subprocess.CalledProcessError: Command '['/venv/bin/python3', 'acc.py']' returned non-zero exit status 1.",
        "##[error]Process completed with exit code 1.")
    assert _root(found) == "KeyError: 'input_ids'"


SGLANG = (
    "[2026-12-06 03:20:19 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2617, in run_scheduler_process',
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)",
)
SIGQUIT = "[2026-12-06 03:20:19] Received sigquit from a child process. It usually means the child failed."


def test_sglangs_kill_of_its_own_tree_is_not_the_oom_killer():
    found = _classify(*SGLANG, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                      "capacity of 79.19 GiB of which 1.20 GiB is free.", "", SIGQUIT, "Killed")
    assert found.category == "accelerator_oom"
    found = _classify(*SGLANG, "ValueError: Unknown quantization method: fp4_e2m1.", "", SIGQUIT, "Killed")
    assert (found.category, _root(found)) == ("unknown", "ValueError: Unknown quantization method: fp4_e2m1.")


def test_a_killed_line_away_from_a_launchers_notice_is_still_the_oom_killer():
    lines = relevant_lines("\n".join(["building", "Killed", "x", "y", "z", "w", SIGQUIT]) + "\n", RULES)
    assert own_kills(find_matches(lines, RULES)) == []
    assert _classify("building", "Killed").category == "host_oom"


def test_a_launchers_info_line_resembling_a_family_does_not_replace_a_ranks_error():
    # DeepSpeed's launcher (format of deepspeed/launcher/runner.py and launch.py) around a rank's KeyError
    found = _classify(
        "[2026-12-06 03:30:03,552] [INFO] [runner.py:630:main] cmd = /usr/bin/python3 -u -m deepspeed.launcher.launch "
        "--world_info=eyJsb2NhbGhvc3QiOiBbMCwgMV19 --master_addr=127.0.0.1 --master_port=29500 train.py",
        *_rank_traceback("[rank0]: ", "    labels = [ex['labels'] for ex in batch]", "KeyError: 'labels'"),
        "[2026-12-06 03:30:41,660] [INFO] [launch.py:335:sigkill_handler] Killing subprocess 4102",
        "[2026-12-06 03:30:41,701] [ERROR] [launch.py:341:sigkill_handler] ['/usr/bin/python3', '-u', 'train.py', "
        "'--local_rank=1'] exits with return code = 1", "##[error]Process completed with exit code 1.")
    assert (found.category, _root(found), found.captures["exit_code"]) == ("unknown", "[rank0]: KeyError: 'labels'", "1")
