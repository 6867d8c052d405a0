"""The cache of the built-in rule set's loaded form (ci_triage/rules_cache.py): what it gives back is
what parsing the rule files gives, and anything wrong with it (a stale key, a damaged file, an
unwritable directory, writers racing, rule files changed under it) means parsing, never a wrong
result or a traceback. Rules from a repository or `--rules` are never served from it."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ci_triage import engines, rules_cache
from ci_triage.core.logs import needles as needles_module
from ci_triage.core.logs.matcher import Matcher, relevant_lines
from ci_triage.core.logs.needles import _pattern_needles
from ci_triage.core.logs.rules import builtin_files, builtin_rules, indexed_builtin, parse_builtin
from ci_triage.core.logs.classify import classify

STAMP = "2024-01-01T00:00:00.0000000Z "
LOG = "".join(STAMP + line + "\n" for line in [
    "Collecting torch==2.5.1",
    "Traceback (most recent call last):",
    '  File "/home/runner/work/x/x/tests/test_pp.py", line 42, in test_pp',
    "    dist.init_process_group(backend='hccl')",
    "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
    "port: 35191, useIpv6: false, code: -98, name: [::]:35191, message: address already in use",
    "##[error]Process completed with exit code 1.",
])


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "rules-cache"
    monkeypatch.setenv(rules_cache.ENV, str(directory))
    return directory


@pytest.fixture(scope="module")
def files() -> list[tuple[str, bytes]]:
    return builtin_files()


@pytest.fixture(scope="module")
def built(files):
    """The built-in rule set as a start-up builds it: from the shipped index (the only form cached)."""
    rule_set = indexed_builtin(files)
    assert rule_set is not None, "the shipped index is stale: python -m ci_triage.rules_index --write"
    return rule_set


def _cached_file(directory: Path) -> Path:
    found = [path for path in directory.iterdir() if path.name.endswith(".cache")]
    assert len(found) == 1, found
    return found[0]


def test_a_restored_rule_set_equals_the_parsed_one(cache_dir, files, built):
    rules_cache.store(files, built)
    restored = rules_cache.load(files)
    assert restored is not None and restored is not built
    assert restored == built == parse_builtin(files)  # ids, categories, priorities, patterns (source, flags)
    for mine, theirs in zip(restored.rules, built.rules, strict=True):
        assert [p.pattern for p in mine.patterns] == [p.pattern for p in theirs.patterns]
        assert mine.searchers == mine.patterns and mine.exclude_searchers == mine.exclude and mine.engine == "re"
        assert (mine.description, mine.examples, mine.near_misses, mine.boilerplate) == \
            (theirs.description, theirs.examples, theirs.near_misses, theirs.boilerplate)
        for pattern in mine.patterns:  # the remembered needles are the ones parsing finds
            assert needles_module.pattern_needles(pattern) == _pattern_needles(pattern)
    fresh, warm = Matcher(built), Matcher(restored)
    assert warm.needles == fresh.needles and warm.covers == fresh.covers and warm.always == fresh.always


def test_a_warm_process_classifies_as_a_cold_one_and_as_one_without_cache(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(LOG, encoding="utf-8")
    directory = tmp_path / "cache"

    def run(value: str) -> dict:
        env = {**os.environ, rules_cache.ENV: value}
        done = subprocess.run([sys.executable, "-m", "ci_triage", "classify", "--format", "json", str(log)],
                              capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        return json.loads(done.stdout)

    cold = run(str(directory))
    cached = _cached_file(directory)
    warm = run(str(directory))
    off = run("off")
    assert cold == warm == off
    assert cold[0]["category"] == "port_in_use"
    assert _cached_file(directory) == cached  # the warm run read it and wrote nothing new


def test_off_reads_and_writes_nothing(tmp_path, monkeypatch, files, built):
    monkeypatch.setenv(rules_cache.ENV, "off")
    assert rules_cache.cache_dir() is None
    rules_cache.store(files, built)
    assert rules_cache.load(files) is None


def test_the_default_place_is_the_user_cache_directory(monkeypatch, tmp_path):
    monkeypatch.delenv(rules_cache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if sys.platform.startswith("linux"):
        assert rules_cache.cache_dir() == tmp_path / "ci-triage"


def test_changed_rule_files_are_parsed_never_served_stale(cache_dir, files, built):
    rules_cache.store(files, built)
    name, data = files[-1]
    changed = [*files[:-1], (name, data.replace(b'category = "', b'category = "', 1) + b"\n# edited\n")]
    assert rules_cache.load(changed) is None  # another key
    # A rule's category changed in place: the cache must not answer with the old one.
    first = next(i for i, (n, d) in enumerate(files) if b'category = "network"' in d)
    edited = list(files)
    edited[first] = (files[first][0], files[first][1].replace(b'category = "network"', b'category = "unknown"', 1))
    assert rules_cache.load(edited) is None
    # Files the shipped index does not describe (a rule edited, the index not regenerated) are parsed
    # at every load and never cached.
    rebuilt = parse_builtin(edited)
    assert rebuilt != built and indexed_builtin(edited) is None
    rules_cache.store(edited, rebuilt)
    assert rules_cache.load(edited) is None and rules_cache.encode(rebuilt) is None
    assert rules_cache.load(files) == built  # the index's key still answers


def test_the_key_names_the_files_the_version_and_this_python(files, monkeypatch):
    key = rules_cache.cache_key(files)
    assert rules_cache.cache_key(list(files)) == key
    assert rules_cache.cache_key(files[:-1]) != key
    assert rules_cache.cache_key([(files[0][0] + "x", files[0][1]), *files[1:]]) != key
    assert rules_cache._VERSION[0] == __import__("ci_triage").__version__
    monkeypatch.setattr(rules_cache, "_VERSION", ["0.0.0-other"])
    assert rules_cache.cache_key(files) != key
    monkeypatch.undo()
    monkeypatch.setattr(engines, "hyperscan_version", lambda: "9.9.9")
    assert rules_cache.cache_key(files) != key
    monkeypatch.undo()
    monkeypatch.setattr(rules_cache, "FORMAT", rules_cache.FORMAT + 1)
    assert rules_cache.cache_key(files) != key


def test_a_file_under_another_key_is_refused(cache_dir, files, built):
    rules_cache.store(files, built)
    cached = _cached_file(cache_dir)
    other = [*files[:-1], (files[-1][0], files[-1][1] + b"\n")]
    cached.rename(rules_cache.cache_path(cache_dir, rules_cache.cache_key(other)))  # right name, wrong content
    assert rules_cache.load(other) is None


@pytest.mark.parametrize("damage", ["empty", "truncated", "flipped", "garbage", "valid digest, bad payload",
                                    "valid digest, wrong shape", "directory"])
def test_a_damaged_file_means_parsing(cache_dir, files, built, damage):
    rules_cache.store(files, built)
    cached = _cached_file(cache_dir)
    blob = cached.read_bytes()
    key = rules_cache.cache_key(files)
    head = rules_cache._MAGIC + key.encode() + b"\n"
    if damage == "empty":
        blob = b""
    elif damage == "truncated":
        blob = blob[:len(blob) // 2]
    elif damage == "flipped":
        blob = blob[:-1000] + bytes([blob[-1000] ^ 1]) + blob[-999:]
    elif damage == "garbage":
        blob = os.urandom(4096)
    elif damage == "valid digest, bad payload":
        payload = b"\x00not marshal data"
        blob = head + hashlib.sha256(payload).digest() + payload
    elif damage == "valid digest, wrong shape":
        import marshal

        payload = marshal.dumps({"format": rules_cache.FORMAT, "version": 1, "patterns": [("x", 0, b"\1\2", 0, {}, ())],
                                 "rules": [("a",)], "needles": [], "hyperscan": None})
        blob = head + hashlib.sha256(payload).digest() + payload
    if damage == "directory":
        cached.unlink()
        cached.mkdir()
    else:
        cached.write_bytes(blob)
    assert rules_cache.load(files) is None
    if damage != "directory":
        assert rules_cache.decode(blob, key) is None


def test_builtin_rules_survive_a_damaged_cache_and_rewrite_it(tmp_path):
    directory = tmp_path / "cache"
    probe = ("import sys; from ci_triage.core.logs.rules import builtin_rules; "
             "print(len(builtin_rules().rules))")
    env = {**os.environ, rules_cache.ENV: str(directory)}
    first = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    cached = _cached_file(directory)
    cached.write_bytes(cached.read_bytes()[:5000])
    second = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert second.returncode == 0 and second.stderr == ""
    assert second.stdout == first.stdout
    assert len(cached.read_bytes()) > 5000  # rewritten whole


def test_an_unwritable_directory_only_means_no_cache(tmp_path, monkeypatch, files, built):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(rules_cache.ENV, str(blocker / "cache"))
    rules_cache.store(files, built)  # no exception
    assert rules_cache.load(files) is None
    env = {**os.environ, rules_cache.ENV: str(blocker / "cache")}
    done = subprocess.run([sys.executable, "-c", "from ci_triage.core.logs.rules import builtin_rules; "
                           "print(len(builtin_rules().rules))"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and done.stderr == "" and int(done.stdout) == len(built.rules)


def test_concurrent_writers_leave_one_whole_file(cache_dir, files, built):
    path = rules_cache.cache_path(cache_dir, rules_cache.cache_key(files))
    contents = [bytes([index]) * 200_000 for index in range(8)]
    threads = [threading.Thread(target=rules_cache.write_atomically, args=(path, data)) for data in contents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert path.read_bytes() in contents
    assert [p.name for p in cache_dir.iterdir()] == [path.name]  # no temporary file left


def test_concurrent_processes_each_get_the_rules_and_one_valid_file(tmp_path, files, built):
    directory = tmp_path / "cache"
    probe = "from ci_triage.core.logs.rules import builtin_rules; print(len(builtin_rules().rules))"
    env = {**os.environ, rules_cache.ENV: str(directory)}
    runs = [subprocess.Popen([sys.executable, "-c", probe], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env) for _ in range(4)]
    for run in runs:
        out, err = run.communicate(timeout=180)
        assert run.returncode == 0 and err == "" and int(out) == len(built.rules)
    os.environ[rules_cache.ENV] = str(directory)
    try:
        assert rules_cache.load(files) == built
    finally:
        os.environ.pop(rules_cache.ENV)
    assert not [p for p in directory.iterdir() if p.name.endswith(".tmp")]


def test_repository_and_cli_rules_are_checked_at_every_load(tmp_path):
    """A warm cache serves the built-in rules only: a --rules file is still built and its hazards refused."""
    log = tmp_path / "job.log"
    log.write_text(LOG + STAMP + "our own flaky thing happened\n", encoding="utf-8")
    directory = tmp_path / "cache"
    env = {**os.environ, rules_cache.ENV: str(directory)}
    run = [sys.executable, "-m", "ci_triage", "classify", "--format", "json"]
    assert subprocess.run([*run, str(log)], capture_output=True, env=env, timeout=120).returncode == 0
    _cached_file(directory)
    good = tmp_path / "good.toml"
    good.write_text('version = 1\n[[rule]]\nid = "own"\ncategory = "network"\nretryable = true\n'
                    "patterns = ['own flaky thing happened']\nexamples = ['own flaky thing happened']\n"
                    "near_misses = ['a steady thing']\n", encoding="utf-8")
    done = subprocess.run([*run, "--rules", str(good), str(log)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)[0]
    assert entry["category"] == "network" and "own flaky thing" in entry["root_cause"]["text"]
    bad = tmp_path / "bad.toml"
    bad.write_text(good.read_text().replace("'own flaky thing happened']\nexamples", "'(a+)+$']\nexamples", 1),
                   encoding="utf-8")
    done = subprocess.run([*run, "--rules", str(bad), str(log)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode != 0 and "refused" in done.stderr


def test_a_damaged_hyperscan_blob_is_compiled_instead(built):
    pytest.importorskip("hyperscan")
    fresh = Matcher(built, "hyperscan")
    engines.prebuilt_database(fresh.scan_key, "literal", b"not a hyperscan database")
    again = Matcher(built, "hyperscan")
    assert again.scanner.database is not None and fresh.scan_key not in engines._PREBUILT  # consumed
    data = LOG.encode()
    assert sorted(again.scanner.hits(data, 0, len(data))) == sorted(fresh.scanner.hits(data, 0, len(data)))
    kind, blob = fresh.scanner.serialized()
    engines.prebuilt_database(fresh.scan_key, kind, blob)
    loaded = Matcher(built, "hyperscan")
    assert loaded.scanner.kind == kind
    assert sorted(loaded.scanner.hits(data, 0, len(data))) == sorted(fresh.scanner.hits(data, 0, len(data)))
    engines.prebuilt_database(fresh.scan_key, "unknown kind", blob)
    assert Matcher(built, "hyperscan").scanner.database is not None


def test_the_cached_rules_classify_as_the_parsed_ones(cache_dir, files, built):
    rules_cache.store(files, built)
    restored = rules_cache.load(files)
    data = LOG.encode()
    assert classify(relevant_lines(data, restored), restored) == classify(relevant_lines(data, built), built)
    assert builtin_rules() == built
