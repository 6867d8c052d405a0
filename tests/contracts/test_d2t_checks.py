"""Unit tests of the pure d2t checks, classification and repair."""

from __future__ import annotations

import time

import numpy as np
import pytest

from ci_triage.contracts.d2t_cli import report_to_dict
from ci_triage.contracts.d2t import (
    CHECK_NAMES,
    D2T_SHAPE_AND_DTYPE,
    ENGINE_IDS_IN_VOCAB,
    ENGINE_IDS_STRICTLY_INCREASING,
    FULL_VOCAB_IS_IDENTITY,
    HOLDS_OFFSETS,
    T2D_SHAPE_AND_DTYPE,
    T2D_TRUE_AT_ENGINE_IDS,
    T2D_TRUE_COUNT,
    MappingKind,
    RepairStatus,
    VocabMapping,
    check_mapping,
    classify_mapping,
    engine_target_ids,
    offsets_from_used_tokens,
    reference_mapping,
    repair_mapping,
)

SEED_USED_TOKENS = [3, 9, 17, 21]


def failed_names(mapping: VocabMapping) -> set[str]:
    return {check.name for check in check_mapping(mapping).failed_checks}


def test_reference_generator_matches_the_seed_repro():
    offsets = offsets_from_used_tokens(SEED_USED_TOKENS)
    assert offsets.tolist() == [3, 8, 15, 18]
    assert engine_target_ids(offsets).tolist() == SEED_USED_TOKENS


def test_reference_generator_sorts_and_deduplicates_used_tokens():
    assert offsets_from_used_tokens([21, 3, 9, 17, 9]).tolist() == [3, 8, 15, 18]


def test_reference_mapping_rejects_tokens_outside_the_vocabulary():
    with pytest.raises(ValueError):
        reference_mapping([3, 40], vocab_size=32)
    with pytest.raises(ValueError):
        reference_mapping([], vocab_size=32)


def test_full_vocabulary_zeros_pass_every_check():
    mapping = VocabMapping(np.zeros(32, np.int64), np.ones(32, bool), 32, 32)
    report = check_mapping(mapping)
    assert report.ok
    assert report.kind is MappingKind.OFFSETS
    assert report.max_engine_target_id == 31
    assert [check.name for check in report.checks] == list(CHECK_NAMES)


def test_legacy_arange_full_vocabulary_reproduces_the_seed_numbers():
    mapping = VocabMapping(np.arange(32, dtype=np.int64), None, 32, 32)
    report = check_mapping(mapping)
    assert report.kind is MappingKind.ABSOLUTE_IDS
    assert report.max_engine_target_id == 62
    in_vocab = report.check(ENGINE_IDS_IN_VOCAB)
    assert not in_vocab.passed
    assert in_vocab.first_offending_draft_ids == tuple(range(16, 26))
    assert "16 of 32" in in_vocab.detail
    assert "arange" in report.check(HOLDS_OFFSETS).detail
    assert not report.check(FULL_VOCAB_IS_IDENTITY).passed
    assert report.check(T2D_TRUE_COUNT).skipped and report.check(T2D_TRUE_COUNT).passed
    assert report.check(T2D_TRUE_COUNT).detail == "skipped: no t2d"


def test_legacy_arange_reduced_draft_without_t2d_is_recognised_although_in_range():
    # arange(8) + arange(8) = 0, 2, ..., 14 stays inside a 64-token vocabulary, so only the
    # legacy-default rule can tell; no generator emits targets 0, 2, 4, ...
    mapping = VocabMapping(np.arange(8, dtype=np.int64), None, 64, 8)
    report = check_mapping(mapping)
    assert report.kind is MappingKind.ABSOLUTE_IDS
    assert failed_names(mapping) == {HOLDS_OFFSETS}


def test_absolute_ids_whose_engine_ids_leave_the_vocabulary_are_named_absolute():
    used = np.array([3, 9, 17, 21, 30], dtype=np.int64)
    mapping = VocabMapping(used, None, 32, 5)
    classification = classify_mapping(mapping)
    assert classification.kind is MappingKind.ABSOLUTE_IDS
    assert "leave the vocabulary" in classification.reason


def test_t2d_decides_between_offsets_and_absolute_ids():
    used = [3, 9, 17, 21]
    t2d = reference_mapping(used, 64).t2d
    # Both readings stay inside 64 tokens; t2d says these values are the used tokens.
    absolute = VocabMapping(np.array(used, dtype=np.int64), t2d, 64, 4)
    assert classify_mapping(absolute).kind is MappingKind.ABSOLUTE_IDS
    assert T2D_TRUE_AT_ENGINE_IDS in failed_names(absolute)


def test_mapping_valid_under_both_readings_is_offsets_and_left_alone():
    mapping = VocabMapping(np.array([3, 8, 15, 18], dtype=np.int64), None, 64, 4)
    assert classify_mapping(mapping).kind is MappingKind.OFFSETS
    assert check_mapping(mapping).ok
    assert repair_mapping(mapping).status is RepairStatus.ALREADY_OFFSETS


def test_neither_reading_is_invalid():
    mapping = VocabMapping(np.array([5, 2, 40], dtype=np.int64), None, 32, 3)
    assert classify_mapping(mapping).kind is MappingKind.INVALID
    outcome = repair_mapping(mapping)
    assert outcome.status is RepairStatus.REFUSED
    assert "without guessing" in outcome.detail


@pytest.mark.parametrize(
    "d2t, expected_problem",
    [
        (np.zeros((2, 16), np.int64), "expected 1-D"),
        (np.zeros(31, np.int64), "length 31"),
        (np.zeros(32, np.float32), "not an integer type"),
    ],
)
def test_d2t_shape_and_dtype_problems_are_named(d2t, expected_problem):
    report = check_mapping(VocabMapping(d2t, None, 32, 32))
    check = report.check(D2T_SHAPE_AND_DTYPE)
    assert not check.passed
    assert expected_problem in check.detail
    assert report.kind is MappingKind.INVALID


def test_draft_larger_than_target_vocabulary_fails_shape_check():
    report = check_mapping(VocabMapping(np.zeros(40, np.int64), None, 32, 40))
    assert "exceeds vocab_size" in report.check(D2T_SHAPE_AND_DTYPE).detail


def test_t2d_of_wrong_length_fails_its_shape_check_and_skips_dependants():
    report = check_mapping(VocabMapping(np.zeros(32, np.int64), np.ones(31, bool), 32, 32))
    assert not report.check(T2D_SHAPE_AND_DTYPE).passed
    assert report.check(T2D_TRUE_COUNT).skipped


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.int8])
def test_integer_t2d_of_zeros_and_ones_is_refused(dtype):
    # EAGLE's training indexes target_head[..., t2d]: an integer t2d gathers ids 0/1.
    report = check_mapping(VocabMapping(np.zeros(32, np.int64), np.ones(32, dtype), 32, 32))
    shape_check = report.check(T2D_SHAPE_AND_DTYPE)
    assert not shape_check.passed and "not bool" in shape_check.detail
    assert report.check(T2D_TRUE_COUNT).skipped
    assert check_mapping(VocabMapping(np.zeros(32, np.int64), np.ones(32, bool), 32, 32)).ok


def test_duplicate_engine_id_names_the_second_draft_id():
    d2t = offsets_from_used_tokens(SEED_USED_TOKENS)
    d2t[2] = 7  # draft id 2 -> target 9, the same as draft id 1
    check = check_mapping(VocabMapping(d2t, None, 32, 4)).check(ENGINE_IDS_STRICTLY_INCREASING)
    assert not check.passed
    assert check.first_offending_draft_ids == (2,)
    assert "draft id 2 -> 9" in check.detail


def test_int32_buffer_cannot_wrap_around_in_the_engine_formula():
    d2t = np.full(4, np.iinfo(np.int32).max, dtype=np.int32)
    report = check_mapping(VocabMapping(d2t, None, 32, 4))
    assert report.max_engine_target_id == np.iinfo(np.int32).max + 3
    assert not report.check(ENGINE_IDS_IN_VOCAB).passed


def test_repair_of_full_vocabulary_arange_gives_zeros_in_the_stored_dtype():
    mapping = VocabMapping(np.arange(32, dtype=np.int32), np.ones(32, bool), 32, 32)
    outcome = repair_mapping(mapping)
    assert outcome.status is RepairStatus.REPAIRED
    assert outcome.d2t is not None
    assert outcome.d2t.dtype == np.int32
    assert not outcome.d2t.any()
    assert outcome.report_after is not None and outcome.report_after.ok


def test_repair_of_absolute_used_tokens_gives_the_reference_offsets():
    t2d = reference_mapping(SEED_USED_TOKENS, 32).t2d
    mapping = VocabMapping(np.array(SEED_USED_TOKENS, dtype=np.int64), t2d, 32, 4)
    outcome = repair_mapping(mapping)
    assert outcome.status is RepairStatus.REPAIRED
    assert outcome.d2t.tolist() == [3, 8, 15, 18]


def test_repair_refuses_when_t2d_disagrees_with_the_rewritten_offsets():
    # arange default, but t2d marks tokens that are neither reading's targets.
    t2d = np.zeros(64, bool)
    t2d[[1, 5, 6, 7]] = True
    mapping = VocabMapping(np.arange(4, dtype=np.int64), t2d, 64, 4)
    outcome = repair_mapping(mapping)
    assert outcome.status is RepairStatus.REFUSED
    assert T2D_TRUE_AT_ENGINE_IDS in outcome.detail


def test_json_shape_is_the_documented_one():
    report = check_mapping(VocabMapping(np.arange(32, dtype=np.int64), None, 32, 32))
    entry = report_to_dict(report)
    assert set(entry) == {"ok", "kind", "kind_reason", "vocab_size", "draft_vocab_size",
                          "max_engine_target_id", "checks"}
    assert entry["kind"] == "absolute_ids" and entry["ok"] is False
    assert set(entry["checks"][0]) == {"name", "passed", "skipped", "detail",
                                       "offending_draft_ids"}


def test_checking_a_qwen_sized_vocabulary_takes_well_under_a_second():
    rng = np.random.default_rng(0)
    used = np.sort(rng.choice(151_936, size=32_000, replace=False))
    mapping = reference_mapping(used, 151_936)
    check_mapping(mapping)  # warm-up: first numpy calls pay for lazy initialisation
    started = time.perf_counter()
    report = check_mapping(mapping)
    elapsed = time.perf_counter() - started
    assert report.ok
    assert elapsed < 0.25, f"check took {elapsed:.3f}s"
