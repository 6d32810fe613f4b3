"""The release gate: open in this revision for ready readers; closed (the seed's
behaviour, patched here), doit compare_pilot refuses before it reads any file an option
names."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from continuity.commands.pilot_runs import ComparePilotRequest, compare_pilot
from continuity.errors import SpendError
from continuity.spend import gate
from tests.conftest import REPO
from tests.graph.test_dodo import doit_command, doit_env


@pytest.fixture
def closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gate, "LOOKUP_PILOT_REAL_ROUTE_ENABLED", False)


def test_the_gate_is_open_and_refuses_when_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    assert gate.LOOKUP_PILOT_REAL_ROUTE_ENABLED is True
    gate.require_real_route()  # open: nothing to refuse
    monkeypatch.setattr(gate, "LOOKUP_PILOT_REAL_ROUTE_ENABLED", False)
    with pytest.raises(SpendError) as caught:
        gate.require_real_route()
    assert caught.value.code == "lookup_pilot_real_route_unavailable"


@pytest.mark.usefixtures("closed")
def test_a_closed_gate_refuses_compare_pilot_before_reading_any_argument(
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
        compare_pilot(
            ComparePilotRequest(
                registration=str(tmp_path / "pilot.json"),
                sha256="0" * 64,
                authorization=str(secret),
                output=str(tmp_path / "out"),
                credentials=str(secret),
            )
        )
    assert caught.value.code == "lookup_pilot_real_route_unavailable"
    assert not [p for p in opened if str(tmp_path) in p]
    assert not (tmp_path / "out").exists()


def _doit(tmp_path: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        doit_command("compare_pilot", *more),
        cwd=REPO,
        env=doit_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_open_route_names_what_is_missing_and_refuses_a_bad_registration(
    tmp_path: Path,
) -> None:
    ran = _doit(tmp_path, "--registration", str(tmp_path / "missing.json"))
    both = ran.stdout + ran.stderr
    assert ran.returncode != 0 and "option_value_missing" in both and "--sha256" in both
    files = {"--sha256": "0" * 64, "--authorization": str(tmp_path / "a.json")}
    files |= {"--output": str(tmp_path / "out"), "--credentials": str(tmp_path / "c.json")}
    args = [part for item in files.items() for part in item]
    ran = _doit(tmp_path, "--registration", str(tmp_path / "missing.json"), *args)
    both = ran.stdout + ran.stderr
    assert ran.returncode != 0 and "role_registration_invalid" in both, both
    assert "Traceback" not in both and not (tmp_path / "out").exists()
