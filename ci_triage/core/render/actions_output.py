"""What a triage run writes to the workflow run page: `$GITHUB_STEP_SUMMARY` and `$GITHUB_OUTPUT`.

Pure: the shell appends the returned text to the files the runner names.
File formats: https://docs.github.com/en/actions/writing-workflows/choosing-what-your-workflow-does/workflow-commands-for-github-actions#setting-an-output-parameter
(`name=value` lines; `name<<DELIMITER` ... `DELIMITER` for multi-line values) and #adding-a-job-summary
(Markdown, at most 1 MiB per step).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from ci_triage.core.render import markdown
from ci_triage.core.render.markdown import escape
from ci_triage.core.text import shown_document
from ci_triage.model import PullReport

MAX_STEP_SUMMARY_BYTES = 1024 * 1024
_CUT_NOTE = "\n\n… cut: a step summary holds at most 1 MiB.\n"


def step_summary(report: PullReport, actions_taken: Sequence[str]) -> str:
    """The PR report as Markdown, then what this run did (reruns requested, comment edited, nothing)."""
    lines = [markdown.render(report).rstrip("\n"), "", "### Actions taken", ""]
    lines += [f"- {escape(' '.join(action.split()))}" for action in actions_taken] or ["- none"]
    text = shown_document("\n".join(lines) + "\n")
    encoded = text.encode("utf-8")
    if len(encoded) <= MAX_STEP_SUMMARY_BYTES:
        return text
    room = MAX_STEP_SUMMARY_BYTES - len(_CUT_NOTE.encode("utf-8"))
    return encoded[:room].decode("utf-8", errors="ignore") + _CUT_NOTE


def _check_name(name: str) -> None:
    # The runner splits a line at the first `=` or `<<`, whichever comes first.
    if not name or any(bad in name for bad in ("=", "<<", "\n", "\r")) or name != name.strip():
        raise ValueError(f"not a usable output name: {name!r}")


def _delimiter(name: str, value: str) -> str:
    """A delimiter that does not occur in the value (the runner ends the value at a line equal to it).

    Derived from the value so the output is deterministic; a value cannot contain a hash of itself
    except by chance, and the counter covers that chance.
    """
    digest = hashlib.sha256(f"{name}\0{value}".encode()).hexdigest()[:24]
    counter = 0
    while True:
        candidate = f"ghadelimiter_{digest}" + (f"_{counter}" if counter else "")
        if candidate not in value:
            return candidate
        counter += 1


def github_output(values: Mapping[str, str]) -> str:
    """`values` in the $GITHUB_OUTPUT (or $GITHUB_ENV) file format, to append to that file."""
    lines: list[str] = []
    for name, value in values.items():
        _check_name(name)
        value = str(value)
        if "\n" in value or "\r" in value:
            delimiter = _delimiter(name, value)
            lines += [f"{name}<<{delimiter}", value.replace("\r\n", "\n"), delimiter]
        else:
            lines.append(f"{name}={value}")
    return "".join(line + "\n" for line in lines)
