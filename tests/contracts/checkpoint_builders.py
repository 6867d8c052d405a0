"""Writers for the fixture checkpoints the d2t tests check and repair.

Checkpoints are written with safetensors; the one holding a BF16 tensor (which numpy cannot
create) is written by hand in the same layout (u64 little-endian header length, JSON header,
data), because real drafters are bf16 and fix must copy such tensors without decoding them.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from ci_triage.contracts.d2t import reference_mapping

SAFETENSORS_DTYPES = {
    np.dtype("int64"): "I64",
    np.dtype("int32"): "I32",
    np.dtype("bool"): "BOOL",
    np.dtype("uint8"): "U8",
    np.dtype("float32"): "F32",
    np.dtype("float16"): "F16",
}
METADATA = {"format": "pt", "exported_by": "d2t-tests"}

FULL_VOCAB = 64
REDUCED_USED_TOKENS = [3, 9, 17, 21, 30, 41, 50, 63]


def bf16_bytes(values: np.ndarray) -> bytes:
    """bfloat16 is the top half of a float32: enough to fake realistic weights."""
    as_uint32 = np.asarray(values, dtype="<f4").view("<u4")
    return (as_uint32 >> 16).astype("<u2").tobytes()


def write_safetensors(path: Path, tensors: dict[str, object], metadata: dict | None = None) -> Path:
    """tensors: name -> numpy array, or ("BF16", shape, raw bytes). Plain numpy tensors go
    through safetensors itself; a BF16 tensor needs the layout written by hand."""
    if not any(isinstance(tensor, tuple) for tensor in tensors.values()):
        save_file(dict(tensors), str(path), metadata=metadata)
        return path
    header: dict[str, object] = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    chunks = []
    offset = 0
    for name, tensor in tensors.items():
        if isinstance(tensor, tuple):
            dtype_tag, shape, raw = tensor
        else:
            array = np.ascontiguousarray(tensor)
            dtype_tag, shape, raw = SAFETENSORS_DTYPES[array.dtype], list(array.shape), array.tobytes()
        header[name] = {"dtype": dtype_tag, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(chunks))
    return path


def other_tensors(prefix: str = "model.", with_bf16: bool = False) -> dict[str, object]:
    """Weights that sit next to the mapping and must survive fix byte for byte."""
    rng = np.random.default_rng(7)
    tensors: dict[str, object] = {
        f"{prefix}norm.weight": rng.standard_normal(8).astype(np.float32),
        f"{prefix}embed.weight": rng.standard_normal((3, 4)).astype(np.float16),
    }
    if with_bf16:
        tensors[f"{prefix}fc.weight"] = ("BF16", [4, 8], bf16_bytes(rng.standard_normal(32)))
    return tensors


def write_config(directory: Path, vocab_size: int, draft_vocab_size: int) -> None:
    config = {"architectures": ["LlamaForCausalLMEagle3"], "vocab_size": vocab_size,
              "draft_vocab_size": draft_vocab_size}
    (directory / "config.json").write_text(json.dumps(config))


def write_hf_checkpoint(directory: Path, d2t: np.ndarray, t2d: np.ndarray | None,
                        vocab_size: int, prefix: str = "", with_bf16: bool = False) -> Path:
    """``prefix`` goes before d2t/t2d; real producers store them unprefixed, which is the only
    name vLLM loads (see d2t_engines)."""
    directory.mkdir(parents=True)
    write_config(directory, vocab_size, int(d2t.shape[0]))
    tensors = {**other_tensors("model.", with_bf16), f"{prefix}d2t": d2t}
    if t2d is not None:
        tensors[f"{prefix}t2d"] = t2d
    write_safetensors(directory / "model.safetensors", tensors, METADATA)
    return directory


def good_checkpoint(directory: Path) -> Path:
    mapping = reference_mapping(REDUCED_USED_TOKENS, FULL_VOCAB)
    return write_hf_checkpoint(directory, mapping.d2t, mapping.t2d, FULL_VOCAB)


def legacy_full_vocab_checkpoint(directory: Path) -> Path:
    """The old constructor default: d2t = arange over a full-vocabulary draft, next to bf16
    weights as real drafters export them."""
    return write_hf_checkpoint(directory, np.arange(FULL_VOCAB, dtype=np.int64),
                               np.ones(FULL_VOCAB, dtype=bool), FULL_VOCAB, with_bf16=True)


def legacy_reduced_vocab_checkpoint(directory: Path) -> Path:
    """A reduced draft whose d2t holds the used tokens themselves instead of offsets."""
    mapping = reference_mapping(REDUCED_USED_TOKENS, FULL_VOCAB)
    return write_hf_checkpoint(directory, np.asarray(REDUCED_USED_TOKENS, dtype=np.int64),
                               mapping.t2d, FULL_VOCAB)


def sharded_legacy_checkpoint(directory: Path) -> Path:
    """Two shards; t2d in the first, the legacy d2t in the second."""
    directory.mkdir(parents=True)
    write_config(directory, FULL_VOCAB, FULL_VOCAB)
    first = {**other_tensors(), "t2d": np.ones(FULL_VOCAB, dtype=bool)}
    second = {"lm_head.weight": np.arange(12, dtype=np.float32).reshape(3, 4),
              "d2t": np.arange(FULL_VOCAB, dtype=np.int64)}
    shard_names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    write_safetensors(directory / shard_names[0], first, METADATA)
    write_safetensors(directory / shard_names[1], second, METADATA)
    weight_map = {name: shard_names[0] for name in first} | {name: shard_names[1] for name in second}
    (directory / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}))
    return directory


def missing_tensors_checkpoint(directory: Path) -> Path:
    directory.mkdir(parents=True)
    write_config(directory, FULL_VOCAB, FULL_VOCAB)
    write_safetensors(directory / "model.safetensors", other_tensors(), METADATA)
    return directory


def not_a_drafter_checkpoint(directory: Path) -> Path:
    """A model directory whose config names no drafter and which stores no d2t."""
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(
        {"architectures": ["LlamaForCausalLM"], "vocab_size": FULL_VOCAB}))
    write_safetensors(directory / "model.safetensors", other_tensors(), METADATA)
    return directory


def corrupt_checkpoint(directory: Path) -> Path:
    directory.mkdir(parents=True)
    write_config(directory, FULL_VOCAB, FULL_VOCAB)
    (directory / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
    return directory


ALL_FIXTURES = {
    "good": good_checkpoint,
    "legacy_full": legacy_full_vocab_checkpoint,
    "legacy_reduced": legacy_reduced_vocab_checkpoint,
    "sharded_legacy": sharded_legacy_checkpoint,
    "missing_tensors": missing_tensors_checkpoint,
    "not_a_drafter": not_a_drafter_checkpoint,
    "corrupt": corrupt_checkpoint,
}


def tensor_bytes(file: Path) -> dict[str, bytes]:
    """Raw bytes of every tensor in a safetensors file, read without decoding."""
    raw = file.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    data = raw[8 + length:]
    return {name: data[entry["data_offsets"][0]:entry["data_offsets"][1]]
            for name, entry in header.items() if name != "__metadata__"}


def header_metadata(file: Path) -> dict | None:
    raw = file.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + length]).get("__metadata__")
