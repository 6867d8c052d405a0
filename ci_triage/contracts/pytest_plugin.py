"""pytest plugin: ``pytest --d2t-checkpoint PATH`` turns the d2t contract into test cases.

Registered through the ``pytest11`` entry point, so any repository with ci-triage installed
can add exported drafter checkpoints to its own suite. For every checkpoint it adds one test
per contract check plus a round trip through the reference generator; all carry the ``d2t``
marker, so ``pytest -m d2t --d2t-checkpoint PATH`` runs only them.

Producers get the ``d2t_round_trip`` fixture: pass it the d2t your generator emits for a set
of used tokens and it asserts that the engine formula gives those tokens back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import numpy as np

    from ci_triage.contracts.d2t import CheckResult
    from ci_triage.contracts.d2t_io import LoadedMapping

MARKER = "d2t"
COLLECTOR_NAME = "d2t-contract"


class D2tContractViolation(AssertionError):
    """A check failed; reported as its one-line detail, not a traceback into the plugin."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("d2t", "d2t vocab-mapping contract (ci-triage)")
    group.addoption(
        "--d2t-checkpoint",
        action="append",
        default=[],
        dest="d2t_checkpoints",
        metavar="PATH",
        help="Check the d2t/t2d mapping of this checkpoint directory, .safetensors, .npz, "
        ".bin or .pt file as test cases. Repeatable.",
    )
    group.addoption(
        "--d2t-engine",
        choices=("vllm", "sglang", "any"),
        default="any",
        dest="d2t_engine",
        help="Which serving engine must be able to load each checkpoint (default: any, "
        "meaning every one of them).",
    )
    group.addoption(
        "--d2t-vocab-size",
        type=int,
        default=None,
        dest="d2t_vocab_size",
        help="Target vocabulary size when the checkpoint has no config.json.",
    )
    group.addoption(
        "--d2t-draft-vocab-size",
        type=int,
        default=None,
        dest="d2t_draft_vocab_size",
        help="Draft vocabulary size when the checkpoint has no config.json.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: d2t vocab-mapping contract checks (ci-triage)")


# tryfirst: the items must exist before -k, -m and --deselect filter the collection.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    checkpoints = config.getoption("d2t_checkpoints")
    if not checkpoints:
        return
    # An explicit nodeid: the session's is "", which would make every item "::d2t-contract::…".
    collector = D2tContractCollector.from_parent(
        session, name=COLLECTOR_NAME, nodeid=COLLECTOR_NAME
    )
    for checkpoint in checkpoints:
        items.extend(collector.items_for(checkpoint))


class D2tContractCollector(pytest.Collector):
    """Parent node of the generated items; collection itself happens in the hook above."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        return []

    def items_for(self, checkpoint: str) -> list[pytest.Item]:
        from ci_triage.contracts.d2t_engines import Engine, check_with_engines
        from ci_triage.contracts.d2t_io import (
            D2tInputError,
            SizeOverrides,
            checkpoint_facts,
            load_mapping,
        )

        path = Path(checkpoint)
        if not path.is_absolute():
            path = Path(self.config.invocation_params.dir) / path
        overrides = SizeOverrides(
            self.config.getoption("d2t_vocab_size"), self.config.getoption("d2t_draft_vocab_size")
        )
        try:
            loaded = load_mapping(path, overrides)
        except D2tInputError as error:
            return [self._item(D2tLoadItem, "loads", checkpoint, path, error=str(error))]
        engine = Engine(self.config.getoption("d2t_engine"))
        report = check_with_engines(checkpoint_facts(loaded), engine)
        generated = [self._item(D2tLoadItem, "loads", checkpoint, path, error=None)]
        # Every contract check, then one loads_in_<engine> check per engine chosen.
        for result in report.checks:
            item = self._item(
                D2tCheckItem,
                result.name,
                checkpoint,
                path,
                result=result,
                max_engine_target_id=report.max_engine_target_id,
                vocab_size=report.vocab_size,
            )
            if result.skipped:
                # A skip mark (rather than pytest.skip() in runtest) reports the checkpoint
                # as the location, not this plugin's source line.
                item.add_marker(pytest.mark.skip(reason=result.detail))
            generated.append(item)
        round_trip = self._item(D2tRoundTripItem, "reference_round_trip", checkpoint, path,
                                loaded=loaded)
        if not _has_usable_t2d(loaded):
            round_trip.add_marker(pytest.mark.skip(reason="no usable t2d: used tokens unknown"))
        generated.append(round_trip)
        return generated

    def _item(self, item_class: type[_D2tItem], test_name: str, checkpoint: str, path: Path,
              **fields: Any) -> _D2tItem:
        item = item_class.from_parent(self, name=f"{test_name}[{checkpoint}]", **fields)
        item.checkpoint_path = path
        item.add_marker(MARKER)
        return item


def _has_usable_t2d(loaded: LoadedMapping) -> bool:
    t2d = loaded.mapping.t2d
    return t2d is not None and t2d.ndim == 1 and t2d.shape[0] == loaded.mapping.vocab_size


class _D2tItem(pytest.Item):
    checkpoint_path: Path | None = None

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, D2tContractViolation):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        # Line 0: pytest needs a line number to place a skip; a checkpoint has none.
        return self.checkpoint_path or self.path, 0, f"{COLLECTOR_NAME}::{self.name}"


class D2tLoadItem(_D2tItem):
    def __init__(self, *, error: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        if self.error is not None:
            raise D2tContractViolation(f"cannot check: {self.error}")


class D2tCheckItem(_D2tItem):
    def __init__(
        self,
        *,
        result: CheckResult,
        max_engine_target_id: int | None,
        vocab_size: int,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.result = result
        self.max_engine_target_id = max_engine_target_id
        self.vocab_size = vocab_size

    def runtest(self) -> None:
        if not self.result.passed:
            message = f"{self.result.name}: {self.result.detail}"
            if self.result.first_offending_draft_ids:
                ids = ", ".join(str(i) for i in self.result.first_offending_draft_ids)
                message += f"\nfirst offending draft ids: [{ids}]"
            message += (
                f"\nmax engine target id = {self.max_engine_target_id} "
                f"(vocab_size={self.vocab_size})"
            )
            raise D2tContractViolation(message)


class D2tRoundTripItem(_D2tItem):
    """The used tokens recorded in t2d, run through the reference generator, must give back
    the stored d2t, and the engine formula must give back those tokens."""

    def __init__(self, *, loaded: LoadedMapping, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.loaded = loaded

    def runtest(self) -> None:
        import numpy as np

        from ci_triage.contracts.d2t import effective_d2t

        mapping = self.loaded.mapping
        used_tokens = np.flatnonzero(np.asarray(mapping.t2d))
        # No stored d2t: the round trip is of the zeros the engines use in its place.
        assert_round_trips(effective_d2t(mapping), used_tokens, mapping.vocab_size)


def assert_round_trips(d2t: np.ndarray, used_tokens: Any, vocab_size: int) -> None:
    """Assert ``d2t`` is what the reference generator emits for ``used_tokens``."""
    import numpy as np

    from ci_triage.contracts.d2t import engine_target_ids, offsets_from_used_tokens

    used = np.unique(np.asarray(used_tokens, dtype=np.int64))
    expected = offsets_from_used_tokens(used)
    stored = np.asarray(d2t)
    if stored.ndim != 1 or stored.shape[0] != expected.shape[0]:
        raise D2tContractViolation(
            f"d2t has shape {tuple(stored.shape)}, the reference generator emits "
            f"({expected.shape[0]},) for {used.shape[0]} used tokens"
        )
    differs = np.flatnonzero(stored.astype(np.int64) != expected)
    if differs.size:
        first = int(differs[0])
        raise D2tContractViolation(
            f"d2t differs from the reference offsets at {differs.size} draft ids; first: draft "
            f"id {first} stores {int(stored[first])}, the generator emits {int(expected[first])} "
            f"(used token {int(used[first])})\nfirst differing draft ids: "
            f"{[int(i) for i in differs[:10]]}"
        )
    engine_ids = engine_target_ids(stored)
    if not np.array_equal(engine_ids, used) or (used.size and used[-1] >= vocab_size):
        raise D2tContractViolation("engine target ids do not give back the used tokens")


@pytest.fixture
def d2t_round_trip() -> Callable[[Any, Any, int], None]:
    """``d2t_round_trip(d2t, used_tokens, vocab_size)`` fails unless the engine formula maps
    the producer's d2t back onto exactly the sorted used tokens."""
    return assert_round_trips

