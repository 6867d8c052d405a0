import sqlite3
import threading

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
    raw = b"2024-01-01T00:00:00.0000000Z line\n" * 10_000 + b"bad bytes \xff kept as sent\n"
    with Store(tmp_path / "s.sqlite3") as store:
        store.save_log("o/r", 7, LogStatus.AVAILABLE, raw)
        assert store.log("o/r", 7) == (LogStatus.AVAILABLE, raw)
        assert store.log("o/r", 8) is None
        store.save_log("o/r", 9, LogStatus.EXPIRED, None)
        assert store.log("o/r", 9) == (LogStatus.EXPIRED, None)
        stored = store._db.execute("SELECT length(content) FROM logs WHERE job_id = 7").fetchone()[0]
    assert stored < len(raw) / 20


def test_a_log_larger_than_memory_allows_comes_back_as_a_map(tmp_path, monkeypatch):
    import mmap

    import ci_triage.store as store_module

    monkeypatch.setattr(store_module, "_IN_MEMORY", 1 << 16)
    monkeypatch.setattr(store_module, "_PIECE", 1 << 12)
    raw = b"".join(b"2024-01-01T00:00:00.0000000Z line %d\n" % i for i in range(20_000))
    with Store(tmp_path / "s.sqlite3") as store:
        store.save_log("o/r", 7, LogStatus.AVAILABLE, raw)
        status, data = store.log("o/r", 7)
        assert status is LogStatus.AVAILABLE and isinstance(data, mmap.mmap) and data[:] == raw
        data.close()


def test_logs_stored_as_text_by_schema_4_read_back_after_the_migration(tmp_path):
    import zlib

    path = tmp_path / "s.sqlite3"
    Store(path).close()
    db = sqlite3.connect(path)  # a store as schema 4 left it: text, encoded
    db.execute("ALTER TABLE logs DROP COLUMN raw")
    for table in ("run_attempts", "job_categories", "etags", "syncs"):  # added by schema 6
        db.execute(f"DROP TABLE {table}")
    db.execute("PRAGMA user_version = 4")
    old = "2024-01-01T00:00:00.0000000Z caf\u00e9 \ufffd\n"
    db.execute("INSERT INTO logs VALUES ('o/r', 7, 'available', ?, ?, '2024-01-01')",
               (zlib.compress(old.encode()), len(old)))
    db.commit()
    db.close()
    with Store(path) as store:
        assert store.log("o/r", 7) == (LogStatus.AVAILABLE, old.encode())


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


def test_a_log_read_while_another_process_saves_it_again_is_read_whole(tmp_path):
    # Two deliveries of one event on one machine: one triage reads a job's log while another saves it again, which
    # replaces the row under a new rowid. Read outside one transaction, the blob's rowid could vanish between the
    # SELECT and the blob's opening ("no such rowid", an internal error in tests/test_act.py's five deliveries).
    path = tmp_path / "shared.sqlite3"
    raw = b"2026-12-06T10:00:00Z line\n" * 2000
    stop, saves, errors = threading.Event(), [], []

    def save_again() -> None:  # the other process: its own connection, in its own thread
        try:
            with Store(path) as writer:
                while not stop.is_set():
                    writer.save_log("o/r", 7, LogStatus.AVAILABLE, raw)
                    saves.append(1)
        except Exception as exc:  # noqa: BLE001 - reported below, not lost in the thread
            errors.append(exc)

    with Store(path) as reader:
        reader.save_log("o/r", 7, LogStatus.AVAILABLE, raw)
        thread = threading.Thread(target=save_again)
        thread.start()
        try:
            for _ in range(300):
                assert reader.log("o/r", 7) == (LogStatus.AVAILABLE, raw)
        finally:
            stop.set()
            thread.join()
    assert errors == [] and saves
