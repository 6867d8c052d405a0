"""The fast path across chunk boundaries and through an mmap: line numbers counted only up to the
lines kept, the context block decoded in one go, and stamps carried from chunk to chunk must give
what the per-line path gives (issue 10.7: each newline is counted once)."""

from __future__ import annotations

import mmap
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_triage.core.logs import matcher
from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.matcher import relevant_lines
from tests.core.test_logparse_properties import ENGINES, RULES, stamped_line
from tests.core.test_matcher import straightforward

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(raw: bytes, engine: str, chunk: int) -> None:
    full = list(parse_log(raw.decode("utf-8", "replace")))
    expected = classify(full, RULES)
    saved = matcher._CHUNK
    matcher._CHUNK = chunk
    try:
        selected = relevant_lines(raw, RULES, engine=engine)
        assert selected.matches == straightforward(full, RULES)
        assert classify(selected, RULES) == expected
        with tempfile.TemporaryFile() as handle:
            handle.write(raw)
            handle.flush()
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                assert classify(relevant_lines(data, RULES, engine=engine), RULES) == expected
    finally:
        matcher._CHUNK = saved


@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(lines=st.lists(stamped_line(), min_size=1, max_size=60), chunk=st.sampled_from([1, 7, 64, 333]),
       bom=st.booleans(), newline_at_end=st.booleans())
def test_small_chunks_give_the_per_line_result(engine, lines, chunk, bom, newline_at_end):
    text = ("\ufeff" if bom else "") + "\n".join(lines) + ("\n" if newline_at_end else "")
    if text.strip("\ufeff"):
        _check(text.encode("utf-8", "surrogatepass"), engine, chunk)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_traceback_far_into_a_big_log_keeps_its_number_frames_and_stamp(engine):
    stamp = "2024-01-01T00:00:%02d.0000000Z "
    body = [stamp % (i % 60) + f"\x1b[32mnoise\x1b[0m {i}" if i % 3 else stamp % (i % 60) + f"noise {i}"
            for i in range(3000)]
    body[2500:2503] = [stamp % 1 + "Traceback (most recent call last):",
                       '  File "/home/runner/work/r/r/pkg/mod.py", line 3, in f',
                       stamp % 2 + "ModuleNotFoundError: No module named 'veomni'"]
    raw = ("\n".join(body) + "\n").encode()
    expected = classify(list(parse_log(raw)), RULES)
    assert expected.rule_id == "python-import-error" and expected.root_cause.line == 2503 and expected.frames
    for chunk in (4096, 50_000, 1 << 22):
        _check(raw, engine, chunk)
