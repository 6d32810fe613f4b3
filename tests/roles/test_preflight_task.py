"""`doit compare_preflight` over a real registration (issue 17 item 9): R0 and Rpack
worktrees of this repository, their fresh builds, the smallest registered workload
(original, brightline-return, one probe), the six roles' preparation children in the
registered builds. CI set, a sha256 mismatch, a limit failure's non-zero exit after the
whole report, and SIGTERM during a preparation: no private root is left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from continuity.roles.register import Registered, register, workload
from continuity.roles.table import ROLES, SOULS
from continuity.runner.preflight.launch import PRIVATE_PREFIX
from continuity.runner.preflight.run import (
    CHILD_PATH,
    PROBES_NOTE,
    REPORT_FILE,
    PreflightReport,
    registered_slots,
    suite_trace_ids,
)
from continuity.store import Store
from tests.conftest import REPO
from tests.roles.test_register import Pair, checkout_pair
from tests.test_options import doit_cli

TRACE = "brightline-return"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    with checkout_pair(tmp_path_factory.mktemp("preflight-checkouts")) as made:
        yield made


@pytest.fixture(scope="module")
def registered(pair: Pair, tmp_path_factory: pytest.TempPathFactory) -> Registered:
    base = tmp_path_factory.mktemp("preflight-registration")
    return register(
        Store(base / "store"),
        (pair.r0, pair.r0_sha),
        (pair.rpack, pair.rpack_sha),
        str(base / "registration"),
        workload(["original"], [TRACE], 1),
    )


def _env(tmp_path: Path, private: Path) -> dict[str, str]:
    private.mkdir(exist_ok=True)
    return {
        **os.environ,
        "CONTINUITY_STORE": str(tmp_path / "store"),
        "CONTINUITY_OUT": str(tmp_path / "out"),
        "TMPDIR": str(private),
        "CI": "true",  # preflight is safe in CI: it never refuses because CI is set
    }


def _args(registered: Registered, output: Path, sha256: str | None = None) -> list[str]:
    return [
        "compare_preflight",
        *("--registration", str(registered.path)),
        *("--sha256", sha256 or registered.sha256, "--output", str(output)),
    ]


def _doit(tmp_path: Path, args: list[str], private: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py"), *args],
        cwd=REPO,
        env=_env(tmp_path, private),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def _left(private: Path) -> list[str]:
    return sorted(p.name for p in private.iterdir() if p.name.startswith(PRIVATE_PREFIX))


def test_every_registered_slot_is_prepared_once_in_ci(
    registered: Registered, tmp_path: Path
) -> None:
    private, output = tmp_path / "private", tmp_path / "preflight"
    result = _doit(tmp_path, _args(registered, output), private)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == f"preflight in {output / REPORT_FILE}"
    assert PROBES_NOTE in lines[-2] and "LookupRun.watchdog_seconds (720 s)" in lines[-2]
    assert "6 of 6 slots eligible (3 distinct checkpoints" in lines[-3]
    report = msgspec.json.decode((output / REPORT_FILE).read_bytes(), type=PreflightReport)
    assert report.source.kind == "registration"
    assert (report.source.sha256, report.source.digest) == (
        registered.sha256,
        registered.registration_digest,
    )
    assert [(s.role, s.arm, s.code, s.soul) for s in report.slots] == [
        (role.name, role.arm, role.code.lower(), role.soul_file) for role in ROLES
    ]
    assert {(s.suite, s.trace_id, s.reader_binding) for s in report.slots} == {
        ("original", TRACE, "default")
    }
    for slot in report.slots:
        assert slot.eligible and slot.failure is None and slot.rejected == {}
        assert slot.files > 10 and 0 < slot.largest_file_bytes <= slot.total_bytes
    # Each role's code prepares its own checkpoint key: native and native-soul (R0),
    # pack and soul-only (R0), pack-only and shipping (Rpack) share one each.
    keys = {slot.role: slot.checkpoint for slot in report.slots}
    assert keys["native"] == keys["native-soul"] and keys["pack"] == keys["soul-only"]
    assert keys["pack-only"] == keys["shipping"] != keys["pack"]
    assert report.totals.distinct_checkpoints == 3
    assert _left(private) == []
    # Only preparations: no role ran, no unit or probe output anywhere.
    assert not (tmp_path / "out").exists() and not (tmp_path / "store" / "objects").exists()


def test_a_registration_sha256_mismatch_is_refused(registered: Registered, tmp_path: Path) -> None:
    private, output = tmp_path / "private", tmp_path / "preflight"
    result = _doit(tmp_path, _args(registered, output, sha256="0" * 64), private)
    assert result.returncode != 0
    assert "role_registration_sha256_mismatch: " in result.stdout + result.stderr
    assert "(at --sha256)" in result.stdout + result.stderr
    assert not output.exists() and _left(private) == []


def test_a_missing_option_is_refused_with_its_code(tmp_path: Path) -> None:
    result = doit_cli(tmp_path, "compare_preflight", "--registration", "/r.json")
    assert result.returncode == 1
    assert "option_value_missing: compare_preflight needs --sha256 (at --sha256)" in (
        result.stdout + result.stderr
    )


# The real task in a process whose tree limits are patched before doit runs: the
# retained store of this trace (143,360 bytes) is over a 100,000-byte file limit.
_PATCHED_DOIT = """
import importlib, sys
sys.path.insert(0, sys.argv[1])
import continuity.runner.preflight.run as preflight
preflight.TREE_LIMITS = preflight.TreeLimits(file_bytes=100_000)
from doit.cmd_base import ModuleTaskLoader
from doit.doit_cmd import DoitMain
sys.exit(DoitMain(ModuleTaskLoader(importlib.import_module("dodo"))).run(sys.argv[2:]))
"""


def test_a_limit_failure_exits_non_zero_after_the_whole_report(
    registered: Registered, tmp_path: Path
) -> None:
    private, output = tmp_path / "private", tmp_path / "preflight"
    result = subprocess.run(
        [sys.executable, "-c", _PATCHED_DOIT, str(REPO), *_args(registered, output)],
        cwd=REPO,
        env=_env(tmp_path, private),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    text = result.stdout + result.stderr
    assert "lookup_preparation_invalid: 6 of 6 slots are not eligible; first: " in text
    assert "file_over_64_mib x1 (first continuity/retained.sqlite3)" in text
    assert f"(at slot native original {TRACE})" in text
    assert f"preflight in {output / REPORT_FILE}" in result.stdout
    report = msgspec.json.decode((output / REPORT_FILE).read_bytes(), type=PreflightReport)
    assert [slot.role for slot in report.slots] == [role.name for role in ROLES]  # all tried
    for slot in report.slots:
        assert slot.prepared and slot.restored and not slot.eligible
        assert slot.rejected == {"file_over_64_mib": 1}
    assert _left(private) == []


def _preparing(private: Path) -> bool:
    """Whether a private root holds a preparation's store (its child is running)."""
    return any((root / "store").is_dir() for root in private.glob(PRIVATE_PREFIX + "*"))


def test_sigterm_during_a_preparation_removes_its_private_root(
    registered: Registered, tmp_path: Path
) -> None:
    private, output = tmp_path / "private", tmp_path / "preflight"
    command = [sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py")]
    with subprocess.Popen(
        [*command, *_args(registered, output)],
        cwd=REPO,
        env=_env(tmp_path, private),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        deadline = time.monotonic() + 120
        while not _preparing(private) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _preparing(private), "no preparation started"
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 143, err
    assert "interrupted; run the same command again to resume" in err
    assert _left(private) == []
    assert not (output / REPORT_FILE).exists()
    leftovers = []  # no preparation child (nor its zygote) outlives the command
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"continuity.runner.preflight.child" in argv and str(private).encode() in b"".join(
            (entry / "environ").read_bytes().split(b"\0")
        ):
            leftovers.append(entry.name)
    assert leftovers == []


def test_slots_are_every_role_x_suite_x_trace_of_the_registration(
    registered: Registered, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    slots = registered_slots(registered.registration, SOULS)
    assert [(s.role, s.suite, s.trace_id, s.code.label) for s in slots] == [
        (role.name, "original", TRACE, role.code.lower()) for role in ROLES
    ]
    assert all(s.code.missing is None and s.code.command[1:] == ["-I", "-B"] for s in slots)
    builds = registered.registration.builds
    assert {s.code.command[0] for s in slots} == {builds["r0"].python, builds["rpack"].python}
    # Without a trace filter: every trace of the suite, listed in a private root.
    unfiltered = msgspec.structs.replace(
        registered.registration,
        workload=msgspec.structs.replace(registered.registration.workload, traces=[]),
    )
    listed = suite_trace_ids("original")
    assert TRACE in listed and len(listed) >= 4
    assert len(registered_slots(unfiltered, SOULS)) == len(ROLES) * len(listed)
    # A build registered before preflight existed has no child to run.
    old = {
        label: msgspec.structs.replace(
            build, files={k: v for k, v in build.files.items() if k != CHILD_PATH}
        )
        for label, build in builds.items()
    }
    older = msgspec.structs.replace(registered.registration, builds=old)
    assert all(
        s.code.missing is not None and "register again" in s.code.missing
        for s in registered_slots(older, SOULS)
    )
    assert _left(tmp_path) == []
