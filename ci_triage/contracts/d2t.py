"""The d2t contract: pure checks and repair of a drafter's draft -> target vocab mapping.

The convention is the one the serving engine applies (vLLM, ``llama_eagle3.py``)::

    target_ids = arange(draft_vocab_size) + d2t

so ``d2t`` holds OFFSETS and the identity mapping is all zeros, which is also what every
producer and engine read for docs/d2t.md defaults it to (EAGLE, SpecForge, speculators, vLLM).
``t2d`` is a boolean mask over the target vocabulary, true at every target id the draft covers.
The one known ``arange`` default was in the verl-speco EAGLE-3 and P-EAGLE draft models (the
report this suite started from); the engine reads it as draft id i -> target id 2*i, and for a
full-vocabulary draft it writes past the target vocabulary. Checkpoints exported with it keep
the bad buffer, which is what these checks find and :func:`repair_mapping` undoes.

A checkpoint may store no ``d2t`` at all (``VocabMapping.d2t is None``): the engines then use
the identity, which is right for a full-vocabulary draft and wrong for a reduced one.

Everything here is pure (arrays in, values out): loading lives in ``d2t_io``, printing in
``d2t_cli``. Checks are vectorised so a 151,936-token target vocabulary costs milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

import numpy as np

# How many offending draft ids a result carries; the count is always in the detail text.
OFFENDING_ID_LIMIT = 10

D2T_SHAPE_AND_DTYPE = "d2t_shape_and_dtype"
T2D_SHAPE_AND_DTYPE = "t2d_shape_and_dtype"
ENGINE_IDS_IN_VOCAB = "engine_ids_in_vocab"
ENGINE_IDS_STRICTLY_INCREASING = "engine_ids_strictly_increasing"
T2D_TRUE_COUNT = "t2d_true_count"
T2D_TRUE_AT_ENGINE_IDS = "t2d_true_at_engine_ids"
FULL_VOCAB_IS_IDENTITY = "full_vocab_is_identity"
HOLDS_OFFSETS = "holds_offsets"

# The order checks appear in every report (and in the docs).
CHECK_NAMES = (
    D2T_SHAPE_AND_DTYPE,
    T2D_SHAPE_AND_DTYPE,
    ENGINE_IDS_IN_VOCAB,
    ENGINE_IDS_STRICTLY_INCREASING,
    T2D_TRUE_COUNT,
    T2D_TRUE_AT_ENGINE_IDS,
    FULL_VOCAB_IS_IDENTITY,
    HOLDS_OFFSETS,
)


class MappingKind(str, Enum):
    """What a stored ``d2t`` buffer holds."""

    OFFSETS = "offsets"
    ABSOLUTE_IDS = "absolute_ids"
    INVALID = "invalid"


class RepairStatus(str, Enum):
    REPAIRED = "repaired"
    ALREADY_OFFSETS = "already_offsets"
    REFUSED = "refused"


@dataclass(frozen=True, eq=False)
class VocabMapping:
    """A drafter's vocabulary mapping as stored, plus the sizes from its config."""

    d2t: np.ndarray | None  # None: not stored; the engines then use all zeros
    t2d: np.ndarray | None
    vocab_size: int
    draft_vocab_size: int


def effective_d2t(mapping: VocabMapping) -> np.ndarray:
    """The offsets an engine uses: the stored d2t, or the zeros it defaults to without one
    (vLLM's zero-initialised ``draft_id_to_target_id``; SGLang's unset ``hot_token_id``)."""
    if mapping.d2t is None:
        return np.zeros(max(mapping.draft_vocab_size, 0), dtype=np.int64)
    return np.asarray(mapping.d2t)


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    detail: str
    first_offending_draft_ids: tuple[int, ...] = ()
    # A skipped check (no t2d, not a full-vocabulary draft) is not a failure.
    skipped: bool = False


@dataclass(frozen=True)
class MappingClassification:
    kind: MappingKind
    reason: str


@dataclass(frozen=True)
class MappingReport:
    kind: MappingKind
    kind_reason: str
    vocab_size: int
    draft_vocab_size: int
    max_engine_target_id: int | None
    checks: tuple[CheckResult, ...]

    @property
    def ok(self) -> bool:
        return all(check.passed for check in self.checks)

    def check(self, name: str) -> CheckResult:
        for result in self.checks:
            if result.name == name:
                return result
        raise KeyError(name)

    @property
    def failed_checks(self) -> tuple[CheckResult, ...]:
        return tuple(check for check in self.checks if not check.passed)


@dataclass(frozen=True, eq=False)
class RepairOutcome:
    status: RepairStatus
    detail: str
    # The new offsets in the dtype of the stored buffer; None unless status is REPAIRED.
    d2t: np.ndarray | None = None
    report_after: MappingReport | None = None


# --- the reference generator and the engine formula -------------------------------------------


def engine_target_ids(d2t: np.ndarray) -> np.ndarray:
    """The engine's ``arange(len(d2t)) + d2t``, in int64 so an int32 buffer cannot wrap around."""
    offsets = np.asarray(d2t).astype(np.int64, copy=False)
    return np.arange(offsets.shape[0], dtype=np.int64) + offsets


def offsets_from_used_tokens(used_tokens: Iterable[int] | np.ndarray) -> np.ndarray:
    """The reference generator: over the sorted used tokens, ``d2t[i] = used_tokens[i] - i``."""
    used = np.unique(np.asarray(used_tokens, dtype=np.int64))  # unique() also sorts
    return used - np.arange(used.shape[0], dtype=np.int64)


def reference_mapping(used_tokens: Iterable[int] | np.ndarray, vocab_size: int) -> VocabMapping:
    """The mapping a correct producer exports for a set of used target tokens."""
    used = np.unique(np.asarray(used_tokens, dtype=np.int64))
    if used.size == 0:
        raise ValueError("a draft vocabulary needs at least one used token")
    if used[0] < 0 or used[-1] >= vocab_size:
        raise ValueError(f"used tokens must lie in [0, {vocab_size})")
    t2d = np.zeros(vocab_size, dtype=bool)
    t2d[used] = True
    return VocabMapping(
        d2t=used - np.arange(used.shape[0], dtype=np.int64),
        t2d=t2d,
        vocab_size=vocab_size,
        draft_vocab_size=int(used.size),
    )


# --- helpers ----------------------------------------------------------------------------------


def _first_ids(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.flatnonzero(mask)[:OFFENDING_ID_LIMIT])


def _usable_d2t(mapping: VocabMapping) -> np.ndarray | None:
    d2t = effective_d2t(mapping)
    if d2t.ndim != 1 or not np.issubdtype(d2t.dtype, np.integer):
        return None
    return d2t.astype(np.int64, copy=False)


def _usable_t2d(mapping: VocabMapping) -> np.ndarray | None:
    """t2d as a bool mask, or None when absent or not shaped like the target vocabulary."""
    if mapping.t2d is None:
        return None
    t2d = np.asarray(mapping.t2d)
    if t2d.ndim != 1 or t2d.shape[0] != mapping.vocab_size:
        return None
    # Only a bool mask: EAGLE's training (traineagle3/cnets.py, Model.forward) indexes
    # ``target_head[..., self.t2d]``, which gathers ids 0 and 1 from a 0/1 integer tensor
    # instead of masking, and SpecForge's compact teacher refuses a non-bool t2d outright.
    return t2d if t2d.dtype == np.bool_ else None


def _is_valid_id_list(ids: np.ndarray, vocab_size: int) -> bool:
    """Strictly increasing target ids inside the vocabulary, as the reference generator emits."""
    if ids.size == 0:
        return False
    return bool(ids[0] >= 0 and ids[-1] < vocab_size and np.all(np.diff(ids) > 0))


def _t2d_marks_exactly(t2d: np.ndarray, ids: np.ndarray) -> bool:
    """True when ``ids`` (already a valid id list) are exactly the true entries of t2d."""
    return int(np.count_nonzero(t2d)) == ids.shape[0] and bool(np.all(t2d[ids]))


def _skipped(name: str, why: str) -> CheckResult:
    return CheckResult(name=name, passed=True, detail=f"skipped: {why}", skipped=True)


# --- classification ---------------------------------------------------------------------------


def classify_mapping(mapping: VocabMapping) -> MappingClassification:
    """Decide whether d2t holds offsets, legacy absolute ids, or neither.

    t2d is the tie-breaker when present: it records which target ids the producer meant.
    A mapping valid under both readings is offsets (that is the contract; never rewrite it),
    except ``arange`` itself, which no generator emits and is the known legacy default.
    """
    d2t = _usable_d2t(mapping)
    if (
        d2t is None
        or d2t.shape[0] != mapping.draft_vocab_size
        or d2t.shape[0] == 0
        or mapping.draft_vocab_size > mapping.vocab_size
    ):
        return MappingClassification(
            MappingKind.INVALID, "d2t does not have the shape and dtype the contract needs"
        )
    engine_ids = engine_target_ids(d2t)
    valid_as_offsets = _is_valid_id_list(engine_ids, mapping.vocab_size)
    valid_as_absolute = _is_valid_id_list(d2t, mapping.vocab_size)
    t2d = _usable_t2d(mapping)
    if t2d is not None:
        if valid_as_offsets and _t2d_marks_exactly(t2d, engine_ids):
            return MappingClassification(
                MappingKind.OFFSETS,
                "engine target ids are in range, strictly increasing and exactly the t2d entries",
            )
        if valid_as_absolute and _t2d_marks_exactly(t2d, d2t):
            return MappingClassification(
                MappingKind.ABSOLUTE_IDS,
                "d2t values themselves are exactly the t2d entries: "
                "absolute target ids stored where offsets belong",
            )
    if d2t.shape[0] >= 2 and np.array_equal(d2t, np.arange(d2t.shape[0])):
        return MappingClassification(
            MappingKind.ABSOLUTE_IDS,
            "d2t equals arange(draft_vocab_size), the legacy arange default: "
            "the engine reads it as draft id i -> target id 2*i",
        )
    if valid_as_offsets:
        return MappingClassification(
            MappingKind.OFFSETS, "engine target ids are in range and strictly increasing"
        )
    if valid_as_absolute:
        # d2t strictly increasing makes arange + d2t strictly increasing too, so the only way
        # the offsets reading fails here is by leaving the vocabulary.
        return MappingClassification(
            MappingKind.ABSOLUTE_IDS,
            "engine target ids leave the vocabulary while d2t itself is a sorted list of valid "
            "target ids: absolute ids stored where offsets belong",
        )
    return MappingClassification(
        MappingKind.INVALID, "neither valid offsets nor a valid sorted list of absolute target ids"
    )


# --- the checks -------------------------------------------------------------------------------


def check_d2t_shape_and_dtype(mapping: VocabMapping) -> CheckResult:
    if mapping.d2t is None:
        return _check_absent_d2t(mapping)
    d2t = np.asarray(mapping.d2t)
    problems = []
    if d2t.ndim != 1:
        problems.append(f"d2t has shape {tuple(d2t.shape)}, expected 1-D")
    elif d2t.shape[0] != mapping.draft_vocab_size:
        problems.append(
            f"d2t has length {d2t.shape[0]}, draft_vocab_size is {mapping.draft_vocab_size}"
        )
    if not np.issubdtype(d2t.dtype, np.integer):
        problems.append(f"d2t dtype {d2t.dtype} is not an integer type")
    if mapping.draft_vocab_size < 1 or mapping.vocab_size < 1:
        problems.append("vocab_size and draft_vocab_size must be positive")
    elif mapping.draft_vocab_size > mapping.vocab_size:
        problems.append(
            f"draft_vocab_size {mapping.draft_vocab_size} exceeds vocab_size {mapping.vocab_size}"
        )
    if problems:
        return CheckResult(D2T_SHAPE_AND_DTYPE, False, "; ".join(problems))
    return CheckResult(D2T_SHAPE_AND_DTYPE, True, f"1-D {d2t.dtype}, length {d2t.shape[0]}")


def _check_absent_d2t(mapping: VocabMapping) -> CheckResult:
    sizes = f"{mapping.draft_vocab_size} of {mapping.vocab_size} target tokens"
    if mapping.draft_vocab_size == mapping.vocab_size and mapping.vocab_size >= 1:
        return CheckResult(
            D2T_SHAPE_AND_DTYPE, True,
            f"no d2t stored: a full-vocabulary draft ({sizes}); engines use the identity "
            "(vLLM keeps its zero draft_id_to_target_id, SGLang leaves hot_token_id unset, "
            "EAGLE drops the buffer when the vocabularies match)",
        )
    return CheckResult(
        D2T_SHAPE_AND_DTYPE, False,
        f"no d2t stored for a reduced draft ({sizes}): engines would map draft id i to "
        "target id i; export the d2t the mapping generator made",
    )


def check_t2d_shape_and_dtype(mapping: VocabMapping) -> CheckResult:
    if mapping.t2d is None:
        return _skipped(T2D_SHAPE_AND_DTYPE, "no t2d")
    t2d = np.asarray(mapping.t2d)
    if t2d.ndim != 1 or t2d.shape[0] != mapping.vocab_size:
        return CheckResult(
            T2D_SHAPE_AND_DTYPE,
            False,
            f"t2d has shape {tuple(t2d.shape)}, expected ({mapping.vocab_size},) = vocab_size",
        )
    if _usable_t2d(mapping) is None:
        return CheckResult(
            T2D_SHAPE_AND_DTYPE, False,
            f"t2d dtype {t2d.dtype} is not bool: EAGLE's training indexes target_head[..., t2d], "
            "which gathers ids 0/1 from an integer tensor instead of masking",
        )
    return CheckResult(T2D_SHAPE_AND_DTYPE, True, f"1-D {t2d.dtype}, length {t2d.shape[0]}")


def check_engine_ids_in_vocab(engine_ids: np.ndarray, vocab_size: int) -> CheckResult:
    outside = (engine_ids < 0) | (engine_ids >= vocab_size)
    count = int(np.count_nonzero(outside))
    extremes = f"engine target ids span [{int(engine_ids.min())}, {int(engine_ids.max())}]"
    if count:
        return CheckResult(
            ENGINE_IDS_IN_VOCAB,
            False,
            f"{count} of {engine_ids.shape[0]} engine target ids outside [0, {vocab_size}); "
            f"{extremes}",
            _first_ids(outside),
        )
    return CheckResult(ENGINE_IDS_IN_VOCAB, True, f"{extremes}, inside [0, {vocab_size})")


def check_engine_ids_strictly_increasing(engine_ids: np.ndarray) -> CheckResult:
    # Draft id i offends when its target is not above draft id i-1's target: a duplicate
    # (two draft ids writing one logit) or an order the sorted generator never produces.
    not_above_previous = np.concatenate(([False], np.diff(engine_ids) <= 0))
    count = int(np.count_nonzero(not_above_previous))
    if count:
        first = int(np.flatnonzero(not_above_previous)[0])
        return CheckResult(
            ENGINE_IDS_STRICTLY_INCREASING,
            False,
            f"{count} draft ids map to a target id not above the previous one; first: draft id "
            f"{first} -> {int(engine_ids[first])}, draft id {first - 1} -> "
            f"{int(engine_ids[first - 1])}",
            _first_ids(not_above_previous),
        )
    return CheckResult(ENGINE_IDS_STRICTLY_INCREASING, True, "engine target ids strictly increase")


def check_t2d_true_count(t2d: np.ndarray, draft_vocab_size: int) -> CheckResult:
    true_count = int(np.count_nonzero(t2d))
    detail = f"t2d has {true_count} true entries, draft_vocab_size is {draft_vocab_size}"
    return CheckResult(T2D_TRUE_COUNT, true_count == draft_vocab_size, detail)


def check_t2d_true_at_engine_ids(t2d: np.ndarray, engine_ids: np.ndarray) -> CheckResult:
    inside = (engine_ids >= 0) & (engine_ids < t2d.shape[0])
    covered = np.zeros(engine_ids.shape[0], dtype=bool)
    covered[inside] = t2d[engine_ids[inside]]
    # Ids outside the vocabulary are engine_ids_in_vocab's finding; not repeated here.
    uncovered = inside & ~covered
    count = int(np.count_nonzero(uncovered))
    if count:
        first = int(np.flatnonzero(uncovered)[0])
        return CheckResult(
            T2D_TRUE_AT_ENGINE_IDS,
            False,
            f"t2d is false at {count} engine target ids; first: draft id {first} -> "
            f"target id {int(engine_ids[first])}",
            _first_ids(uncovered),
        )
    skipped_outside = engine_ids.shape[0] - int(np.count_nonzero(inside))
    note = (
        f" ({skipped_outside} ids outside the vocabulary not considered)" if skipped_outside else ""
    )
    return CheckResult(T2D_TRUE_AT_ENGINE_IDS, True, f"t2d is true at every engine target id{note}")


def check_full_vocab_is_identity(d2t: np.ndarray, vocab_size: int) -> CheckResult:
    if d2t.shape[0] != vocab_size:
        return _skipped(
            FULL_VOCAB_IS_IDENTITY,
            f"not a full-vocabulary draft ({d2t.shape[0]} of {vocab_size} target tokens)",
        )
    nonzero = d2t != 0
    count = int(np.count_nonzero(nonzero))
    if count:
        return CheckResult(
            FULL_VOCAB_IS_IDENTITY,
            False,
            f"a full-vocabulary draft must map to all zeros; {count} offsets are non-zero",
            _first_ids(nonzero),
        )
    return CheckResult(FULL_VOCAB_IS_IDENTITY, True, "full-vocabulary draft maps to all zeros")


def check_holds_offsets(classification: MappingClassification) -> CheckResult:
    passed = classification.kind is MappingKind.OFFSETS
    detail = f"{classification.kind.value}: {classification.reason}"
    return CheckResult(HOLDS_OFFSETS, passed, detail)


def check_mapping(mapping: VocabMapping) -> MappingReport:
    """Run every check; a check that cannot apply is reported as skipped, never dropped."""
    d2t = _usable_d2t(mapping)
    t2d = _usable_t2d(mapping)
    checks = [check_d2t_shape_and_dtype(mapping), check_t2d_shape_and_dtype(mapping)]
    max_engine_target_id = None
    if d2t is None or d2t.shape[0] == 0:
        for name in CHECK_NAMES[2:7]:
            checks.append(
                CheckResult(name, False, "not checked: d2t is not a non-empty 1-D integer tensor")
            )
    else:
        engine_ids = engine_target_ids(d2t)
        max_engine_target_id = int(engine_ids.max())
        checks.append(check_engine_ids_in_vocab(engine_ids, mapping.vocab_size))
        checks.append(check_engine_ids_strictly_increasing(engine_ids))
        if mapping.t2d is None:
            checks.append(_skipped(T2D_TRUE_COUNT, "no t2d"))
            checks.append(_skipped(T2D_TRUE_AT_ENGINE_IDS, "no t2d"))
        elif t2d is None:
            for name in (T2D_TRUE_COUNT, T2D_TRUE_AT_ENGINE_IDS):
                checks.append(_skipped(name, "t2d is not a mask over the target vocabulary"))
        else:
            checks.append(check_t2d_true_count(t2d, mapping.draft_vocab_size))
            checks.append(check_t2d_true_at_engine_ids(t2d, engine_ids))
        checks.append(check_full_vocab_is_identity(d2t, mapping.vocab_size))
    classification = classify_mapping(mapping)
    checks.append(check_holds_offsets(classification))
    return MappingReport(
        kind=classification.kind,
        kind_reason=classification.reason,
        vocab_size=mapping.vocab_size,
        draft_vocab_size=mapping.draft_vocab_size,
        max_engine_target_id=max_engine_target_id,
        checks=tuple(checks),
    )


# --- repair -----------------------------------------------------------------------------------


def repair_mapping(mapping: VocabMapping) -> RepairOutcome:
    """Rewrite legacy absolute ids into offsets, or refuse when that would be a guess.

    Only ABSOLUTE_IDS mappings are rewritten (``offsets = d2t - arange``, which is all zeros for
    the full-vocabulary arange default), and only when the rewritten mapping passes every check
    with the stored t2d unchanged. The new buffer keeps the stored dtype.
    """
    classification = classify_mapping(mapping)
    if classification.kind is MappingKind.OFFSETS:
        return RepairOutcome(
            RepairStatus.ALREADY_OFFSETS, f"nothing to repair: {classification.reason}"
        )
    if classification.kind is MappingKind.INVALID:
        return RepairOutcome(
            RepairStatus.REFUSED, f"cannot repair without guessing: {classification.reason}"
        )
    stored = effective_d2t(mapping)
    absolute_ids = stored.astype(np.int64)
    offsets = absolute_ids - np.arange(absolute_ids.shape[0], dtype=np.int64)
    repaired = offsets.astype(stored.dtype)
    if not np.array_equal(repaired.astype(np.int64), offsets):
        return RepairOutcome(
            RepairStatus.REFUSED, f"offsets do not fit the stored dtype {stored.dtype}"
        )
    report_after = check_mapping(
        VocabMapping(repaired, mapping.t2d, mapping.vocab_size, mapping.draft_vocab_size)
    )
    if not report_after.ok:
        failing = ", ".join(check.name for check in report_after.failed_checks)
        return RepairOutcome(
            RepairStatus.REFUSED,
            f"cannot repair without guessing: rewritten offsets would still fail {failing}",
            report_after=report_after,
        )
    return RepairOutcome(
        RepairStatus.REPAIRED,
        f"rewrote absolute ids into offsets ({classification.reason})",
        d2t=repaired,
        report_after=report_after,
    )
