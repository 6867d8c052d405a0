"""Regenerate the bundled demo case: `python -m ci_triage.demo.build`.

The case file is committed so `--demo` replays data, exactly as `--replay` does; a test checks that
this generator still produces it byte for byte.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

from ci_triage.demo.scenario import build_case
from ci_triage.github.case import dump_case

CASE_FILE = "verl-speco.case.json.gz"


def bundled_path() -> Path:
    return Path(str(resources.files("ci_triage.demo").joinpath(CASE_FILE)))


def main() -> None:
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else bundled_path()
    dump_case(build_case(), target)
    print(target)


if __name__ == "__main__":
    main()
