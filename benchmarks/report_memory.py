"""Peak memory of `ci-triage report` when the failed job's log is 1 GB (issue 9.4).

    python benchmarks/report_memory.py [--size-mb 1000] [--pr 67] [--workdir /tmp/ci-triage-report-mem]

Builds a replay case from the bundled demo case: the log of the PR's first failed job gets
`--size-mb` of synthetic noise (benchmarks/classify_throughput.py's generator) in front of its own
text, so the real failure stays at the end. The case is written to the work directory (never into
the repository) with that log in a file beside it, the way `record` keeps a log over 8 MiB. Then it
measures, with /usr/bin/time -v:

1. `ci-triage report --replay CASE N --format json`: the whole process, which includes the local
   GitHub fake serving the case (it streams the big log from its file);
2. `ci-triage report --repo R N --format json` against the same fake run in a separate process
   (GITHUB_API_URL pointed at it): ci-triage's own peak, download + store + classify.

Both print the verdict's category for the big job, which must equal the category without padding.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from classify_throughput import NOISE, _stamp  # noqa: E402


def _padding(size: int, seed: int = 1):
    """Pieces of about `size` bytes of stamped noise lines."""
    rng = random.Random(seed)
    lines = [line for _, line in NOISE]
    weights = [weight for weight, _ in NOISE]
    written, second = 0, 0
    while written < size:
        second += 1
        piece = "".join(_stamp(second, rng.randrange(10**7)) + line + "\n" for line in rng.choices(lines, weights, k=2000))
        written += len(piece)
        yield piece


def build_case(path: Path, pr: int, size: int) -> tuple[str, int]:
    from ci_triage.demo.build import bundled_path
    from ci_triage.github.case import load_case

    case = load_case(bundled_path())
    head = next(p["head"]["sha"] for p in case["pulls"] if p["number"] == pr)
    runs = {run["id"] for run in case["runs"] if run["head_sha"] == head}
    job = next(j for j in case["jobs"] if j["run_id"] in runs and j["conclusion"] == "failure"
               and str(j["id"]) in case["logs"])
    key = str(job["id"])
    own = case["logs"][key]
    # A big log lives beside the case (as `record` writes one): neither the case reader nor the
    # fake holds it in memory, so the in-process figure is ci-triage's own.
    folder = path.with_name(path.name + ".logs")
    folder.mkdir(exist_ok=True)
    with open(folder / f"{key}.log", "w", encoding="utf-8") as out:
        for piece in _padding(size):
            out.write(piece)
        out.write(own)
    case["logs"][key] = {"file": f"{folder.name}/{key}.log"}
    path.write_text(json.dumps(case), encoding="utf-8")
    return case["repository"]["full_name"], job["id"]


def _timed(command: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1, 10):  # the report's exit codes say what it found
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}")
    peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    return seconds, peak_kb * 1024, done.stdout


def _category(stdout: str, job_id: int) -> str:
    found = re.search(r'"job_id": %d.*?"category": "([a-z_]+)"' % job_id, stdout, re.S)
    if not found:
        found = re.search(r'"id": %d.*?"category": "([a-z_]+)"' % job_id, stdout, re.S)
    return found.group(1) if found else "?"


_SERVE = """
import sys, time
from ci_triage.github.case import load_case
from ci_triage.demo.replay import FakeGitHub
with FakeGitHub(load_case(sys.argv[1]), token="bench-token") as fake:
    print(fake.base_url, flush=True)
    sys.stdin.read()
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=1000.0)
    parser.add_argument("--pr", type=int, default=67)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/ci-triage-report-mem"))
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    case_path = args.workdir / "big.case.json"
    started = time.perf_counter()
    repo, job_id = build_case(case_path, args.pr, int(args.size_mb * 1_000_000))
    print(f"case: {case_path} ({case_path.stat().st_size / 1e6:.1f} MB + log file), job {job_id}'s log padded by "
          f"{args.size_mb:.0f} MB, built in {time.perf_counter() - started:.0f} s")
    env = {**os.environ, "CI_TRIAGE_STORE": str(args.workdir / "store.sqlite3")}
    cli = [sys.executable, "-m", "ci_triage"]

    seconds, peak, out = _timed([*cli, "report", "--replay", str(case_path), "--pr", str(args.pr), "--format", "json",
                                 "--store", str(args.workdir / "replay.sqlite3")], env)
    print(f"report --replay (fake in-process): {seconds:6.1f} s, peak RSS {peak / 2**20:7.0f} MiB, "
          f"job {job_id}: {_category(out, job_id)}")

    server = subprocess.Popen([sys.executable, "-c", _SERVE, str(case_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        base_url = server.stdout.readline().strip()
        live_env = {**env, "GITHUB_API_URL": base_url, "GITHUB_TOKEN": "bench-token"}
        store = args.workdir / "live.sqlite3"
        store.unlink(missing_ok=True)
        seconds, peak, out = _timed([*cli, "report", "--repo", repo, "--pr", str(args.pr), "--format", "json",
                                     "--store", str(store)], live_env)
        print(f"report, fake in another process:   {seconds:6.1f} s, peak RSS {peak / 2**20:7.0f} MiB, "
              f"job {job_id}: {_category(out, job_id)} (download, store, classify)")
        seconds, peak, out = _timed([*cli, "report", "--repo", repo, "--pr", str(args.pr), "--format", "json",
                                     "--store", str(store)], live_env)
        print(f"  again, log from the store:       {seconds:6.1f} s, peak RSS {peak / 2**20:7.0f} MiB, "
              f"job {job_id}: {_category(out, job_id)}")
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
