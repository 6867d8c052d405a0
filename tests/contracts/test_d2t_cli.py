"""`ci-triage d2t check|fix`: exit codes, JSON output, and byte-identical repairs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ci_triage.contracts.d2t_cli import app

from .checkpoint_builders import (
    FULL_VOCAB,
    header_metadata,
    tensor_bytes,
    write_safetensors,
)

runner = CliRunner()
REPO_ROOT = Path(__file__).resolve().parents[2]


def invoke(*args: str | Path):
    return runner.invoke(app, [str(arg) for arg in args])


@pytest.mark.parametrize(
    "fixture, exit_code",
    [
        ("good", 0),
        ("legacy_full", 1),
        ("legacy_reduced", 1),
        ("sharded_legacy", 1),
        # A full-vocabulary drafter without d2t: the engines use the identity.
        ("missing_tensors", 0),
        ("not_a_drafter", 2),
        ("corrupt", 2),
    ],
)
def test_check_exit_codes(checkpoints, fixture, exit_code):
    result = invoke("check", checkpoints[fixture])
    assert result.exit_code == exit_code, result.output
    assert "Traceback" not in result.output
    if exit_code == 2:
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    else:
        assert result.stderr == ""


def test_check_text_reports_the_seed_style_numbers(checkpoints):
    result = invoke("check", checkpoints["legacy_full"])
    assert "FAIL" in result.stdout and "[absolute_ids]" in result.stdout
    assert f"max engine target id = {2 * (FULL_VOCAB - 1)} (vocab_size={FULL_VOCAB})" in result.stdout
    assert "first offending draft ids: [32, 33, 34" in result.stdout


def test_unreadable_path_wins_over_a_violation(checkpoints, tmp_path):
    assert invoke("check", checkpoints["good"], checkpoints["legacy_full"]).exit_code == 1
    result = invoke("check", checkpoints["legacy_full"], tmp_path / "absent")
    assert result.exit_code == 2


def test_check_json_is_only_json_on_stdout(checkpoints):
    result = invoke("check", "--format", "json", checkpoints["good"], checkpoints["legacy_full"],
                    checkpoints["corrupt"])
    assert result.exit_code == 2
    entries = json.loads(result.stdout)
    good, legacy, corrupt = entries
    assert good["ok"] is True and good["kind"] == "offsets"
    assert legacy["ok"] is False and legacy["kind"] == "absolute_ids"
    assert legacy["max_engine_target_id"] == 2 * (FULL_VOCAB - 1)
    assert legacy["vocab_size"] == FULL_VOCAB and legacy["draft_vocab_size"] == FULL_VOCAB
    in_vocab = next(c for c in legacy["checks"] if c["name"] == "engine_ids_in_vocab")
    assert in_vocab["passed"] is False and in_vocab["offending_draft_ids"][0] == FULL_VOCAB // 2
    assert corrupt["ok"] is False and corrupt["kind"] is None and corrupt["error"]
    assert result.stderr.startswith("error: ")


def test_size_overrides_beat_the_config(checkpoints):
    result = invoke("check", "--format", "json", "--vocab-size", "128", checkpoints["legacy_full"])
    entry = json.loads(result.stdout)[0]
    assert entry["vocab_size"] == 128
    assert "vocab_size from command line" in entry["sizes_from"]


def assert_repaired_copy(source_file: Path, repaired_file: Path, d2t_key: str) -> None:
    before, after = tensor_bytes(source_file), tensor_bytes(repaired_file)
    assert set(before) == set(after)
    for name in before:
        if name != d2t_key:
            assert after[name] == before[name], f"{name} changed"
    assert after[d2t_key] != before[d2t_key]
    assert header_metadata(repaired_file) == header_metadata(source_file)


@pytest.mark.parametrize("fixture", ["legacy_full", "legacy_reduced"])
def test_fix_directory_writes_a_passing_copy_with_other_tensors_untouched(
        checkpoints, tmp_path, fixture):
    source = checkpoints[fixture]
    output = tmp_path / "fixed"
    result = invoke("fix", source, "--output", output)
    assert result.exit_code == 0, result.output
    assert invoke("check", output).exit_code == 0
    assert_repaired_copy(source / "model.safetensors", output / "model.safetensors", "d2t")
    assert (output / "config.json").read_bytes() == (source / "config.json").read_bytes()
    assert invoke("check", source).exit_code == 1  # the input is never touched


def test_fix_of_full_vocabulary_arange_writes_zeros(checkpoints, tmp_path):
    output = tmp_path / "fixed.safetensors"
    source = checkpoints["legacy_full"] / "model.safetensors"
    assert invoke("fix", source, "-o", output).exit_code == 0
    assert tensor_bytes(output)["d2t"] == np.zeros(FULL_VOCAB, "<i8").tobytes()


def test_fix_of_a_single_file_needs_no_config_beside_the_output(tmp_path):
    source_dir = tmp_path / "export"
    source_dir.mkdir()
    (source_dir / "config.json").write_text('{"vocab_size": 16, "draft_vocab_size": 16}')
    source = write_safetensors(source_dir / "drafter.safetensors",
                               {"d2t": np.arange(16, dtype=np.int64)})
    output_dir = tmp_path / "elsewhere"
    output_dir.mkdir()
    result = invoke("fix", source, "-o", output_dir / "drafter.safetensors")
    assert result.exit_code == 0, result.output
    assert invoke("check", output_dir / "drafter.safetensors", "--vocab-size", "16").exit_code == 0


def test_fix_sharded_rewrites_only_the_shard_holding_d2t(checkpoints, tmp_path):
    source = checkpoints["sharded_legacy"]
    output = tmp_path / "fixed"
    result = invoke("fix", source, "--output", output)
    assert result.exit_code == 0, result.output
    assert invoke("check", output).exit_code == 0
    for name in ("config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors"):
        assert (output / name).read_bytes() == (source / name).read_bytes(), name
    assert_repaired_copy(source / "model-00002-of-00002.safetensors",
                         output / "model-00002-of-00002.safetensors", "d2t")


def test_fix_in_place_needs_a_backup_and_keeps_one(checkpoints, tmp_path):
    copy = tmp_path / "ckpt"
    shutil.copytree(checkpoints["legacy_reduced"], copy)
    original = (copy / "model.safetensors").read_bytes()
    refused = invoke("fix", copy, "--in-place")
    assert refused.exit_code == 2 and "without --backup" in refused.stderr
    assert (copy / "model.safetensors").read_bytes() == original
    result = invoke("fix", copy, "--in-place", "--backup")
    assert result.exit_code == 0, result.output
    assert (copy / "model.safetensors.bak").read_bytes() == original
    assert invoke("check", copy).exit_code == 0
    again = invoke("fix", copy, "--in-place", "--backup")
    assert again.exit_code == 0 and "nothing written" in again.stdout


@pytest.mark.parametrize(
    "extra_args",
    [[], ["--backup", "-o", "out"], ["--in-place", "--backup", "-o", "out"]],
)
def test_fix_option_mistakes_exit_2(checkpoints, tmp_path, extra_args):
    result = invoke("fix", checkpoints["legacy_full"], *extra_args)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")


def test_fix_refuses_to_overwrite_an_existing_output(checkpoints, tmp_path):
    output = tmp_path / "exists"
    output.mkdir()
    result = invoke("fix", checkpoints["legacy_full"], "--output", output)
    assert result.exit_code == 2 and "already exists" in result.stderr


def test_fix_of_a_good_checkpoint_writes_nothing(checkpoints, tmp_path):
    output = tmp_path / "fixed"
    result = invoke("fix", checkpoints["good"], "--output", output)
    assert result.exit_code == 0 and "nothing written" in result.stdout
    assert not output.exists()


def test_fix_refuses_what_it_cannot_repair_without_guessing(tmp_path):
    file = write_safetensors(tmp_path / "bad.safetensors",
                             {"d2t": np.array([5, 2, 40], np.int64)})
    result = invoke("fix", file, "--vocab-size", "32", "-o", tmp_path / "out.safetensors")
    assert result.exit_code == 1 and "without guessing" in result.stderr
    assert not (tmp_path / "out.safetensors").exists()


def test_fix_refuses_offsets_that_fail_other_checks(tmp_path):
    t2d = np.zeros(32, bool)
    t2d[:3] = True  # disagrees with engine ids 0, 1, 2, 3
    file = write_safetensors(tmp_path / "m.safetensors",
                             {"d2t": np.zeros(4, np.int64), "t2d": t2d})
    result = invoke("fix", file, "-o", tmp_path / "out.safetensors")
    assert result.exit_code == 1 and "t2d_true_count" in result.stderr


def test_fix_npz_keeps_other_arrays_and_compression(tmp_path):
    source = tmp_path / "mapping.npz"
    extra = np.linspace(0, 1, 7)
    np.savez_compressed(source, d2t=np.arange(16, dtype=np.int32), t2d=np.ones(16, bool),
                        extra=extra)
    output = tmp_path / "fixed.npz"
    assert invoke("fix", source, "-o", output).exit_code == 0
    with np.load(output) as fixed:
        assert fixed["d2t"].dtype == np.int32 and not fixed["d2t"].any()
        assert fixed["extra"].tobytes() == extra.tobytes()
    import zipfile
    with zipfile.ZipFile(output) as archive:
        assert all(info.compress_type == zipfile.ZIP_DEFLATED for info in archive.infolist())


def test_fix_does_not_write_pt(tmp_path):
    file = tmp_path / "mapping.pt"
    file.write_bytes(b"x")
    result = invoke("fix", file, "-o", tmp_path / "out.pt")
    assert result.exit_code == 2
    assert "torch" in result.stderr


def test_help_documents_exit_codes():
    for command in ("check", "fix"):
        result = invoke(command, "--help")
        assert result.exit_code == 0
        # rich wraps help inside boxes; compare the words, not the layout
        words = " ".join(result.stdout.replace("│", " ").split())
        assert "Exit codes: 0" in words and "; 2 " in words


def run_module(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "ci_triage.contracts.d2t_cli", *map(str, args)],
        capture_output=True, text=True, env=env, timeout=60,
    )


def test_end_to_end_bad_input_is_one_stderr_line_and_exit_2(checkpoints):
    result = run_module("check", "--format", "json", checkpoints["corrupt"])
    assert result.returncode == 2
    assert json.loads(result.stdout)[0]["ok"] is False
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_end_to_end_check_and_fix(checkpoints, tmp_path):
    assert run_module("check", checkpoints["legacy_full"]).returncode == 1
    assert run_module("fix", checkpoints["legacy_full"], "-o", tmp_path / "out").returncode == 0
    assert run_module("check", tmp_path / "out").returncode == 0


def test_importing_the_sub_app_does_not_import_numpy():
    code = ("import sys, ci_triage.contracts.d2t_cli; "
            "sys.exit(1 if 'numpy' in sys.modules else 0)")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    assert subprocess.run([sys.executable, "-c", code], env=env, timeout=60).returncode == 0


def test_main_cli_mounts_d2t():
    """`ci-triage d2t` reaches the sub-app, and pytest finds the plugin through its entry point."""
    from importlib.metadata import entry_points

    from ci_triage.cli import app as main_app

    result = runner.invoke(main_app, ["d2t", "check", "--help"])
    assert result.exit_code == 0, result.output
    assert any(ep.value == "ci_triage.contracts.pytest_plugin" for ep in entry_points(group="pytest11"))
    assert "Exit codes" in " ".join(result.stdout.replace("│", " ").split())
