"""Special files given where a task reads a file or a directory, through the real doit
command line (the file fuzz beside `tests/test_options_fuzz.py`, whose values the
argument checks refuse before any task runs; these reach the task's action).

Each case names ``/dev/zero``, a FIFO, a directory where a file is read, a file (or a
device, or a ``/proc`` file) where a directory is read, a sparse file over its kind's
limit, or a ``/proc`` path, and must fail fast (a FIFO opened for a blocking read
would hang the bounded call) with its coded line and no traceback
(`continuity.inputs`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from continuity.errors.catalogue import ENTRIES
from continuity.inputs import ARCHIVE_MAX_BYTES, DOCUMENT_MAX_BYTES, REGISTRATION_MAX_BYTES
from tests.conftest import REPO
from tests.graph.test_dodo import doit_command, doit_env

CATALOGUE = frozenset(entry.code for entry in ENTRIES)
CODED = re.compile(r"^([a-z][a-z0-9_]*)(?::[A-Za-z0-9_.-]+)?: .+ \(at (.+)\)$")
BOUND_SECONDS = 60.0
SHA = "0" * 64


def _sparse(path: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.truncate(size)  # a hole: over the limit, never read in full
    return path


def _cases(tmp: Path) -> list[tuple[list[str], str]]:
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    folder = tmp / "folder"
    folder.mkdir()
    afile = tmp / "afile.json"
    afile.write_text("{}")
    big_registration = _sparse(tmp / "registration.json", REGISTRATION_MAX_BYTES + 1)
    big_zip = _sparse(tmp / "locomo10.zip", ARCHIVE_MAX_BYTES + 1)
    big_document = _sparse(tmp / "catalog.json", DOCUMENT_MAX_BYTES + 1)
    run, out = ["--output", str(tmp / "run")], ["--output", str(tmp / "imported")]
    cases: list[tuple[list[str], str]] = []
    for bad in ("/dev/zero", str(fifo), str(folder)):
        cases += [
            (["compare_run", "--registration", bad, "--sha256", SHA, *run], "input_not_a_file"),
            (["compare_aggregate", "--registration", bad, "--sha256", SHA, *run],
             "input_not_a_file"),
            (["compare_preflight", "--registration", bad, "--sha256", SHA], "input_not_a_file"),
            (["import_locomo", "--zip", bad, *out], "input_not_a_file"),
            (["traces", "--file", bad], "input_not_a_file"),
            (["calibrate", "--cases", bad], "calibration_suite_unreadable"),
            (["holdout_validate", "--manifest", bad, "--manifest-sha256", SHA,
              "--statistical-spec", str(afile)], "holdout_file_unreadable"),
            (["dry_run", "--suite", "smoke", "--pricing", bad], "input_not_a_file"),
            (["plan", "--suite", "smoke", "--probe-mode", "lookup-allowed-v1", "--policy", bad,
              "--policy-sha256", SHA], "input_not_a_file"),
        ]  # fmt: skip
    for not_a_dir in (str(afile), "/dev/zero", "/proc/self/status"):
        cases.append((["aggregate", "--run-dir", not_a_dir], "input_not_a_directory"))
    return [
        *cases,
        (["compare_run", "--registration", str(big_registration), "--sha256", SHA, *run],
         "input_too_large"),
        (["import_locomo", "--zip", str(big_zip), *out], "input_too_large"),
        (["dry_run", "--suite", "smoke", "--pricing", str(big_document)], "input_too_large"),
        (["estimate", "--probe-mode", "lookup-allowed-v1", "--suites", "smoke", "--pricing",
          "/dev/zero"], "input_not_a_file"),
        (["estimate", "--probe-mode", "lookup-allowed-v1", "--suites", "smoke", "--policy",
          "/dev/zero", "--policy-sha256", SHA], "input_not_a_file"),
        (["dry_run", "--suite", "smoke", "--pricing", "/proc/self/status"], "pricing_invalid"),
        (["dry_run", "--suite", "smoke", "--pricing", "/proc/nope/x"], "pricing_invalid"),
        (["compare_run", "--registration", "/proc/self/fd", "--sha256", SHA, *run],
         "input_not_a_file"),
        (["compare_run", "--registration", "/proc/self/status", "--sha256", SHA, *run],
         "role_registration_sha256_mismatch"),
        (["compare_run", "--registration", "/proc/nope/x", "--sha256", SHA, *run],
         "role_registration_invalid"),
        (["import_locomo", "--zip", "/proc/self/status", *out], "locomo_zip_unreadable"),
        (["compare_register", "--r0", str(folder), "--r0-revision", "0" * 40, "--rpack",
          str(folder), "--rpack-revision", "0" * 40, "--output", "/proc/nope/x"],
         "role_output_invalid"),
    ]  # fmt: skip


def test_special_files_are_refused_with_one_coded_line(tmp_path: Path) -> None:
    failures = []
    for args, code in _cases(tmp_path):
        start = time.monotonic()
        try:
            done = subprocess.run(
                doit_command(*args), cwd=REPO, env=doit_env(tmp_path), capture_output=True,
                text=True, timeout=BOUND_SECONDS,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            failures.append((args, "no answer within the bound"))
            continue
        output = done.stdout + done.stderr
        coded = [m.group(1) for m in map(CODED.match, output.splitlines()) if m]
        if "Traceback" in output or done.returncode == 0 or coded != [code]:
            failures.append((args, output))
        assert time.monotonic() - start < BOUND_SECONDS
    assert failures == []
    assert not (tmp_path / "run").exists() and not (tmp_path / "imported").exists()


def test_the_fixture_server_refuses_a_special_trace_file(tmp_path: Path) -> None:
    """``python -m continuity.servers.fixture --trace`` (no doit): one error line, exit 2."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for bad in ("/dev/zero", str(fifo), str(tmp_path)):
        done = subprocess.run(
            [sys.executable, "-m", "continuity.servers.fixture", "--trace", bad],
            cwd=REPO, capture_output=True, text=True, timeout=BOUND_SECONDS,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert done.stderr.startswith("error input_not_a_file: "), done.stderr


@pytest.mark.parametrize("code", ["input_not_a_file", "input_too_large", "input_not_a_directory"])
def test_the_codes_are_in_the_catalogue(code: str) -> None:
    assert code in CATALOGUE
