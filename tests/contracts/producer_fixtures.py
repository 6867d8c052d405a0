"""Checkpoints laid out as each producer writes them, at a tiny vocabulary (64 target tokens).

Each builder follows the producer's save path (cited per builder; see docs/d2t.md): file names,
tensor names and dtypes, config keys, and for torch files the exact torch.save layout
(torch_save_writer, checked against torch.save itself when torch is installed). Weights other
than the mapping are small random bf16/fp32 stand-ins under the producer's own names.

EXPECTED_VERDICTS is the per-engine verdict `ci-triage d2t check --engine E` must print for
each: "PASS", "FAIL" (exit 1) or "ERROR" (exit 2).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ci_triage.contracts.d2t import reference_mapping

from .checkpoint_builders import bf16_bytes, write_safetensors
from .torch_save_writer import RawTensor, module_state_dict, write_torch_file

VOCAB = 64
HIDDEN = 8
USED_TOKENS = [0, 3, 9, 17, 21, 30, 41, 63]  # the draft vocabulary: 8 of 64 target tokens
DRAFT = len(USED_TOKENS)


def _mapping() -> tuple[np.ndarray, np.ndarray]:
    mapping = reference_mapping(USED_TOKENS, VOCAB)
    assert mapping.t2d is not None
    return mapping.d2t.astype(np.int64), mapping.t2d


def _bf16(shape: tuple[int, ...], seed: int) -> RawTensor:
    values = np.random.default_rng(seed).standard_normal(int(np.prod(shape)))
    return RawTensor("BFloat16Storage", shape, bf16_bytes(values))


def _eagle3_weights(draft_vocab: int, layer_prefix: str = "midlayer.") -> dict[str, object]:
    """The draft layer, fc, norm and lm_head under EAGLE/SpecForge names (cnets.py Model)."""
    return {
        f"{layer_prefix}self_attn.q_proj.weight": _bf16((HIDDEN, 2 * HIDDEN), 1),
        f"{layer_prefix}input_layernorm.weight": _bf16((HIDDEN,), 2),
        f"{layer_prefix}hidden_norm.weight": _bf16((HIDDEN,), 3),
        "fc.weight": _bf16((HIDDEN, 3 * HIDDEN), 4),
        "norm.weight": _bf16((HIDDEN,), 5),
        "lm_head.weight": _bf16((draft_vocab, HIDDEN), 6),
    }


def _as_safetensors(tensors: dict[str, object]) -> dict[str, object]:
    return {name: ("BF16", list(t.shape), t.raw) if isinstance(t, RawTensor) else t
            for name, t in tensors.items()}


def _eagle3_config(draft_vocab: int | None, **extra: object) -> dict[str, object]:
    config: dict[str, object] = {
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama",
        "hidden_size": HIDDEN, "num_hidden_layers": 1, "vocab_size": VOCAB,
        "torch_dtype": "bfloat16",
    }
    if draft_vocab is not None:
        config["draft_vocab_size"] = draft_vocab
    config.update(extra)
    return config


def _write_config(directory: Path, config: dict[str, object]) -> None:
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(config, indent=2))


# --- SafeAILab/EAGLE: eagle/traineagle3/main.py saves with DeepSpeed's
# save_16bit_model(dir), i.e. torch.save(module.state_dict()) to pytorch_model.bin; the Model
# (traineagle3/cnets.py) registers d2t (int64 offsets) and t2d (bool) as root buffers.


def eagle_bin_reduced(directory: Path) -> Path:
    d2t, t2d = _mapping()
    _write_config(directory, _eagle3_config(DRAFT))
    state = module_state_dict({"d2t": d2t, "t2d": t2d, **_eagle3_weights(DRAFT)})
    write_torch_file(directory / "pytorch_model.bin", state)
    return directory


def eagle_bin_sharded(directory: Path) -> Path:
    """transformers' save_pretrained(safe_serialization=False, max_shard_size=...) naming."""
    d2t, t2d = _mapping()
    _write_config(directory, _eagle3_config(DRAFT))
    weights = _eagle3_weights(DRAFT)
    first = {"t2d": t2d, **{k: v for k, v in weights.items() if k.startswith("midlayer.")}}
    second = {"d2t": d2t, **{k: v for k, v in weights.items() if not k.startswith("midlayer.")}}
    names = ["pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"]
    write_torch_file(directory / names[0], module_state_dict(first))
    write_torch_file(directory / names[1], module_state_dict(second))
    weight_map = {key: names[0] for key in first} | {key: names[1] for key in second}
    (directory / "pytorch_model.bin.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 0}, "weight_map": weight_map}, indent=2))
    return directory


def eagle_full_vocab_without_mapping(directory: Path) -> Path:
    """A full-vocabulary EAGLE-3 drafter stored without d2t/t2d (EaModel.__init__ deletes both
    buffers when vocab_size == draft_vocab_size, so they carry nothing)."""
    _write_config(directory, _eagle3_config(VOCAB))
    write_safetensors(directory / "model.safetensors",
                      _as_safetensors(_eagle3_weights(VOCAB)), {"format": "pt"})
    return directory


def reduced_without_mapping(directory: Path) -> Path:
    """A reduced draft exported without its d2t: every engine serves draft id i as target i."""
    _write_config(directory, _eagle3_config(DRAFT))
    write_safetensors(directory / "model.safetensors",
                      _as_safetensors(_eagle3_weights(DRAFT)), {"format": "pt"})
    return directory


# --- sgl-project/SpecForge: specforge/export/to_sglang.py export_to_sglang calls
# model.save_pretrained(output_dir) (model.safetensors, metadata {"format": "pt"}) with the
# draft's own names (midlayer.*, fc, norm, lm_head, t2d, d2t) and no embeddings;
# specforge/data/preprocessing.py generate_vocab_mapping_file writes torch.save({"d2t", "t2d"}).


def specforge_export(directory: Path) -> Path:
    d2t, t2d = _mapping()
    _write_config(directory, _eagle3_config(DRAFT))
    tensors = {**_as_safetensors(_eagle3_weights(DRAFT)), "t2d": t2d, "d2t": d2t}
    write_safetensors(directory / "model.safetensors", dict(sorted(tensors.items())),
                      {"format": "pt"})
    return directory


def specforge_vocab_mapping(directory: Path) -> Path:
    directory.mkdir(parents=True)
    d2t, t2d = _mapping()
    return write_torch_file(directory / "vocab_mapping.pt", {"d2t": d2t, "t2d": t2d})


def model_prefixed_mapping(directory: Path) -> Path:
    """The mapping stored under the module prefix ('model.d2t'), as a re-export from a
    wrapper module writes it; SGLang matches by substring, vLLM cannot load it."""
    d2t, t2d = _mapping()
    _write_config(directory, _eagle3_config(DRAFT))
    tensors = {**_as_safetensors(_eagle3_weights(DRAFT)), "model.t2d": t2d, "model.d2t": d2t}
    write_safetensors(directory / "model.safetensors", tensors, {"format": "pt"})
    return directory


def integer_t2d(directory: Path) -> Path:
    """t2d stored as 0/1 uint8 instead of bool."""
    d2t, t2d = _mapping()
    _write_config(directory, _eagle3_config(DRAFT))
    tensors = {**_as_safetensors(_eagle3_weights(DRAFT)), "t2d": t2d.astype(np.uint8),
               "d2t": d2t}
    write_safetensors(directory / "model.safetensors", tensors, {"format": "pt"})
    return directory


# --- vllm-project/speculators: Eagle3SpeculatorConfig.to_dict (speculators_model_type,
# speculators_config, transformer_layer_config holding the verifier's vocab_size, top-level
# draft_vocab_size; no top-level model_type or vocab_size); DraftVocabMixin._init_vocab
# registers d2t/t2d only when the vocabularies differ, so a full-vocabulary speculator saves
# neither; save_pretrained writes model.safetensors with layers.0.*, embed_tokens, lm_head.


def _speculators_config(draft_vocab: int) -> dict[str, object]:
    return {
        "architectures": ["Eagle3Speculator"],
        "speculators_model_type": "eagle3",
        "speculators_version": "0.3.0",
        "speculators_config": {
            "algorithm": "eagle3",
            "default_proposal_method": "greedy",
            "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
            "verifier": {"name_or_path": "tiny/verifier", "architectures": ["LlamaForCausalLM"]},
        },
        "transformer_layer_config": {"model_type": "llama", "hidden_size": HIDDEN,
                                     "num_hidden_layers": 1, "vocab_size": VOCAB},
        "draft_vocab_size": draft_vocab,
        "norm_before_residual": True,
    }


def _speculators_weights(draft_vocab: int) -> dict[str, object]:
    weights = _eagle3_weights(draft_vocab, layer_prefix="layers.0.")
    weights["embed_tokens.weight"] = _bf16((VOCAB, HIDDEN), 7)
    return _as_safetensors(weights)


def speculators_reduced(directory: Path) -> Path:
    d2t, t2d = _mapping()
    _write_config(directory, _speculators_config(DRAFT))
    write_safetensors(directory / "model.safetensors",
                      {**_speculators_weights(DRAFT), "d2t": d2t, "t2d": t2d}, {"format": "pt"})
    return directory


def speculators_full_vocab(directory: Path) -> Path:
    _write_config(directory, _speculators_config(VOCAB))
    write_safetensors(directory / "model.safetensors", _speculators_weights(VOCAB),
                      {"format": "pt"})
    return directory


def speculators_d2t_only(directory: Path) -> Path:
    """A reduced speculator whose t2d was not kept (vLLM skips t2d; only d2t is served)."""
    d2t, _ = _mapping()
    _write_config(directory, _speculators_config(DRAFT))
    write_safetensors(directory / "model.safetensors",
                      {**_speculators_weights(DRAFT), "d2t": d2t}, {"format": "pt"})
    return directory


def speculators_t2d_wrong_length(directory: Path) -> Path:
    """t2d 6 entries longer than transformer_layer_config.vocab_size (all extra false), so
    only the config's vocab_size can show the length is wrong."""
    d2t, t2d = _mapping()
    _write_config(directory, _speculators_config(DRAFT))
    longer = np.concatenate([t2d, np.zeros(6, bool)])
    write_safetensors(directory / "model.safetensors",
                      {**_speculators_weights(DRAFT), "d2t": d2t, "t2d": longer},
                      {"format": "pt"})
    return directory


PRODUCER_FIXTURES: dict[str, Callable[[Path], Path]] = {
    "eagle_bin_reduced": eagle_bin_reduced,
    "eagle_bin_sharded": eagle_bin_sharded,
    "eagle_full_vocab_no_d2t": eagle_full_vocab_without_mapping,
    "reduced_no_d2t": reduced_without_mapping,
    "specforge_export": specforge_export,
    "specforge_vocab_mapping_pt": specforge_vocab_mapping,
    "model_prefixed_d2t": model_prefixed_mapping,
    "integer_t2d": integer_t2d,
    "speculators_reduced": speculators_reduced,
    "speculators_full_vocab": speculators_full_vocab,
    "speculators_d2t_only": speculators_d2t_only,
    "speculators_t2d_wrong_length": speculators_t2d_wrong_length,
}

# fixture -> (vllm, sglang, any)
EXPECTED_VERDICTS: dict[str, tuple[str, str, str]] = {
    "eagle_bin_reduced": ("PASS", "PASS", "PASS"),
    "eagle_bin_sharded": ("PASS", "PASS", "PASS"),
    "eagle_full_vocab_no_d2t": ("PASS", "PASS", "PASS"),
    "reduced_no_d2t": ("FAIL", "FAIL", "FAIL"),
    "specforge_export": ("PASS", "PASS", "PASS"),
    "specforge_vocab_mapping_pt": ("PASS", "PASS", "PASS"),
    "model_prefixed_d2t": ("FAIL", "PASS", "FAIL"),
    "integer_t2d": ("FAIL", "FAIL", "FAIL"),
    "speculators_reduced": ("PASS", "FAIL", "FAIL"),
    "speculators_full_vocab": ("PASS", "FAIL", "FAIL"),
    "speculators_d2t_only": ("PASS", "FAIL", "FAIL"),
    "speculators_t2d_wrong_length": ("FAIL", "FAIL", "FAIL"),
}
ENGINES = ("vllm", "sglang", "any")
