"""Reading d2t/t2d from exported checkpoints and writing repaired ones.

Inputs: a Hugging Face style directory (``config.json`` plus ``model.safetensors`` or a sharded
``model.safetensors.index.json``), a single ``.safetensors`` file, a standalone ``.npz``, and a
``.pt`` state dict when torch happens to be installed. Only the two mapping tensors are read,
so bf16 weights (which numpy cannot represent) never need decoding.

Writing never re-serialises a checkpoint. The repaired d2t has the stored dtype and shape, so
it occupies exactly the bytes of the old one: the file is copied and that byte range is
overwritten. Every other tensor, the header and the ``__metadata__`` stay byte-identical.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ci_triage.contracts.d2t import VocabMapping

CONFIG_NAME = "config.json"
SINGLE_FILE_NAME = "model.safetensors"
SHARD_INDEX_NAME = "model.safetensors.index.json"
BACKUP_SUFFIX = ".bak"
TORCH_MISSING = "reading .pt needs torch (pip install torch)"

# A safetensors header is JSON; anything this large is a corrupt length prefix, not a header.
_MAX_HEADER_BYTES = 100 * 1024 * 1024

# safetensors dtype tag -> little-endian numpy dtype, for the integer types a d2t can have.
_INTEGER_DTYPES = {
    "I8": "i1",
    "I16": "<i2",
    "I32": "<i4",
    "I64": "<i8",
    "U8": "u1",
    "U16": "<u2",
    "U32": "<u4",
    "U64": "<u8",
}


class D2tInputError(Exception):
    """A path that cannot be read, lacks the tensors, or cannot be written. Exit code 2."""


@dataclass(frozen=True)
class TensorLocation:
    file: Path  # the file holding the tensor (a shard, for sharded checkpoints)
    key: str  # the full tensor name, module prefix included


@dataclass(frozen=True, eq=False)
class LoadedMapping:
    path: Path  # as given on the command line
    layout: str  # "hf_directory", "sharded_hf_directory", "safetensors", "npz", "pt"
    mapping: VocabMapping
    d2t_location: TensorLocation
    t2d_location: TensorLocation | None
    sizes_from: str  # where vocab_size/draft_vocab_size came from, for the report


@dataclass(frozen=True)
class SizeOverrides:
    vocab_size: int | None = None
    draft_vocab_size: int | None = None


# --- naming -----------------------------------------------------------------------------------


def find_tensor_key(keys: Iterable[str], short_name: str) -> str | None:
    """``d2t`` or ``<module prefix>.d2t``; several prefixed matches are ambiguous, not a pick."""
    keys = list(keys)
    if short_name in keys:
        return short_name
    suffixed = sorted(key for key in keys if key.endswith("." + short_name))
    if len(suffixed) > 1:
        raise D2tInputError(
            f"several tensors named {short_name}: {', '.join(suffixed[:5])}; keep one per file"
        )
    return suffixed[0] if suffixed else None


# --- safetensors header -----------------------------------------------------------------------


def read_safetensors_header(file: Path) -> tuple[int, dict[str, Any]]:
    """(header length, header) per the safetensors format: u64 LE length, then JSON."""
    with open(file, "rb") as stream:
        prefix = stream.read(8)
        if len(prefix) != 8:
            raise D2tInputError(f"{file}: not a safetensors file (shorter than 8 bytes)")
        (header_length,) = struct.unpack("<Q", prefix)
        if header_length > _MAX_HEADER_BYTES:
            raise D2tInputError(f"{file}: not a safetensors file (header length {header_length})")
        raw = stream.read(header_length)
    if len(raw) != header_length:
        raise D2tInputError(f"{file}: truncated safetensors header")
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise D2tInputError(f"{file}: safetensors header is not JSON ({error})") from None
    if not isinstance(header, dict):
        raise D2tInputError(f"{file}: safetensors header is not a JSON object")
    return header_length, header


def _read_safetensors(
    file: Path, short_names: tuple[str, ...]
) -> dict[str, tuple[str, np.ndarray]]:
    """{short name: (full key, array)} for the names present; other tensors are not decoded."""
    from safetensors import safe_open

    found: dict[str, tuple[str, np.ndarray]] = {}
    with safe_open(str(file), framework="numpy") as handle:
        keys = list(handle.keys())
        for short_name in short_names:
            key = find_tensor_key(keys, short_name)
            if key is not None:
                found[short_name] = (key, handle.get_tensor(key))
    return found


# --- sizes ------------------------------------------------------------------------------------


def _read_config(directory: Path) -> dict[str, Any] | None:
    config_file = directory / CONFIG_NAME
    if not config_file.is_file():
        return None
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise D2tInputError(f"{config_file}: cannot read config ({error})") from None
    if not isinstance(config, dict):
        raise D2tInputError(f"{config_file}: config is not a JSON object")
    return config


def _config_size(config: dict[str, Any] | None, name: str) -> int | None:
    if config is None:
        return None
    # Multimodal configs nest the language model's sizes under text_config.
    for scope in (config, config.get("text_config")):
        if isinstance(scope, dict) and isinstance(scope.get(name), int) and not isinstance(
            scope.get(name), bool
        ):
            return int(scope[name])
    return None


def resolve_sizes(
    overrides: SizeOverrides,
    config: dict[str, Any] | None,
    stored: dict[str, int],
    d2t: np.ndarray,
    t2d: np.ndarray | None,
) -> tuple[int, int, str]:
    """(vocab_size, draft_vocab_size, where from): flags, then config.json, then values stored
    with the tensors, then the tensor lengths themselves (which makes the length checks moot,
    so the source is named in the report)."""
    sources = []

    def pick(name: str, fallback: int | None, fallback_label: str) -> int:
        for value, label in (
            (getattr(overrides, name), "command line"),
            (_config_size(config, name), CONFIG_NAME),
            (stored.get(name), "stored with the tensors"),
            (fallback, fallback_label),
        ):
            if value is not None:
                sources.append(f"{name} from {label}")
                return int(value)
        flag = "--" + name.replace("_", "-")
        raise D2tInputError(
            f"{name} unknown: add {CONFIG_NAME} next to the checkpoint or pass {flag}"
        )

    t2d_length = int(t2d.shape[0]) if t2d is not None and t2d.ndim == 1 else None
    d2t_length = int(d2t.shape[0]) if d2t.ndim == 1 else None
    vocab_size = pick("vocab_size", t2d_length, "the t2d length")
    draft_vocab_size = pick("draft_vocab_size", d2t_length, "the d2t length")
    return vocab_size, draft_vocab_size, ", ".join(sources)


# --- loading ----------------------------------------------------------------------------------


def load_mapping(path: Path, overrides: SizeOverrides = SizeOverrides()) -> LoadedMapping:
    """Load the mapping at ``path``; every failure becomes one D2tInputError line."""
    try:
        return _load_mapping(path, overrides)
    except D2tInputError:
        raise
    except Exception as error:  # noqa: BLE001 - corrupt files raise many types; report one line
        message = str(error).splitlines()[0] if str(error) else ""
        raise D2tInputError(f"{path}: cannot read ({type(error).__name__}: {message})") from None


def _load_mapping(path: Path, overrides: SizeOverrides) -> LoadedMapping:
    if not path.exists():
        raise D2tInputError(f"{path}: no such file or directory")
    if path.is_dir():
        return _load_directory(path, overrides)
    suffix = path.suffix.lower()
    if suffix == ".safetensors":
        return _load_safetensors_file(path, overrides, layout="safetensors", config_dir=path.parent)
    if suffix == ".npz":
        return _load_npz(path, overrides)
    if suffix in (".pt", ".pth", ".bin"):
        return _load_torch(path, overrides)
    raise D2tInputError(
        f"{path}: unsupported input; expected a checkpoint directory, .safetensors, .npz or .pt"
    )


def _build(
    path: Path,
    layout: str,
    tensors: dict[str, tuple[TensorLocation, np.ndarray]],
    overrides: SizeOverrides,
    config: dict[str, Any] | None,
    stored_sizes: dict[str, int],
) -> LoadedMapping:
    if "d2t" not in tensors:
        raise D2tInputError(f"{path}: no d2t tensor (looked for 'd2t' and '<prefix>.d2t')")
    d2t_location, d2t = tensors["d2t"]
    t2d_location, t2d = tensors.get("t2d", (None, None))
    vocab_size, draft_vocab_size, sizes_from = resolve_sizes(
        overrides, config, stored_sizes, d2t, t2d
    )
    return LoadedMapping(
        path=path,
        layout=layout,
        mapping=VocabMapping(d2t, t2d, vocab_size, draft_vocab_size),
        d2t_location=d2t_location,
        t2d_location=t2d_location,
        sizes_from=sizes_from,
    )


def _load_safetensors_file(
    file: Path, overrides: SizeOverrides, layout: str, config_dir: Path
) -> LoadedMapping:
    read_safetensors_header(file)  # a clear message for truncated or foreign files
    found = _read_safetensors(file, ("d2t", "t2d"))
    tensors = {name: (TensorLocation(file, key), array) for name, (key, array) in found.items()}
    return _build(file, layout, tensors, overrides, _read_config(config_dir), {})


def _load_directory(directory: Path, overrides: SizeOverrides) -> LoadedMapping:
    config = _read_config(directory)
    index_file = directory / SHARD_INDEX_NAME
    if index_file.is_file():
        return _load_sharded(directory, index_file, config, overrides)
    single = directory / SINGLE_FILE_NAME
    if not single.is_file():
        candidates = sorted(directory.glob("*.safetensors"))
        if len(candidates) != 1:
            raise D2tInputError(
                f"{directory}: no {SINGLE_FILE_NAME} or {SHARD_INDEX_NAME} "
                f"({len(candidates)} other .safetensors files)"
            )
        single = candidates[0]
    loaded = _load_safetensors_file(single, overrides, "hf_directory", directory)
    return LoadedMapping(
        directory, loaded.layout, loaded.mapping, loaded.d2t_location, loaded.t2d_location,
        loaded.sizes_from,
    )


def _load_sharded(
    directory: Path, index_file: Path, config: dict[str, Any] | None, overrides: SizeOverrides
) -> LoadedMapping:
    index = json.loads(index_file.read_text(encoding="utf-8"))
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict):
        raise D2tInputError(f"{index_file}: no weight_map")
    tensors: dict[str, tuple[TensorLocation, np.ndarray]] = {}
    for short_name in ("d2t", "t2d"):
        key = find_tensor_key(weight_map, short_name)
        if key is None:
            continue
        shard = (directory / str(weight_map[key])).resolve()
        if directory.resolve() not in shard.parents:
            raise D2tInputError(
                f"{index_file}: shard {weight_map[key]!r} is outside the checkpoint"
            )
        if not shard.is_file():
            raise D2tInputError(f"{index_file}: shard {weight_map[key]} for {key} is missing")
        read_safetensors_header(shard)
        from safetensors import safe_open

        with safe_open(str(shard), framework="numpy") as handle:
            if key not in handle.keys():
                raise D2tInputError(f"{shard}: index names {key} but the shard lacks it")
            location = TensorLocation(directory / str(weight_map[key]), key)
            tensors[short_name] = (location, handle.get_tensor(key))
    return _build(directory, "sharded_hf_directory", tensors, overrides, config, {})


def _load_npz(file: Path, overrides: SizeOverrides) -> LoadedMapping:
    with np.load(file, allow_pickle=False) as archive:
        names = list(archive.files)
        arrays = {name: archive[name] for name in names}
    tensors = {}
    for short_name in ("d2t", "t2d"):
        key = find_tensor_key(names, short_name)
        if key is not None:
            tensors[short_name] = (TensorLocation(file, key), arrays[key])
    # A standalone mapping may carry its sizes as 0-d arrays next to the tensors.
    stored_sizes = {
        name: int(arrays[name])
        for name in ("vocab_size", "draft_vocab_size")
        if name in arrays and arrays[name].ndim == 0
    }
    return _build(file, "npz", tensors, overrides, _read_config(file.parent), stored_sizes)


def _import_torch() -> Any:
    try:
        import torch
    except ImportError:
        raise D2tInputError(TORCH_MISSING) from None
    return torch


def _load_torch(file: Path, overrides: SizeOverrides) -> LoadedMapping:
    torch = _import_torch()
    # weights_only: a checkpoint from a PR must not run pickled code on the CI runner.
    state = torch.load(str(file), map_location="cpu", weights_only=True)
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise D2tInputError(f"{file}: not a state dict")
    tensors = {}
    for short_name in ("d2t", "t2d"):
        key = find_tensor_key([k for k in state if isinstance(k, str)], short_name)
        if key is not None and torch.is_tensor(state[key]):
            tensors[short_name] = (TensorLocation(file, key), state[key].cpu().numpy())
    return _build(file, "pt", tensors, overrides, _read_config(file.parent), {})


# --- writing ----------------------------------------------------------------------------------


def overwrite_safetensors_tensor(file: Path, key: str, values: np.ndarray) -> None:
    """Overwrite one tensor's bytes in place; dtype and shape must match what is stored."""
    header_length, header = read_safetensors_header(file)
    entry = header.get(key)
    if not isinstance(entry, dict):
        raise D2tInputError(f"{file}: no tensor {key}")
    numpy_dtype = _INTEGER_DTYPES.get(entry.get("dtype"))
    if numpy_dtype is None or list(entry.get("shape", [])) != list(values.shape):
        raise D2tInputError(
            f"{file}: {key} is {entry.get('dtype')} {entry.get('shape')}, cannot write "
            f"{values.dtype} {list(values.shape)} over it"
        )
    begin, end = entry["data_offsets"]
    payload = np.ascontiguousarray(values.astype(numpy_dtype)).tobytes()
    if len(payload) != end - begin:
        raise D2tInputError(f"{file}: {key} occupies {end - begin} bytes, new value {len(payload)}")
    with open(file, "r+b") as stream:
        stream.seek(8 + header_length + begin)
        stream.write(payload)


def _npz_is_compressed(file: Path) -> bool:
    with zipfile.ZipFile(file) as archive:
        return any(info.compress_type != zipfile.ZIP_STORED for info in archive.infolist())


def _write_npz(source: Path, destination: Path, key: str, values: np.ndarray) -> None:
    with np.load(source, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    arrays[key] = values
    save = np.savez_compressed if _npz_is_compressed(source) else np.savez
    with open(destination, "wb") as stream:  # a file object stops numpy appending ".npz"
        save(stream, **arrays)


def _write_repaired_file(
    source: Path, destination: Path, location: TensorLocation, values: np.ndarray
) -> None:
    """Write ``source`` with d2t replaced to ``destination`` via a temporary file and a rename,
    so a crash leaves either the old file or the new one, and a symlinked blob is never edited."""
    temporary = destination.with_name(destination.name + ".d2t-tmp")
    try:
        if source.suffix.lower() == ".npz":
            _write_npz(source, temporary, location.key, values)
        else:
            shutil.copyfile(source, temporary)
            overwrite_safetensors_tensor(temporary, location.key, values)
        os.replace(temporary, destination)
    finally:
        temporary.unlink(missing_ok=True)


def _refuse_torch_write(loaded: LoadedMapping) -> None:
    if loaded.layout == "pt":
        raise D2tInputError(
            f"{loaded.path}: fix writes safetensors and .npz only; "
            "export the .pt to safetensors first"
        )


def write_repaired_copy(loaded: LoadedMapping, new_d2t: np.ndarray, output: Path) -> list[Path]:
    """Write a repaired copy to ``output`` (a file, or a directory for directory inputs).
    Returns the files whose bytes changed."""
    _refuse_torch_write(loaded)
    if output.exists():
        raise D2tInputError(f"{output}: already exists; choose a new --output")
    source = loaded.path
    if source.is_dir():
        shutil.copytree(source, output)  # config, index, tokenizer and untouched shards as-is
        relative = loaded.d2t_location.file.relative_to(source)
        changed = output / relative
        location = TensorLocation(changed, loaded.d2t_location.key)
        _write_repaired_file(changed, changed, location, new_d2t)
        return [changed]
    if output.suffix.lower() != source.suffix.lower():
        raise D2tInputError(f"{output}: must keep the input's extension {source.suffix}")
    _write_repaired_file(source, output, loaded.d2t_location, new_d2t)
    return [output]


def write_repaired_in_place(loaded: LoadedMapping, new_d2t: np.ndarray) -> tuple[Path, Path]:
    """Repair the file holding d2t in place after copying it to ``<file>.bak``.
    Returns (changed file, backup)."""
    _refuse_torch_write(loaded)
    target = loaded.d2t_location.file
    backup = target.with_name(target.name + BACKUP_SUFFIX)
    if backup.exists():
        raise D2tInputError(f"{backup}: backup already exists; move it away first")
    shutil.copyfile(target, backup)
    _write_repaired_file(target, target, loaded.d2t_location, new_d2t)
    return target, backup
