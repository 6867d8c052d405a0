import sqlite3

import pytest

from ci_triage.errors import StoreError
from ci_triage.model import LogStatus
from ci_triage.store import SCHEMA_VERSION, Store


def test_new_store_is_migrated_to_the_current_schema(tmp_path):
    path = tmp_path / "s.sqlite3"
    Store(path).close()
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    Store(path).close()  # opening again migrates nothing and loses nothing


def test_logs_are_stored_compressed_and_read_back(tmp_path):
    text = "2024-01-01T00:00:00.0000000Z line\n" * 10_000 + "bad bytes \udcff kept\n"
    with Store(tmp_path / "s.sqlite3") as store:
        store.save_log("o/r", 7, LogStatus.AVAILABLE, text)
        assert store.log("o/r", 7) == (LogStatus.AVAILABLE, text)
        assert store.log("o/r", 8) is None
        stored = store._db.execute("SELECT length(content) FROM logs").fetchone()[0]
    assert stored < len(text) / 20


def test_a_file_that_is_not_sqlite_is_reported_and_left_untouched(tmp_path):
    path = tmp_path / "s.sqlite3"
    original = b"this is not a database\n" * 100
    path.write_bytes(original)
    with pytest.raises(StoreError, match="not a readable ci-triage database") as caught:
        Store(path)
    assert "left untouched" in caught.value.one_line()
    assert path.read_bytes() == original


def test_a_store_from_a_newer_version_is_refused(tmp_path):
    path = tmp_path / "s.sqlite3"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(StoreError, match="newer than this ci-triage understands"):
        Store(path)
