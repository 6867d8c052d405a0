"""``ci-triage d2t``: check and repair drafter vocab mappings in exported checkpoints.

The main CLI mounts this with ``app.add_typer(d2t_app, name="d2t")``. numpy and safetensors
are imported inside the commands so that ``ci-triage --help`` does not pay for them.
Commands only orchestrate: load (d2t_io), check or repair (d2t), render, exit.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

if TYPE_CHECKING:
    from ci_triage.contracts.d2t import MappingReport
    from ci_triage.contracts.d2t_io import LoadedMapping

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_UNREADABLE = 2

EXIT_CODES_HELP = (
    "Exit codes: 0 every check passed; 1 a contract violation, or a checkpoint the chosen "
    "engine cannot load; 2 a path cannot be read, or a file that should hold d2t lacks it."
)
FIX_EXIT_CODES_HELP = (
    "Exit codes: 0 repaired, or already offsets and nothing written; 1 refused, the mapping "
    "cannot be repaired without guessing; 2 unreadable input, missing d2t, or bad options."
)

app = typer.Typer(rich_markup_mode=None, 
    name="d2t",
    help=(
        "Check and repair drafter d2t vocab mappings (EAGLE-3, P-EAGLE) in exported "
        "checkpoints. The engine computes target = arange(draft_vocab_size) + d2t, so d2t "
        "holds offsets and the identity mapping is all zeros."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class OutputFormat(str, Enum):
    TEXT = "text"
    JSON = "json"


class EngineChoice(str, Enum):
    # Mirrors d2t_engines.Engine, which is imported lazily (numpy) inside the command.
    VLLM = "vllm"
    SGLANG = "sglang"
    ANY = "any"


VocabSizeOption = Annotated[
    int | None,
    typer.Option("--vocab-size", min=1, help="Target vocabulary size; overrides config.json."),
]
DraftVocabSizeOption = Annotated[
    int | None,
    typer.Option(
        "--draft-vocab-size", min=1, help="Draft vocabulary size; overrides config.json."
    ),
]


def _fail(message: str, code: int = EXIT_UNREADABLE) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


# --- pure renderers ---------------------------------------------------------------------------


def render_report_text(loaded: LoadedMapping, report: MappingReport, engine: str = "any") -> str:
    verdict = "PASS" if report.ok else "FAIL"
    max_id = report.max_engine_target_id
    lines = [
        f"{verdict} {loaded.path} [{report.kind.value}] --engine {engine}",
        f"  max engine target id = {max_id} (vocab_size={report.vocab_size}), "
        f"draft_vocab_size={report.draft_vocab_size}",
        f"  kind: {report.kind_reason}",
    ]
    for check in report.checks:
        status = "skip" if check.skipped else ("pass" if check.passed else "FAIL")
        line = f"  {status:4} {check.name:32} {check.detail}"
        if check.first_offending_draft_ids:
            ids = ", ".join(str(i) for i in check.first_offending_draft_ids)
            line += f"; first offending draft ids: [{ids}]"
        lines.append(line)
    lines.append(f"  sizes: {loaded.sizes_from}")
    return "\n".join(lines)


def report_to_dict(report: MappingReport) -> dict[str, Any]:
    """The stable JSON shape of one report (``path`` and ``layout`` are added by the caller)."""
    return {
        "ok": report.ok,
        "kind": report.kind.value,
        "kind_reason": report.kind_reason,
        "vocab_size": report.vocab_size,
        "draft_vocab_size": report.draft_vocab_size,
        "max_engine_target_id": report.max_engine_target_id,
        "checks": [
            {
                "name": check.name,
                "passed": check.passed,
                "skipped": check.skipped,
                "detail": check.detail,
                "offending_draft_ids": list(check.first_offending_draft_ids),
            }
            for check in report.checks
        ],
    }


def report_json_entry(loaded: LoadedMapping, report: MappingReport,
                      engine: str = "any") -> dict[str, Any]:
    return {"path": str(loaded.path), "layout": loaded.layout, "sizes_from": loaded.sizes_from,
            "engine": engine, "config_format": loaded.config_format, **report_to_dict(report)}


def unreadable_json_entry(path: Path, message: str) -> dict[str, Any]:
    return {"path": str(path), "ok": False, "kind": None, "error": message, "checks": []}


# --- commands ---------------------------------------------------------------------------------


@app.command("check", help=f"Check each checkpoint's d2t/t2d against the engine's offset "
             f"convention. {EXIT_CODES_HELP}")
def check_command(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Checkpoint directories (config.json + model.safetensors, pytorch_model.bin, "
            "or a sharded index of either), .safetensors files, .npz mapping files, or "
            ".pt/.bin files (read without torch).",
            show_default=False,
        ),
    ],
    output_format: Annotated[
        OutputFormat, typer.Option("--format", help="text for people, json for machines.")
    ] = OutputFormat.TEXT,
    vocab_size: VocabSizeOption = None,
    draft_vocab_size: DraftVocabSizeOption = None,
    engine: Annotated[
        EngineChoice,
        typer.Option("--engine", help="Which serving engine must be able to load the "
                     "checkpoint: vllm, sglang, or any (every one of them)."),
    ] = EngineChoice.ANY,
) -> None:
    from ci_triage.contracts.d2t_engines import Engine, check_with_engines
    from ci_triage.contracts.d2t_io import (
        D2tInputError,
        SizeOverrides,
        checkpoint_facts,
        load_mapping,
    )

    overrides = SizeOverrides(vocab_size, draft_vocab_size)
    exit_code = EXIT_OK
    json_entries: list[dict[str, Any]] = []
    for path in paths:
        try:
            loaded = load_mapping(path, overrides)
        except D2tInputError as error:
            typer.echo(f"error: {error}", err=True)
            json_entries.append(unreadable_json_entry(path, str(error)))
            exit_code = EXIT_UNREADABLE
            continue
        report = check_with_engines(checkpoint_facts(loaded), Engine(engine.value))
        if not report.ok and exit_code == EXIT_OK:
            exit_code = EXIT_VIOLATION
        if output_format is OutputFormat.JSON:
            json_entries.append(report_json_entry(loaded, report, engine.value))
        else:
            typer.echo(render_report_text(loaded, report, engine.value))
    if output_format is OutputFormat.JSON:
        from ci_triage.core.render.json import document

        sys.stdout.write(document(json_entries))
    raise typer.Exit(exit_code)


@app.command("fix", help=f"Rewrite a legacy d2t holding absolute ids (the old arange default) "
             f"into offsets, all zeros for a full vocabulary, copying every other tensor and the "
             f"metadata unchanged. Writes to --output, or edits in place only with --in-place "
             f"--backup (keeping <file>.bak). {FIX_EXIT_CODES_HELP}")
def fix_command(
    path: Annotated[Path, typer.Argument(help="Checkpoint directory, .safetensors or .npz.",
                                         show_default=False)],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="New file (or directory, for a directory input)."),
    ] = None,
    in_place: Annotated[
        bool, typer.Option("--in-place", metavar="", help="Edit PATH itself; requires --backup.")
    ] = False,
    backup: Annotated[
        bool, typer.Option("--backup", metavar="", help="With --in-place: keep the old file as <file>.bak.")
    ] = False,
    vocab_size: VocabSizeOption = None,
    draft_vocab_size: DraftVocabSizeOption = None,
) -> None:
    if in_place and not backup:
        _fail("refusing --in-place without --backup")
    if backup and not in_place:
        _fail("--backup only applies with --in-place")
    if in_place == (output is not None):
        _fail("give exactly one of --output OUT or --in-place --backup")

    from ci_triage.contracts.d2t import RepairStatus, check_mapping, repair_mapping
    from ci_triage.contracts.d2t_io import D2tInputError, SizeOverrides, load_mapping
    from ci_triage.contracts.d2t_write import write_repaired_copy, write_repaired_in_place

    overrides = SizeOverrides(vocab_size, draft_vocab_size)
    try:
        loaded = load_mapping(path, overrides)
    except D2tInputError as error:
        _fail(str(error))
    outcome = repair_mapping(loaded.mapping)
    if outcome.status is RepairStatus.ALREADY_OFFSETS:
        failing = check_mapping(loaded.mapping).failed_checks
        if failing:
            names = ", ".join(check.name for check in failing)
            _fail(f"{path}: d2t already holds offsets but fails {names}; "
                  "that is not a legacy mapping fix can repair", EXIT_VIOLATION)
        typer.echo(f"{path}: {outcome.detail}; nothing written")
        raise typer.Exit(EXIT_OK)
    if outcome.status is RepairStatus.REFUSED or outcome.d2t is None:
        _fail(f"{path}: {outcome.detail}", EXIT_VIOLATION)

    try:
        if in_place:
            changed, backup_file = write_repaired_in_place(loaded, outcome.d2t)
            written = path
            changed_files = [changed]
            typer.echo(f"backup: {backup_file}")
        else:
            assert output is not None
            changed_files = write_repaired_copy(loaded, outcome.d2t, output)
            written = output
        # Re-read with the input's sizes: a copied file may have no config.json beside it.
        input_sizes = SizeOverrides(loaded.mapping.vocab_size, loaded.mapping.draft_vocab_size)
        verified = check_mapping(load_mapping(written, input_sizes).mapping)
    except D2tInputError as error:
        _fail(str(error))
    except OSError as error:
        _fail(f"cannot write: {error}")
    if not verified.ok:  # defensive: the write path must round-trip to a passing mapping
        names = ", ".join(check.name for check in verified.failed_checks)
        _fail(f"{written}: written mapping still fails {names}", EXIT_VIOLATION)
    typer.echo(f"{path} -> {written}: {outcome.detail}")
    for changed in changed_files:
        typer.echo(f"  rewrote d2t in {changed}")


if __name__ == "__main__":
    app(prog_name="ci-triage d2t")
