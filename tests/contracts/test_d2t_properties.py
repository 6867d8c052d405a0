"""Property tests: the reference generator always passes, and every single corruption is
caught by the check that names it."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ci_triage.contracts.d2t import (
    ENGINE_IDS_IN_VOCAB,
    ENGINE_IDS_STRICTLY_INCREASING,
    FULL_VOCAB_IS_IDENTITY,
    HOLDS_OFFSETS,
    T2D_TRUE_AT_ENGINE_IDS,
    T2D_TRUE_COUNT,
    MappingKind,
    RepairStatus,
    VocabMapping,
    check_mapping,
    engine_target_ids,
    reference_mapping,
    repair_mapping,
)

PROPERTY_SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def used_token_sets(draw, min_size: int = 1) -> tuple[np.ndarray, int]:
    """(sorted used tokens, target vocab_size)."""
    vocab_size = draw(st.integers(min_value=max(min_size, 2), max_value=300))
    tokens = draw(
        st.sets(st.integers(0, vocab_size - 1), min_size=min_size, max_size=vocab_size)
    )
    return np.array(sorted(tokens), dtype=np.int64), vocab_size


def with_d2t(mapping: VocabMapping, d2t: np.ndarray) -> VocabMapping:
    return VocabMapping(d2t, mapping.t2d, mapping.vocab_size, mapping.draft_vocab_size)


@PROPERTY_SETTINGS
@given(used_token_sets())
def test_reference_generator_output_passes_every_check(case):
    used, vocab_size = case
    mapping = reference_mapping(used, vocab_size)
    report = check_mapping(mapping)
    assert report.ok, report.failed_checks
    assert report.kind is MappingKind.OFFSETS
    assert np.array_equal(engine_target_ids(mapping.d2t), used)
    assert repair_mapping(mapping).status is RepairStatus.ALREADY_OFFSETS


@PROPERTY_SETTINGS
@given(st.integers(min_value=2, max_value=400))
def test_full_vocabulary_reference_is_all_zeros(vocab_size):
    mapping = reference_mapping(np.arange(vocab_size), vocab_size)
    assert not mapping.d2t.any()
    assert check_mapping(mapping).check(FULL_VOCAB_IS_IDENTITY).passed


@PROPERTY_SETTINGS
@given(used_token_sets(min_size=2))
def test_arange_default_is_named_and_repaired(case):
    used, vocab_size = case
    mapping = reference_mapping(used, vocab_size)
    arange = np.arange(mapping.draft_vocab_size, dtype=np.int64)
    assume(not np.array_equal(mapping.d2t, arange))  # used tokens 0, 2, 4, ... are arange already
    corrupted = with_d2t(mapping, arange)
    report = check_mapping(corrupted)
    assert report.kind is MappingKind.ABSOLUTE_IDS
    assert not report.check(HOLDS_OFFSETS).passed
    assert "arange" in report.check(HOLDS_OFFSETS).detail or "t2d" in report.kind_reason


@PROPERTY_SETTINGS
@given(used_token_sets(min_size=2))
def test_absolute_ids_are_named_and_repaired_back_to_the_reference(case):
    used, vocab_size = case
    mapping = reference_mapping(used, vocab_size)
    assume(mapping.d2t.any())  # with all-zero offsets, offsets and absolute ids coincide
    corrupted = with_d2t(mapping, used.copy())
    report = check_mapping(corrupted)
    assert report.kind is MappingKind.ABSOLUTE_IDS
    assert not report.check(HOLDS_OFFSETS).passed
    outcome = repair_mapping(corrupted)
    assert outcome.status is RepairStatus.REPAIRED
    assert np.array_equal(outcome.d2t, mapping.d2t)


@PROPERTY_SETTINGS
@given(used_token_sets(), st.data())
def test_off_by_one_is_caught_by_t2d_true_at_engine_ids(case, data):
    used, vocab_size = case
    mapping = reference_mapping(used, vocab_size)
    # Shift one draft id onto a target inside the vocabulary that the draft does not use, so
    # only t2d can tell (a shift onto a used or out-of-range id is the next tests' case).
    candidates = [
        (draft_id, step)
        for draft_id in range(len(used))
        for step in (-1, 1)
        if 0 <= used[draft_id] + step < vocab_size and not mapping.t2d[used[draft_id] + step]
    ]
    assume(candidates)
    draft_id, step = data.draw(st.sampled_from(candidates))
    d2t = mapping.d2t.copy()
    d2t[draft_id] += step
    check = check_mapping(with_d2t(mapping, d2t)).check(T2D_TRUE_AT_ENGINE_IDS)
    assert not check.passed
    assert check.first_offending_draft_ids == (draft_id,)


@PROPERTY_SETTINGS
@given(used_token_sets(min_size=2), st.data())
def test_duplicate_is_caught_by_strictly_increasing(case, data):
    used, vocab_size = case
    mapping = reference_mapping(used, vocab_size)
    draft_id = data.draw(st.integers(1, len(used) - 1))
    d2t = mapping.d2t.copy()
    d2t[draft_id] = used[draft_id - 1] - draft_id  # same target as the previous draft id
    check = check_mapping(with_d2t(mapping, d2t)).check(ENGINE_IDS_STRICTLY_INCREASING)
    assert not check.passed
    assert draft_id in check.first_offending_draft_ids


@PROPERTY_SETTINGS
@given(used_token_sets(), st.data())
def test_id_past_the_vocabulary_is_caught_by_engine_ids_in_vocab(case, data):
    used, vocab_size = case
    mapping = reference_mapping(used, vocab_size)
    draft_id = data.draw(st.integers(0, len(used) - 1))
    past = data.draw(st.integers(vocab_size, vocab_size + 1000))
    d2t = mapping.d2t.copy()
    d2t[draft_id] = past - draft_id
    report = check_mapping(with_d2t(mapping, d2t))
    check = report.check(ENGINE_IDS_IN_VOCAB)
    assert not check.passed
    assert check.first_offending_draft_ids == (draft_id,)
    assert report.max_engine_target_id == past


@PROPERTY_SETTINGS
@given(used_token_sets(), st.data())
def test_t2d_missing_an_engine_id_is_caught(case, data):
    used, vocab_size = case
    mapping = reference_mapping(used, vocab_size)
    draft_id = data.draw(st.integers(0, len(used) - 1))
    t2d = mapping.t2d.copy()
    t2d[used[draft_id]] = False
    report = check_mapping(VocabMapping(mapping.d2t, t2d, vocab_size, len(used)))
    assert report.check(T2D_TRUE_AT_ENGINE_IDS).first_offending_draft_ids == (draft_id,)
    assert not report.check(T2D_TRUE_COUNT).passed


@PROPERTY_SETTINGS
@given(used_token_sets(), st.data())
def test_t2d_with_an_extra_token_is_caught_by_t2d_true_count(case, data):
    used, vocab_size = case
    mapping = reference_mapping(used, vocab_size)
    unused = np.flatnonzero(~mapping.t2d)
    assume(unused.size)
    t2d = mapping.t2d.copy()
    t2d[data.draw(st.sampled_from(unused.tolist()))] = True
    report = check_mapping(VocabMapping(mapping.d2t, t2d, vocab_size, len(used)))
    assert not report.check(T2D_TRUE_COUNT).passed
    assert report.check(T2D_TRUE_AT_ENGINE_IDS).passed


@PROPERTY_SETTINGS
@given(st.lists(st.integers(-5, 400), min_size=1, max_size=50), st.integers(1, 300),
       st.booleans())
def test_arbitrary_buffers_never_crash_and_repairs_always_pass(values, vocab_size, with_t2d):
    d2t = np.array(values, dtype=np.int64)
    t2d = np.zeros(vocab_size, bool) if with_t2d else None
    if t2d is not None:
        t2d[np.clip(d2t, 0, vocab_size - 1)] = True
    mapping = VocabMapping(d2t, t2d, vocab_size, len(values))
    report = check_mapping(mapping)
    if report.ok:  # verified independently of the checks: what the engine would index
        engine_ids = np.arange(len(values)) + d2t
        assert engine_ids.min() >= 0 and engine_ids.max() < vocab_size
        assert len(set(engine_ids.tolist())) == len(values)
    outcome = repair_mapping(mapping)
    if outcome.status is RepairStatus.REPAIRED:
        assert check_mapping(with_d2t(mapping, outcome.d2t)).ok
