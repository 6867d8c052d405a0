"""Writing repaired copies of checkpoints (``d2t fix``).

Writing never re-serialises a checkpoint. The repaired d2t has the stored dtype and shape, so
it occupies exactly the bytes of the old one: the file is copied and that byte range is
overwritten. Every other tensor, the header and the ``__metadata__`` stay byte-identical.
torch files (``.bin``/``.pt``) are read but never written: their pickle would have to be
re-serialised, which is what this tool promises not to do.
"""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

import numpy as np

from ci_triage.contracts.d2t_io import (
    BACKUP_SUFFIX,
    INTEGER_DTYPES,
    TORCH_LAYOUTS,
    D2tInputError,
    LoadedMapping,
    TensorLocation,
    read_safetensors_header,
)


# --- writing ----------------------------------------------------------------------------------


def overwrite_safetensors_tensor(file: Path, key: str, values: np.ndarray) -> None:
    """Overwrite one tensor's bytes in place; dtype and shape must match what is stored."""
    header_length, header = read_safetensors_header(file)
    entry = header.get(key)
    if not isinstance(entry, dict):
        raise D2tInputError(f"{file}: no tensor {key}")
    numpy_dtype = INTEGER_DTYPES.get(entry.get("dtype"))
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
    if loaded.layout in TORCH_LAYOUTS:
        raise D2tInputError(
            f"{loaded.path}: fix writes safetensors and .npz only; "
            "export the torch file (.bin/.pt) to safetensors first"
        )
    if loaded.d2t_location is None:
        raise D2tInputError(f"{loaded.path}: no stored d2t to rewrite")


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
