"""Real producers' checkpoint layouts, judged per engine as the engines' loaders would.

The torch tests at the end compare the torch-free fixture writer with torch.save itself and
load the fixtures with torch.load(weights_only=True); they are skipped without torch (the
suite's own reader never needs it).
"""

from __future__ import annotations

import io
import json
import re
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ci_triage.contracts.d2t_cli import app
from ci_triage.contracts.d2t_io import load_mapping

from .producer_fixtures import (
    DRAFT,
    ENGINES,
    EXPECTED_VERDICTS,
    PRODUCER_FIXTURES,
    USED_TOKENS,
    VOCAB,
)
from .torch_save_writer import (
    RawTensor,
    _zip_records,
    module_state_dict,
    torch_save_bytes,
    write_torch_file,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
EXIT_VERDICT = {0: "PASS", 1: "FAIL", 2: "ERROR"}
REFERENCE_D2T = np.array(USED_TOKENS) - np.arange(DRAFT)


@pytest.fixture(scope="session")
def producers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("producers")
    return {name: build(root / name) for name, build in PRODUCER_FIXTURES.items()}


def invoke(*args: object):
    return CliRunner().invoke(app, [str(arg) for arg in args])


@pytest.mark.parametrize("engine_index, engine", list(enumerate(ENGINES)))
@pytest.mark.parametrize("fixture", list(PRODUCER_FIXTURES))
def test_check_gives_the_tables_verdict(producers, fixture, engine_index, engine):
    result = invoke("check", "--engine", engine, producers[fixture])
    assert "Traceback" not in result.output
    assert EXIT_VERDICT[result.exit_code] == EXPECTED_VERDICTS[fixture][engine_index], (
        result.output)
    if result.exit_code != 2:
        assert result.stdout.startswith(EXPECTED_VERDICTS[fixture][engine_index])
        assert f"--engine {engine}" in result.stdout.splitlines()[0]


def test_eagle_pytorch_model_bin_is_read_without_torch(producers):
    loaded = load_mapping(producers["eagle_bin_reduced"])
    assert loaded.layout == "bin_directory" and loaded.is_engine_checkpoint
    assert loaded.d2t_location.file.name == "pytorch_model.bin"
    assert loaded.mapping.d2t.tolist() == REFERENCE_D2T.tolist()
    assert loaded.mapping.t2d.dtype == np.bool_
    assert np.flatnonzero(loaded.mapping.t2d).tolist() == USED_TOKENS


def test_sharded_bin_reads_each_tensor_from_its_shard(producers):
    loaded = load_mapping(producers["eagle_bin_sharded"])
    assert loaded.layout == "sharded_bin_directory"
    assert loaded.d2t_location.file.name == "pytorch_model-00002-of-00002.bin"
    assert loaded.t2d_location.file.name == "pytorch_model-00001-of-00002.bin"
    assert loaded.mapping.d2t.tolist() == REFERENCE_D2T.tolist()


def test_full_vocab_drafter_without_d2t_passes_with_the_reason(producers):
    result = invoke("check", producers["eagle_full_vocab_no_d2t"])
    assert result.exit_code == 0, result.output
    assert "no d2t stored: a full-vocabulary draft" in result.stdout
    assert "vLLM keeps draft_id_to_target_id at zeros" in result.stdout


def test_reduced_drafter_without_d2t_fails_with_the_reason(producers):
    result = invoke("check", producers["reduced_no_d2t"])
    assert result.exit_code == 1
    assert "no d2t stored for a reduced draft" in result.stdout
    assert "draft id i is served as target id i" in result.stdout


def test_speculators_sizes_come_from_the_nested_config(producers):
    loaded = load_mapping(producers["speculators_d2t_only"])
    assert loaded.config_format == "speculators"
    assert loaded.mapping.vocab_size == VOCAB and loaded.mapping.t2d is None
    assert "vocab_size from config.json transformer_layer_config" in loaded.sizes_from


def test_speculators_t2d_length_is_checked_against_the_nested_vocab_size(producers):
    result = invoke("check", "--engine", "vllm", "--format", "json",
                    producers["speculators_t2d_wrong_length"])
    entry = json.loads(result.stdout)[0]
    assert entry["vocab_size"] == VOCAB and entry["engine"] == "vllm"
    failed = {check["name"] for check in entry["checks"] if not check["passed"]}
    assert failed == {"t2d_shape_and_dtype"}


def test_model_prefixed_d2t_fails_under_vllm_only(producers):
    result = invoke("check", "--engine", "any", "--format", "json",
                    producers["model_prefixed_d2t"])
    checks = {check["name"]: check for check in json.loads(result.stdout)[0]["checks"]}
    assert not checks["loads_in_vllm"]["passed"]
    assert "model.draft_id_to_target_id" in checks["loads_in_vllm"]["detail"]
    assert checks["loads_in_sglang"]["passed"]


def test_integer_t2d_fails_the_contract(producers):
    result = invoke("check", "--engine", "vllm", producers["integer_t2d"])
    assert result.exit_code == 1
    assert re.search(r"FAIL t2d_shape_and_dtype +t2d dtype uint8 is not bool", result.stdout)


def test_mapping_file_is_not_judged_as_an_engine_checkpoint(producers):
    result = invoke("check", "--format", "json", producers["specforge_vocab_mapping_pt"])
    checks = {check["name"]: check for check in json.loads(result.stdout)[0]["checks"]}
    assert checks["loads_in_vllm"]["skipped"] and checks["loads_in_sglang"]["skipped"]


def test_fix_refuses_to_rewrite_torch_files(producers, tmp_path):
    result = invoke("fix", producers["eagle_bin_reduced"], "-o", tmp_path / "out")
    # already offsets: nothing to write, so fix succeeds without touching the .bin
    assert result.exit_code == 0 and "nothing written" in result.stdout
    legacy = tmp_path / "legacy"
    shutil.copytree(producers["eagle_bin_reduced"], legacy)
    state = module_state_dict({"d2t": np.arange(DRAFT, dtype=np.int64)})
    write_torch_file(legacy / "pytorch_model.bin", state)
    result = invoke("fix", legacy, "-o", tmp_path / "fixed")
    assert result.exit_code == 2 and "export the torch file" in result.stderr


def test_a_pickle_that_calls_code_is_refused_and_never_runs(tmp_path):
    from ci_triage.contracts.torch_archive import TorchArchiveError, open_torch_archive

    marker = tmp_path / "pwned"
    payload = (b"\x80\x02cos\nsystem\nq\x00X" + len(f"touch {marker}").to_bytes(4, "little")
               + f"touch {marker}".encode() + b"\x85R.")
    directory = tmp_path / "evil"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps({"draft_vocab_size": 8, "vocab_size": 8}))
    (directory / "pytorch_model.bin").write_bytes(
        _zip_records([("pytorch_model/data.pkl", payload)]))
    with pytest.raises(TorchArchiveError, match="refusing to unpickle os.system"):
        open_torch_archive(directory / "pytorch_model.bin")
    result = invoke("check", directory)
    assert result.exit_code == 2 and "refusing to unpickle os.system" in result.stderr
    assert result.stderr.count("\n") == 1
    assert not marker.exists()


def test_a_tensor_past_its_storage_is_refused(tmp_path):
    raw = torch_save_bytes({"d2t": np.zeros(4, np.int64)}, "bad")
    # Claim 8 elements over a 4-element storage: patch the size tuple (BININT1 4 -> 8) that
    # follows the storage offset in the pickle.
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        records = [(name, archive.read(name)) for name in archive.namelist()]
    pickled = records[0][1]
    patched = pickled.replace(b"K\x00K\x04\x85", b"K\x00K\x08\x85", 1)
    assert patched != pickled
    file = tmp_path / "bad.pt"
    file.write_bytes(_zip_records([(records[0][0], patched), *records[1:]]))
    result = invoke("check", "--vocab-size", "8", file)
    assert result.exit_code == 2 and "past its storage" in result.stderr


def test_docs_verdict_table_is_the_tested_one():
    docs = (REPO_ROOT / "docs" / "d2t.md").read_text(encoding="utf-8")
    rows = {}
    for line in docs.splitlines():
        cells = [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] in PRODUCER_FIXTURES:
            rows[cells[0]] = tuple(cells[2:5])
    assert rows == EXPECTED_VERDICTS


# --- against torch itself (skipped without torch) ----------------------------------------------


def test_fixture_writer_matches_torch_save_byte_for_byte():
    torch = pytest.importorskip("torch")
    module = torch.nn.Module()
    module.register_buffer("d2t", torch.tensor(REFERENCE_D2T, dtype=torch.int64))
    module.register_buffer("t2d", torch.zeros(VOCAB, dtype=torch.bool))
    module.fc = torch.nn.Linear(4, 2, bias=False).to(torch.bfloat16)
    module.midlayer = torch.nn.Module()
    module.midlayer.norm = torch.nn.Linear(2, 2, bias=False)
    state = module.state_dict()
    buffer = io.BytesIO()
    torch.save(state, buffer)
    expected = buffer.getvalue()
    serialization_id = zipfile.ZipFile(io.BytesIO(expected)).read(
        "archive/.data/serialization_id").decode()
    ours = {key: RawTensor("BFloat16Storage", tuple(value.shape),
                           value.view(torch.int16).numpy().tobytes())
            if value.dtype == torch.bfloat16 else value.numpy()
            for key, value in state.items()}
    assert torch_save_bytes(module_state_dict(ours), "archive", serialization_id) == expected


@pytest.mark.parametrize("fixture", ["eagle_bin_reduced", "specforge_vocab_mapping_pt"])
def test_torch_load_weights_only_reads_the_fixtures_as_we_do(producers, fixture):
    torch = pytest.importorskip("torch")
    path = producers[fixture]
    file = path / "pytorch_model.bin" if path.is_dir() else path
    state = torch.load(str(file), map_location="cpu", weights_only=True)
    loaded = load_mapping(path)
    assert state["d2t"].numpy().tolist() == loaded.mapping.d2t.tolist()
    assert state["t2d"].dtype == torch.bool
    assert state["t2d"].numpy().tolist() == loaded.mapping.t2d.tolist()
