"""Noise a Python process prints after the error it dies of: a native thread's abort at interpreter shutdown
(core/logs/shutdown_aborts.py), and the same exception printed again below (scorer.first_printing).

The lines are cut from real runs made here on 2026-12-06 (sweep s9c): CPython 3.11.7 with a g++-built library holding a
joinable std::thread, torchrun from the torch 2.13 CPU wheel (gloo), concurrent.futures and a spawn-started
multiprocessing pool."""

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.rules import builtin_rules

RULES = builtin_rules()
IMPORT_TRACEBACK = (
    "Traceback (most recent call last):",
    '  File "/home/runner/work/trainer/trainer/imp_term.py", line 4, in <module>',
    "    from mmcv.ops import nms",
    "ModuleNotFoundError: No module named 'mmcv'",
)
TERMINATE = "terminate called without an active exception"


def _classify(*lines: str):
    return classify(list(parse_log("\n".join(lines) + "\n")), RULES)


def test_an_import_error_is_the_cause_not_the_native_threads_abort_at_shutdown():
    found = _classify("loaded native prefetcher", *IMPORT_TRACEBACK, TERMINATE, "Aborted (core dumped)")
    assert (found.category, found.root_cause.text) == ("import_error", "ModuleNotFoundError: No module named 'mmcv'")
    assert not found.retryable


def test_in_a_ci_step_the_shells_abort_report_is_not_the_cause_either():
    found = _classify(
        "##[group]Run python imp_term.py", "##[endgroup]", *IMPORT_TRACEBACK, TERMINATE,
        "/home/runner/work/_temp/6f1c2a9e.sh: line 1:  2244 Aborted                 (core dumped) python imp_term.py",
        "##[error]Process completed with exit code 134.")
    assert found.category == "import_error"
    assert found.root_cause.line == 6


def test_a_torchrun_workers_import_error_wins_over_its_abort_and_the_launchers_sigabrt_summary():
    found = _classify(
        "rank 0: native prefetcher up",
        "rank 1: native prefetcher up",
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/work/w_imp_term.py", line 7, in <module>',
        "[rank1]:     import deepspeed.ops.adam.cpu_adam",
        "[rank1]: ModuleNotFoundError: No module named 'deepspeed'",
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/work/w_imp_term.py", line 8, in <module>',
        "[rank0]:     dist.barrier()",
        "[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed "
        "by peer [127.0.0.1]:31137. This is typically caused by a remote worker crashing. Check the logs of the remote "
        "worker before reporting an error. GLHF!",
        TERMINATE,
        "W1206 09:37:51.040000 25267 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 25314 closing "
        "signal SIGTERM",
        "E1206 09:37:51.117000 25267 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -6) "
        "local_rank: 1 (pid: 25315) of binary: /venv/bin/python3",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "Root Cause (first observed failure):",
        "[0]:",
        "  exitcode  : -6 (pid: 25315)  (SIGABRT)",
        "  error_file: <N/A>",
        "  traceback : Signal 6 (SIGABRT) received by PID 25315",
    )
    assert (found.category, found.root_cause.line) == ("import_error", 6)


def test_a_terminate_with_no_traceback_above_stays_a_crash():
    found = _classify("[ RUN      ] Prefetcher.Shutdown", TERMINATE, "Aborted (core dumped)")
    assert (found.category, found.root_cause.text) == ("crash", TERMINATE)


def test_a_terminate_that_names_its_exception_stays_the_cause():
    found = _classify(*IMPORT_TRACEBACK[:-1], "ValueError: bad shard", "terminate called after throwing an instance of "
                      "'std::runtime_error'", "  what():  queue closed", "Aborted (core dumped)")
    assert found.category == "crash"
    assert found.root_cause.text.startswith("terminate called after throwing")


def test_a_process_pools_remote_traceback_is_the_cause_not_the_parents_reraise():
    remote = "FileNotFoundError: [Errno 2] No such file or directory: 'data/shard-0003.jsonl'"
    found = _classify(
        "concurrent.futures.process._RemoteTraceback: ",
        '"""',
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/concurrent/futures/process.py", line 261, in _process_worker',
        "    r = call_item.fn(*call_item.args, **call_item.kwargs)",
        '  File "/home/runner/work/trainer/trainer/parse.py", line 3, in parse',
        "    with open(path) as f:",
        remote,
        '"""',
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/home/runner/work/trainer/trainer/parse.py", line 7, in <module>',
        '    print(list(ex.map(parse, ["/etc/hostname", "data/shard-0003.jsonl"])))',
        '  File "/usr/lib/python3.11/concurrent/futures/_base.py", line 401, in __get_result',
        "    raise self._exception",
        remote,
        "##[error]Process completed with exit code 1.",
    )
    assert (found.category, found.root_cause.line) == ("unknown", 8)


def test_the_same_error_printed_by_two_spawned_children_is_named_where_it_was_first_printed():
    child = ("Traceback (most recent call last):",
             '  File "<string>", line 1, in <module>',
             '  File "/usr/lib/python3.11/multiprocessing/spawn.py", line 140, in _check_not_importing_main',
             "    raise RuntimeError('''",
             "RuntimeError: ",
             "        An attempt has been made to start a new process before the",
             "        current process has finished its bootstrapping phase.",
             "        ")
    found = _classify(*child, *child, "##[error]Process completed with exit code 1.")
    assert found.root_cause.line == 5


def test_a_pool_initializers_import_error_is_the_cause_not_the_broken_pool():
    found = _classify(
        "Exception in initializer:",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/concurrent/futures/process.py", line 246, in _process_worker',
        "    initializer(*initargs)",
        '  File "/home/runner/work/trainer/trainer/build_index.py", line 3, in init_worker',
        "    import onnxruntime_gpu_ext",
        "ModuleNotFoundError: No module named 'onnxruntime_gpu_ext'",
        "Traceback (most recent call last):",
        '  File "/home/runner/work/trainer/trainer/build_index.py", line 8, in <module>',
        "    print(list(ex.map(run, range(4))))",
        '  File "/usr/lib/python3.11/concurrent/futures/_base.py", line 401, in __get_result',
        "    raise self._exception",
        "concurrent.futures.process.BrokenProcessPool: A process in the process pool was terminated abruptly while the "
        "future was running or pending.",
    )
    assert (found.category, found.root_cause.line) == ("import_error", 7)


def test_a_broken_pool_whose_worker_said_nothing_stays_a_crash():
    found = _classify(
        "Traceback (most recent call last):",
        '  File "/home/runner/work/trainer/trainer/featurize.py", line 9, in <module>',
        "    print(list(ex.map(featurize, range(8))))",
        '  File "/usr/lib/python3.11/concurrent/futures/_base.py", line 401, in __get_result',
        "    raise self._exception",
        "concurrent.futures.process.BrokenProcessPool: A process in the process pool was terminated abruptly while the "
        "future was running or pending.",
    )
    assert (found.category, found.root_cause.line) == ("crash", 6)


def test_pytests_collection_error_is_the_cause_when_the_abort_follows_pytests_summary():
    found = _classify(
        "______________________ ERROR collecting tests/test_ops.py ______________________",
        "ImportError while importing test module '/home/runner/work/vision-ops/vision-ops/tests/test_ops.py'.",
        "Hint: make sure your test modules/packages have valid Python names.",
        "tests/test_ops.py:1: in <module>",
        "    from detectron2.layers import nms",
        "E   ModuleNotFoundError: No module named 'detectron2'",
        "=========================== short test summary info ============================",
        "ERROR tests/test_ops.py",
        "!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!",
        "1 error in 0.13s",
        TERMINATE,
        "Aborted (core dumped)",
    )
    assert (found.category, found.root_cause.line) == ("import_error", 2)


def test_a_programs_own_error_before_the_abort_is_named_and_the_exit_code_134_is_the_aborts():
    found = _classify(
        "##[group]Run python train.py", "##[endgroup]",
        "Traceback (most recent call last):",
        '  File "/home/runner/work/trainer/trainer/train.py", line 4, in <module>',
        "    raise ValueError(f\"unknown scheduler {cfg.get('scheduler')!r}; expected one of cosine, linear\")",
        "ValueError: unknown scheduler None; expected one of cosine, linear",
        TERMINATE,
        "/home/runner/work/_temp/6f1c2a9e.sh: line 1:  2837 Aborted                 (core dumped) python train.py",
        "##[error]Process completed with exit code 134.")
    assert (found.category, found.root_cause.line, found.retryable) == ("unknown", 6, False)


def test_a_code_failure_far_above_does_not_make_a_later_native_crash_a_shutdown_abort():
    # an advisory pytest run that failed and went on (`|| echo`), then, 150 lines on in the same step, a C++ test binary's
    # own abort: the crash is the job's failure (exit 134), not the shutdown of the Python process long gone
    from ci_triage.core.logs.matcher import relevant_lines

    log = "".join(f"2026-12-05T10:00:{i % 60:02d}.1234567Z {line}\n" for i, line in enumerate([
        "##[group]Run make check", "make check", "##[endgroup]",
        "python -m pytest tests/python || echo 'python tests failed (advisory)'",
        "FAILED tests/python/test_bindings.py::test_repr - AssertionError: assert 'P(1)' == 'P(1, 2)'",
        "1 failed, 120 passed in 4.02s", "python tests failed (advisory)",
        *[f"[{i:3d}/200] test_case_{i} ok" for i in range(150)],
        "./build/tests/worker_pool_test", "[ RUN      ] WorkerPool.ShutdownUnderLoad", TERMINATE,
        "/bin/bash: line 3:  4242 Aborted                 (core dumped) ./build/tests/worker_pool_test",
        "##[error]Process completed with exit code 134."], 1))
    for found in (classify(list(parse_log(log)), RULES), classify(relevant_lines(log, RULES), RULES)):
        assert (found.category, found.root_cause.text) == ("crash", TERMINATE)


def test_the_first_printing_is_looked_for_in_the_failed_step_only():
    # a dry run that printed the same error and went on (`|| echo`) passed: the failed step's own printing is the cause
    traceback = ["Traceback (most recent call last):", '  File "/home/runner/work/app/app/deploy.py", line 12, in <module>',
                 "    region = cfg['region']", "KeyError: 'region'"]
    found = _classify("##[group]Run python deploy.py --dry-run || echo skipped", "##[endgroup]", *traceback, "skipped",
                      "##[group]Run python deploy.py", "##[endgroup]", *traceback,
                      "##[error]Process completed with exit code 1.")
    assert (found.root_cause.line, found.root_cause.step) == (13, "Run python deploy.py")


# py-rattler 0.28.0 solving against a local channel, CPython 3.11.7: the interpreter segfaulted at exit after printing
# the SolverError (run here on 2026-12-06, sweep s13g; bash's report as a CI step prints it)
SOLVER_TRACEBACK = (
    "Traceback (most recent call last):",
    '  File "/home/runner/work/app/app/ci/solve_env.py", line 8, in <module>',
    "    asyncio.run(main())",
    '  File "/home/runner/work/app/app/.venv/lib/python3.11/site-packages/rattler/solver/solver.py", line 120, in solve',
    "    for solved_package in await py_solve(",
    "                          ^^^^^^^^^^^^^^^",
    "exceptions.SolverError: Cannot solve the request because of: acme-plugin * cannot be installed because there are "
    "no viable options:",
    "└─ acme-plugin 0.4.0 would require",
    "   └─ acme-core <2, for which no candidates were found.",
    "",
)
SEGFAULT = ("/home/runner/work/_temp/3f2a.sh: line 1: 18155 Segmentation fault      (core dumped) "
            "python ci/solve_env.py acme-core acme-plugin")


def test_a_segfault_at_interpreter_exit_after_the_traceback_is_not_the_cause():
    found = _classify("##[group]Run python ci/solve_env.py acme-core acme-plugin", "##[endgroup]", *SOLVER_TRACEBACK,
                      SEGFAULT, "##[error]Process completed with exit code 139.")
    assert found.category == "dependency"
    assert found.root_cause.text.startswith("exceptions.SolverError: Cannot solve the request")
    assert not found.retryable


def test_a_segfault_after_faulthandlers_dump_or_the_programs_own_output_stays_the_crash():
    faulthandler = ("Fatal Python error: Segmentation fault", "",
                    "Current thread 0x00007f3c1e9ff740 (most recent call first):",
                    '  File "/home/runner/work/app/app/ci/solve_env.py", line 5 in main', SEGFAULT)
    assert _classify(*faulthandler).category == "crash"
    later = _classify(*SOLVER_TRACEBACK, "retrying with the fallback channel", "loading native solver", SEGFAULT)
    assert later.category == "crash"
