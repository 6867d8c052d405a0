"""Reading mappings from checkpoint layouts, and the byte-level writer."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from ci_triage.contracts.d2t import MappingKind, check_mapping, reference_mapping
from ci_triage.contracts.d2t_io import (
    D2tInputError,
    SizeOverrides,
    find_tensor_key,
    load_mapping,
)
from ci_triage.contracts.d2t_write import overwrite_safetensors_tensor

from .checkpoint_builders import (
    FULL_VOCAB,
    REDUCED_USED_TOKENS,
    tensor_bytes,
    write_hf_checkpoint,
    write_safetensors,
)
from .torch_save_writer import write_torch_file


def test_module_prefixed_tensors_are_found(tmp_path):
    mapping = reference_mapping(REDUCED_USED_TOKENS, FULL_VOCAB)
    directory = write_hf_checkpoint(tmp_path / "prefixed", mapping.d2t, mapping.t2d,
                                    FULL_VOCAB, prefix="model.")
    loaded = load_mapping(directory)
    assert loaded.d2t_location.key == "model.d2t"
    assert loaded.t2d_location.key == "model.t2d"


def test_hf_directory(checkpoints):
    loaded = load_mapping(checkpoints["good"])
    assert loaded.layout == "hf_directory"
    assert loaded.config_format == "hf" and loaded.is_engine_checkpoint
    assert loaded.d2t_location.key == "d2t"
    assert loaded.mapping.vocab_size == FULL_VOCAB
    assert loaded.mapping.draft_vocab_size == len(REDUCED_USED_TOKENS)
    assert "config.json" in loaded.sizes_from
    assert check_mapping(loaded.mapping).ok


def test_sharded_directory_reads_each_tensor_from_its_shard(checkpoints):
    loaded = load_mapping(checkpoints["sharded_legacy"])
    assert loaded.layout == "sharded_hf_directory"
    assert loaded.d2t_location.file.name == "model-00002-of-00002.safetensors"
    assert loaded.t2d_location is not None
    assert loaded.t2d_location.file.name == "model-00001-of-00002.safetensors"
    assert check_mapping(loaded.mapping).kind is MappingKind.ABSOLUTE_IDS


def test_single_safetensors_file_uses_the_config_beside_it(checkpoints):
    loaded = load_mapping(checkpoints["legacy_full"] / "model.safetensors")
    assert loaded.layout == "safetensors"
    assert loaded.mapping.vocab_size == FULL_VOCAB


def test_single_file_without_config_falls_back_to_tensor_lengths(tmp_path):
    file = write_safetensors(tmp_path / "mapping.safetensors",
                             {"d2t": np.zeros(16, np.int64), "t2d": np.ones(16, bool)})
    loaded = load_mapping(file)
    assert (loaded.mapping.vocab_size, loaded.mapping.draft_vocab_size) == (16, 16)
    assert "t2d length" in loaded.sizes_from


def test_without_config_or_t2d_vocab_size_must_be_given(tmp_path):
    file = write_safetensors(tmp_path / "mapping.safetensors", {"d2t": np.zeros(16, np.int64)})
    with pytest.raises(D2tInputError, match="vocab_size unknown"):
        load_mapping(file)
    loaded = load_mapping(file, SizeOverrides(vocab_size=32))
    assert loaded.mapping.vocab_size == 32 and loaded.mapping.t2d is None


def test_npz_mapping_with_stored_sizes(tmp_path):
    file = tmp_path / "d2t.npz"
    np.savez(file, d2t=np.arange(8, dtype=np.int64), vocab_size=np.int64(64),
             draft_vocab_size=np.int64(8))
    loaded = load_mapping(file)
    assert loaded.layout == "npz"
    assert loaded.mapping.vocab_size == 64
    assert "stored with the tensors" in loaded.sizes_from
    assert check_mapping(loaded.mapping).kind is MappingKind.ABSOLUTE_IDS


def test_full_vocab_drafter_directory_without_d2t_loads_with_no_d2t(checkpoints):
    loaded = load_mapping(checkpoints["missing_tensors"])
    assert loaded.mapping.d2t is None and loaded.d2t_location is None
    assert (loaded.mapping.vocab_size, loaded.mapping.draft_vocab_size) == (FULL_VOCAB, FULL_VOCAB)
    assert check_mapping(loaded.mapping).ok


def test_missing_d2t_outside_a_drafter_directory_is_an_input_error(checkpoints):
    with pytest.raises(D2tInputError, match="does not describe an EAGLE-3 drafter"):
        load_mapping(checkpoints["not_a_drafter"])
    with pytest.raises(D2tInputError, match="a mapping file must store d2t"):
        load_mapping(checkpoints["missing_tensors"] / "model.safetensors")


@pytest.mark.parametrize("name", ["corrupt"])
def test_corrupt_file_is_one_line_input_error(checkpoints, name):
    with pytest.raises(D2tInputError) as raised:
        load_mapping(checkpoints[name])
    assert "\n" not in str(raised.value)


def test_truncated_file_and_unknown_suffix_and_missing_path(tmp_path):
    (tmp_path / "short.safetensors").write_bytes(b"\x01\x02")
    with pytest.raises(D2tInputError, match="shorter than 8 bytes"):
        load_mapping(tmp_path / "short.safetensors")
    (tmp_path / "mapping.txt").write_text("0 0 0")
    with pytest.raises(D2tInputError, match="unsupported input"):
        load_mapping(tmp_path / "mapping.txt")
    with pytest.raises(D2tInputError, match="no such file"):
        load_mapping(tmp_path / "absent")


def test_broken_npz_and_config_are_input_errors(tmp_path):
    (tmp_path / "bad.npz").write_bytes(b"PK not a zip")
    with pytest.raises(D2tInputError, match="cannot read"):
        load_mapping(tmp_path / "bad.npz")
    directory = tmp_path / "ckpt"
    directory.mkdir()
    (directory / "config.json").write_text("{")
    write_safetensors(directory / "model.safetensors", {"d2t": np.zeros(4, np.int64)})
    with pytest.raises(D2tInputError, match="config.json"):
        load_mapping(directory)


def test_shard_missing_from_disk_is_named(checkpoints, tmp_path):
    copy = tmp_path / "sharded"
    shutil.copytree(checkpoints["sharded_legacy"], copy)
    (copy / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(D2tInputError, match="missing"):
        load_mapping(copy)


def test_index_pointing_outside_the_checkpoint_is_refused(checkpoints, tmp_path):
    copy = tmp_path / "sharded"
    shutil.copytree(checkpoints["sharded_legacy"], copy)
    index_file = copy / "model.safetensors.index.json"
    index = json.loads(index_file.read_text())
    index["weight_map"]["d2t"] = "../elsewhere.safetensors"
    index_file.write_text(json.dumps(index))
    with pytest.raises(D2tInputError, match="outside the checkpoint"):
        load_mapping(copy)


def test_tensor_names_with_and_without_prefix():
    assert find_tensor_key(["d2t", "d2t"], "d2t") == "d2t"
    assert find_tensor_key(["model.layers.0.w", "drafter.d2t"], "d2t") == "drafter.d2t"
    assert find_tensor_key(["model.notd2t"], "d2t") is None
    with pytest.raises(D2tInputError, match="several tensors"):
        find_tensor_key(["a.d2t", "b.d2t"], "d2t")


def test_pt_is_read_without_torch(tmp_path):
    file = write_torch_file(tmp_path / "mapping.pt", {"d2t": np.zeros(8, np.int64),
                                                      "t2d": np.ones(8, bool)})
    loaded = load_mapping(file)
    assert loaded.layout == "pt" and not loaded.is_engine_checkpoint
    assert check_mapping(loaded.mapping).ok


def test_legacy_non_zip_pt_is_a_one_line_error(tmp_path):
    file = tmp_path / "mapping.pt"
    file.write_bytes(b"\x80\x02not a zip archive")
    with pytest.raises(D2tInputError) as raised:
        load_mapping(file)
    assert "\n" not in str(raised.value)


def test_overwrite_changes_only_the_named_tensor(checkpoints, tmp_path):
    file = tmp_path / "model.safetensors"
    shutil.copyfile(checkpoints["legacy_full"] / "model.safetensors", file)
    before = tensor_bytes(file)
    overwrite_safetensors_tensor(file, "d2t", np.zeros(FULL_VOCAB, np.int64))
    after = tensor_bytes(file)
    assert after["d2t"] == bytes(8 * FULL_VOCAB)
    assert {k: v for k, v in after.items() if k != "d2t"} == {
        k: v for k, v in before.items() if k != "d2t"}


def test_overwrite_refuses_a_different_shape_or_a_float_tensor(checkpoints, tmp_path):
    file = tmp_path / "model.safetensors"
    shutil.copyfile(checkpoints["legacy_full"] / "model.safetensors", file)
    with pytest.raises(D2tInputError, match="cannot write"):
        overwrite_safetensors_tensor(file, "d2t", np.zeros(3, np.int64))
    with pytest.raises(D2tInputError, match="cannot write"):
        overwrite_safetensors_tensor(file, "model.norm.weight", np.zeros(8, np.int64))
