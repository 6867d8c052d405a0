"""`ci-triage --help` start-up against `python -c "import typer, rich"`, measured in the same run.

    python benchmarks/startup.py [--runs N]

Prints the best-of-N wall time of each and their ratio (issue 9's target: at most 1.3). The commands
run as a user runs them: the installed `ci-triage` script next to this interpreter.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path


def best_of(command: list[str], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    script = str(Path(sys.executable).with_name("ci-triage"))
    baseline = best_of([sys.executable, "-c", "import typer, rich"], runs)
    help_time = best_of([script, "--help"], runs)
    report_help = best_of([script, "report", "--help"], runs)
    print(f"python -c 'import typer, rich'  {baseline * 1000:7.1f} ms")
    print(f"ci-triage --help               {help_time * 1000:7.1f} ms   ratio {help_time / baseline:.2f}")
    print(f"ci-triage report --help        {report_help * 1000:7.1f} ms   ratio {report_help / baseline:.2f}")


if __name__ == "__main__":
    main()
