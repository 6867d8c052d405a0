"""The shipped index of the built-in rules (ci_triage/rules/builtin/index.json): write it, check it.

    python -m ci_triage.rules_index --write   # after editing any ci_triage/rules/builtin/*.toml
    python -m ci_triage.rules_index --check   # exit 1 when the shipped index is not the rule files'

The index holds what loading the built-in rule files computes that is the same on every Python and
machine: each rule's fields, and per pattern its flags, the hazard check's verdict, its needles and
required literals (core/logs/needles.py). A start-up whose rule files have the digest the index names
loads the rules from it without parsing TOML or any pattern (core/logs/rules.py `indexed_builtin`);
any other rule files are parsed and checked as without an index, so a stale index costs time, never
a wrong result. Everything here is computed by the full, strict loader (`parse_builtin`: every
check of a rule file, the hazard check included); tests/test_rules_index.py fails when the shipped
file differs from a fresh computation.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

COMMAND = "python -m ci_triage.rules_index --write"


def compute(files: list[tuple[str, bytes]] | None = None) -> dict[str, Any]:
    """The index of `files` (default: the built-in rule files), from a full parse and check."""
    from ci_triage.core.logs.needles import _analyse
    from ci_triage.core.logs.regex_guard import hazard
    from ci_triage.core.logs.rules import INDEX_FORMAT, builtin_files, files_digest, parse_builtin

    files = builtin_files() if files is None else files
    rule_set = parse_builtin(files)  # raises on anything the strict loader refuses
    index_of: dict[tuple[str, int], int] = {}
    patterns: list[list[Any]] = []

    def ids(compiled: tuple) -> list[int]:
        found = []
        for pattern in compiled:
            key = (pattern.pattern, pattern.flags)
            if key not in index_of:
                reason = hazard(pattern.pattern)
                if reason:  # parse_builtin refuses these already; an index never says "safe" wrongly
                    raise ValueError(f"pattern {pattern.pattern!r} is refused: {reason}")
                needles, required = _analyse(pattern)
                index_of[key] = len(patterns)
                patterns.append([pattern.pattern, pattern.flags, "safe",
                                 None if needles is None else sorted([text, caseless] for text, caseless in needles),
                                 list(required)])
            found.append(index_of[key])
        return found

    rules = [{"id": rule.id, "category": rule.category, "retryable": rule.retryable,
              "description": rule.description, "patterns": ids(rule.patterns), "exclude": ids(rule.exclude),
              "examples": list(rule.examples), "near_misses": list(rule.near_misses),
              "boilerplate": rule.boilerplate} for rule in rule_set.rules]
    return {"format": INDEX_FORMAT, "generated_by": COMMAND, "files": files_digest(files),
            "version": rule_set.version, "rules": rules, "patterns": patterns}


def render(document: dict[str, Any]) -> str:
    """The file's text: one rule and one pattern per line, so a rule edit is a readable diff."""
    head = {key: value for key, value in document.items() if key not in ("rules", "patterns")}
    lines = ["{"]
    lines += [f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}," for key, value in head.items()]
    for key in ("rules", "patterns"):
        items = document[key]
        lines.append(f"{json.dumps(key)}: [")
        lines += [json.dumps(item, ensure_ascii=False) + ("," if i < len(items) - 1 else "") for i, item in enumerate(items)]
        lines.append("]," if key == "rules" else "]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def index_path() -> Path:
    from ci_triage.core.logs.rules import INDEX_NAME, _builtin_folder

    return Path(str(_builtin_folder())) / INDEX_NAME


def problem() -> str | None:
    """Why the shipped index is not the rule files' (with the command that fixes it), or None."""
    try:
        shipped = json.loads(index_path().read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"{index_path()} is missing or unreadable ({exc}); run `{COMMAND}`"
    fresh = json.loads(render(compute()))
    if shipped == fresh:
        return None
    what = [key for key in fresh if shipped.get(key) != fresh[key]]
    return (f"{index_path()} is not what the built-in rule files give (differs in: {', '.join(what)}); "
            f"a rule file changed without regenerating it: run `{COMMAND}` and commit the file")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ci_triage.rules_index", description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="write the index from the rule files")
    action.add_argument("--check", action="store_true", help="exit 1 when the shipped index is stale (default)")
    args = parser.parse_args(argv)
    if args.write:
        text = render(compute())
        index_path().write_text(text, encoding="utf-8")
        print(f"wrote {index_path()} ({len(text.encode()) // 1024} KiB)")
        return 0
    found = problem()
    if found:
        print(found, file=sys.stderr)
        return 1
    print(f"{index_path()} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
