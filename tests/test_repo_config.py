"""The repository config file: parsing and validation, the pure helpers, inference from workflows,
and `ci-triage config check|init` run as a user runs them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_triage.core.config.infer import (
    analyse_workflows,
    infer_config,
    render_default_config,
)
from ci_triage.core.config.repo_config import (
    SCHEMA,
    JobOwnership,
    OutageGuard,
    RepoConfig,
    default_repo_config,
    matches_job,
    owned_paths,
    parse_repo_config,
    path_matches,
    runner_host,
)
from ci_triage.core.decide.policy import Policy
from ci_triage.errors import ConfigError
from ci_triage.workflow_yaml import parse_all

ROOT = Path(__file__).resolve().parents[1]

FULL = r"""
[policy]
retryable_categories = ["port_in_use", "network", "crash"]
need_contention = ["crash"]
possibly_related_blocks_rerun = true
died_early_ratio = 0.5
max_auto_reruns = 2
[runners]
host_pattern = '^(?P<host>.+)-r\d+$'
[jobs]
include = ["vllm-example (*)", "cpu-*"]
exclude = ["cpu-lint"]
[[jobs.owns]]
job = "vllm-example (eagle3)"
paths = ["verl_speco/models/eagle/**"]
[[jobs.owns]]
job = "vllm-example (*)"
paths = ["examples/vllm/", "verl_speco/models/eagle/**"]
[outage]
max_failed_jobs = 3
max_prs = 2
window_minutes = 45
[window]
before_hours = 1.5
after_hours = 0
[rules]
file = ".github/ci-triage-rules.toml"
"""

# The demo repository's two workflows, as the seed describes them: the NPU example matrix run one at
# a time on the a2-8 pool, and the CPU suite on GitHub's runners.
NPU_WORKFLOW = """\
name: NPU vLLM examples
on:
  pull_request:
    branches: [main]
    paths:
      - "verl_speco/models/**"
      - "examples/vllm/**"
      - ".github/workflows/npu_vllm_examples.yml"
      - "!**/*.md"
  workflow_dispatch:
jobs:
  vllm-example:
    runs-on: linux-aarch64-a2-8
    timeout-minutes: 60
    strategy:
      fail-fast: false
      max-parallel: 1
      matrix:
        example: [eagle3, dflash, dspark]
    steps:
      - uses: actions/checkout@v4
      - run: bash examples/vllm/run_${{ matrix.example }}.sh
"""
CPU_WORKFLOW = """\
name: CPU unit tests
on: [push, pull_request]
jobs:
  cpu-unit-tests:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: pytest -x tests
"""
DEMO_WORKFLOWS = {
    ".github/workflows/npu_vllm_examples.yml": NPU_WORKFLOW,
    ".github/workflows/cpu_unit_tests.yml": CPU_WORKFLOW,
}


def _config_error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_repo_config(text, "repo.toml")
    return caught.value


# --- parsing ---------------------------------------------------------------------------------------

def test_the_rendered_default_file_is_the_default_config_and_names_every_key():
    text = render_default_config()
    assert parse_repo_config(text, "default") == default_repo_config() == RepoConfig()
    for section, keys in SCHEMA.items():
        assert f"[{section}]" in text
        for key in keys:
            assert re.search(rf"^(# )?(\[\[jobs\.)?{key}\b", text, re.MULTILINE), key


def test_an_empty_file_is_the_default_config():
    assert parse_repo_config("", "x") == default_repo_config()


def test_every_key_of_the_documented_layout_is_read():
    config = parse_repo_config(FULL, "repo.toml")
    assert config.policy == Policy(frozenset({"port_in_use", "network", "crash"}), frozenset({"crash"}), True, 0.5)
    assert config.max_auto_reruns == 2
    assert config.host_pattern == r"^(?P<host>.+)-r\d+$"
    assert config.include_jobs == ("vllm-example (*)", "cpu-*")
    assert config.exclude_jobs == ("cpu-lint",)
    assert config.ownership == (
        JobOwnership("vllm-example (eagle3)", ("verl_speco/models/eagle/**",)),
        JobOwnership("vllm-example (*)", ("examples/vllm/", "verl_speco/models/eagle/**")),
    )
    assert config.outage == OutageGuard(3, 2, 45)
    assert (config.window_before_hours, config.window_after_hours) == (1.5, 0.0)
    assert config.rules_file == ".github/ci-triage-rules.toml"


def test_narrowing_retryable_categories_narrows_the_default_need_contention():
    config = parse_repo_config('[policy]\nretryable_categories = ["port_in_use", "crash"]\n', "x")
    assert config.policy.retryable_categories == {"port_in_use", "crash"}
    assert config.policy.need_contention == {"crash"}


@pytest.mark.parametrize("text, key, problem, hint", [
    ("[polcy]\n", "polcy", "unknown section", "Did you mean 'policy'?"),
    ("[policy]\ndied_early_ration = 0.5\n", "policy.died_early_ration", "unknown key",
     "Did you mean 'policy.died_early_ratio'?"),
    ("[runners]\nmax_auto_reruns = 2\n", "runners.max_auto_reruns", "unknown key",
     "Did you mean 'policy.max_auto_reruns'?"),
    ("host_pattern = 'x'\n", "host_pattern", "unknown section", "Did you mean 'runners.host_pattern'?"),
    ("policy = 3\n", "policy", "must be a table", None),
    ("[policy]\ndied_early_ratio = 1.5\n", "policy.died_early_ratio", "must be in (0, 1], got 1.5", None),
    ("[policy]\ndied_early_ratio = 0\n", "policy.died_early_ratio", "must be in (0, 1]", None),
    ("[policy]\ndied_early_ratio = nan\n", "policy.died_early_ratio", "finite", None),
    ("[policy]\ndied_early_ratio = '0.8'\n", "policy.died_early_ratio", "must be a number, got a string", None),
    ("[policy]\nmax_auto_reruns = -1\n", "policy.max_auto_reruns", "must be at least 0, got -1", None),
    ("[policy]\nmax_auto_reruns = true\n", "policy.max_auto_reruns", "must be an integer, got a boolean", None),
    ("[policy]\nmax_auto_reruns = 1.0\n", "policy.max_auto_reruns", "must be an integer, got a float", None),
    ("[policy]\npossibly_related_blocks_rerun = 1\n", "policy.possibly_related_blocks_rerun",
     "must be true or false", None),
    ("[policy]\nretryable_categories = ['port_in_use', 'netwrk']\n", "policy.retryable_categories[1]",
     "unknown category 'netwrk'", "Did you mean 'network'?"),
    ("[policy]\nretryable_categories = 'network'\n", "policy.retryable_categories", "must be an array", None),
    ("[policy]\nretryable_categories = ['test_failure']\n", "policy.retryable_categories[0]",
     "never retryable", None),
    ("[policy]\nretryable_categories = ['network']\nneed_contention = ['crash']\n", "policy.need_contention",
     "'crash' is not in policy.retryable_categories", None),
    ("[runners]\nhost_pattern = '(unclosed'\n", "runners.host_pattern", "does not compile", None),
    ("[runners]\nhost_pattern = '(a)-(b)'\n", "runners.host_pattern", "none is named 'host'", None),
    ("[runners]\nhost_pattern = ''\n", "runners.host_pattern", "must not be empty", None),
    ("[jobs]\ninclude = ['a', 3]\n", "jobs.include[1]", "must be a string, got an integer", None),
    ("[jobs]\nowns = 'x'\n", "jobs.owns", "array of tables", None),
    ("[[jobs.owns]]\npaths = ['a/**']\n", "jobs.owns[0].job", "is missing", None),
    ("[[jobs.owns]]\njob = 'a'\n", "jobs.owns[0].paths", "missing or empty", None),
    ("[[jobs.owns]]\njob = 'a'\npaths = []\n", "jobs.owns[0].paths", "missing or empty", None),
    ("[[jobs.owns]]\njob = 'a'\npaths = ['ok/**', '']\n", "jobs.owns[0].paths[1]", "must not be empty", None),
    ("[[jobs.owns]]\njob = 'a'\npaths = ['/']\n", "jobs.owns[0].paths[0]", "empty glob", None),
    ("[[jobs.owns]]\njob = 'a'\npaths = ['!docs/**']\n", "jobs.owns[0].paths[0]", "negated", None),
    ("[[jobs.owns]]\njob = 'a'\npath = ['x']\n", "jobs.owns[0].path", "unknown key",
     "Did you mean 'jobs.owns[0].paths'?"),
    ("[outage]\nmax_prs = 0\n", "outage.max_prs", "must be at least 1", None),
    ("[outage]\nwindow_minutes = -5\n", "outage.window_minutes", "must be at least 1, got -5", None),
    ("[window]\nbefore_hours = -1\n", "window.before_hours", "between 0 and 168", None),
    ("[window]\nafter_hours = 1e9\n", "window.after_hours", "between 0 and 168", None),
    ("[rules]\nfile = '../elsewhere.toml'\n", "rules.file", "inside the repository", None),
    ("[rules]\nfile = '/etc/rules.toml'\n", "rules.file", "inside the repository", None),
])
def test_a_mistake_names_the_file_the_key_and_the_problem(text, key, problem, hint):
    error = _config_error(text)
    assert error.message.startswith(f"repo.toml: {key}: "), error.message
    assert problem in error.message
    if hint:
        assert error.hint == hint
    assert error.exit_code == 2
    assert "\n" not in error.one_line()


def test_invalid_toml_is_a_config_error_with_the_position():
    error = _config_error("[policy\nmax_auto_reruns = 1\n")
    assert error.message.startswith("repo.toml: not valid TOML:")
    assert "line 1" in error.message


def test_host_pattern_with_one_unnamed_group_is_accepted_and_that_group_is_the_host():
    config = parse_repo_config("[runners]\nhost_pattern = '^a2-8-(node\\d+)-r\\d+$'\n", "x")
    assert runner_host(config, "a2-8-node2-r1") == "node2"
    named = parse_repo_config("[runners]\nhost_pattern = '^(?P<pool>a2-8)-(?P<host>node\\d+)'\n", "x")
    assert runner_host(named, "a2-8-node3-r0") == "node3"
    whole = parse_repo_config("[runners]\nhost_pattern = '^node\\d+'\n", "x")
    assert runner_host(whole, "node4-r2") == "node4"
    assert runner_host(whole, "other-machine") == "other-machine"  # no match: the runner is its own host
    assert runner_host(default_repo_config(), "node4-r2") is None  # no pattern: the caller's default applies


# --- the pure helpers ------------------------------------------------------------------------------

def test_matches_job_applies_include_then_exclude():
    everything = default_repo_config()
    assert matches_job(everything, "anything at all")
    config = parse_repo_config(FULL, "x")
    assert matches_job(config, "vllm-example (eagle3)")
    assert matches_job(config, "cpu-unit-tests")
    assert not matches_job(config, "cpu-lint")  # included by cpu-*, excluded by name
    assert not matches_job(config, "docs")  # not included
    assert not matches_job(config, "VLLM-EXAMPLE (eagle3)")  # job names are case-sensitive


def test_owned_paths_collects_every_matching_entry_once_in_file_order():
    config = parse_repo_config(FULL, "x")
    assert owned_paths(config, "vllm-example (eagle3)") == ("verl_speco/models/eagle/**", "examples/vllm/")
    assert owned_paths(config, "vllm-example (dflash)") == ("examples/vllm/", "verl_speco/models/eagle/**")
    assert owned_paths(config, "cpu-unit-tests") == ()


@pytest.mark.parametrize("glob, path, expected", [
    # The GitHub filter pattern cheat sheet (workflow syntax docs): anchored at the root, whole path.
    ("**", "all/the/files.md", True),
    ("*.js", "app.js", True),
    ("*.js", "js/index.js", False),
    ("**.js", "src/js/app.js", True),
    ("docs/*", "docs/README.md", True),
    ("docs/*", "docs/mona/octocat.txt", False),
    ("docs/**", "docs/mona/octocat.txt", True),
    ("docs/**/*.md", "docs/a/b/c.md", True),
    ("docs/**/*.md", "docs/c.md", True),  # **/ also matches no directory
    ("docs/**/*.md", "docs/c.txt", False),
    ("**/docs/**", "a/b/docs/x.md", True),
    ("**/*.py", "setup.py", True),
    # A directory covers everything beneath it, as in .gitignore; a prefix of a name does not.
    ("verl_speco/models/eagle", "verl_speco/models/eagle/llama_eagle.py", True),
    ("verl_speco/models/eagle/", "verl_speco/models/eagle/llama_eagle.py", True),
    ("verl_speco/models/eagle", "verl_speco/models/eagle3_trainer.py", False),
    ("/verl_speco/models/**", "verl_speco/models/x.py", True),
    ("src/file?.py", "src/file1.py", True),
    ("src/file?.py", "src/file/.py", False),
    ("src/[ab].py", "src/a.py", True),
    ("src/[!ab].py", "src/a.py", False),
    ("src/[!ab].py", "src/c.py", True),
    ("src/[z-a].py", "src/[z-a].py", True),  # a reversed range is taken literally
    ("src/[ab.py", "src/[ab.py", True),  # so is an unclosed bracket
    ("a+b/c.py", "a+b/c.py", True),  # regex characters are literal
    ("a+b/c.py", "aab/c.py", False),
])
def test_path_matches(glob, path, expected):
    assert path_matches(glob, path) is expected


# --- inference from workflows ----------------------------------------------------------------------

def test_init_on_the_demo_workflows_infers_names_ownership_and_a_host_pattern():
    text = infer_config(parse_all(DEMO_WORKFLOWS))
    config = parse_repo_config(text, "inferred")
    # Everything but ownership is left at its default, to be decided by a person.
    assert config == RepoConfig(ownership=config.ownership)
    assert config.ownership == (JobOwnership("vllm-example (*)", (
        "verl_speco/models/**", "examples/vllm/**", ".github/workflows/npu_vllm_examples.yml")),)
    assert owned_paths(config, "vllm-example (eagle3)") == config.ownership[0].paths
    assert owned_paths(config, "cpu-unit-tests") == ()  # it runs on every PR: no ownership to infer
    assert "vllm-example (eagle3), vllm-example (dflash), vllm-example (dspark)" in text
    assert "max-parallel 1" in text
    assert "!**/*.md" in text  # a negated filter entry is shown, not silently dropped
    suggested = re.search(r"^# (host_pattern = '\^linux.*)$", text, re.MULTILINE)
    assert suggested, text
    uncommented = parse_repo_config(f"[runners]\n{suggested.group(1)}\n", "suggestion")
    assert runner_host(uncommented, "linux-aarch64-a2-8-node1-r0") == "node1"


def test_matrix_include_exclude_and_expressions_in_names_and_labels():
    workflow = """
on:
  pull_request:
    paths: ["src/**"]
jobs:
  test:
    name: Test ${{ matrix.python }} on ${{ matrix.os }}
    runs-on: ${{ matrix.os }}
    strategy:
      matrix:
        python: ["3.10", "3.11"]
        os: [ubuntu-22.04, self-hosted-gpu]
        exclude:
          - {python: "3.10", os: self-hosted-gpu}
        include:
          - {python: "3.11", os: ubuntu-22.04, extra: yes}
          - {python: "3.12", os: ubuntu-24.04}
  dynamic:
    runs-on: [self-hosted, npu-pool]
    strategy:
      matrix: ${{ fromJSON(needs.setup.outputs.matrix) }}
  "odd [name]*":
    runs-on: {group: npus, labels: [npu-pool-2]}
"""
    (analysed,) = analyse_workflows(parse_all({"w.yml": workflow}))
    test, dynamic, odd = analysed.jobs
    assert test.names == ("Test 3.10 on ubuntu-22.04", "Test 3.11 on ubuntu-22.04", "Test 3.11 on self-hosted-gpu",
                          "Test 3.12 on ubuntu-24.04")
    assert test.pattern == "Test * on *"
    assert set(test.labels) == {"ubuntu-22.04", "self-hosted-gpu", "ubuntu-24.04"}
    assert dynamic.names == () and dynamic.pattern == "dynamic (*)" and dynamic.labels == ("self-hosted", "npu-pool")
    assert odd.pattern == "odd [[]name][*]" and odd.labels == ("npu-pool-2",)
    config = parse_repo_config(infer_config(parse_all({"w.yml": workflow})), "x")
    assert [o.job for o in config.ownership] == ["Test * on *", "dynamic (*)", "odd [[]name][*]"]
    assert owned_paths(config, "odd [name]*") == ("src/**",)
    assert owned_paths(config, "odd xname]*") == ()


def test_a_job_calling_a_reusable_workflow_is_named_caller_slash_callee():
    (analysed,) = analyse_workflows(parse_all({"w.yml": "jobs:\n  build:\n    uses: ./.github/workflows/b.yml\n"}))
    assert analysed.jobs[0].pattern == "build / *"


def test_broken_workflows_are_skipped_with_a_note_and_the_result_still_checks():
    workflows = {"a.yml": "jobs: [unclosed", "b.yml": "just a string", "c.yml": "on: push\njobs: {}\n",
                 "d.yml": "jobs:\n  x:\n    name: \"line\\nbreak\"\n    runs-on: \"evil\\n[policy]\"\n"}
    analysed = {w.path: w for w in analyse_workflows(parse_all(workflows))}
    assert "not valid YAML" in analysed["a.yml"].problem
    assert "not a workflow" in analysed["b.yml"].problem
    assert analysed["c.yml"].problem is None
    text = infer_config(parse_all(workflows))
    assert "a.yml: skipped, not valid YAML" in text
    assert parse_repo_config(text, "x") == RepoConfig()  # a newline in a name cannot inject TOML


def test_no_workflows_gives_the_default_file():
    assert parse_repo_config(infer_config(parse_all({})), "x") == RepoConfig()


# --- property tests: untrusted input never escapes as anything but ConfigError ---------------------

_SCALARS = st.sampled_from(["1", "-3", "0", "1.5", "-0.5", "nan", "inf", "true", "'x'", "''", "'(a'",
                            "[]", "[1, 'a']", "['port_in_use']", "['crash', 'netwrk']", "{a = 1}",
                            "1979-05-27", "'**'", "'^(?P<host>.+)$'", "[{job = 'a', paths = ['b']}]"])
_KEYS = st.sampled_from([k for keys in SCHEMA.values() for k in keys] + ["job", "paths", "bogus"])
_SECTIONS = st.sampled_from([*SCHEMA, "jobs.owns", "nope"])


@st.composite
def _documents(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        section = draw(_SECTIONS)
        lines.append(f"[[{section}]]" if section == "jobs.owns" and draw(st.booleans()) else f"[{section}]")
        for _ in range(draw(st.integers(0, 4))):
            lines.append(f"{draw(_KEYS)} = {draw(_SCALARS)}")
    return "\n".join(lines) + "\n"


@st.composite
def _garbled(draw) -> str:
    text = draw(st.sampled_from([render_default_config(), FULL, infer_config(parse_all(DEMO_WORKFLOWS))]))
    for _ in range(draw(st.integers(1, 5))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 20))
        text = text[:at] + draw(st.text(max_size=5)) + text[at + cut:]
    return text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=200), _documents(), _garbled()))
def test_any_text_parses_or_raises_config_error(text):
    try:
        config = parse_repo_config(text, "fuzz.toml")
    except ConfigError as error:
        assert error.message.startswith("fuzz.toml: ")
        assert "\n" not in error.message.split(": not valid TOML:")[0]
    else:
        assert isinstance(config, RepoConfig)
        assert config.policy.need_contention <= config.policy.retryable_categories


_YAML_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-5, 300), st.text(max_size=12),
                         st.sampled_from(["${{ matrix.a }}", "${{ github.x }}", "**", "!x", "/", "a/**"]))
_YAML_TREES = st.recursive(_YAML_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.sampled_from(["name", "runs-on", "strategy", "matrix", "include", "exclude", "a", "b",
                                     "labels", "max-parallel", "paths", "pull_request"]), inner, max_size=4)),
    max_leaves=25)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(max_size=8), _YAML_TREES, max_size=3), _YAML_TREES)
def test_whatever_the_workflows_say_init_writes_a_file_check_accepts(jobs, triggers):
    workflow = yaml.safe_dump({"on": triggers, "jobs": jobs})
    config = parse_repo_config(infer_config(parse_all({"w.yml": workflow, "raw.yml": str(triggers)})), "inferred")
    assert all(entry.paths for entry in config.ownership)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30), st.text(max_size=30))
def test_path_matches_never_raises(glob, path):
    assert path_matches(glob, path) in (True, False)


# --- the docs --------------------------------------------------------------------------------------

def test_docs_describe_every_key():
    docs = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    for section, keys in SCHEMA.items():
        for key in keys:
            assert f"`{section}.{key}`" in docs, f"docs/config.md does not describe {section}.{key}"
    for key in ("job", "paths"):
        assert f"`jobs.owns[].{key}`" in docs


# --- the commands, as a user runs them -------------------------------------------------------------

def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "ci_triage", "config", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def test_config_check_exit_codes_and_one_line_errors(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text(FULL, encoding="utf-8")
    result = _cli("check", str(good), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "OK" in result.stdout and result.stderr == ""

    bad = tmp_path / "bad.toml"
    bad.write_text("[policy]\ndied_early_ratio = 1.5\n", encoding="utf-8")
    result = _cli("check", str(bad), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert f"{bad}: policy.died_early_ratio: must be in (0, 1], got 1.5" in result.stderr

    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe[policy]")
    result = _cli("check", "binary.toml", cwd=tmp_path)
    assert result.returncode == 2 and "not UTF-8" in result.stderr

    result = _cli("check", "missing.toml", cwd=tmp_path)
    assert result.returncode == 2 and "no config file at missing.toml" in result.stderr

    result = _cli("check", cwd=tmp_path)  # no file at the default place: the defaults apply
    assert result.returncode == 0 and "defaults apply" in result.stdout


def test_config_init_then_check_on_the_demo_workflows(tmp_path):
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for path, text in DEMO_WORKFLOWS.items():
        (tmp_path / path).write_text(text, encoding="utf-8")
    (workflows / "broken.yaml").write_text("jobs: [", encoding="utf-8")

    result = _cli("init", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    written = tmp_path / ".github" / "ci-triage.toml"
    assert "written from 3 workflow file(s)" in result.stdout
    assert "skipped .github/workflows/broken.yaml" in result.stderr
    assert "vllm-example (*)" in written.read_text(encoding="utf-8")

    checked = _cli("check", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "1 ownership entry" in checked.stdout

    written.write_text("# edited by hand\n", encoding="utf-8")
    again = _cli("init", cwd=tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr and "--force" in again.stderr
    assert written.read_text(encoding="utf-8") == "# edited by hand\n"
    forced = _cli("init", "--force", cwd=tmp_path)
    assert forced.returncode == 0 and "vllm-example (*)" in written.read_text(encoding="utf-8")


def test_config_init_with_explicit_paths_and_stdout(tmp_path):
    elsewhere = tmp_path / "wf"
    elsewhere.mkdir()
    (elsewhere / "npu.yml").write_text(NPU_WORKFLOW, encoding="utf-8")
    result = _cli("init", "--workflows", str(elsewhere), "--output", "-", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert parse_repo_config(result.stdout, "stdout").ownership[0].job == "vllm-example (*)"
    out = tmp_path / "conf" / "triage.toml"
    result = _cli("init", "--workflows", str(elsewhere), "-o", str(out), cwd=tmp_path)
    assert result.returncode == 0 and out.exists()
    missing = _cli("init", "--workflows", "nowhere", "-o", "x.toml", cwd=tmp_path)
    assert missing.returncode == 2 and "no workflow directory at nowhere" in missing.stderr
    assert not (tmp_path / "x.toml").exists()
