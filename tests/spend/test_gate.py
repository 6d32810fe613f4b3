"""The release gate: closed in this revision, and doit compare_pilot refuses before it
reads any file an option names."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from continuity.errors import SpendError
from continuity.spend import gate
from rules.pilot import _compare_pilot
from tests.conftest import REPO
from tests.graph.test_dodo import doit_command, doit_env


def test_the_gate_is_closed() -> None:
    assert gate.LOOKUP_PILOT_REAL_ROUTE_ENABLED is False
    with pytest.raises(SpendError) as caught:
        gate.require_real_route()
    assert caught.value.code == "lookup_pilot_real_route_unavailable"


def test_compare_pilot_refuses_before_reading_any_argument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    real_open = open

    def spy(file: object, *args: object, **kwargs: object) -> object:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.open", spy)
    secret = tmp_path / "authorization.json"
    secret.write_text("{}")
    with pytest.raises(SpendError) as caught:
        _compare_pilot(
            registration=str(tmp_path / "pilot.json"),
            sha256="0" * 64,
            authorization=str(secret),
            output=str(tmp_path / "out"),
        )
    assert caught.value.code == "lookup_pilot_real_route_unavailable"
    assert not [p for p in opened if str(tmp_path) in p]
    assert not (tmp_path / "out").exists()


def test_the_doit_command_refuses_with_its_code(tmp_path: Path) -> None:
    ran = subprocess.run(
        doit_command(
            "compare_pilot",
            "--registration",
            str(tmp_path / "missing.json"),
            "--sha256",
            "0" * 64,
            "--authorization",
            str(tmp_path / "a.json"),
            "--output",
            str(tmp_path / "out"),
        ),
        cwd=REPO,
        env=doit_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    both = ran.stdout + ran.stderr
    assert ran.returncode != 0 and "lookup_pilot_real_route_unavailable" in both
    assert "Traceback" not in both and "missing.json" not in both
