"""Read tensors out of ``torch.save`` files without torch and without running pickled code.

A ``torch.save`` file (torch >= 1.6, the default since) is a zip archive: ``<name>/data.pkl``
pickles the saved object, every tensor's storage is a raw little-endian record
``<name>/data/<key>``, and ``<name>/byteorder`` says which byte order those records use.
Inside the pickle a tensor is ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
requires_grad, backward_hooks[, metadata])`` whose storage is a persistent id
``("storage", torch.<Type>Storage, key, location, numel)``.

:class:`_RestrictedUnpickler` resolves exactly those globals (and ``collections.OrderedDict``,
which ``Module.state_dict()`` returns) to inert stand-ins: anything else in the pickle is a
refusal, never an import. That is the same allowlist idea as ``torch.load(weights_only=True)``,
narrowed to what a state dict of plain tensors needs. Storages are read lazily, so the bf16
weights next to ``d2t`` are never decoded.
"""

from __future__ import annotations

import collections
import io
import pickle
import zipfile
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable
from typing import Any

import numpy as np

# torch.<Type>Storage -> numpy dtype (little endian; flipped for a big-endian archive). None:
# a type numpy cannot represent (bf16); such tensors are listed, never decoded.
STORAGE_DTYPES: dict[str, str | None] = {
    "DoubleStorage": "<f8",
    "FloatStorage": "<f4",
    "HalfStorage": "<f2",
    "BFloat16Storage": None,
    "LongStorage": "<i8",
    "IntStorage": "<i4",
    "ShortStorage": "<i2",
    "CharStorage": "i1",
    "ByteStorage": "u1",
    "BoolStorage": "?",
}

# A state dict's pickle is small (names and shapes); a larger one is not a checkpoint we read.
_MAX_PICKLE_BYTES = 64 * 1024 * 1024
# The most one mapping tensor may take decoded. A d2t or t2d has one int64 per vocabulary entry: a
# 262,144-token vocabulary is 2 MiB, so 256 MiB (33 million tokens) is generous; a checkpoint that
# declares more is refused before anything is decoded (a declared 3 GB tensor once took 6.6 GB RSS).
MAX_TENSOR_BYTES = 256 * 1024 * 1024


def declared_size_problem(what: str, declared: int, stored: int | None) -> str | None:
    """Why a tensor of `declared` bytes is not decoded: over the budget, or more than the file holds."""
    if declared > MAX_TENSOR_BYTES:
        return (f"{what} declares {declared:,} bytes; a d2t/t2d mapping is refused above "
                f"{MAX_TENSOR_BYTES:,} bytes")
    if stored is not None and declared > stored:
        return f"{what} declares {declared:,} bytes but the file holds {stored:,} for it"
    return None


class TorchArchiveError(Exception):
    """A file that is not a readable torch.save archive, or one this reader refuses."""


@dataclass(frozen=True)
class StorageRef:
    type_name: str  # e.g. "LongStorage"
    key: str  # the record name under <name>/data/
    numel: int


@dataclass(frozen=True)
class TensorRef:
    storage: StorageRef
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    @property
    def dtype_name(self) -> str:
        return self.storage.type_name.removesuffix("Storage")


class _StorageType:
    """Stand-in for the ``torch.<Type>Storage`` class named in a persistent id."""

    def __init__(self, name: str) -> None:
        self.name = name


def _rebuild_tensor_v2(storage: Any, storage_offset: Any, size: Any, stride: Any,
                       requires_grad: Any = False, backward_hooks: Any = None,
                       metadata: Any = None) -> TensorRef:
    if not isinstance(storage, StorageRef):
        raise TorchArchiveError("a tensor whose storage is not a saved storage record")
    if not (isinstance(storage_offset, int) and isinstance(size, tuple)
            and isinstance(stride, tuple) and len(size) == len(stride)
            and all(isinstance(v, int) and v >= 0 for v in (storage_offset, *size, *stride))):
        raise TorchArchiveError("a tensor with a malformed offset, size or stride")
    return TensorRef(storage, storage_offset, size, stride)


def _rebuild_parameter(data: Any, requires_grad: Any = False, backward_hooks: Any = None) -> Any:
    # nn.Parameter values (state_dict(keep_vars=True)) carry their tensor as ``data``.
    return data


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor_v2
        if (module, name) == ("torch._utils", "_rebuild_parameter"):
            return _rebuild_parameter
        if module == "torch" and name in STORAGE_DTYPES:
            return _StorageType(name)
        raise TorchArchiveError(
            f"refusing to unpickle {module}.{name}: only tensors and dicts of tensors are read"
        )

    def persistent_load(self, pid: Any) -> StorageRef:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise TorchArchiveError("unsupported persistent id in the pickle")
        storage_type, key, _location, numel = pid[1:]
        if not (isinstance(storage_type, _StorageType) and isinstance(key, str)
                and isinstance(numel, int) and numel >= 0):
            raise TorchArchiveError("malformed storage record in the pickle")
        return StorageRef(storage_type.name, key, numel)


@dataclass
class TorchArchive:
    """An open torch.save zip: the unpickled object with TensorRefs in place of tensors."""

    file: Path
    record_prefix: str  # "<name>/"
    big_endian: bool
    root: Any
    _zip: zipfile.ZipFile

    def read_tensor(self, ref: TensorRef) -> np.ndarray:
        """Decode one tensor (a copy); bf16 and other types numpy lacks are refused."""
        dtype_text = STORAGE_DTYPES[ref.storage.type_name]
        if dtype_text is None:
            raise TorchArchiveError(f"{self.file}: cannot decode a {ref.dtype_name} tensor")
        dtype = np.dtype(dtype_text)
        if self.big_endian and dtype.itemsize > 1:
            dtype = dtype.newbyteorder(">")
        record = f"{self.record_prefix}data/{ref.storage.key}"
        try:
            info = self._zip.getinfo(record)
        except KeyError:
            raise TorchArchiveError(f"{self.file}: storage record {record} is missing") from None
        # Checked before reading: the record's size is declared twice (numel, and the zip entry's
        # uncompressed size, which a compressed entry can inflate to anything).
        problem = declared_size_problem(f"storage record {record}", ref.storage.numel * dtype.itemsize,
                                        None)
        if problem or info.file_size != ref.storage.numel * dtype.itemsize:
            raise TorchArchiveError(f"{self.file}: {problem or f'storage record {record} has the wrong size'}")
        raw = self._zip.read(info)
        if len(raw) != ref.storage.numel * dtype.itemsize:
            raise TorchArchiveError(f"{self.file}: storage record {record} has the wrong size")
        flat = np.frombuffer(raw, dtype=dtype, count=ref.storage.numel)
        # The last element the view touches must lie inside the storage.
        if ref.shape and 0 in ref.shape:
            return np.zeros(ref.shape, dtype=dtype.newbyteorder("="))
        last = ref.offset + sum((n - 1) * s for n, s in zip(ref.shape, ref.stride))
        if last >= ref.storage.numel:
            raise TorchArchiveError(f"{self.file}: a tensor reaches past its storage")
        view = np.lib.stride_tricks.as_strided(
            flat[ref.offset:], shape=ref.shape,
            strides=tuple(s * dtype.itemsize for s in ref.stride), writeable=False,
        )
        return np.array(view, dtype=dtype.newbyteorder("="))

    def close(self) -> None:
        self._zip.close()

    def __enter__(self) -> TorchArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def is_torch_zip(file: Path) -> bool:
    return zipfile.is_zipfile(file)


def open_torch_archive(file: Path) -> TorchArchive:
    """Open ``file`` and unpickle its object graph under the allowlist above."""
    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError) as error:
        raise TorchArchiveError(f"{file}: not a torch.save zip archive ({error})") from None
    try:
        pickles = [name for name in archive.namelist() if name.endswith("/data.pkl")
                   and name.count("/") == 1]
        if len(pickles) != 1:
            raise TorchArchiveError(f"{file}: not a torch.save archive (no single */data.pkl)")
        prefix = pickles[0][: -len("data.pkl")]
        info = archive.getinfo(pickles[0])
        if info.file_size > _MAX_PICKLE_BYTES:
            raise TorchArchiveError(f"{file}: data.pkl is {info.file_size} bytes; not a state dict")
        byteorder = b"little"
        if f"{prefix}byteorder" in archive.namelist():
            byteorder = archive.read(f"{prefix}byteorder").strip()
        if byteorder not in (b"little", b"big"):
            raise TorchArchiveError(f"{file}: unknown byteorder {byteorder!r}")
        try:
            root = _RestrictedUnpickler(io.BytesIO(archive.read(pickles[0]))).load()
        except TorchArchiveError:
            raise
        except Exception as error:  # noqa: BLE001 - a corrupt pickle raises many types
            raise TorchArchiveError(
                f"{file}: cannot unpickle data.pkl ({type(error).__name__}: {error})"
            ) from None
    except BaseException:
        archive.close()
        raise
    return TorchArchive(file, prefix, byteorder == b"big", root, archive)


def tensor_items(root: Any) -> dict[str, TensorRef]:
    """The string-keyed tensors of a saved state dict (or of its ``state_dict`` entry)."""
    if isinstance(root, dict) and isinstance(root.get("state_dict"), dict):
        root = root["state_dict"]
    if not isinstance(root, dict):
        raise TorchArchiveError("the saved object is not a state dict")
    return {key: value for key, value in root.items()
            if isinstance(key, str) and isinstance(value, TensorRef)}



def _legacy_state(file: Path) -> dict[str, Any]:
    try:
        import torch
    except ImportError:
        raise TorchArchiveError(
            f"{file}: legacy (pre-zip) torch serialization; reading it needs torch "
            "(pip install torch), or re-save it with torch >= 1.6"
        ) from None
    # weights_only: a legacy pickle from a PR must not run code on the CI runner either.
    state = torch.load(str(file), map_location="cpu", weights_only=True)
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise TorchArchiveError(f"{file}: the saved object is not a state dict")
    return {key: value.cpu().numpy() for key, value in state.items()
            if isinstance(key, str) and torch.is_tensor(value)
            and value.dtype != torch.bfloat16}


def load_tensors(file: Path, choose: Callable[[list[str]], dict[str, str]]
                 ) -> dict[str, tuple[str, np.ndarray]]:
    """{short name: (full key, array)} for the keys ``choose(all tensor keys)`` picks
    (it returns {short name: full key}). Zip archives are read by this module without torch;
    a legacy (pre-1.6, non-zip) file needs torch."""
    if is_torch_zip(file):
        with open_torch_archive(file) as archive:
            tensors = tensor_items(archive.root)
            return {short: (key, archive.read_tensor(tensors[key]))
                    for short, key in choose(list(tensors)).items()}
    state = _legacy_state(file)
    return {short: (key, state[key]) for short, key in choose(list(state)).items()}
