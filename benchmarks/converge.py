"""Issue 12 item 5's acceptance, measured: concurrent triages end with one rerun and one sticky comment.

    python benchmarks/converge.py [--reps 20] [--scenario five|bot] [--identity actions|pat]
                                  [--python /path/to/other/venv/bin/python] [--write-interval 0]

Per scenario (five concurrent `triage --apply` with separate stores on one failed run; a triage beside
a `/rerun` bot run) and identity (the Actions bot's installation token; a personal token), runs
`--reps` trials on a fresh local fake GitHub (tests/converge_trials.py) and prints, per cell, how many
trials ended with exactly one rerun, one sticky comment and its one rerun record, and the totals of
duplicates (reruns beyond one, sticky comments beyond one at the end), and how many sticky comments were
created and comments deleted on the way (a race's duplicates, merged and removed). `--python` runs the
subprocesses with another interpreter (the fake stays this one), e.g. a venv with main installed, to
measure before a change. Exit 1 when any
trial missed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.converge_trials import IDENTITIES, SCENARIOS, trial  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--scenario", choices=SCENARIOS, action="append")
    parser.add_argument("--identity", choices=IDENTITIES, action="append")
    parser.add_argument("--writers", type=int, default=5)
    parser.add_argument("--python", help="the interpreter (with ci-triage installed) the subprocesses run")
    parser.add_argument("--write-interval", type=float, default=0.0,
                        help="seconds between writes (CI_TRIAGE_WRITE_INTERVAL; ci-triage's default is 1)")
    args = parser.parse_args()
    missed = 0
    print(f"python: {args.python or sys.executable}; {args.reps} reps per cell; write interval {args.write_interval} s")
    print(f"{'scenario':<8} {'identity':<8} {'ok':>6} {'extra reruns':>13} {'extra stickies':>15} "
          f"{'no record':>10} {'errors':>7} {'created':>8} {'deleted':>8} {'s/trial':>8}")
    for scenario in args.scenario or SCENARIOS:
        for identity in args.identity or IDENTITIES:
            ok = extra_reruns = extra_stickies = no_record = errors = created = deleted = 0
            started = time.perf_counter()
            for _ in range(args.reps):
                result = trial(scenario, identity, writers=args.writers, python=args.python,
                               write_interval=args.write_interval)
                ok += result.ok
                extra_reruns += abs(result.reruns - 1)
                extra_stickies += abs(result.stickies - 1)
                no_record += result.records != 1
                errors += bool(result.failures)
                created += result.created
                deleted += result.deleted
                if result.failures:
                    print("  error:", result.failures[0].splitlines()[-1][:200], file=sys.stderr)
            missed += args.reps - ok
            per = (time.perf_counter() - started) / args.reps
            print(f"{scenario:<8} {identity:<8} {ok:>3}/{args.reps:<2} {extra_reruns:>13} {extra_stickies:>15} "
                  f"{no_record:>10} {errors:>7} {created:>8} {deleted:>8} {per:>8.1f}", flush=True)
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
