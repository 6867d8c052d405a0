"""Reading d2t/t2d from exported checkpoints the way the serving engines find them.

Inputs: a Hugging Face style directory (``config.json`` plus ``model.safetensors``, a sharded
``model.safetensors.index.json``, ``pytorch_model.bin`` or a sharded
``pytorch_model.bin.index.json``), a single ``.safetensors`` file, a standalone ``.npz``, and a
``.pt``/``.pth``/``.bin`` file. Only the two mapping tensors are read, so bf16 weights (which
numpy cannot represent) never need decoding. torch files are read by ``torch_archive``, which
needs no torch and unpickles nothing but tensors and dicts.

Directories are resolved in the order vLLM's and SGLang's ``DefaultModelLoader._prepare_weights``
use: safetensors first, ``.bin`` only when there is no safetensors file. Writing repaired
copies lives in ``d2t_write``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ci_triage.contracts.d2t import VocabMapping
from ci_triage.contracts.d2t_engines import CheckpointFacts
from ci_triage.contracts.torch_archive import TorchArchiveError, declared_size_problem, load_tensors

CONFIG_NAME = "config.json"
SINGLE_FILE_NAME = "model.safetensors"
SHARD_INDEX_NAME = "model.safetensors.index.json"
BIN_FILE_NAME = "pytorch_model.bin"
BIN_SHARD_INDEX_NAME = "pytorch_model.bin.index.json"
BACKUP_SUFFIX = ".bak"
# Kept for callers of the old name; torch is needed only for legacy (pre-zip) torch files.
TORCH_MISSING = "legacy (pre-zip) torch serialization; reading it needs torch"

# Trainer side files that sit next to weights and are not weights (the list vLLM's and
# SGLang's filter_files_not_needed_for_inference skip).
_NOT_WEIGHTS = ("training_args.bin", "optimizer.bin", "optimizer.pt", "scheduler.pt",
                "scaler.pt")

# Layouts whose tensors live in torch files; fix never writes these.
TORCH_LAYOUTS = frozenset({"pt", "bin_directory", "sharded_bin_directory"})

# A safetensors header is JSON; anything this large is a corrupt length prefix, not a header.
_MAX_HEADER_BYTES = 100 * 1024 * 1024

# safetensors dtype tag -> little-endian numpy dtype, for the integer types a d2t can have.
INTEGER_DTYPES = {
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
    # "hf_directory", "sharded_hf_directory", "bin_directory", "sharded_bin_directory",
    # "safetensors", "npz", "pt"
    layout: str
    mapping: VocabMapping
    d2t_location: TensorLocation | None  # None: the checkpoint stores no d2t
    t2d_location: TensorLocation | None
    sizes_from: str  # where vocab_size/draft_vocab_size came from, for the report
    # "hf" (sizes at the top level), "speculators" (vllm-project/speculators: the target
    # vocabulary under transformer_layer_config), or None (no config.json)
    config_format: str | None = None
    # A checkpoint directory an engine is pointed at; a lone tensor or mapping file is not.
    is_engine_checkpoint: bool = False


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


def _mapping_keys(keys: list[str]) -> dict[str, str]:
    found = {name: find_tensor_key(keys, name) for name in ("d2t", "t2d")}
    return {name: key for name, key in found.items() if key is not None}


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


def _safetensors_tensors(file: Path, choose: Callable[[list[str]], dict[str, str]]
                         ) -> dict[str, tuple[str, np.ndarray]]:
    """{short name: (full key, array)} for the keys ``choose`` picks; others stay undecoded."""
    from safetensors import safe_open

    header_length, header = read_safetensors_header(file)  # a clear message for truncated or foreign files
    chosen = choose(sorted(key for key in header if key != "__metadata__"))
    for key in chosen.values():  # before the library maps or copies anything
        _check_safetensors_entry(file, key, header.get(key), file.stat().st_size - 8 - header_length)
    with safe_open(str(file), framework="numpy") as handle:
        return {short: (key, handle.get_tensor(key)) for short, key in chosen.items()}


_DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "I16": 2, "F16": 2,
                "BF16": 2, "U32": 4, "I32": 4, "F32": 4, "U64": 8, "I64": 8, "F64": 8}


def _check_safetensors_entry(file: Path, key: str, entry: Any, data_bytes: int) -> None:
    """A tensor's declared size (shape x dtype) is checked against its byte range, the file and the
    memory budget before it is decoded."""
    if not isinstance(entry, dict):
        raise D2tInputError(f"{file}: tensor {key} has no header entry")
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if not (isinstance(shape, list) and all(isinstance(n, int) and n >= 0 for n in shape)
            and isinstance(offsets, list) and len(offsets) == 2
            and all(isinstance(o, int) and o >= 0 for o in offsets) and offsets[0] <= offsets[1]):
        raise D2tInputError(f"{file}: tensor {key} has a malformed shape or data_offsets")
    declared = _DTYPE_BYTES.get(str(entry.get("dtype")), 8)
    for n in shape:
        declared *= n
    problem = declared_size_problem(f"tensor {key}", declared, data_bytes - offsets[0])
    if problem is None and declared != offsets[1] - offsets[0]:
        problem = f"tensor {key} declares {declared:,} bytes but its data_offsets span {offsets[1] - offsets[0]:,}"
    if problem:
        raise D2tInputError(f"{file}: {problem}")


def _torch_tensors(file: Path, choose: Callable[[list[str]], dict[str, str]]
                   ) -> dict[str, tuple[str, np.ndarray]]:
    try:
        return load_tensors(file, choose)
    except TorchArchiveError as error:
        raise D2tInputError(str(error)) from None


# --- config and sizes -------------------------------------------------------------------------


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


def config_format(config: dict[str, Any] | None) -> str | None:
    if config is None:
        return None
    # speculators' SpeculatorModelConfig.to_dict writes speculators_model_type and nests the
    # verifier's layer config (vocab_size included) under transformer_layer_config.
    return "speculators" if "speculators_model_type" in config else "hf"


def _config_size(config: dict[str, Any] | None, name: str) -> tuple[int, str] | None:
    if config is None:
        return None
    # Multimodal configs nest the language model's sizes under text_config; speculators
    # configs keep vocab_size under transformer_layer_config (vLLM's
    # SpeculatorsConfig.extract_transformers_pre_trained_config starts from that dict).
    for scope_name in (None, "text_config", "transformer_layer_config"):
        scope = config if scope_name is None else config.get(scope_name)
        value = scope.get(name) if isinstance(scope, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            label = CONFIG_NAME if scope_name is None else f"{CONFIG_NAME} {scope_name}"
            return int(value), label
    return None


def describes_drafter(config: dict[str, Any] | None) -> bool:
    """Whether a config.json is an EAGLE-3 style drafter's, so a missing d2t is a choice."""
    if config is None:
        return False
    architectures = config.get("architectures")
    names = architectures if isinstance(architectures, list) else []
    return ("draft_vocab_size" in config or "speculators_model_type" in config
            or any(isinstance(name, str) and "eagle" in name.lower() for name in names))


def resolve_sizes(
    overrides: SizeOverrides,
    config: dict[str, Any] | None,
    stored: dict[str, int],
    d2t: np.ndarray | None,
    t2d: np.ndarray | None,
) -> tuple[int, int, str]:
    """(vocab_size, draft_vocab_size, where from): flags, then config.json, then values stored
    with the tensors, then the tensor lengths themselves (which makes the length checks moot,
    so the source is named in the report). With no d2t and no draft_vocab_size anywhere the
    draft is full-vocabulary, as vLLM's and SGLang's EAGLE-3 models default it."""
    sources = []

    def pick(name: str, fallbacks: list[tuple[int | None, str]]) -> int:
        from_config = _config_size(config, name)
        candidates = [(getattr(overrides, name), "command line"),
                      (from_config[0], from_config[1]) if from_config else (None, ""),
                      (stored.get(name), "stored with the tensors"), *fallbacks]
        for value, label in candidates:
            if value is not None:
                sources.append(f"{name} from {label}")
                return int(value)
        flag = "--" + name.replace("_", "-")
        raise D2tInputError(
            f"{name} unknown: add {CONFIG_NAME} next to the checkpoint or pass {flag}"
        )

    t2d_length = int(t2d.shape[0]) if t2d is not None and t2d.ndim == 1 else None
    d2t_length = int(d2t.shape[0]) if d2t is not None and d2t.ndim == 1 else None
    vocab_size = pick("vocab_size", [(t2d_length, "the t2d length")])
    draft_vocab_size = pick("draft_vocab_size", [
        (d2t_length, "the d2t length"),
        (vocab_size if d2t is None else None, "vocab_size (no d2t and no draft_vocab_size: "
                                             "a full-vocabulary draft)"),
    ])
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
        tensors = _located(path, _safetensors_tensors(path, _mapping_keys))
        return _build(path, "safetensors", tensors, overrides, _read_config(path.parent), {},
                      engine_checkpoint=False)
    if suffix == ".npz":
        return _load_npz(path, overrides)
    if suffix in (".pt", ".pth", ".bin"):
        tensors = _located(path, _torch_tensors(path, _mapping_keys))
        return _build(path, "pt", tensors, overrides, _read_config(path.parent), {},
                      engine_checkpoint=False)
    raise D2tInputError(
        f"{path}: unsupported input; expected a checkpoint directory, .safetensors, .npz, "
        ".bin or .pt"
    )


def _located(file: Path, found: dict[str, tuple[str, np.ndarray]]
             ) -> dict[str, tuple[TensorLocation, np.ndarray]]:
    return {short: (TensorLocation(file, key), array) for short, (key, array) in found.items()}


def _build(
    path: Path,
    layout: str,
    tensors: dict[str, tuple[TensorLocation, np.ndarray]],
    overrides: SizeOverrides,
    config: dict[str, Any] | None,
    stored_sizes: dict[str, int],
    engine_checkpoint: bool,
) -> LoadedMapping:
    if "d2t" not in tensors and not (engine_checkpoint and describes_drafter(config)):
        # A lone file without d2t, or a directory whose config is no drafter's, is not a
        # drafter checkpoint at all; a drafter directory may omit d2t (full vocabulary).
        where = "" if engine_checkpoint else " (a mapping file must store d2t)"
        raise D2tInputError(
            f"{path}: no d2t tensor (looked for 'd2t' and '<prefix>.d2t'){where}"
            + ("; config.json does not describe an EAGLE-3 drafter" if engine_checkpoint else "")
        )
    d2t_location, d2t = tensors.get("d2t", (None, None))
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
        config_format=config_format(config),
        is_engine_checkpoint=engine_checkpoint and config is not None,
    )


def _single_weights_file(directory: Path) -> tuple[Path, str] | None:
    """The one weights file of an unsharded directory, safetensors before .bin."""
    for preferred, pattern, reader_kind in ((SINGLE_FILE_NAME, "*.safetensors", "safetensors"),
                                            (BIN_FILE_NAME, "*.bin", "bin")):
        if (directory / preferred).is_file():
            return directory / preferred, reader_kind
        candidates = sorted(file for file in directory.glob(pattern)
                            if file.name not in _NOT_WEIGHTS)
        if len(candidates) > 1:
            raise D2tInputError(
                f"{directory}: {len(candidates)} {pattern} files and no {preferred} or index; "
                "cannot tell which one the engine loads"
            )
        if candidates:
            return candidates[0], reader_kind
    return None


def _load_directory(directory: Path, overrides: SizeOverrides) -> LoadedMapping:
    config = _read_config(directory)
    for index_name, reader, layout in (
        (SHARD_INDEX_NAME, _safetensors_tensors, "sharded_hf_directory"),
        (BIN_SHARD_INDEX_NAME, _torch_tensors, "sharded_bin_directory"),
    ):
        # An index wins over loose files; a safetensors index over a .bin one.
        if (directory / index_name).is_file() and (
            index_name == SHARD_INDEX_NAME or not (directory / SINGLE_FILE_NAME).is_file()
        ):
            tensors = _load_sharded(directory, directory / index_name, reader)
            return _build(directory, layout, tensors, overrides, config, {},
                          engine_checkpoint=True)
    single = _single_weights_file(directory)
    if single is None:
        raise D2tInputError(
            f"{directory}: no weights: looked for {SINGLE_FILE_NAME}, {SHARD_INDEX_NAME}, "
            f"{BIN_FILE_NAME}, {BIN_SHARD_INDEX_NAME}"
        )
    file, kind = single
    reader = _safetensors_tensors if kind == "safetensors" else _torch_tensors
    layout = "hf_directory" if kind == "safetensors" else "bin_directory"
    tensors = _located(file, reader(file, _mapping_keys))
    return _build(directory, layout, tensors, overrides, config, {}, engine_checkpoint=True)


def _load_sharded(
    directory: Path,
    index_file: Path,
    reader: Callable[[Path, Callable[[list[str]], dict[str, str]]],
                     dict[str, tuple[str, np.ndarray]]],
) -> dict[str, tuple[TensorLocation, np.ndarray]]:
    index = json.loads(index_file.read_text(encoding="utf-8"))
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict):
        raise D2tInputError(f"{index_file}: no weight_map")
    tensors: dict[str, tuple[TensorLocation, np.ndarray]] = {}
    for short_name, key in _mapping_keys(list(weight_map)).items():
        shard = (directory / str(weight_map[key])).resolve()
        if directory.resolve() not in shard.parents:
            raise D2tInputError(
                f"{index_file}: shard {weight_map[key]!r} is outside the checkpoint"
            )
        if not shard.is_file():
            raise D2tInputError(f"{index_file}: shard {weight_map[key]} for {key} is missing")

        def only(keys: list[str], wanted: str = key) -> dict[str, str]:
            if wanted not in keys:
                raise D2tInputError(f"{shard}: index names {wanted} but the shard lacks it")
            return {"tensor": wanted}

        _, array = reader(shard, only)["tensor"]
        tensors[short_name] = (TensorLocation(directory / str(weight_map[key]), key), array)
    return tensors


def _npz_declared_bytes(file: Path, wanted: Iterable[str]) -> None:
    """Refuse arrays whose .npy header declares more than the zip entry holds or the budget allows,
    before numpy allocates them (a compressed entry of a few KB can declare gigabytes)."""
    import zipfile

    from numpy.lib import format as npy

    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError):
        return  # np.load says what is wrong with it
    with archive:
        for name in wanted:
            try:
                info = archive.getinfo(name + ".npy")
                with archive.open(info) as stream:
                    version = npy.read_magic(stream)
                    read = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
                    shape, _, dtype = read(stream, max_header_size=100_000)
            except (KeyError, ValueError, OSError, zipfile.BadZipFile):
                continue  # np.load reports it
            declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
            problem = declared_size_problem(f"array {name}", declared, info.file_size)
            if problem:
                raise D2tInputError(f"{file}: {problem}")


def _load_npz(file: Path, overrides: SizeOverrides) -> LoadedMapping:
    with np.load(file, allow_pickle=False) as archive:
        # Only the arrays a mapping uses are decoded, each after its declared size is checked.
        names = [n for n in archive.files if n in ("vocab_size", "draft_vocab_size")
                 or n in _mapping_keys(list(archive.files)).values()]
        _npz_declared_bytes(file, names)
        arrays = {name: archive[name] for name in names}
    tensors = {short: (TensorLocation(file, key), arrays[key])
               for short, key in _mapping_keys(names).items()}
    # A standalone mapping may carry its sizes as 0-d arrays next to the tensors.
    stored_sizes = {
        name: int(arrays[name])
        for name in ("vocab_size", "draft_vocab_size")
        if name in arrays and arrays[name].ndim == 0
    }
    return _build(file, "npz", tensors, overrides, _read_config(file.parent), stored_sizes,
                  engine_checkpoint=False)


def checkpoint_facts(loaded: LoadedMapping) -> CheckpointFacts:
    """What the engine checks need to know about a loaded checkpoint."""
    return CheckpointFacts(
        is_engine_checkpoint=loaded.is_engine_checkpoint,
        config_format=loaded.config_format,
        d2t_key=loaded.d2t_location.key if loaded.d2t_location else None,
        mapping=loaded.mapping,
    )
