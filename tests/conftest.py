"""Shared fixtures: the bundled demo case, the local GitHub fake serving it, real clients and store."""

from __future__ import annotations

import os
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

# The built-in rules' cache (ci_triage/rules_cache.py) of the test processes and of every `ci-triage`
# they start: a directory of their own, set before collection (modules load rules at import).
if "CI_TRIAGE_RULES_CACHE" not in os.environ:
    import atexit
    import shutil
    import tempfile

    os.environ["CI_TRIAGE_RULES_CACHE"] = _RULES_CACHE = tempfile.mkdtemp(prefix="ci-triage-test-rules-cache-")
    atexit.register(shutil.rmtree, _RULES_CACHE, True)


@pytest.fixture(autouse=True, scope="session")
def _private_user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test, and no `ci-triage` subprocess a test starts, reads or writes the user's real cache
    (a store left there by another version of ci-triage would change what the tests see)."""
    cache = tmp_path_factory.mktemp("user-cache")
    saved = {name: os.environ.get(name) for name in ("XDG_CACHE_HOME", "CI_TRIAGE_STORE")}
    os.environ["XDG_CACHE_HOME"] = str(cache)
    os.environ.pop("CI_TRIAGE_STORE", None)
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


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
