"""Throughput of ci-triage's log classification against `grep -E -f` on the same log, same run.

    python benchmarks/classify_throughput.py [--size-mb 200] [--small-count 1000] [--big-mb 2000]

Measured in one run, each in a fresh process (issue 10.7):
- whole process: `ci-triage classify FILE` against `grep -E -f patterns FILE` on the generated log
  (ratio grep time / ours: >= 1.0 means at least as fast as grep), and the scan in process; grep at its
  best: the pattern list whole or in 2, 4 or 8 parts, one grep per part (GREP_SPLITS: with all of the
  rules' patterns in one list grep's matcher falls off a cliff), the fastest split counting;
- `--small-count` logs of `--small-kb` each in one call of each (ratio ours / grep time);
- peak private memory (Private_Clean + Private_Dirty from /proc/PID/smaps_rollup, sampled) and peak
  RSS of `ci-triage classify` on a `--big-mb` log;
- the pure-Python scanner (`--engine python`, what runs where hyperscan is missing) in process on
  the same log, once: its MB/s, and whether its result is the same as the default engine's.
Each `ci-triage` process runs with the built-in rules' cache (ci_triage/rules_cache.py) in the
work directory: warm (a file an earlier run wrote) and, for the whole-process and small-log figures
and the start-up on a one-line log, also cold (an empty cache directory per run, as on a fresh
machine: rules parsed and checked, hyperscan database compiled, cache file written). The targets are
judged on the warm figures; the cold ones are printed beside them.
Then each target is printed as met or MISSED.

Writes a synthetic GitHub Actions job log (timestamps, `##[group]` sections, pip/pytest/vLLM-like
noise, ANSI colours, lines that say "error" harmlessly, one torch DistNetworkError port clash near
the end) to a temporary file, then times
- `grep -E -f patterns.txt log` with the built-in rules' patterns converted to POSIX ERE, and
- ci-triage end to end: mmap the file, `relevant_lines`, `classify`, down to a Classification,
and prints both throughputs in MB/s, their ratio (ci-triage / grep; >= 1.0 means as fast as grep)
and ci-triage's peak memory relative to the log size. Each is timed a few times; the best run
counts, as page-cache and CPU-frequency noise only ever slow a run down.

Pattern conversion (Python `re` -> ERE), done per pattern; a pattern that cannot be converted is
left out of grep's list and reported:
- `(?P<name>...)` and `(?:...)` -> `(...)`; lazy `*?`, `+?`, `??` -> greedy (same lines match);
- `\\d` -> `[0-9]`, `\\s` -> `[[:space:]]`, `\\S` -> `[^[:space:]]`, `\\w` -> `[[:alnum:]_]`,
  `\\b` kept (GNU extension);
- `(?i)` -> each letter spelled as `[xX]`, so one grep run covers every pattern;
- `^` at the start or as `(^|...` (which ci-triage applies after the timestamp prefix) ->
  `^(TIMESTAMP )?`;
- lookarounds and backreferences cannot be converted: those patterns are skipped.
grep runs with LC_ALL=C (its fastest mode: bytes, no multibyte decoding).
"""

from __future__ import annotations

import argparse
import mmap
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (weight, line) pairs: what a vLLM-on-NPU CI job prints while installing and testing.
NOISE = [
    (8, "Collecting torch==2.5.1 (from -r requirements.txt (line 3))"),
    (8, "  Downloading torch-2.5.1-cp311-cp311-manylinux1_x86_64.whl.metadata (28 kB)"),
    (10, "Requirement already satisfied: numpy>=1.24 in /opt/conda/lib/python3.11/site-packages (from vllm==0.6.3) (1.26.4)"),
    (12, "tests/unit/test_sampler.py::test_sampler_error_handling[cpu-16] PASSED                [ 42%]"),
    (12, "tests/unit/test_sampler.py::test_top_p[cpu-4] PASSED                                   [ 43%]"),
    (8, "INFO 01-01 00:00:00 [engine.py:312] init engine (profile, create kv cache, warmup model) took 12.31 seconds"),
    (6, "INFO 01-01 00:00:00 [model_runner.py:1071] Loading model weights took 14.9888 GB"),
    (3, "WARNING 01-01 00:00:00 [config.py:1890] error_on_missing_keys is deprecated; errors will be raised by default"),
    (6, "(VllmWorkerProcess pid=12345) INFO 01-01 00:00:00 [multiproc_worker_utils.py:215] Worker ready; awaiting tasks"),
    (6, "Processed prompts: 100%|##########| 512/512 [00:31<00:00, 16.47it/s, est. speed input: 8432.35 toks/s]"),
    (3, "  error_count=0 retries=0 elapsed=0.12s"),
    (3, "\x1b[32m\u2713\x1b[0m built wheel for flash-attn (setup.py) ... \x1b[?25ldone"),
    (2, "\x1b[1m\x1b[31mno errors\x1b[0m found in 132 source files"),
    (2, "\x1b[36;1mpython -m pytest -x tests/unit\x1b[0m"),
    (3, '  File "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1736, in _wrapped_call_impl'),
    (2, "[rank0]:[W101 00:00:00.000000000 ProcessGroupNCCL.cpp:4115] Warning: ProcessGroupNCCL using NCCL_ASYNC_ERROR_HANDLING"),
    (1, "##[warning]Node.js 16 actions are deprecated. Please update the following actions to use Node.js 20"),
    (4, "copying build/lib/vllm/model_executor/layers/quantization/utils/marlin_utils_test.py -> build/bdist.linux-x86_64/wheel/vllm"),
    (1, "Successfully installed vllm-0.6.3 xformers-0.0.28 ray-2.38.0"),
    (3, ""),
    (1, "    assert torch.allclose(out, ref, atol=1e-3), f\"max error {err}\""),
    (1, "    raise RuntimeError(\"worker exited\")  # error path, not taken"),
]
ROOT_CAUSE = [
    "Traceback (most recent call last):",
    '  File "/home/runner/work/vllm/vllm/tests/distributed/test_pipeline_parallel.py", line 42, in test_pp',
    "    dist.init_process_group(backend='hccl', init_method=f'tcp://127.0.0.1:{port}')",
    "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
    "port: 35191, useIpv6: false, code: -98, name: [::]:35191, message: address already in use",
]


def _stamp(second: int, fraction: int) -> str:
    return f"2024-01-01T{second // 3600 % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}.{fraction:07d}Z "


def generate_log(path: Path, size: int, seed: int = 1) -> None:
    """About `size` bytes of log; the root cause sits ~2000 lines before the end."""
    rng = random.Random(seed)
    lines = [line for _, line in NOISE]
    weights = [weight for weight, _ in NOISE]
    written = 0
    second = 0
    section = 0
    with open(path, "w", encoding="utf-8", newline="") as out:
        out.write("\ufeff")
        while written < size - 300_000:
            second += 1
            block = []
            if second % 400 == 0:
                section += 1
                block.append(_stamp(second, 0) + "##[endgroup]\n")
                block.append(_stamp(second, 1) + f"##[group]Run python -m pytest -x tests/part{section}\n")
            for line in rng.choices(lines, weights, k=50):
                block.append(_stamp(second, rng.randrange(10**7)) + line + "\n")
            text = "".join(block)
            out.write(text)
            written += len(text.encode())
        second += 1
        out.write("".join(_stamp(second, 0) + line + "\n" for line in ROOT_CAUSE))
        tail = rng.choices(lines, weights, k=max(0, min(2000, (size - written) // 120)))
        out.write("".join(_stamp(second + 1, rng.randrange(10**7)) + line + "\n" for line in tail))
        out.write(_stamp(second + 2, 0) + "##[error]Process completed with exit code 1.\n")


# --- Python re -> POSIX ERE ---------------------------------------------------------------------

_TIMESTAMP_ERE = "([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z )?"
_CLASS_ESCAPES = {"d": "0-9", "s": "[:space:]", "w": "[:alnum:]_"}
_ESCAPES = {"d": "[0-9]", "s": "[[:space:]]", "S": "[^[:space:]]", "w": "[[:alnum:]_]", "W": "[^[:alnum:]_]"}


# A repeat bounded at 20 or more ({1,500}) left as it is makes grep's DFA spell out every count:
# about a second per small log with the rules' patterns (200 x 50 KB took grep 217 s). Left open
# ({1,}) grep selects a superset of the lines, faster: the baseline only gets harder to beat.
_WIDE_BOUND = re.compile(r"\{(\d+),(\d+)\}")


def _open_wide_bound(match: re.Match) -> str:
    return "{%s,}" % match[1] if int(match[2]) >= 20 else match[0]


def to_ere(source: str) -> str | None:
    """The ERE grep needs to select the same lines, or None when ERE cannot say it.

    Repeats bounded at 20 or more are left open (see _WIDE_BOUND)."""
    caseless = source.startswith("(?i)")
    if caseless:
        source = source[4:]
    source = re.sub(r"\(\?P<\w+>", "(", source).replace("(?:", "(")
    if re.search(r"\(\?|\\[1-9]", source):  # lookaround, backreference, other inline flags
        return None
    source = re.sub(r"([*+?])\?", r"\1", source)
    out, index, in_class = [], 0, False
    while index < len(source):
        char = source[index]
        if char == "\\" and index + 1 < len(source):
            escaped = source[index + 1]
            index += 2
            if in_class and escaped in _CLASS_ESCAPES:
                out.append(_CLASS_ESCAPES[escaped])
            elif in_class and escaped in "SWD":
                return None
            elif not in_class and escaped in _ESCAPES:
                out.append(_ESCAPES[escaped])
            elif escaped == "b" and not in_class:
                out.append("\\b")
            elif escaped == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", source[index:index + 2]):
                out.append(re.escape(chr(int(source[index:index + 2], 16))))
                index += 2
            elif escaped.isalnum():
                return None  # \A, \Z, \n ...: no ERE spelling
            else:
                out.append(escaped if in_class else "\\" + escaped)
            continue
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class and out and out[-1] != "[":
            in_class = False
        if caseless and char.isalpha() and not in_class:
            out.append(f"[{char.lower()}{char.upper()}]")
        else:
            out.append(char)
        index += 1
    converted = _WIDE_BOUND.sub(_open_wide_bound, "".join(out))
    if converted.startswith("^"):
        converted = "^" + _TIMESTAMP_ERE + converted[1:]
    return converted.replace("(^|", "(^" + _TIMESTAMP_ERE + "|")


def grep_patterns(rule_set) -> tuple[list[str], list[str]]:
    converted, skipped = [], []
    for rule in rule_set.rules:
        for pattern in rule.patterns:
            ere = to_ere(pattern.pattern)
            (converted if ere else skipped).append(ere or pattern.pattern)
    return converted, skipped


# --- measurements -----------------------------------------------------------------------------

def _peak_rss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def measure_ci_triage(log_path: Path, engine: str, repeat: int) -> dict:
    """Runs in a fresh interpreter so its peak memory is ci-triage's alone."""
    from ci_triage.core.logs.classify import classify
    from ci_triage.core.logs.matcher import matcher_for, relevant_lines
    from ci_triage.core.logs.rules import builtin_rules

    rules = builtin_rules()
    matcher = matcher_for(rules, engine)
    baseline = _peak_rss_bytes()
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        with open(log_path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            lines = relevant_lines(data, rules, (), engine)
            result = classify(lines, rules)
            kept = len(lines)
            del lines
        best = min(best, time.perf_counter() - started)
    return {
        "seconds": best,
        "engine": matcher.scanner.name if not matcher.exhaustive else "exhaustive",
        "category": result.category,
        "rule_id": result.rule_id,
        "root_line": result.root_cause.line if result.root_cause else None,
        "captures": result.captures,
        "fingerprint": result.fingerprint,
        "frames": len(result.frames),
        "matches": len(result.matches),
        "lines_kept": kept,
        "peak_rss": _peak_rss_bytes(),
        "baseline_rss": baseline,
    }


# grep -E's matcher falls off a cliff past some number of patterns: with all ~1,600 of the rules' patterns
# it took 427 s on the 200 MB log, each half of the list 1.1-1.2 s. So the baseline is grep at its best:
# the list in 1, 2, 4 or 8 consecutive parts, one grep per part run one after another (the lines of all
# parts together are the lines one grep would print), and the fastest split counts. A split whose run
# passes GREP_GIVE_UP seconds is given up (and printed as such): it could only have made grep slower.
GREP_SPLITS = (1, 2, 4, 8)
GREP_GIVE_UP = 60.0


def split_patterns(patterns: list[str], parts: int, workdir: Path) -> list[Path]:
    size = -(-len(patterns) // parts)
    paths = []
    for index in range(parts):
        path = Path(workdir, f"patterns-{parts}-{index}.txt")
        path.write_text("\n".join(patterns[index * size:(index + 1) * size]) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def measure_grep(files: list[str], pattern_files: list[Path], repeat: int) -> tuple[float | None, int]:
    """(best seconds of running grep once per pattern file over `files`, or None when a run passed
    GREP_GIVE_UP; matching lines of the last run)."""
    best = float("inf")
    lines = 0
    env = {**os.environ, "LC_ALL": "C"}
    for _ in range(repeat):
        started = time.perf_counter()
        lines = 0
        for patterns_path in pattern_files:
            left = GREP_GIVE_UP - (time.perf_counter() - started)
            try:
                done = subprocess.run(["grep", "-E", "-c", "-f", str(patterns_path), *files], capture_output=True,
                                      text=True, errors="replace", env=env, timeout=max(left, 0.1))
            except subprocess.TimeoutExpired:
                return None, 0
            if done.returncode > 1:
                raise SystemExit(f"grep failed: {done.stderr.strip()}")
            lines += sum(int(count.rsplit(":", 1)[-1]) for count in done.stdout.split())
        best = min(best, time.perf_counter() - started)
    return best, lines


def grep_at_best(files: list[str], patterns: list[str], workdir: Path, repeat: int) -> tuple[float, int, str]:
    """(seconds, matching lines, what each split took) of grep's fastest split of the pattern list."""
    timings = {}
    for parts in GREP_SPLITS:
        timings[parts] = measure_grep(files, split_patterns(patterns, parts, workdir), repeat)
    done = {parts: timing for parts, timing in timings.items() if timing[0] is not None}
    if not done:
        raise SystemExit(f"grep took over {GREP_GIVE_UP:.0f} s with every split of the patterns")
    parts = min(done, key=lambda key: done[key][0])
    said = ", ".join(f"{key} part{'s' if key > 1 else ''} " + (f"{seconds:.2f} s" if seconds is not None
                                                               else f"over {GREP_GIVE_UP:.0f} s (given up)")
                     for key, (seconds, _) in timings.items())
    return done[parts][0], done[parts][1], said


def _run_polled(command: list[str]) -> tuple[float, int, int, str]:
    """(seconds, peak RSS, peak private memory, stdout) of a command; private memory (the pages no
    other process or the page cache shares: Private_Clean + Private_Dirty + swap) is sampled every 20 ms."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak_private = 0
    rollup = Path(f"/proc/{process.pid}/smaps_rollup")
    while process.poll() is None:
        try:
            fields = dict(line.split(":", 1) for line in rollup.read_text().splitlines()[1:])
            private = sum(int(fields[k].split()[0]) for k in ("Private_Clean", "Private_Dirty", "Swap") if k in fields)
            peak_private = max(peak_private, private * 1024)
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    out, err = process.communicate()
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"{command[0]} failed: {err.decode(errors='replace')[-1000:]}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return seconds, usage, peak_private, out.decode(errors="replace")


def _best(command: list[str], repeat: int, env: dict | None = None, before=None) -> float:
    best = float("inf")
    for index in range(repeat):
        if before is not None:
            env = before(index)
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, env=env)
        best = min(best, time.perf_counter() - started)
        if done.returncode > 1:
            raise SystemExit(f"{command[0]} failed: {done.stderr.decode(errors='replace')[-1000:]}")
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=200.0, help="size of the generated log (default 200)")
    parser.add_argument("--small-count", type=int, default=1000, help="small logs in one call (default 1000)")
    parser.add_argument("--small-kb", type=float, default=50.0, help="size of each small log (default 50)")
    parser.add_argument("--big-mb", type=float, default=2000.0, help="log whose private memory is measured (default 2000)")
    parser.add_argument("--engine", choices=["auto", "hyperscan", "python"], default="auto")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side; the best counts")
    parser.add_argument("--python-mb", type=float, default=None,
                        help="also scan this many MB (default: the --size-mb log itself) with the pure-Python "
                             "scanner (`--engine python`), once, and compare its result; 0 skips it")
    parser.add_argument("--workdir", type=Path, help="where the logs are written (default: a temporary directory)")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # child process mode
    args = parser.parse_args(argv)

    if args.measure:
        import json

        print(json.dumps(measure_ci_triage(args.measure, args.engine, args.repeat)))
        return 0

    import json

    from ci_triage.core.logs.rules import builtin_rules

    if shutil.which("grep") is None:
        raise SystemExit("grep is not installed")
    ours = [sys.executable, "-m", "ci_triage", "classify", "--format", "json"]
    # The built-in rules' cache (ci_triage/rules_cache.py): "warm" runs read a cache file an earlier
    # run wrote, "cold" ones start from an empty cache directory each (a first run on a fresh machine:
    # the rules are parsed and checked, the hyperscan database compiled, and the file written). Both
    # are measured; neither touches the user's own cache.
    cache_env = "CI_TRIAGE_RULES_CACHE"
    if args.engine != "auto":
        print("note: the whole-process runs use the engine `auto` picks; --engine applies to the in-process run")
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ci-triage-bench-", dir=args.workdir) as workdir:
        log_path = Path(workdir, "job.log")
        warm_env = {**os.environ, cache_env: str(Path(workdir, "rules-cache-warm"))}
        cold_dirs = iter(range(10**6))

        def cold_env(_index: int) -> dict:
            return {**os.environ, cache_env: str(Path(workdir, f"rules-cache-cold-{next(cold_dirs)}"))}

        os.environ[cache_env] = warm_env[cache_env]  # this process and the --measure children: warm
        size = int(args.size_mb * 1_000_000)
        started = time.perf_counter()
        generate_log(log_path, size)
        size = log_path.stat().st_size
        print(f"log: {size / 1e6:.1f} MB, generated in {time.perf_counter() - started:.1f} s")

        patterns, skipped = grep_patterns(builtin_rules())
        print(f"patterns: {len(patterns)} converted to ERE, {len(skipped)} skipped (lookaround/backreference)")

        grep_seconds, grep_lines, grep_splits = grep_at_best([str(log_path)], patterns, Path(workdir), args.repeat)
        tiny = Path(workdir, "tiny.log")
        tiny.write_text(_stamp(0, 0) + "##[error]Process completed with exit code 1.\n", encoding="utf-8")
        subprocess.run([*ours, str(tiny)], capture_output=True, env=warm_env, check=True)  # writes the warm cache
        startup_warm = _best([*ours, str(tiny)], args.repeat, warm_env)
        startup_cold = _best([*ours, str(tiny)], args.repeat, before=cold_env)
        child = subprocess.run([sys.executable, __file__, "--measure", str(log_path), "--engine", args.engine,
                                "--repeat", str(args.repeat)], capture_output=True, text=True, check=True)
        inner = json.loads(child.stdout)
        whole = _best([*ours, str(log_path)], args.repeat, warm_env)
        whole_cold = _best([*ours, str(log_path)], args.repeat, before=cold_env)

        # hyperscan stays optional: the pure-Python scanner must find the same result (only slower).
        python_inner = auto_on_python = None
        python_mb = args.size_mb if args.python_mb is None else args.python_mb
        if python_mb > 0:
            python_path = log_path
            if python_mb != args.size_mb:
                python_path = Path(workdir, "python.log")
                generate_log(python_path, int(python_mb * 1_000_000))
            run = [sys.executable, __file__, "--measure", str(python_path), "--repeat", "1", "--engine"]
            python_inner = json.loads(subprocess.run([*run, "python"], capture_output=True, text=True,
                                                     check=True).stdout)
            python_inner["size"] = python_path.stat().st_size
            auto_on_python = inner if python_path == log_path else json.loads(
                subprocess.run([*run, args.engine], capture_output=True, text=True, check=True).stdout)

        small_dir = Path(workdir, "small")
        small_dir.mkdir()
        smalls = []
        for index in range(args.small_count):
            path = small_dir / f"job{index:04d}.log"
            generate_log(path, int(args.small_kb * 1000), seed=index)
            smalls.append(str(path))
        grep_small, _, grep_small_splits = grep_at_best(smalls, patterns, Path(workdir), args.repeat)
        ours_small = _best([*ours, *smalls], args.repeat, warm_env)
        ours_small_cold = _best([*ours, *smalls], args.repeat, before=cold_env)
        for path in smalls:
            os.unlink(path)

        big_path = Path(workdir, "big.log")
        generate_log(big_path, int(args.big_mb * 1_000_000))
        big_size = big_path.stat().st_size
        big_seconds, big_rss, big_private, big_out = _run_polled([*ours, str(big_path)])  # warm (environ)
        big_result = json.loads(big_out)[0]
        big_path.unlink()

    grep_rate = size / 1e6 / grep_seconds
    our_rate = size / 1e6 / inner["seconds"]
    print(f"grep -E -f, the pattern list in 1, 2, 4 or 8 parts (one grep each): {grep_splits}")
    print(f"grep -E -f at its best:  {grep_seconds:6.3f} s  {grep_rate:8.1f} MB/s  ({grep_lines} matches counted, per part)")
    print(f"ci-triage, in process: {inner['seconds']:6.3f} s  {our_rate:8.1f} MB/s  (engine {inner['engine']}, "
          f"{inner['lines_kept']} lines kept)")
    print(f"result:      {inner['category']} ({inner['rule_id']}) at line {inner['root_line']}, captures {inner['captures']}")
    print(f"ratio (ci-triage / grep throughput), in process: {our_rate / grep_rate:.2f}")
    print(f"start-up (whole process on a 1-line log): warm rules cache {startup_warm:.3f} s, "
          f"cold (empty cache directory) {startup_cold:.3f} s")
    print(f"ratio (grep time / ci-triage time), whole process `ci-triage classify FILE` vs `grep -E -f`, "
          f"{size / 1e6:.0f} MB: warm rules cache {grep_seconds / whole:.2f}  ({whole:.3f} s vs {grep_seconds:.3f} s); "
          f"cold {grep_seconds / whole_cold:.2f}  ({whole_cold:.3f} s)")
    print(f"{args.small_count} x {args.small_kb:.0f} KB logs in one call: ci-triage {ours_small:.3f} s warm, "
          f"{ours_small_cold:.3f} s cold, grep {grep_small:.3f} s, ci-triage / grep time = "
          f"{ours_small / grep_small:.2f} warm, {ours_small_cold / grep_small:.2f} cold (grep splits: {grep_small_splits})")
    print(f"{big_size / 1e9:.1f} GB log, whole process: {big_seconds:.1f} s, peak private memory "
          f"{big_private / 2**20:.0f} MiB, peak RSS {big_rss / 2**20:.0f} MiB (mmap'd file pages count in RSS "
          f"until released); result {big_result['category']}")
    print(f"in-process peak memory: {inner['peak_rss'] / 1e6:.0f} MB ({inner['baseline_rss'] / 1e6:.0f} MB interpreter "
          f"and imports)")
    same = None
    if python_inner is not None:
        fields = ("category", "rule_id", "root_line", "captures", "fingerprint", "frames", "matches", "lines_kept")
        same = all(python_inner[k] == auto_on_python[k] for k in fields)
        print(f"pure-Python scanner (--engine python), in process, {python_inner['size'] / 1e6:.0f} MB: "
              f"{python_inner['seconds']:.2f} s, {python_inner['size'] / 1e6 / python_inner['seconds']:.1f} MB/s; "
              f"result {'identical to' if same else 'DIFFERENT from'} engine {auto_on_python['engine']}'s "
              f"({', '.join(fields)})")
    # Issue 10.7's targets.
    targets = [
        (f"whole process grep time / ci-triage time >= 1.0 (warm rules cache; cold: {grep_seconds / whole_cold:.2f})",
         grep_seconds / whole >= 1.0),
        (f"{args.small_count} small logs in one call: ci-triage / grep time <= 3 (warm; cold: "
         f"{ours_small_cold / grep_small:.2f})", ours_small / grep_small <= 3.0),
        (f"private memory on the {big_size / 1e9:.1f} GB log <= 64 MiB", big_private <= 64 * 2**20),
        ("pure-Python scanner gives identical results", same is not False and same is not None),
    ]
    for name, met in targets:
        print(f"target {'met   ' if met else 'MISSED'}: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
