"""Shared fixtures: the bundled demo case, the local GitHub fake serving it, real clients and store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ci_triage.demo.build import bundled_path
from ci_triage.demo.replay import FakeGitHub
from ci_triage.github.case import load_case
from ci_triage.github.client import Connection, GitHubClient
from ci_triage.store import Store

DEMO_REPO = "speco-demo/verl-speco"


@pytest.fixture(scope="session")
def demo_case() -> dict[str, Any]:
    return load_case(bundled_path())


@pytest.fixture
def fake(demo_case: dict[str, Any]) -> Iterator[FakeGitHub]:
    with FakeGitHub(demo_case) as server:
        yield server


@pytest.fixture
def client(fake: FakeGitHub) -> Iterator[GitHubClient]:
    github = GitHubClient(Connection(api_url=fake.base_url, token="test-token", retries=1, backoff_s=0.01),
                          sleep=lambda seconds: None)
    yield github
    github.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "store.sqlite3") as opened:
        yield opened
