"""Whether each serving engine can load a checkpoint's vocabulary mapping, as its code does.

Pure: facts about a loaded checkpoint in, one CheckResult per engine out. Each rule cites the
engine function it follows; docs/d2t.md has the full convention table.

- vLLM, ``vllm/model_executor/models/llama_eagle3.py``, ``Eagle3LlamaForCausalLM.load_weights``:
  skips every name containing ``t2d``; renames a name containing ``d2t`` to
  ``draft_id_to_target_id`` *keeping its prefix*, so only the bare name ``d2t`` reaches the
  top-level parameter (``model.d2t`` becomes ``model.draft_id_to_target_id``, which
  ``LlamaModel.load_weights`` has no entry for: loading fails). The parameter is
  ``zeros(draft_vocab_size)`` and stays so without a ``d2t``; ``default_weight_loader`` asserts
  the shape. Speculators configs are read (``SpeculatorsConfig``), safetensors and ``.bin``
  (``DefaultModelLoader._prepare_weights``, ``pt_weights_iterator``).
- SGLang, ``python/sglang/srt/models/llama_eagle3.py``, ``LlamaForCausalLMEagle3.load_weights``:
  any name containing ``d2t`` sets ``hot_token_id = d2t + arange``; ``t2d`` is skipped; with
  no ``d2t`` ``hot_token_id`` stays None and draft ids are used as target ids
  (``EAGLEWorker.__init__``). It builds the model from the top-level ``vocab_size`` and
  ``draft_vocab_size`` of config.json; no reader of the speculators config format was found.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from ci_triage.contracts.d2t import CheckResult, MappingReport, VocabMapping, check_mapping


class Engine(str, Enum):
    VLLM = "vllm"
    SGLANG = "sglang"
    ANY = "any"  # what every engine below accepts

    def engines(self) -> tuple[Engine, ...]:
        return (Engine.VLLM, Engine.SGLANG) if self is Engine.ANY else (self,)


def engine_check_name(engine: Engine) -> str:
    return f"loads_in_{engine.value}"


ENGINE_CHECK_NAMES = tuple(engine_check_name(e) for e in Engine.ANY.engines())


@dataclass(frozen=True)
class CheckpointFacts:
    """What the engines' loaders look at, as read from disk by d2t_io."""

    is_engine_checkpoint: bool  # a directory with config.json and weights
    config_format: str | None  # "hf", "speculators" or None
    d2t_key: str | None  # full tensor name as stored; None when no d2t is stored
    mapping: VocabMapping


def _skip(engine: Engine, why: str) -> CheckResult:
    return CheckResult(engine_check_name(engine), True, f"skipped: {why}", skipped=True)


def _absent_d2t(engine: Engine, mapping: VocabMapping, identity: str) -> CheckResult:
    name = engine_check_name(engine)
    if mapping.draft_vocab_size == mapping.vocab_size:
        return CheckResult(name, True, f"no d2t, full vocabulary: {identity}, the identity")
    return CheckResult(
        name, False,
        f"no d2t for a reduced draft: {identity}, so draft id i is served as target id i "
        f"(draft_vocab_size {mapping.draft_vocab_size} < vocab_size {mapping.vocab_size})",
    )


def _d2t_length(engine: Engine, mapping: VocabMapping, what_fails: str) -> CheckResult | None:
    d2t = mapping.d2t
    if d2t is not None and (d2t.ndim != 1 or d2t.shape[0] != mapping.draft_vocab_size):
        return CheckResult(
            engine_check_name(engine), False,
            f"d2t has shape {tuple(d2t.shape)}, draft_vocab_size is {mapping.draft_vocab_size}: "
            f"{what_fails}",
        )
    return None


def check_vllm(facts: CheckpointFacts) -> CheckResult:
    name = engine_check_name(Engine.VLLM)
    mapping = facts.mapping
    if facts.d2t_key is None:
        return _absent_d2t(Engine.VLLM, mapping, "vLLM keeps draft_id_to_target_id at zeros")
    if facts.d2t_key != "d2t":
        renamed = facts.d2t_key.replace("d2t", "draft_id_to_target_id")
        return CheckResult(
            name, False,
            f"vLLM cannot load {facts.d2t_key!r}: Eagle3LlamaForCausalLM.load_weights renames it "
            f"to {renamed!r}, which is no parameter of the model; store it as 'd2t'",
        )
    mismatch = _d2t_length(Engine.VLLM, mapping,
                           "default_weight_loader's shape assertion fails")
    if mismatch:
        return mismatch
    return CheckResult(name, True, "vLLM loads 'd2t' into draft_id_to_target_id (t2d is skipped)")


def check_sglang(facts: CheckpointFacts) -> CheckResult:
    name = engine_check_name(Engine.SGLANG)
    mapping = facts.mapping
    if facts.config_format == "speculators":
        return CheckResult(
            name, False,
            "SGLang builds LlamaForCausalLMEagle3 from the top-level vocab_size and "
            "draft_vocab_size of config.json; a speculators config nests vocab_size under "
            "transformer_layer_config and no SGLang reader of that format was found",
        )
    if facts.d2t_key is None:
        return _absent_d2t(Engine.SGLANG, mapping, "SGLang leaves hot_token_id unset")
    mismatch = _d2t_length(Engine.SGLANG, mapping,
                           "hot_token_id would not cover the draft vocabulary")
    if mismatch:
        return mismatch
    return CheckResult(
        name, True, f"SGLang reads {facts.d2t_key!r} as hot_token_id = d2t + arange (t2d is skipped)"
    )


_CHECKS = {Engine.VLLM: check_vllm, Engine.SGLANG: check_sglang}


def check_engines(facts: CheckpointFacts, engine: Engine) -> tuple[CheckResult, ...]:
    """One result per engine ``engine`` stands for; skipped for files no engine loads."""
    results = []
    for each in engine.engines():
        if not facts.is_engine_checkpoint:
            results.append(_skip(each, "not a checkpoint directory an engine loads "
                                       "(a lone tensor or mapping file)"))
        else:
            results.append(_CHECKS[each](facts))
    return tuple(results)


def check_with_engines(facts: CheckpointFacts, engine: Engine) -> MappingReport:
    """The mapping contract checks, then whether ``engine`` (each of them, for ``any``) loads
    the checkpoint; the report fails when either does."""
    report = check_mapping(facts.mapping)
    return replace(report, checks=report.checks + check_engines(facts, engine))
