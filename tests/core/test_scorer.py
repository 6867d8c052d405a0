"""The scorer: an unexplained log still names its likeliest causal line, so unlike failures differ."""

import pytest

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.matcher import relevant_lines
from ci_triage.core.logs.rules import builtin_rules
from ci_triage.core.logs.fingerprint import fingerprint
from ci_triage.core.logs.resemblance import MAX_CHARS, family_model, words
from ci_triage.core.logs.scorer import candidates

STAMP = "2024-01-01T00:00:00.0000000Z "
RULES = builtin_rules()


def _text(*lines: str) -> str:
    return "".join(STAMP + line + "\n" for line in lines)


def _classify(*lines: str):
    return classify(list(parse_log(_text(*lines))), RULES)


PYTHON_FAILURE = (
    "##[group]Run python tools/render.py", "##[endgroup]", "rendering 12 templates",
    "Traceback (most recent call last):", '  File "/home/runner/work/r/r/tools/render.py", line 40, in <module>',
    "    main()", '  File "/home/runner/work/r/r/tools/render.py", line 31, in main',
    "    raise KeyError(name)", "KeyError: 'footer'", "##[error]Process completed with exit code 1.",
)
GO_FAILURE = (
    "##[group]Run go run ./cmd/gen", "##[endgroup]", "generating",
    "panic: runtime error: index out of range [3] with length 3", "", "goroutine 1 [running]:",
    "main.main()", "\t/home/runner/work/r/r/cmd/gen/main.go:12 +0x1d", "exit status 2",
    "##[error]Process completed with exit code 1.",
)
NODE_FAILURE = (
    "##[group]Run node scripts/build.js", "##[endgroup]", "building",
    "/home/runner/work/r/r/scripts/build.js:3", "  throw new TypeError('config.entry must be a string');", "  ^",
    "TypeError: config.entry must be a string", "    at Object.<anonymous> (/home/runner/work/r/r/scripts/build.js:3:9)",
    "    at Module._compile (node:internal/modules/cjs/loader:1256:14)", "", "Node.js v18.20.4",
    "##[error]Process completed with exit code 1.",
)


@pytest.mark.parametrize("lines, expected", [
    (PYTHON_FAILURE, "KeyError: 'footer'"),
    (GO_FAILURE, "panic: runtime error: index out of range [3] with length 3"),
    (NODE_FAILURE, "TypeError: config.entry must be a string"),
])
def test_an_unexplained_failure_names_its_causal_line(lines, expected):
    result = _classify(*lines)
    assert result.category == "unknown" and result.rule_id is None and result.retryable is False
    assert result.root_cause.text == expected


# Real output made on Debian 12 (rustc 1.95, go 1.19, OpenJDK 17, ruby 3.1, node 20) for the r4b crash sweep.
RUST_MAIN_PANIC = (
    "", "thread 'main' (7470) panicked at src/main.rs:8:55:",
    'called `Result::unwrap()` on an `Err` value: Os { code: 2, kind: NotFound, message: "No such file or directory" }',
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
)
RUST_MAIN_PANIC_BACKTRACE = (
    "     Running `target/debug/rp unwrap`", "", "thread 'main' (7298) panicked at src/main.rs:7:55:",
    'called `Result::unwrap()` on an `Err` value: Os { code: 2, kind: NotFound, message: "No such file or directory" }',
    "stack backtrace:", "   0: __rustc::rust_begin_unwind",
    "             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5",
    "   4: rp::main", "             at ./src/main.rs:7:55", "   5: core::ops::function::FnOnce::call_once",
    "note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.",
)
# (the program's directory is named cmd/crash: its frames share the word with the crash family)
GO_PANIC_CRASH_PATH = (
    "panic: assignment to entry in nil map", "", "goroutine 1 [running]:", "main.main()",
    "\t/work/svc/cmd/crash/main.go:18 +0x33c", "exit status 2",
)
NODE_ESM_THROW = (
    "file:///work/js/rej.mjs:1",
    "async function fetchManifest() { throw new TypeError(\"Cannot read properties of undefined (reading 'version')\"); }",
    "                                       ^", "", "TypeError: Cannot read properties of undefined (reading 'version')",
    "    at fetchManifest (file:///work/js/rej.mjs:1:40)", "    at file:///work/js/rej.mjs:2:7",
    "    at ModuleJob.run (node:internal/modules/esm/module_job:325:25)",
    "    at async ModuleLoader.import (node:internal/modules/esm/loader:606:24)",
    "    at async asyncRunEntryPointWithESMLoader (node:internal/modules/run_main:117:5)", "", "Node.js v20.20.2",
)
JAVA_THREAD = (
    'Exception in thread "worker-3" java.lang.IllegalStateException: pool closed',
    "\tat App.lambda$main$0(App.java:16)", "\tat java.base/java.lang.Thread.run(Thread.java:840)",
)
RUBY_STACK = (
    "-e:1:in `f': stack level too deep (SystemStackError)", "\tfrom -e:1:in `f'", "\tfrom -e:1:in `f'",
    "\t ... 10068 levels...", "\tfrom -e:1:in `f'", "\tfrom -e:1:in `<main>'",
)


@pytest.mark.parametrize("lines, expected", [
    (GO_PANIC_CRASH_PATH, "panic: assignment to entry in nil map"),
    (NODE_ESM_THROW, "TypeError: Cannot read properties of undefined (reading 'version')"),
    (JAVA_THREAD, 'Exception in thread "worker-3" java.lang.IllegalStateException: pool closed'),
    (RUBY_STACK, "-e:1:in `f': stack level too deep (SystemStackError)"),
])
def test_a_runtime_uncaught_error_is_named_not_its_frames_or_advice(lines, expected):
    # A pasted excerpt (no step line): the log's end anchors the scorer. Stack frames and the advice under every
    # error of a kind are never the cause, even when their words resemble a family's (a path `cmd/crash`,
    # `node:internal/modules/esm/loader`, `run with RUST_BACKTRACE`).
    result = classify(list(parse_log("".join(line + "\n" for line in lines))), RULES)
    assert result.category == "unknown" and result.rule_id is None
    assert result.root_cause.text == expected


# torch_npu appends its error-code header under the exception (Ascend/pytorch docs, troubleshooting cases
# communication_operator_transfers_Non-contiguous_tensors.md and unsupported_op_called.md)
TORCH_NPU_DIST = (
    "Traceback (most recent call last):",
    '  File "distributed/_mode_cases/error_discontinuous_tensor.py", line 21, in <module>', "    discontinuous_tensor()",
    "RuntimeError: Tensors must be contiguous",
    "[ERROR] 2024-08-18-22:15:47 (PID:23232, Device:0, RankID:0) ERR02002 DIST invalid type",
)
TORCH_NPU_UNKNOWN = (
    "Traceback (most recent call last):",
    '  File "train.py", line 4, in <module>', "    mapping = state['d2t']",
    "KeyError: 'd2t'",
    "[ERROR] 2024-11-28-11:37:15 (PID:6547, Device:0, RankID:-1) ERR99999 UNKNOWN applicaiton exception",
)


@pytest.mark.parametrize("lines, expected", [
    (TORCH_NPU_DIST, "RuntimeError: Tensors must be contiguous"),
    (TORCH_NPU_UNKNOWN, "KeyError: 'd2t'"),
])
def test_torch_npus_error_code_header_loses_to_the_exception_it_annotates(lines, expected):
    result = classify(list(parse_log("".join(line + "\n" for line in lines))), RULES)
    assert result.category == "unknown" and result.rule_id is None
    assert result.root_cause.text == expected


@pytest.mark.parametrize("lines, expected", [
    (RUST_MAIN_PANIC, "thread 'main' (7470) panicked at src/main.rs:8:55:"),
    (RUST_MAIN_PANIC_BACKTRACE, "thread 'main' (7298) panicked at src/main.rs:7:55:"),
])
def test_the_scorer_ranks_a_rust_panic_above_its_advice_and_backtrace(lines, expected):
    # (the rules take a Rust panic line as a test's, 70-tests; the scorer's own reading is what a repository's
    # rule set without that rule, or a panic line the rules miss, falls back to)
    parsed = list(parse_log("".join(line + "\n" for line in lines)))
    ranked = candidates(parsed, [], set(), parsed[-1])
    assert ranked[0].line.text == expected
    advice = [s for s in ranked if s.line.text.startswith("note: ")]
    assert advice and all(s.score < 0 for s in advice)


def test_distinct_unexplained_failures_get_distinct_fingerprints():
    # On b3c93e9 all three had the same root cause, the exit-code line, and so one fingerprint.
    prints = {_classify(*lines).fingerprint for lines in (PYTHON_FAILURE, GO_FAILURE, NODE_FAILURE)}
    assert len(prints) == 3


def test_the_same_failure_on_another_run_keeps_its_fingerprint():
    other = tuple(line.replace("line 40", "line 41") for line in PYTHON_FAILURE)
    assert _classify(*PYTHON_FAILURE).fingerprint == _classify(*other).fingerprint


def test_the_traceback_frames_of_the_scorer_line_are_kept():
    result = _classify(*PYTHON_FAILURE)
    assert [(f.path, f.line) for f in result.frames] == [("tools/render.py", 40), ("tools/render.py", 31)]


def test_boilerplate_warnings_and_summaries_lose_to_the_error():
    result = _classify("npm WARN deprecated left-pad@1.0.0", "Error: Cannot find module './config.json'",
                       "npm ERR! code 1", "npm ERR! A complete log of this run can be found in: /x.log",
                       "##[error]Process completed with exit code 1.")
    assert result.root_cause.line == 2


def test_no_error_evidence_falls_back_to_the_first_error_line():
    result = _classify("doing things", "##[error]Process completed with exit code 2.")
    assert result.root_cause.line == 2 and result.category == "unknown"


@pytest.mark.parametrize("code, category, signal", [
    ("137", "host_oom", "Killed (SIGKILL)"), ("139", "crash", "Segmentation fault"),
    ("134", "crash", "Aborted"), ("143", "crash", "Terminated"),
    ("132", "crash", "Illegal instruction"), ("133", "crash", "Trace/breakpoint trap"),
    ("135", "crash", "Bus error"), ("136", "crash", "Floating point exception"),
])
def test_a_signal_exit_code_gives_the_category_when_nothing_better_is_found(code, category, signal):
    result = _classify("Installing build dependencies: started", f"Error: Process completed with exit code {code}.")
    assert result.category == category and result.retryable is True
    assert result.captures["signal"].startswith(signal)


def test_exit_code_one_means_nothing():
    assert _classify("##[error]Process completed with exit code 1.").category == "unknown"


def test_other_ci_systems_exit_lines_anchor_the_scorer():
    gitlab = _classify("$ make check", "ld: cannot find -lfoo", "ERROR: Job failed: exit code 1")
    assert gitlab.root_cause.text == "ld: cannot find -lfoo"


@pytest.mark.parametrize("engine", ["python", "hyperscan"])
def test_fast_path_and_full_path_pick_the_same_line(engine):
    pytest.importorskip("hyperscan") if engine == "hyperscan" else None
    noise = tuple(f"step {n}: ok" for n in range(900))
    text = _text(*noise, *PYTHON_FAILURE, *noise[:50])
    full = classify(list(parse_log(text)), RULES)
    fast = classify(relevant_lines(text, RULES, engine=engine), RULES)
    assert fast == full and full.root_cause.text == "KeyError: 'footer'"


def test_candidates_explain_their_scores():
    lines = list(parse_log(_text(*PYTHON_FAILURE)))
    result = classify(lines, RULES)
    best = candidates(lines, result.matches, {r.id for r in RULES.rules if r.boilerplate})[0]
    assert best.line.text == "KeyError: 'footer'"
    assert any("exception class" in reason for reason in best.reasons)
    assert any("ends a traceback" in reason for reason in best.reasons)


# --- a log with no anchor, and the resemblance to a family of rules' examples ----------------------

PASTED = ("collecting artifacts", "uploading report.xml", "stage 3/4 done",
          "download of model weights from the hub stalled: socket read timeout after 3 retries", "stage 4/4 skipped")


@pytest.mark.parametrize("engine", ["python", "hyperscan"])
def test_a_log_that_never_says_a_step_failed_is_read_back_from_its_end(engine):
    # Another CI system's log or a pasted excerpt has no exit-code line and no `##[error]`: before, no
    # line was a candidate and the root cause was None.
    pytest.importorskip("hyperscan") if engine == "hyperscan" else None
    text = "".join(line + "\n" for line in ("step ok",) * 700 + PASTED)
    full = classify(list(parse_log(text)), RULES)
    fast = classify(relevant_lines(text, RULES, engine=engine), RULES)
    assert fast == full
    assert full.root_cause.text == PASTED[3] and full.root_cause.line == 704


def test_the_end_anchor_reads_only_the_last_lines_and_a_log_without_text_has_no_cause():
    far = "".join(line + "\n" for line in ("ValueError: stale cache", *("ok",) * 500, "done"))
    assert classify(relevant_lines(far, RULES), RULES).root_cause is None
    for empty in ("", "\n", "\n\n"):
        assert classify(relevant_lines(empty, RULES), RULES) == classify(list(parse_log(empty)), RULES)


def test_the_family_a_line_resembles_is_a_hint_never_the_category():
    result = classify(list(parse_log("".join(line + "\n" for line in PASTED))), RULES)
    assert result.category == "unknown" and result.retryable is False and result.rule_id is None
    assert result.resembles == "network" and "hub" in result.resembling_words
    # The fingerprint is the unexplained failure's: a new example that changes the hint does not change it.
    assert result.fingerprint == fingerprint("unknown", PASTED[3])


def test_a_line_resembling_a_family_outranks_a_generic_error_shape():
    # The scorer alone prefers the wrapper's `Error:` line (an error shape, nearer the end); the line above
    # it words a known family's failure.
    lines = ("compiling", "ld.lld: undefined symbol: vkCreateInstance referenced by main.o",
             "Error: build step returned a non-zero status", "##[error]Process completed with exit code 1.")
    result = _classify(*lines)
    assert result.root_cause.text == lines[1] and result.resembles == "compile_error"


def test_an_exit_code_category_keeps_its_line_unless_the_resembling_line_is_of_its_family():
    # tests/corpus unknown-01 (testdrivenio/fastapi-tdd-docker#6): SIGKILL during pip install; the pip
    # line resembles a dependency failure, which does not explain a SIGKILL.
    result = _classify("Collecting black==20.8b1", "Defaulting to user installation because normal site-packages "
                       "is not writeable", "  Installing build dependencies: started",
                       "Error: Process completed with exit code 137.")
    assert result.category == "host_oom" and result.resembles is None
    assert result.root_cause.line == 4


def test_a_line_of_unknown_words_resembles_nothing():
    model = family_model(RULES)
    assert model.resemble("zyxxy quorbl frobnicated") is None
    assert model.resemble("") is None
    assert model.resemble("x" * 1_000_000) is None  # bounded: only the first MAX_CHARS are read


def test_resemblance_words_are_bounded_and_split_camel_case():
    assert words("ConnectionResetError: [Errno 104]") [:3] == ["connectionreseterror", "connection", "reset"]
    assert "104" not in words("errno 104.5") and "503" in words("HTTP 503")
    assert len(words("a " * 10_000 + "timeout")) <= MAX_CHARS


# --- the job's own scripting and configuration (sweep s7c: real bash 5.2, dash, zsh, GNU make 4.3, git 2.39, CPython
# 3.11, node 20 and npm 11 output made on Debian 12, 2026-12-06; the actions' messages in the format of their sources) --

@pytest.mark.parametrize("lines, expected", [
    # a shell's own errors name no class and often no word of failure
    (("##[group]Run set -u", "##[endgroup]", "Releasing ",
      "/home/runner/work/_temp/0e1f.sh: line 3: RELEASE_VERSION: unbound variable"),
     "/home/runner/work/_temp/0e1f.sh: line 3: RELEASE_VERSION: unbound variable"),
    (("Building", "/home/runner/work/_temp/0e1f.sh: line 1: Building for ${ env.TARGET_OS }: bad substitution"),
     "/home/runner/work/_temp/0e1f.sh: line 1: Building for ${ env.TARGET_OS }: bad substitution"),
    (("zsh:1: no matches found: build/*.o",), "zsh:1: no matches found: build/*.o"),
    (("/home/runner/work/_temp/0e1f.sh: line 1: $GITHUB_OUTPUTS: ambiguous redirect",),
     "/home/runner/work/_temp/0e1f.sh: line 1: $GITHUB_OUTPUTS: ambiguous redirect"),
    # make's own word on a recipe's command, above its `***` summary
    (("golangci-lint run ./...", "make: golangci-lint: No such file or directory", "make: *** [Makefile:2: lint] Error 127"),
     "make: golangci-lint: No such file or directory"),
    # a module's exception class named `Error`
    (("Traceback (most recent call last):", '  File "/home/runner/work/app/app/fmt.py", line 2, in <module>',
      '    locale.setlocale(locale.LC_ALL, "de_DE.UTF-8")', "locale.Error: unsupported locale setting"),
     "locale.Error: unsupported locale setting"),
    # git: the conflict or the rejected ref, not the summaries under it
    (("Auto-merging a.txt", "CONFLICT (content): Merge conflict in a.txt",
      "Automatic merge failed; fix conflicts and then commit the result."), "CONFLICT (content): Merge conflict in a.txt"),
    (("Rebasing (1/1)", "Auto-merging a.txt", "CONFLICT (content): Merge conflict in a.txt",
      "error: could not apply b2a5ecc... c", 'hint: Resolve all conflicts manually, mark them as resolved with',
      "Could not apply b2a5ecc... c"), "CONFLICT (content): Merge conflict in a.txt"),
    (("To ../bare", " ! [rejected]        HEAD -> main (fetch first)", "error: failed to push some refs to '../bare'",
      "hint: Updates were rejected because the remote contains work that you do"),
     " ! [rejected]        HEAD -> main (fetch first)"),
    # npm's error, not the suggestions and usage it prints under it
    (('npm error Missing script: "lint"', "npm error", "npm error Did you mean this?",
      "npm error   npm link # Symlink a package folder", "npm error", "npm error To see a list of scripts, run:",
      "npm error   npm run", "npm notice", "npm notice To update run: npm install -g npm@11.21.3",
      "npm error A complete log of this run can be found in: /home/runner/.npm/_logs/x-debug-0.log"),
     'npm error Missing script: "lint"'),
])
def test_a_scripts_own_error_is_named(lines, expected):
    result = _classify(*lines, "##[error]Process completed with exit code 1.")
    assert result.category == "unknown" and result.retryable is False
    assert result.root_cause.text == expected


@pytest.mark.parametrize("lines, expected", [
    (("##[group]Run peter-evans/create-pull-request@v6", "with:", "  commit-message: chore: update lockfile",
      "##[endgroup]", "##[error]Input required and not supplied: token"), 5),
    (("##[group]Run actions/setup-node@v4", "with:", "  cache: pnpm", "##[endgroup]",
      "Found in cache @ /opt/hostedtoolcache/node/20.18.1/x64",
      "##[error]Unable to locate executable file: pnpm. Please verify either the file path exists or the file can be "
      "found within a directory specified by the PATH environment variable."), 6),
    # the action's stack-traced error above its final annotation is still the first statement of it
    (("RequestError [HttpError]: Resource not accessible by integration",
      "    at /home/runner/work/_actions/actions/github-script/v7/dist/index.js:9537:21", "  status: 403,", "}",
      "##[error]Unhandled error: HttpError: Resource not accessible by integration"), 1),
])
def test_an_actions_own_error_annotation_is_a_cause(lines, expected):
    # An action's `core.setFailed` message is the only line that says why its step failed; the step's exit-code
    # annotation stays boilerplate (test_no_error_evidence_falls_back_to_the_first_error_line).
    result = _classify(*lines)
    assert result.category == "unknown" and result.root_cause.line == expected


def test_gitlab_command_echo_and_artifact_upload_are_not_causes():
    result = _classify("$ python3 scripts/publish.py", "Traceback (most recent call last):",
                       '  File "/builds/group/app/scripts/publish.py", line 2, in <module>',
                       "KeyError: 'CI_DEPLOY_TOKEN'", "Uploading artifacts for failed job",
                       "WARNING: dist/: no matching files. Ensure that the artifact path is relative to the working directory",
                       "ERROR: No files to upload", "ERROR: Job failed: exit code 1")
    assert result.root_cause.text == "KeyError: 'CI_DEPLOY_TOKEN'"


def test_passing_summaries_skip_reasons_and_glog_warnings_lose_to_the_error():
    # noise printed by passing steps before an unexplained failure (s7a false-positive sweep, real libtest 1.95,
    # pytest 9 and torch c10 warning formats)
    result = _classify("fatal: No names found, cannot describe anything.",
                       "[W socket.cpp:663] [c10d] The client socket has failed to connect to [localhost]:29500 "
                       "(errno: 99 - Cannot assign requested address).",
                       "SKIPPED [1] tests/test_net.py:28: flaky: connection refused on shared runners",
                       "test tests::test_gpu_oom ... ignored, needs a GPU: out of memory on CI runners",
                       "test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s",
                       "pyproject version: 1.2.0",
                       "Error: version mismatch between pyproject.toml (1.2.0) and tag (v1.2.1)",
                       "##[error]Process completed with exit code 1.")
    assert (result.category, result.root_cause.line) == ("unknown", 7)


def test_git_describe_without_a_tag_is_the_cause_when_it_is_the_failing_commands_last_word():
    # A version tool's fallback prints it in every shallow clone (above), but a release script's own
    # `git describe --tags` exits 128 on it (sweep s7c, real git 2.39 output).
    result = _classify("##[group]Run git describe --tags --exact-match", "git describe --tags --exact-match",
                       "shell: /usr/bin/bash -e {0}", "##[endgroup]",
                       "fatal: No names found, cannot describe anything.",
                       "##[error]Process completed with exit code 128.")
    assert (result.category, result.root_cause.line) == ("unknown", 5)


# --- a JVM trace deeper than the scorer's window (deep_traces.py) ---------------------------------

JVM_DEEP = ("##[group]Run java -cp build Resolver", "##[endgroup]", "Resolving type hierarchy",
            'Exception in thread "main" java.lang.StackOverflowError',
            *("\tat Resolver.resolve(Resolver.java:2)",) * 1024, "##[error]Process completed with exit code 1.")


@pytest.mark.parametrize("engine", ["python", "hyperscan"])
def test_a_jvm_trace_deeper_than_the_window_is_named_by_its_header(engine):
    # The JVM prints 1024 frames of a StackOverflowError (output of OpenJDK 17, sweep s10c): before, the window
    # above the exit line held only `at` frames and the exit line stood in as the root cause.
    pytest.importorskip("hyperscan") if engine == "hyperscan" else None
    text = _text(*("step ok",) * 30, *JVM_DEEP)
    full = classify(list(parse_log(text)), RULES)
    fast = classify(relevant_lines(text, RULES, engine=engine), RULES)
    assert full.root_cause.text == 'Exception in thread "main" java.lang.StackOverflowError'
    assert fast.root_cause == full.root_cause and full.category == "unknown"


def test_a_window_of_frames_not_under_a_header_keeps_its_choice():
    # frames that run to the log's start head nothing: the scorer's own choice stands
    lines = ("\tat Resolver.resolve(Resolver.java:2)",) * 600 + ("ValueError: bad input",
                                                                  "##[error]Process completed with exit code 1.")
    assert _classify(*lines).root_cause.text == "ValueError: bad input"
