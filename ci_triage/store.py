"""SQLite cache of what GitHub told us, plus the audit log of every action taken.

A completed job and its log never change, so once stored they are never fetched again. Runs are
stored per attempt: a rerun creates a new attempt whose jobs are fetched afresh. Logs are kept
zlib-compressed. The schema is migrated forward with PRAGMA user_version; a file this version
does not understand, or one that is not SQLite at all, is reported and left untouched.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import re
import sqlite3
import tempfile
import zlib
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ci_triage.core import serialize
from ci_triage.core.timefmt import iso
from ci_triage.errors import StoreError
from ci_triage.store_sync import SyncTables
from ci_triage.model import (
    ChangedFile,
    Classification,
    Job,
    LogStatus,
    Run,
    StoredFailure,
)

LogData = bytes | bytearray | mmap.mmap
_PIECE = 4 << 20  # logs are compressed and expanded this much at a time
_IN_MEMORY = 16 << 20  # a log larger than this is expanded into a temporary file and mapped


def _pieces(data: LogData):
    """Bounded pieces of a log; an mmap's pages are dropped from this process once read."""
    for lo in range(0, len(data), _PIECE):
        piece = data[lo:lo + _PIECE]
        if isinstance(data, mmap.mmap) and hasattr(data, "madvise"):
            start = lo - lo % mmap.PAGESIZE
            data.madvise(mmap.MADV_DONTNEED, start, min(len(data), lo + _PIECE) - start)
        yield piece


def mapped_file(handle) -> LogData:
    """The contents of an open binary file: bytes when small, else a read-only mmap of it (which
    outlives the file object; a temporary file's space is freed when the map is)."""
    size = handle.seek(0, 2)
    if size <= _IN_MEMORY:
        handle.seek(0)
        return handle.read()
    handle.flush()
    return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)

# Each entry moves the schema from version i to i + 1. Never edit one that has shipped; append.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE runs (
        repo TEXT NOT NULL, id INTEGER NOT NULL, attempt INTEGER NOT NULL,
        status TEXT NOT NULL, data TEXT NOT NULL, fetched_at TEXT NOT NULL,
        PRIMARY KEY (repo, id, attempt)
    );
    CREATE TABLE jobs (
        repo TEXT NOT NULL, id INTEGER NOT NULL, run_id INTEGER NOT NULL, run_attempt INTEGER NOT NULL,
        name TEXT NOT NULL, status TEXT NOT NULL, conclusion TEXT,
        started_at TEXT, completed_at TEXT, runner_name TEXT, labels TEXT NOT NULL,
        data TEXT NOT NULL, fetched_at TEXT NOT NULL,
        PRIMARY KEY (repo, id)
    );
    CREATE INDEX jobs_by_run ON jobs (repo, run_id, run_attempt);
    CREATE TABLE steps (
        repo TEXT NOT NULL, job_id INTEGER NOT NULL, number INTEGER NOT NULL, name TEXT NOT NULL,
        status TEXT NOT NULL, conclusion TEXT, started_at TEXT, completed_at TEXT,
        PRIMARY KEY (repo, job_id, number)
    );
    -- A row here says: every job of this completed run attempt is in `jobs`.
    CREATE TABLE job_sets (
        repo TEXT NOT NULL, run_id INTEGER NOT NULL, run_attempt INTEGER NOT NULL,
        PRIMARY KEY (repo, run_id, run_attempt)
    );
    CREATE TABLE pr_files (
        repo TEXT NOT NULL, pr INTEGER NOT NULL, head_sha TEXT NOT NULL, data TEXT NOT NULL,
        PRIMARY KEY (repo, pr, head_sha)
    );
    CREATE TABLE logs (
        repo TEXT NOT NULL, job_id INTEGER NOT NULL, status TEXT NOT NULL,
        content BLOB, size INTEGER NOT NULL, fetched_at TEXT NOT NULL,
        PRIMARY KEY (repo, job_id)
    );
    CREATE TABLE audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, repo TEXT NOT NULL,
        action TEXT NOT NULL, target TEXT NOT NULL, detail TEXT NOT NULL
    );
    """,
    # 2: every classified failure, so unknown signatures can be clustered across reports.
    """
    CREATE TABLE failures (
        repo TEXT NOT NULL, job_id INTEGER NOT NULL, run_id INTEGER NOT NULL, pr INTEGER,
        job_name TEXT NOT NULL, workflow TEXT NOT NULL, category TEXT NOT NULL, rule_id TEXT,
        fingerprint TEXT, root_cause TEXT, failed_at TEXT, html_url TEXT NOT NULL,
        PRIMARY KEY (repo, job_id)
    );
    CREATE INDEX failures_by_fingerprint ON failures (repo, fingerprint);
    """,
    # 3: check run annotations of completed jobs (they never change either).
    """
    CREATE TABLE annotations (
        repo TEXT NOT NULL, job_id INTEGER NOT NULL, data TEXT NOT NULL, fetched_at TEXT NOT NULL,
        PRIMARY KEY (repo, job_id)
    );
    """,
    # 4: claims ("rerun:<run>:<attempt>", "sticky:<pr>"): of two invocations on one machine, one acts.
    """
    CREATE TABLE claims (
        repo TEXT NOT NULL, key TEXT NOT NULL, claimed_at TEXT NOT NULL, claimant TEXT NOT NULL,
        PRIMARY KEY (repo, key)
    );
    """,
    # 5: logs keep GitHub's bytes as sent (raw = 1; size in bytes). Rows from before hold the text
    # decoded with U+FFFD for invalid UTF-8 and re-encoded (size in characters); both are zlib'd
    # UTF-8 and read the same way, so nothing is rewritten and nothing is lost.
    """
    ALTER TABLE logs ADD COLUMN raw INTEGER NOT NULL DEFAULT 0;
    """,
    # 6: runner health (issue 14). Every run attempt `sync` saw, with who triggered it (a rerun by the
    # bot or by a person); the category and captures of each classified failed job; the ETag and body
    # of every listing asked conditionally (a 304 reuses the body and costs no rate limit); the window
    # of each repository's last sync.
    """
    CREATE TABLE run_attempts (
        repo TEXT NOT NULL, run_id INTEGER NOT NULL, attempt INTEGER NOT NULL, workflow TEXT NOT NULL,
        event TEXT NOT NULL, head_sha TEXT NOT NULL, head_branch TEXT, pr INTEGER, triggering_actor TEXT,
        created_at TEXT NOT NULL, conclusion TEXT,
        PRIMARY KEY (repo, run_id, attempt)
    );
    CREATE TABLE job_categories (
        repo TEXT NOT NULL, job_id INTEGER NOT NULL, category TEXT NOT NULL, rule_id TEXT,
        captures TEXT NOT NULL, PRIMARY KEY (repo, job_id)
    );
    CREATE TABLE etags (
        key TEXT NOT NULL PRIMARY KEY, etag TEXT NOT NULL, body TEXT NOT NULL, fetched_at TEXT NOT NULL
    );
    CREATE TABLE syncs (
        repo TEXT NOT NULL PRIMARY KEY, since TEXT NOT NULL, started_at TEXT NOT NULL, finished_at TEXT
    );
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def _now() -> str:
    return datetime.now(UTC).isoformat()


# PRAGMA application_id ("a 32-bit signed big-endian integer ... to identify the file as belonging
# to the application", sqlite.org/pragma.html#pragma_application_id): "CITR". A file with another id,
# or without ours and without ci-triage's tables, belongs to another program and is never written to.
APPLICATION_ID = 0x43495452
_TABLES_BY_VERSION = tuple(
    frozenset(re.findall(r"CREATE TABLE (\w+)", "".join(MIGRATIONS[:version])))
    for version in range(len(MIGRATIONS) + 1)
)


class Store(SyncTables):
    def __init__(self, path: Path, *, create_parent: bool = False) -> None:
        """Open (or create) the store at `path`. A missing folder is an error unless `create_parent`
        (the default location in the user cache directory, which ci-triage owns)."""
        self.path = Path(path)
        if not self.path.parent.is_dir():
            if not create_parent:
                raise StoreError(f"store {self.path}: the folder {self.path.parent} does not exist",
                                 hint="Create it, or pass --store with a path in an existing folder.")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the folder of store {self.path}: {exc.strerror or exc}") from None
        if self.path.exists() and not self.path.is_file():
            raise StoreError(f"store {self.path} is not a file", hint="Pass --store with a file path.")
        try:
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._db.execute("PRAGMA busy_timeout = 30000")
            # Only reads until the file is known to be ours: a foreign file is never changed. The three
            # reads are one snapshot: another process creating the store between them (its tables
            # committed after our read of user_version) made a new store look foreign.
            self._db.execute("BEGIN")
            try:
                version = self._db.execute("PRAGMA user_version").fetchone()[0]
                application_id = self._db.execute("PRAGMA application_id").fetchone()[0]
                tables = {row[0] for row in self._db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
            finally:
                if self._db.in_transaction:
                    self._db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            self._close_quietly()
            raise StoreError(
                f"store {self.path} is not a readable ci-triage database ({exc})",
                hint="It was left untouched; move it aside or pass --store to use another file.",
            ) from None
        except OSError as exc:
            self._close_quietly()
            raise StoreError(f"cannot open store {self.path}: {exc.strerror or exc}") from None
        self._check_ownership(version, application_id, tables)
        if version > SCHEMA_VERSION:
            self._close_quietly()
            raise StoreError(
                f"store {self.path} has schema version {version}, newer than this ci-triage understands "
                f"({SCHEMA_VERSION})",
                hint="Upgrade ci-triage or pass --store to use another file.",
            )
        self._migrate(version, stamp=application_id != APPLICATION_ID)

    def _close_quietly(self) -> None:
        with contextlib.suppress(Exception):
            self._db.close()

    def _check_ownership(self, version: int, application_id: int, tables: set[str]) -> None:
        """Ours: our application_id; or an empty file; or (stores made before the id) no id, a schema
        version ci-triage has had, and exactly the tables of that version."""
        if application_id == APPLICATION_ID:
            return
        if application_id == 0 and version == 0 and not tables:
            return
        if application_id == 0 and 1 <= version <= SCHEMA_VERSION and tables == _TABLES_BY_VERSION[version]:
            return
        if application_id == 0 and version > SCHEMA_VERSION and tables >= _TABLES_BY_VERSION[SCHEMA_VERSION]:
            return  # a newer ci-triage's store from before the id: refused below as newer
        self._close_quietly()
        owner = f"application_id {application_id}" if application_id else \
            f"user_version {version}, tables {', '.join(sorted(tables)) or 'none'}"
        raise StoreError(f"store {self.path} is not a ci-triage store ({owner})",
                         hint="It was left untouched; pass --store with another file.")

    def _migrate(self, version: int, stamp: bool) -> None:
        """Every pending migration in one transaction: a failure leaves the file as it was."""
        if version >= SCHEMA_VERSION and not stamp:
            return
        try:
            self._db.execute("BEGIN IMMEDIATE")
            # Another process may have migrated meanwhile.
            current = self._db.execute("PRAGMA user_version").fetchone()[0]
            for target, script in enumerate(MIGRATIONS[current:], start=current + 1):
                for statement in script.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {target}")
            self._db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            self._db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            self._close_quietly()
            raise StoreError(f"cannot migrate store {self.path} to schema {SCHEMA_VERSION}: {exc}",
                             hint="It was left as it was.") from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, statements: Iterable[tuple[str, tuple[Any, ...]]]) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
            for sql, params in statements:
                self._db.execute(sql, params)
            self._db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise StoreError(f"cannot write to store {self.path}: {exc}") from None

    # --- runs -------------------------------------------------------------------------------
    def save_run(self, repo: str, run: Run) -> None:
        self._write([(
            "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?)",
            (repo, run.id, run.attempt, run.status, json.dumps(serialize.dump(run)), _now()),
        )])

    def run(self, repo: str, run_id: int, attempt: int) -> Run | None:
        row = self._db.execute(
            "SELECT data FROM runs WHERE repo = ? AND id = ? AND attempt = ?", (repo, run_id, attempt)
        ).fetchone()
        return serialize.load_run(json.loads(row[0])) if row else None

    # --- jobs -------------------------------------------------------------------------------
    def save_jobs(self, repo: str, run: Run, jobs: Iterable[Job]) -> None:
        """Store the jobs of one run attempt; mark the set complete when the run is."""
        self._write(self._job_statements(repo, run, jobs))

    def _job_statements(self, repo: str, run: Run, jobs: Iterable[Job]) -> list[tuple[str, tuple[Any, ...]]]:
        statements: list[tuple[str, tuple[Any, ...]]] = []
        now = _now()
        for job in jobs:
            statements.append((
                "INSERT OR REPLACE INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (repo, job.id, job.run_id, job.run_attempt, job.name, job.status, job.conclusion,
                 iso(job.started_at), iso(job.completed_at), job.runner_name,
                 json.dumps(list(job.labels)), json.dumps(serialize.dump(job)), now),
            ))
            statements.append(("DELETE FROM steps WHERE repo = ? AND job_id = ?", (repo, job.id)))
            for step in job.steps:
                statements.append((
                    "INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (repo, job.id, step.number, step.name, step.status, step.conclusion,
                     iso(step.started_at), iso(step.completed_at)),
                ))
        if run.is_completed:
            statements.append(("INSERT OR IGNORE INTO job_sets VALUES (?, ?, ?)", (repo, run.id, run.attempt)))
        return statements

    def jobs_of(self, repo: str, run_id: int, attempt: int) -> list[Job] | None:
        """All jobs of a completed run attempt, or None when they are not all stored."""
        if not self._db.execute(
            "SELECT 1 FROM job_sets WHERE repo = ? AND run_id = ? AND run_attempt = ?", (repo, run_id, attempt)
        ).fetchone():
            return None
        # The attempt's view: per job name its newest execution up to `attempt` (jobs not rerun in it
        # carry over from earlier attempts, as client.jobs returns them).
        rows = self._db.execute(
            "SELECT name, data FROM jobs WHERE repo = ? AND run_id = ? AND run_attempt <= ? "
            "ORDER BY run_attempt, id", (repo, run_id, attempt),
        ).fetchall()
        newest = {name: data for name, data in rows}
        return sorted((serialize.load_job(json.loads(data)) for data in newest.values()), key=lambda j: j.id)

    # --- pull request files -----------------------------------------------------------------
    def save_pr_files(self, repo: str, pr: int, head_sha: str, files: Iterable[ChangedFile]) -> None:
        data = json.dumps([serialize.dump(f) for f in files])
        self._write([("INSERT OR REPLACE INTO pr_files VALUES (?, ?, ?, ?)", (repo, pr, head_sha, data))])

    def pr_files(self, repo: str, pr: int, head_sha: str) -> list[ChangedFile] | None:
        row = self._db.execute(
            "SELECT data FROM pr_files WHERE repo = ? AND pr = ? AND head_sha = ?", (repo, pr, head_sha)
        ).fetchone()
        return [serialize.load_changed_file(f) for f in json.loads(row[0])] if row else None

    # --- logs -------------------------------------------------------------------------------
    def save_log(self, repo: str, job_id: int, status: LogStatus, data: LogData | str | None) -> None:
        """Store a job log's bytes, zlib-compressed a piece at a time: a 1 GB log costs bounded memory."""
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        if data is None:
            self._write([("INSERT OR REPLACE INTO logs VALUES (?, ?, ?, ?, ?, ?, 1)",
                          (repo, job_id, status.value, None, 0, _now()))])
            return
        with tempfile.TemporaryFile(prefix="ci-triage-log-") as spool:
            packer = zlib.compressobj(6)
            for piece in _pieces(data):
                spool.write(packer.compress(piece))
            spool.write(packer.flush())
            length = spool.tell()
            try:
                self._db.execute("BEGIN IMMEDIATE")
                cursor = self._db.execute("INSERT OR REPLACE INTO logs VALUES (?, ?, ?, zeroblob(?), ?, ?, 1)",
                                          (repo, job_id, status.value, length, len(data), _now()))
                spool.seek(0)
                with self._db.blobopen("logs", "content", cursor.lastrowid) as blob:
                    while piece := spool.read(_PIECE):
                        blob.write(piece)
                self._db.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise StoreError(f"cannot write to store {self.path}: {exc}") from None

    def log(self, repo: str, job_id: int) -> tuple[LogStatus, LogData | None] | None:
        """A stored log's bytes (as `mapped_file` gives them), expanded a piece at a time.

        The row and its blob are read in one transaction: another triage saving the same job's log between the
        SELECT and the blob's opening replaces the row under a new rowid (`INSERT OR REPLACE`), and the blob read
        failed with `no such rowid` (two deliveries of one event on one machine)."""
        try:
            self._db.execute("BEGIN")
            try:
                return self._read_log(repo, job_id)
            finally:
                if self._db.in_transaction:
                    self._db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot read from store {self.path}: {exc}") from None

    def _read_log(self, repo: str, job_id: int) -> tuple[LogStatus, LogData | None] | None:
        row = self._db.execute(
            "SELECT status, rowid, content IS NULL FROM logs WHERE repo = ? AND job_id = ?", (repo, job_id)
        ).fetchone()
        if row is None:
            return None
        status, rowid, empty = row
        if empty:
            return LogStatus(status), None
        unpacker = zlib.decompressobj()
        with tempfile.TemporaryFile(prefix="ci-triage-log-") as spool:
            with self._db.blobopen("logs", "content", rowid, readonly=True) as blob:
                while piece := blob.read(_PIECE):
                    while piece:  # expand at most _PIECE at a time: a small blob may hold a huge log
                        spool.write(unpacker.decompress(piece, _PIECE))
                        piece = unpacker.unconsumed_tail
            spool.write(unpacker.flush())
            return LogStatus(status), mapped_file(spool)

    # --- annotations ------------------------------------------------------------------------
    def save_annotations(self, repo: str, job_id: int, annotations: list[dict[str, Any]]) -> None:
        self._write([("INSERT OR REPLACE INTO annotations VALUES (?, ?, ?, ?)",
                      (repo, job_id, json.dumps(annotations), _now()))])

    def annotations(self, repo: str, job_id: int) -> list[dict[str, Any]] | None:
        row = self._db.execute("SELECT data FROM annotations WHERE repo = ? AND job_id = ?", (repo, job_id)).fetchone()
        return json.loads(row[0]) if row else None

    # --- classified failures ------------------------------------------------------------------
    def save_failure(self, repo: str, job: Job, pr: int | None, classification: Classification) -> None:
        root = classification.root_cause.text if classification.root_cause else None
        self._write([(
            "INSERT OR REPLACE INTO failures VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (repo, job.id, job.run_id, pr, job.name, job.workflow_name, classification.category,
             classification.rule_id, classification.fingerprint, root, iso(job.completed_at), job.html_url),
        )])

    def failures(self, repo: str | None = None, category: str | None = None) -> list[StoredFailure]:
        sql = ("SELECT repo, job_id, run_id, pr, job_name, workflow, category, rule_id, fingerprint, root_cause, "
               "failed_at, html_url FROM failures WHERE (? IS NULL OR repo = ?) AND (? IS NULL OR category = ?) "
               "ORDER BY failed_at, job_id")
        rows = self._db.execute(sql, (repo, repo, category, category)).fetchall()
        return [StoredFailure(*row) for row in rows]

    # --- claims -------------------------------------------------------------------------
    def claim(self, repo: str, key: str, claimant: str) -> bool:
        """True for the first caller only: the claim and its check are one transaction."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
            cursor = self._db.execute("INSERT OR IGNORE INTO claims VALUES (?, ?, ?, ?)",
                                      (repo, key, _now(), claimant))
            self._db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise StoreError(f"cannot write to store {self.path}: {exc}") from None
        return cursor.rowcount == 1

    def audit_log(self, repo: str | None = None) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT at, repo, action, target, detail FROM audit WHERE (? IS NULL OR repo = ?) ORDER BY id",
            (repo, repo)).fetchall()
        return [{"at": at, "repo": r, "action": action, "target": target, "detail": json.loads(detail)}
                for at, r, action, target, detail in rows]

    # --- audit ------------------------------------------------------------------------------
    def audit(self, repo: str, action: str, target: str, detail: dict[str, Any]) -> None:
        self._write([(
            "INSERT INTO audit (at, repo, action, target, detail) VALUES (?, ?, ?, ?, ?)",
            (_now(), repo, action, target, json.dumps(detail, sort_keys=True)),
        )])

    def counts(self) -> dict[str, int]:
        return {
            table: self._db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("runs", "jobs", "steps", "pr_files", "logs", "failures", "audit")
        }
