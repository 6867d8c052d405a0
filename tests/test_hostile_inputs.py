"""Issue 12 item 4: hostile inputs are refused or clipped quickly, before a parser or decoder runs.

The sizes here are small enough to be harmless on code without the limits (so a run against the old
commit fails by assertion, not by exhausting the machine); the full-size cases of the issue are
measured in the report of this change.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest

from ci_triage.contracts.d2t_io import D2tInputError, load_mapping
from ci_triage.core.config.repo_config import parse_repo_config
from ci_triage.errors import ConfigError

from .contracts.torch_save_writer import write_torch_file


def test_a_config_with_a_5000_part_dotted_key_is_refused_before_parsing():
    text = "a" + ".a" * 5000 + " = 1\n"
    with pytest.raises(ConfigError, match="dotted key of more than 32 parts"):
        parse_repo_config(text)


def test_a_table_header_with_many_parts_is_refused():
    with pytest.raises(ConfigError, match="dotted key"):
        parse_repo_config("[" + ".".join(["t"] * 100) + "]\n")


def test_deep_nesting_is_refused_before_parsing():
    with pytest.raises(ConfigError, match="nests arrays or tables more than 32 deep"):
        parse_repo_config("x = " + "[" * 100 + "]" * 100 + "\n")


def test_a_huge_config_is_refused_by_size():
    text = "# a comment\n" * 30_000 + "[policy]\nmax_auto_reruns = 1\n"
    with pytest.raises(ConfigError, match="at most 262,144"):
        parse_repo_config(text)


def test_dots_and_brackets_inside_strings_and_values_are_not_counted():
    config = parse_repo_config("[runners]\nhost_pattern = '" + r"^(?P<host>.+)" + r"\.a\.b\.c\.d" * 10 + "'\n"
                               "[window]\nbefore_hours = 1.5\n")
    assert config.host_pattern is not None


def test_a_long_host_pattern_is_refused():
    with pytest.raises(ConfigError, match="host_pattern: is 5,0"):
        parse_repo_config('[runners]\nhost_pattern = "(?P<host>' + "a" * 5000 + ')"\n')


def test_config_check_refuses_a_big_file_without_reading_it(tmp_path):
    file = tmp_path / "ci-triage.toml"
    with open(file, "wb") as out:
        out.truncate(50 * 1024 * 1024)  # sparse: 50 MB declared, nothing to read
    result = subprocess.run([sys.executable, "-m", "ci_triage", "config", "check", str(file)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "at most 262,144 are read" in result.stderr


def test_a_big_rule_file_is_refused_by_size(tmp_path):
    file = tmp_path / "rules.toml"
    file.write_text("# padding\n" * 40_000)
    result = subprocess.run([sys.executable, "-m", "ci_triage", "rules", "check", str(file)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "at most 262,144 are read" in result.stderr


def test_a_repository_rule_file_is_held_to_the_same_limits_as_the_config():
    """The repository's rule file comes from the API, not from a file whose size the CLI checked."""
    from ci_triage.core.logs.rules import parse_rules

    with pytest.raises(ConfigError, match="dotted key of more than 32 parts"):
        parse_rules("a" + ".a" * 5000 + " = 1\n", origin="o/r:rules.toml")
    with pytest.raises(ConfigError, match="at most 262,144"):
        parse_rules("# padding\n" * 40_000, origin="o/r:rules.toml")
    long_rule = ('[[rule]]\nid = "long"\ncategory = "network"\npatterns = ["' + "a" * 5000 + '"]\n'
                 'examples = ["x"]\nnear_misses = ["y"]\n')
    with pytest.raises(ConfigError, match="rule 'long': a pattern is 5,000 characters long"):
        parse_rules(long_rule, origin="o/r:rules.toml")


# --- d2t: declared sizes -----------------------------------------------------------------------------
def write_declared_npz(path, declared_elements: int) -> None:
    """An .npz whose d2t declares `declared_elements` int64 values: zeros, deflated, streamed."""
    header = {"descr": "<i8", "fortran_order": False, "shape": (declared_elements,)}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("d2t.npy", "w", force_zip64=True) as stream:
            np.lib.format.write_array_header_1_0(stream, header)
            chunk = bytes(8 * 1024 * 1024)
            left = declared_elements * 8
            while left > 0:
                stream.write(chunk[: min(left, len(chunk))])
                left -= len(chunk)
        archive.writestr("t2d.npy", _npy(np.ones(8, bool)))


def _npy(array: np.ndarray) -> bytes:
    import io

    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def test_an_npz_tensor_declared_over_the_budget_is_refused_before_decoding(tmp_path):
    file = tmp_path / "mapping.npz"
    write_declared_npz(file, 40 * 1024 * 1024)  # 320 MiB declared, a few hundred KB on disk
    started = time.monotonic()
    with pytest.raises(D2tInputError, match="refused above"):
        load_mapping(file)
    assert time.monotonic() - started < 5


def test_a_safetensors_tensor_declared_past_the_file_is_refused(tmp_path):
    header = {"d2t": {"dtype": "I64", "shape": [400_000_000], "data_offsets": [0, 3_200_000_000]}}
    raw = json.dumps(header).encode()
    file = tmp_path / "model.safetensors"
    file.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(64))
    with pytest.raises(D2tInputError, match="refused above|the file holds"):
        load_mapping(file)


def test_a_torch_storage_over_the_budget_is_refused_before_reading(tmp_path, monkeypatch):
    from ci_triage.contracts import torch_archive

    file = write_torch_file(tmp_path / "mapping.pt", {"d2t": np.zeros(1024, np.int64), "t2d": np.ones(8, bool)})
    monkeypatch.setattr(torch_archive, "MAX_TENSOR_BYTES", 4096)  # a 1024 x int64 storage is 8 KiB
    with pytest.raises(D2tInputError, match="refused above 4,096 bytes"):
        load_mapping(file)


# --- the table view of a huge single-line log --------------------------------------------------------
def test_the_classify_table_of_a_huge_single_line_log_finishes_fast(tmp_path):
    log = tmp_path / "job.log"
    # A line a rule matches (so it is the root cause the table shows), then 6 MB of short words.
    log.write_text("2026-05-12T13:00:00.0000000Z OSError: [Errno 98] Address already in use "
                   + "x y" * (2 * 1024 * 1024) + "\n")
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "ci_triage", "classify", str(log)],
                            capture_output=True, text=True, timeout=60, env={"COLUMNS": "120", "PATH": ""})
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 30
    assert "port_in_use" in result.stdout and len(result.stdout) < 20_000
