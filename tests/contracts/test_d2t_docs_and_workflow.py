"""The docs describe what the code does, the workflow keeps its promises, the benchmark runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ci_triage.contracts.d2t import CHECK_NAMES, MappingKind
from ci_triage.contracts.d2t_cli import app

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS = (REPO_ROOT / "docs" / "d2t.md").read_text(encoding="utf-8")
WORKFLOW = yaml.safe_load((REPO_ROOT / "workflows" / "d2t-contract.yml").read_text())


@pytest.mark.parametrize("check_name", CHECK_NAMES)
def test_every_check_is_documented(check_name):
    assert f"`{check_name}`" in DOCS


def test_every_command_option_and_kind_is_documented():
    for command in app.registered_commands:
        assert f"ci-triage d2t {command.name}" in DOCS
    for option in ("--format json", "--output OUT", "--in-place --backup", "--vocab-size",
                   "--draft-vocab-size", "--d2t-checkpoint", "--d2t-vocab-size"):
        assert option in DOCS, option
    for kind in MappingKind:
        assert f'"{kind.value}"' in DOCS


def test_exit_code_tables_cover_0_1_2_for_both_commands():
    tables = re.findall(r"Exit codes of `(\w+)`:\n\n((?:\|.*\n)+)", DOCS)
    assert {command for command, _ in tables} == {"check", "fix"}
    for _, table in tables:
        assert [row.split("|")[1].strip() for row in table.splitlines()[2:]] == ["0", "1", "2"]


def test_documented_json_keys_match_the_output():
    for key in ("path", "ok", "kind", "vocab_size", "draft_vocab_size", "max_engine_target_id",
                "checks", "offending_draft_ids", "skipped", "error"):
        assert f'"{key}"' in DOCS, key


def workflow_triggers() -> dict:
    return WORKFLOW.get("on", WORKFLOW.get(True))  # YAML 1.1 reads a bare `on` as True


def test_workflow_runs_on_prs_touching_drafters_or_checkpoints():
    paths = workflow_triggers()["pull_request"]["paths"]
    assert "**/*.safetensors" in paths and "**/d2t*" in paths
    assert any("eagle" in path for path in paths)
    assert "pull_request_target" not in workflow_triggers()


def test_workflow_is_least_privilege_and_never_interpolates_into_scripts():
    assert WORKFLOW["permissions"] == {"contents": "read"}
    for job in WORKFLOW["jobs"].values():
        assert "permissions" not in job or job["permissions"] == {"contents": "read"}
        for step in job["steps"]:
            assert "${{" not in step.get("run", ""), step.get("name")
            assert "secrets." not in str(step)
            if step.get("uses", "").startswith("actions/checkout"):
                assert step["with"]["persist-credentials"] is False


def test_workflow_runs_the_check_and_the_plugin_under_the_documented_job_id():
    job = WORKFLOW["jobs"]["d2t-contract"]
    scripts = "\n".join(step.get("run", "") for step in job["steps"])
    assert "ci-triage d2t check" in scripts
    assert "--d2t-checkpoint" in scripts and "pytest" in scripts
    assert "`d2t-contract`" in DOCS


def test_benchmark_prints_check_time_load_time_and_ratio():
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "benchmarks" / "d2t_check.py"), "--repeats", "2"],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "vocab_size=151936 draft_vocab_size=32000" in result.stdout
    check_ms = float(re.search(r"check \(all 8 checks\)\s+([\d.]+) ms", result.stdout).group(1))
    assert re.search(r"load \(d2t \+ t2d from safetensors\)\s+[\d.]+ ms", result.stdout)
    assert re.search(r"check / load ratio: [\d.]+", result.stdout)
    assert check_ms < 500


ENGINE_CHECKS = ("loads_in_vllm", "loads_in_sglang")


def test_engine_check_names_are_the_documented_ones():
    from ci_triage.contracts.d2t_engines import ENGINE_CHECK_NAMES

    assert ENGINE_CHECK_NAMES == ENGINE_CHECKS


@pytest.mark.parametrize("check_name", ENGINE_CHECKS)
def test_every_engine_check_and_the_engine_option_are_documented(check_name):
    assert f"`{check_name}`" in DOCS
    assert "--engine vllm|sglang|any" in DOCS and "--d2t-engine" in DOCS


def test_docs_make_no_unsourced_arange_history_claim():
    # No arange default was found in EAGLE, SpecForge, speculators or vLLM history.
    assert "Drafters once defaulted" not in DOCS
    assert "no\n`arange` default was found" in DOCS or "no `arange` default was found" in DOCS


CONVENTION_ROWS = {
    "SafeAILab/EAGLE (producer: training)": "eagle/traineagle3/cnets.py",
    "SafeAILab/EAGLE (loader)": "eagle/model/ea_model.py",
    "sgl-project/SpecForge (producer)": "specforge/data/preprocessing.py",
    "vllm-project/speculators (producer)": "src/speculators/model.py",
    "vLLM (engine)": "vllm/model_executor/models/llama_eagle3.py",
    "SGLang (engine)": "python/sglang/srt/models/llama_eagle3.py",
}


@pytest.mark.parametrize("project, cited_file", CONVENTION_ROWS.items())
def test_convention_table_has_a_cited_row_per_producer_and_engine(project, cited_file):
    rows = [line for line in DOCS.splitlines() if line.startswith(f"| {project} |")]
    assert len(rows) == 1, project
    cells = rows[0].strip("|").split("|")
    assert len(cells) == 8 and cited_file in cells[1]
    # each row names the function it was read from, not just the file
    assert re.search(r"`[A-Za-z_.]+\.(?:__init__|\w+)`|`\w+`", cells[1])


def test_workflow_reads_bin_checkpoints_and_passes_the_engine():
    paths = workflow_triggers()["pull_request"]["paths"]
    assert "**/pytorch_model*.bin" in paths and "**/*.bin.index.json" in paths
    job = WORKFLOW["jobs"]["d2t-contract"]
    scripts = "\n".join(step.get("run", "") for step in job["steps"])
    assert scripts.count('--engine "$D2T_ENGINE"') == 2
    assert '--d2t-engine "$D2T_ENGINE"' in scripts
    assert "D2T_ENGINE" in WORKFLOW["env"] and "engine" in (
        workflow_triggers()["workflow_dispatch"]["inputs"])
