"""A cache of the built-in rule set's loaded form, so a `ci-triage classify` does not parse and check
~900 patterns and compile a hyperscan database at every start (~240 ms of a short call).

What is kept, in one file of the user cache directory (`platformdirs.user_cache_dir("ci-triage")`,
or the directory $CI_TRIAGE_RULES_CACHE names; `CI_TRIAGE_RULES_CACHE=off` turns the cache off), for a
rule set built from the shipped index (ci_triage/rules/builtin/index.json, patterns compiled on first
use): that index's document (marshal reads it faster than json) and the matcher's hyperscan database,
serialized (`hyperscan.dumpb`), for the needles it was built for. Nothing executable and no `re`
internals are kept. Rule files that the index does not describe (a rule edited without regenerating
the index: a developer's checkout) are parsed at every load and never cached.

The file is named by a key: a SHA-256 of the built-in rule files' names and bytes, ci-triage's
version, this Python (`sys.version`, its bytecode tag, `_sre.MAGIC`), the hyperscan binding's version
and the machine type, and FORMAT. A changed rule file, another Python or another hyperscan is another
key, so a stale file is never read; the file also holds the key and a SHA-256 of its payload, checked
before anything in it is used. Any read error, mismatch or damage means the rules are parsed as
without a cache (never a wrong result, never a traceback), and the file is then rewritten. A
serialized database is used only if it loads and finds every needle in a text of the needles
(engines.HyperscanScanner._loaded), else it is compiled. Writes go to a temporary file renamed over
the final one, so concurrent writers each leave a whole file. Only the built-in rule files are
cached: rules from a repository or `--rules` are parsed and checked at every load.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

FORMAT = 5  # bump when what is written, or how it is read, changes (5: needles join a run to a branch)
ENV = "CI_TRIAGE_RULES_CACHE"
_MAGIC = b"ci-triage builtin rules cache\n"
_DIGEST = 32  # bytes of a SHA-256


_VERSION = ["unknown"]  # ci-triage's version, given by the package (which imports this module) in `hooks`


def hooks(version: str) -> tuple[Any, Any]:
    """(load, store) for core.logs.cache_hook.register_builtin_cache, for ci-triage `version`."""
    _VERSION[0] = version
    return load, store


def cache_dir(env: dict[str, str] | os._Environ = os.environ) -> Path | None:
    """Where the cache lives, or None when it is turned off."""
    value = env.get(ENV, "")
    if value.strip().lower() in ("off", "0", "no", "false"):
        return None
    if value:
        return Path(value).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("ci-triage"))


def cache_key(files: list[tuple[str, bytes]]) -> str:
    import _sre
    import hashlib

    from ci_triage.engines import hyperscan_version

    digest = hashlib.sha256()
    for part in (f"format {FORMAT}", _VERSION[0], sys.version, sys.implementation.cache_tag or "",
                 str(_sre.MAGIC), str(hyperscan_version()), os.uname().machine if hasattr(os, "uname") else sys.platform):
        digest.update(part.encode() + b"\0")
    for name, data in files:
        digest.update(name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


def cache_path(directory: Path, key: str) -> Path:
    return directory / f"builtin-rules-{key[:32]}.cache"


# --- reading ----------------------------------------------------------------------------------

def load(files: list[tuple[str, bytes]]) -> Any | None:
    """The built-in rule set `files` make, from the cache, or None (no cache, another key, damage)."""
    directory = cache_dir()
    if directory is None:
        return None
    key = cache_key(files)
    try:
        blob = cache_path(directory, key).read_bytes()
    except OSError:
        return None
    return decode(blob, key, files)


def decode(blob: bytes, key: str, files: list[tuple[str, bytes]] | None = None) -> Any | None:
    import hashlib
    import marshal

    head = _MAGIC + key.encode() + b"\n"
    if not blob.startswith(head) or len(blob) < len(head) + _DIGEST:
        return None
    digest, payload = blob[len(head):len(head) + _DIGEST], blob[len(head) + _DIGEST:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    try:
        return _restore(marshal.loads(payload), files)
    except Exception:  # a payload that passed the digest but not our reading of it: parse instead
        return None


def _restore(payload: dict, files: list[tuple[str, bytes]] | None = None) -> Any:
    from ci_triage.core.logs.rules import _from_index

    if payload["format"] != FORMAT or payload.get("indexed") is None:
        raise ValueError("another format")
    rule_set = _from_index(payload["indexed"])  # the shipped index's document, under a key naming these files
    _prebuilt(payload.get("hyperscan"))
    return rule_set


def _prebuilt(database: Any) -> None:
    if database is not None:
        from ci_triage.engines import prebuilt_database

        needles, kind, serialized = database
        prebuilt_database(needles, kind, serialized)


# --- writing ----------------------------------------------------------------------------------

def store(files: list[tuple[str, bytes]], rule_set: Any) -> None:
    """Write the cache for `files` (best effort: an unwritable directory only means no cache)."""
    import hashlib

    directory = cache_dir()
    if directory is None:
        return
    payload = encode(rule_set)
    if payload is None:
        return
    key = cache_key(files)
    write_atomically(cache_path(directory, key),
                     _MAGIC + key.encode() + b"\n" + hashlib.sha256(payload).digest() + payload)


def encode(rule_set: Any) -> bytes | None:
    """The payload for `rule_set`, or None when it was not built from the shipped index. Builds the
    matcher (engine "auto"), which the process then uses: it would be built next anyway."""
    import marshal

    from ci_triage.core.logs.regex_guard import LazyPattern
    from ci_triage.core.logs.rules import _INDEX_USED

    indexed = all(isinstance(pattern, LazyPattern) for rule in rule_set.rules for pattern in rule.patterns)
    if not indexed or _INDEX_USED[0] is None:
        return None
    return marshal.dumps({"format": FORMAT, "indexed": _INDEX_USED[0], "hyperscan": _database(rule_set)})


def _database(rule_set: Any) -> tuple | None:
    """(needles and prefilters, kind, bytes) of the matcher's serialized hyperscan database (engine "auto"), or None."""
    from ci_triage.core.logs.matcher import matcher_for

    matcher = matcher_for(rule_set, "auto")
    serialized = getattr(matcher.scanner, "serialized", None)
    database = serialized() if serialized is not None else None
    return None if database is None else (matcher.scan_key, *database)


def write_atomically(path: Path, data: bytes) -> None:
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".builtin-rules-", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
