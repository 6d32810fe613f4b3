"""`doit units --agent`: scored outside-agent samples, the offline contract's pass, the
equivalence with the reference harness's native arm, and bad input with its codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from continuity.agents.contract import TOY_MANIFEST, check_outside_agent
from continuity.agents.manifest import load_manifest
from continuity.agents.units import run_agent_units
from continuity.errors import ContinuityError
from continuity.runner.units import build_units
from continuity.store import Store
from rules.units import _units
from tests.harness.test_replay import trace_named

TRACE = "brightline-return"
LIMIT = 4


def test_the_toy_agent_gets_the_reference_native_arms_availability_labels(
    tmp_path: Path,
) -> None:
    """The toy, like the reference harness's native arm, keeps the whole conversation in
    its context: the probes' availability, read from the probe request the proxy saw,
    is the one the reference harness's probe child found."""
    store = Store(tmp_path / "store")
    records, _, _ = build_units(store, "original", arms="native", traces=TRACE,
                                probe_limit=LIMIT, run_dir=tmp_path / "ref")  # fmt: skip
    reference = {p.probe_id: p.availability.fact for p in records[0].probes if p.availability}
    samples = run_agent_units(load_manifest(TOY_MANIFEST), [trace_named(TRACE)], ["native"],
                              LIMIT, tmp_path / "agent", say=lambda line: None)  # fmt: skip
    toy = {s.probe_id: s.availability.fact for s in samples if s.availability}
    assert toy == reference and len(toy) == LIMIT
    assert all(s.status == "valid" for s in samples)
    written = [
        json.loads(x) for x in (tmp_path / "agent" / "samples.jsonl").read_text().split("\n") if x
    ]
    assert [w["probe_id"] for w in written] == list(toy)
    summary = (tmp_path / "agent" / "summary.md").read_text()
    assert summary.startswith("# Outside agent: toy 0.1") and "**External agent.**" in summary
    assert "whether every model call went through the proxy" in summary


def test_the_contract_pass_fails_with_its_code_when_a_boundary_is_contradicted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOY_FAULT", "no_resume")
    with pytest.raises(ContinuityError) as caught:
        check_outside_agent([trace_named(TRACE)], tmp_path / "agent")
    assert caught.value.code == "agent_contract_failed"
    assert f"{TRACE}/restart/" in caught.value.message and "contradicted" in caught.value.message


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"arms": "native,compaction-1"}, "arm_unknown"),
        ({"real": True}, "agent_real_unsupported"),
        ({"trace": "no-such-trace"}, "trace_unknown"),
        ({"agent": "missing.toml"}, "agent_manifest_invalid"),
    ],
)
def test_bad_agent_units_input_is_refused_with_a_code(
    tmp_path: Path, options: dict[str, object], code: str
) -> None:
    given: dict[str, object] = {"agent": str(TOY_MANIFEST), "run": "a", "out": str(tmp_path)}
    with pytest.raises(ContinuityError) as caught:
        _units(**{**given, **options})  # type: ignore[arg-type]
    assert caught.value.code == code
