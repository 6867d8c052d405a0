"""Fixture checkpoints shared by the d2t tests (built once per session, never mutated:
tests that write copy them first)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .checkpoint_builders import ALL_FIXTURES


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("d2t-checkpoints")
    return {name: build(root / name) for name, build in ALL_FIXTURES.items()}
