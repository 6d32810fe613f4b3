"""The configured-process smoke (`doit pilot_smoke`): both proofs pass, and a proof that
does not hold fails with its code."""

from __future__ import annotations

from pathlib import Path

import pytest

from continuity.errors import SpendError
from continuity.roles.pilot import smoke as pilot_smoke
from continuity.roles.pilot.smoke import run_smoke


def test_both_proofs_pass_on_loopback(tmp_path: Path) -> None:
    said: list[str] = []
    lines = run_smoke(tmp_path, say=said.append)
    assert len(lines) == 2 and said == [f"pilot smoke: {line}" for line in lines]
    assert lines[0].startswith("lost streams: 3 admitted")
    assert "hold retained, group contained" in lines[1]


def test_a_proof_that_does_not_hold_fails_with_its_code() -> None:
    with pytest.raises(SpendError) as caught:
        pilot_smoke._check(False, "the lost requests keep their holds")
    assert caught.value.code == "pilot_smoke_failed"
    assert caught.value.location == "the lost requests keep their holds"
