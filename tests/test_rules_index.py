"""The shipped index of the built-in rules (ci_triage/rules/builtin/index.json, ci_triage/rules_index.py):
it must be exactly what the rule files give today (a rule edit without `python -m ci_triage.rules_index
--write` fails here, saying so), the rule set built from it must equal the parsed one and classify as
it does, and an index that is not the files' (stale, damaged, another format) means parsing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from ci_triage import rules_index
from ci_triage.core.logs import rules as rules_module
from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.matcher import Matcher, relevant_lines
from ci_triage.core.logs.needles import _analyse, pattern_needles, pattern_required
from ci_triage.core.logs.regex_guard import LazyPattern
from ci_triage.core.logs.rules import builtin_files, files_digest, indexed_builtin, parse_builtin, read_index


@pytest.fixture(scope="module")
def files():
    return builtin_files()


@pytest.fixture(scope="module")
def parsed(files):
    return parse_builtin(files)


def test_the_shipped_index_is_the_rule_files_one():
    problem = rules_index.problem()
    assert problem is None, problem


def test_a_stale_index_is_reported_with_the_command_to_run(files, monkeypatch):
    name, data = files[-1]
    edited = [*files[:-1], (name, data + b"\n# edited\n")]
    real = rules_index.compute
    monkeypatch.setattr(rules_index, "compute", lambda files=None: real(edited))
    problem = rules_index.problem()
    assert problem is not None and "python -m ci_triage.rules_index --write" in problem and "files" in problem


def test_the_indexed_rule_set_equals_the_parsed_one(files, parsed):
    indexed = indexed_builtin(files)
    assert indexed is not None
    assert indexed == parsed
    for mine, theirs in zip(indexed.rules, parsed.rules, strict=True):
        assert (mine.id, mine.category, mine.retryable, mine.priority, mine.description, mine.examples,
                mine.near_misses, mine.boilerplate) == (theirs.id, theirs.category, theirs.retryable, theirs.priority,
                                                        theirs.description, theirs.examples, theirs.near_misses,
                                                        theirs.boilerplate)
        for lazy, real in zip(mine.patterns + mine.exclude, theirs.patterns + theirs.exclude, strict=True):
            assert isinstance(lazy, LazyPattern)
            assert (lazy.pattern, lazy.flags) == (real.pattern, real.flags)
            assert (pattern_needles(lazy), pattern_required(lazy)) == _analyse(real)
    fresh, from_index = Matcher(parsed, "python"), Matcher(indexed, "python")
    assert from_index.needles == fresh.needles and from_index.covers == fresh.covers
    assert from_index.required == fresh.required


def test_the_indexed_rules_match_their_examples_as_the_parsed_ones(files, parsed):
    indexed = indexed_builtin(files)
    assert rules_module.check_examples(indexed) == rules_module.check_examples(parsed) == []
    log = "".join(f"2024-01-01T00:00:00.0000000Z {example}\n" for rule in parsed.rules for example in rule.examples)
    data = log.encode()
    assert classify(relevant_lines(data, indexed, (), "python"), indexed) == \
        classify(relevant_lines(data, parsed, (), "python"), parsed)


def test_a_lazy_pattern_compiles_once_and_then_is_the_compiled_one():
    lazy = LazyPattern(r"(?P<x>a+)b", re.compile(r"(?P<x>a+)b").flags)
    assert "_compiled" not in lazy.__dict__
    assert lazy.search("xaab").group("x") == "aa"
    compiled = lazy.compiled()
    assert lazy.search == compiled.search and lazy.groupindex == {"x": 1}
    assert lazy == re.compile(r"(?P<x>a+)b") and re.compile(r"(?P<x>a+)b") == lazy
    assert lazy != LazyPattern(r"(?P<x>a+)c", lazy.flags)
    with pytest.raises(ValueError):
        LazyPattern("abc", 0).search("abc")  # flags the index got wrong: refused, never matched


@pytest.mark.parametrize("damage", ["another digest", "another format", "not a checked pattern", "bad shape"])
def test_an_index_that_is_not_the_files_means_parsing(files, damage):
    document = json.loads(json.dumps(read_index()))
    if damage == "another digest":
        document["files"] = files_digest(files[:-1])
    elif damage == "another format":
        document["format"] += 1
    elif damage == "not a checked pattern":
        document["patterns"][0][2] = "refused"
    else:
        document["rules"][0]["patterns"] = [10**9]
    assert indexed_builtin(files, document) is None


def test_edited_rule_files_are_parsed_not_taken_from_the_index(files):
    name, data = files[0]
    edited = [(name, data.replace(b'category = "', b'category = "', 1) + b"\n# edited\n"), *files[1:]]
    assert indexed_builtin(edited) is None


def test_a_process_without_cache_uses_the_index_and_classifies_as_parsing(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("2024-01-01T00:00:00.0000000Z torch.distributed.DistNetworkError: The server socket has failed "
                   "to listen on any local network address. port: 1, useIpv6: false, code: -98, name: [::]:1, "
                   "message: address already in use\n", encoding="utf-8")
    probe = ("import sys, json; from ci_triage.core.logs.rules import builtin_rules; "
             "from ci_triage.core.logs.regex_guard import LazyPattern; r = builtin_rules(); "
             "print(isinstance(r.rules[0].patterns[0], LazyPattern))")
    env = {**os.environ, "CI_TRIAGE_RULES_CACHE": "off"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr
    out = subprocess.run([sys.executable, "-m", "ci_triage", "classify", "--format", "json", str(log)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0 and json.loads(out.stdout)[0]["category"] == "port_in_use"
