import sqlite3

import pytest

from ci_triage.errors import StoreError
from ci_triage.model import LogStatus
from ci_triage.store import SCHEMA_VERSION, Store

try:  # absent before stores carried an application_id
    from ci_triage.store import APPLICATION_ID
except ImportError:
    APPLICATION_ID = 0x43495452


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
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(StoreError, match="newer than this ci-triage understands"):
        Store(path)


# --- foreign files and folders -------------------------------------------------------------------

def _snapshot(path):
    db = sqlite3.connect(path)
    try:
        return (path.read_bytes(), db.execute("PRAGMA user_version").fetchone()[0],
                sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master")))
    finally:
        db.close()


def test_another_programs_sqlite_file_is_refused_and_never_written(tmp_path):
    path = tmp_path / "notes.sqlite3"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    db.execute("INSERT INTO notes (text) VALUES ('mine')")
    db.execute("PRAGMA user_version = 7")
    db.commit()
    db.close()
    before = _snapshot(path)
    with pytest.raises(StoreError, match="not a ci-triage store") as caught:
        Store(path)
    assert "left untouched" in caught.value.one_line()
    assert _snapshot(path) == before


def test_a_file_with_another_application_id_is_refused(tmp_path):
    path = tmp_path / "other.db"
    db = sqlite3.connect(path)
    db.execute("PRAGMA application_id = 1234")
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    before = _snapshot(path)
    with pytest.raises(StoreError, match="not a ci-triage store"):
        Store(path)
    assert _snapshot(path) == before


def test_a_file_with_a_conflicting_table_is_not_half_migrated(tmp_path):
    # An unmarked file at version 0 with a table named like one of ours: refused before any write
    # (the old code created some tables and bumped user_version before failing).
    path = tmp_path / "s.sqlite3"
    db = sqlite3.connect(path)
    # `failures` is created by migration 2: the old code committed migration 1 first.
    db.execute("CREATE TABLE failures (something_else TEXT)")
    db.commit()
    db.close()
    before = _snapshot(path)
    with pytest.raises(StoreError):
        Store(path)
    assert _snapshot(path) == before


def test_a_store_in_a_missing_folder_is_an_error_and_creates_nothing(tmp_path):
    path = tmp_path / "no" / "such" / "folder" / "s.sqlite3"
    with pytest.raises(StoreError, match="does not exist"):
        Store(path)
    assert not (tmp_path / "no").exists()


def test_the_default_location_may_create_its_folder(tmp_path):
    path = tmp_path / "cache" / "ci-triage" / "store.sqlite3"
    Store(path, create_parent=True).close()
    assert path.is_file()


def test_a_new_store_carries_the_application_id_and_an_old_unmarked_one_is_adopted(tmp_path):
    path = tmp_path / "s.sqlite3"
    Store(path).close()
    assert sqlite3.connect(path).execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    # A store written before the id existed: ci-triage's tables at version 4, id 0.
    legacy = tmp_path / "legacy.sqlite3"
    Store(legacy).close()
    db = sqlite3.connect(legacy)
    db.execute("PRAGMA application_id = 0")
    db.execute("INSERT INTO audit (at, repo, action, target, detail) VALUES ('t', 'o/r', 'a', 'x', '{}')")
    db.commit()
    db.close()
    with Store(legacy) as store:
        assert len(store.audit_log()) == 1
    assert sqlite3.connect(legacy).execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
