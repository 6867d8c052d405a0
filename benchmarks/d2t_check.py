"""How long the d2t contract checks take next to loading the tensors they check.

Writes a Qwen-sized drafter checkpoint (151,936-token target vocabulary, 32,000-token draft,
plus a bf16-sized weight so the file is not trivially small) into a temporary directory,
then times loading d2t/t2d and running every check, best of several runs.

    python benchmarks/d2t_check.py [--vocab-size N] [--draft-vocab-size N] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout

from ci_triage.contracts.d2t import check_mapping, reference_mapping  # noqa: E402
from ci_triage.contracts.d2t_io import load_mapping  # noqa: E402


def write_checkpoint(directory: Path, vocab_size: int, draft_vocab_size: int) -> Path:
    rng = np.random.default_rng(0)
    used_tokens = np.sort(rng.choice(vocab_size, size=draft_vocab_size, replace=False))
    mapping = reference_mapping(used_tokens, vocab_size)
    (directory / "config.json").write_text(
        json.dumps({"vocab_size": vocab_size, "draft_vocab_size": draft_vocab_size})
    )
    tensors = {
        "model.d2t": mapping.d2t,
        "model.t2d": mapping.t2d,
        # stands in for the drafter's weights (an fc layer of a 4096-wide model, 32 MB as f16)
        "model.fc.weight": np.zeros((4096, 4096), dtype=np.float16),
    }
    save_file(tensors, str(directory / "model.safetensors"), metadata={"format": "pt"})
    return directory


def best_of(repeats: int, action: Callable[[], object]) -> tuple[float, object]:
    best, value = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        value = action()
        best = min(best, time.perf_counter() - started)
    return best, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab-size", type=int, default=151_936)
    parser.add_argument("--draft-vocab-size", type=int, default=32_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="d2t-bench-") as scratch:
        checkpoint = write_checkpoint(Path(scratch), args.vocab_size, args.draft_vocab_size)
        load_seconds, loaded = best_of(args.repeats, lambda: load_mapping(checkpoint))
        check_seconds, report = best_of(args.repeats, lambda: check_mapping(loaded.mapping))

    print(f"vocab_size={args.vocab_size} draft_vocab_size={args.draft_vocab_size} "
          f"repeats={args.repeats} ok={report.ok}")
    print(f"{'load (d2t + t2d from safetensors)':36} {load_seconds * 1000:8.2f} ms")
    print(f"{f'check (all {len(report.checks)} checks)':36} {check_seconds * 1000:8.2f} ms")
    print(f"check / load ratio: {check_seconds / load_seconds:.2f}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
