"""Write files in torch.save's zip layout without torch, for the .bin / .pt fixtures.

The layout is the one torch 2.x writes (checked byte for byte against torch.save in
test_producer_formats.py when torch is installed): records ``data.pkl``, ``.format_version``,
``.storage_alignment``, ``byteorder``, ``data/<key>``..., ``version``,
``.data/serialization_id`` under ``<archive name>/``, each stored uncompressed with its data
aligned to 64 bytes by an ``FB`` padding field in the local header, a data descriptor after
it, and zip64 end records. The pickle is protocol 2 with the same opcodes torch's pickler
emits: tensors as ``torch._utils._rebuild_tensor_v2`` over persistent storage ids.
"""

from __future__ import annotations

import collections
import io
import pickle
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ALIGNMENT = 64
SERIALIZATION_ID = "0" * 40  # torch writes a random id; fixtures are deterministic

_NUMPY_STORAGE = {
    np.dtype("int64"): "LongStorage",
    np.dtype("int32"): "IntStorage",
    np.dtype("int16"): "ShortStorage",
    np.dtype("int8"): "CharStorage",
    np.dtype("uint8"): "ByteStorage",
    np.dtype("bool"): "BoolStorage",
    np.dtype("float16"): "HalfStorage",
    np.dtype("float32"): "FloatStorage",
    np.dtype("float64"): "DoubleStorage",
}


@dataclass(frozen=True)
class RawTensor:
    """A tensor given as (storage type, shape, little-endian bytes): bf16 weights."""

    storage_type: str
    shape: tuple[int, ...]
    raw: bytes


class _Global:
    """A global the pickle names; callable only so the pickler accepts it in a reduce."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> None:  # pragma: no cover - never called
        raise TypeError("a pickled name, not a function")


_GLOBALS: dict[tuple[str, str], _Global] = {}


def _global(module: str, name: str) -> _Global:
    # One object per global: the pickler memoizes by identity, as torch's does for classes.
    return _GLOBALS.setdefault((module, name), _Global(module, name))


class _Storage:
    def __init__(self, key: str, type_name: str, numel: int, raw: bytes) -> None:
        self.key, self.type_name, self.numel, self.raw = key, type_name, numel, raw


class _Tensor:
    def __init__(self, storage: _Storage, shape: tuple[int, ...]) -> None:
        self.storage, self.shape = storage, shape

    def __reduce_ex__(self, protocol: int) -> tuple:
        stride = []
        step = 1
        for size in reversed(self.shape):
            stride.append(step)
            step *= size
        return (_global("torch._utils", "_rebuild_tensor_v2"),
                (self.storage, 0, tuple(self.shape), tuple(reversed(stride)), False,
                 collections.OrderedDict()))


class _TorchPickler(pickle._Pickler):  # type: ignore[misc,name-defined]
    """The pure-Python pickler, which lets globals be written without importing torch."""

    dispatch = pickle._Pickler.dispatch.copy()  # type: ignore[attr-defined]

    def save_torch_global(self, obj: _Global) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    dispatch[_Global] = save_torch_global

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, _Storage):
            return ("storage", _global("torch", obj.type_name), obj.key, "cpu", obj.numel)
        return None


def _to_proxies(state: dict[str, Any]) -> tuple[Any, list[_Storage]]:
    storages: list[_Storage] = []

    def proxy(value: Any) -> Any:
        if isinstance(value, RawTensor):
            itemsize = 2 if value.storage_type in ("BFloat16Storage", "HalfStorage") else None
            numel = int(np.prod(value.shape)) if value.shape else 1
            assert itemsize is None or len(value.raw) == numel * itemsize
            storage = _Storage(str(len(storages)), value.storage_type, numel, value.raw)
        elif isinstance(value, np.ndarray):
            array = np.ascontiguousarray(value)
            storage = _Storage(str(len(storages)), _NUMPY_STORAGE[array.dtype],
                               int(array.size), array.astype(array.dtype.newbyteorder("<"))
                               .tobytes())
        else:
            return value
        storages.append(storage)
        return _Tensor(storage, tuple(int(n) for n in getattr(value, "shape", ())))

    if isinstance(state, collections.OrderedDict):
        out: Any = collections.OrderedDict((key, proxy(value)) for key, value in state.items())
        if hasattr(state, "_metadata"):
            out._metadata = state._metadata  # type: ignore[attr-defined]
    else:
        out = {key: proxy(value) for key, value in state.items()}
    return out, storages


def _zip_records(records: Iterable[tuple[str, bytes]]) -> bytes:
    """Zip the records the way torch's writer does (see the module docstring)."""
    out = bytearray()
    central = bytearray()
    count = 0
    for name, data in records:
        encoded = name.encode()
        offset = len(out)
        padding = -(offset + 30 + len(encoded) + 4) % ALIGNMENT
        extra = b"FB" + struct.pack("<H", padding) + b"Z" * padding
        crc = zlib.crc32(data) & 0xFFFFFFFF
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 0, 0x0808, 0, 0, 0, 0, 0, 0,
                           len(encoded), len(extra)) + encoded + extra + data
        out += struct.pack("<IIII", 0x08074B50, crc, len(data), len(data))
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0, 0, 0x0808, 0, 0, 0, crc,
                               len(data), len(data), len(encoded), 0, 0, 0, 0, 0,
                               offset) + encoded
        count += 1
    central_offset = len(out)
    out += central
    zip64_offset = len(out)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 0x031E, 0x2D, 0, 0, count, count,
                       len(central), central_offset)
    out += struct.pack("<IIQI", 0x07064B50, 0, zip64_offset, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, len(central),
                       central_offset, 0)
    return bytes(out)


def torch_save_bytes(state: dict[str, Any], archive_name: str,
                     serialization_id: str = SERIALIZATION_ID) -> bytes:
    """The bytes torch.save(state, '<archive_name>.<ext>') writes, for tensors given as numpy
    arrays or RawTensor. ``state`` may be an OrderedDict with ``_metadata`` (a module's
    state_dict()) or a plain dict (a mapping file)."""
    proxies, storages = _to_proxies(state)
    buffer = io.BytesIO()
    _TorchPickler(buffer, protocol=2).dump(proxies)
    prefix = archive_name + "/"
    records = [(prefix + "data.pkl", buffer.getvalue()),
               (prefix + ".format_version", b"1"),
               (prefix + ".storage_alignment", str(ALIGNMENT).encode()),
               (prefix + "byteorder", b"little")]
    records += [(prefix + f"data/{storage.key}", storage.raw) for storage in storages]
    records += [(prefix + "version", b"3\n"),
                (prefix + ".data/serialization_id", serialization_id.encode())]
    return _zip_records(records)


def write_torch_file(path: Path, state: dict[str, Any]) -> Path:
    """Write ``state`` as torch.save would to ``path`` (archive name = the file's stem)."""
    path.write_bytes(torch_save_bytes(state, path.stem))
    return path


def module_state_dict(tensors: dict[str, Any]) -> collections.OrderedDict:
    """An OrderedDict like nn.Module.state_dict(): ``_metadata`` holds {module: {version: 1}}
    for the root and every module prefix, in first-seen order."""
    state: Any = collections.OrderedDict(tensors)
    metadata: Any = collections.OrderedDict([("", {"version": 1})])
    for key in tensors:
        parts = key.split(".")[:-1]
        for depth in range(1, len(parts) + 1):
            metadata.setdefault(".".join(parts[:depth]), {"version": 1})
    state._metadata = metadata
    return state
