"""Error codes that had no test asserting them, each triggered through its real path.

The harness's round guard, the offline contract's arm, design and checkpoint checks,
``--repeat`` outside the plan, and `doit score`'s refusals. (Real-mode provider codes
are in tests/runner/test_error_codes_real.py.)
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest

import continuity.contract as contract
from continuity.arms import ARMS, Arm, replay_config_for
from continuity.contract import check_checkpoint, run_offline_contract
from continuity.errors import ContinuityError, HarnessError, UsageError
from continuity.harness.checkpoints import CheckpointResult
from continuity.harness.loop import AgentLoop
from continuity.harness.replay import ReplayClock
from continuity.harness.toolbox import McpToolbox
from continuity.harness.workspace import Workspace
from continuity.messages import ToolCallRequest
from continuity.providers import ScriptedProvider, ScriptedStep
from continuity.runner.checkpoints import build_checkpoints
from continuity.runner.design import check_design
from continuity.runner.units.build import UnitRecord, build_units, seal
from continuity.servers.fixture import FixtureToolServer, FrozenRecord
from continuity.store import Store
from continuity.traces.schema import (
    Probe,
    RedactionExpectation,
    ToolIdentifierExpectation,
    Trace,
    decode_trace,
)
from continuity.traces.suites import SuiteItem, SuiteResult, build_suite
from tests.graph.test_dodo import doit

TRACE = "brightline-return"


def _trace(store: Store, item: SuiteItem) -> Trace:
    return decode_trace(store.get_blob(item.digest))


def _cold_rebuild_forks_native(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    """Make `module` fork the cold-rebuild arm from the native arm's checkpoint: the
    history is already on the reader, so the probe child finds no model-change reseed
    and the real classifier calls the sample ``boundary_unverified``."""

    def wrong_checkpoint(arm: Arm, *rest: Any) -> Any:
        return replay_config_for(ARMS["native"] if arm.id == "cold-rebuild" else arm, *rest)

    monkeypatch.setattr(f"{module}.replay_config_for", wrong_checkpoint)


# -- turn_round_limit: the agent loop's runaway guard ----------------------------------


@pytest.mark.anyio
async def test_a_turn_past_its_tool_rounds_is_stopped(tmp_path: Path) -> None:
    first = ToolCallRequest("c1", "email_search", {"query": "escalation"})
    second = ToolCallRequest("c2", "email_search", {"query": "shelves"})
    records = [
        FrozenRecord("r1", "email_search", {"query": "escalation"}, "Thread: late shelves."),
        FrozenRecord("r2", "email_search", {"query": "shelves"}, "Thread: shelf sizes."),
    ]
    provider = ScriptedProvider(
        [
            ScriptedStep(text="Checking.", tool_calls=(first,)),
            ScriptedStep(text="Checking again.", tool_calls=(second,)),
            ScriptedStep(text="Done."),
        ]
    )
    session, history, tools = Workspace(tmp_path / "ws").create(
        session_id="s", clock=ReplayClock("2027-01-04")
    )
    server = FixtureToolServer(records)
    try:
        async with server.running() as url, McpToolbox(url) as toolbox:
            loop = AgentLoop(
                session=session,
                history=history,
                tool_history=tools,
                toolbox=toolbox,
                provider=provider,
                model="m",
                max_rounds=1,
            )
            with pytest.raises(HarnessError) as err:
                await loop.run_turn("Find the escalation thread.")
    finally:
        session.close()
        history.close()
    assert (err.value.code, err.value.location) == ("turn_round_limit", session.path.name)
    assert "more than 1 tool rounds" in err.value.message
    # The first round ran; the guard stopped the second call before it reached the server.
    assert [entry.tool for entry in server.call_log] == ["email_search"]
    assert [r.call_id for r in tools.records()] == ["c1"]


# -- design_check_failed: the hard trace's design must show in the arms' contexts -------


@pytest.fixture(scope="module")
def hard_101(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Trace, SuiteItem]:
    root = tmp_path_factory.mktemp("design")
    store = Store(root / "store")
    item = build_suite(store, "hard", (101,), out_dir=root / "out").items[0]
    return store, _trace(store, item), item


def _with_probe(trace: Trace, probe: Probe) -> Trace:
    probes = tuple(probe if p.probe_id == probe.probe_id else p for p in trace.probes)
    return msgspec.structs.replace(trace, probes=probes)


def _role(trace: Trace, role: str) -> tuple[Probe, ToolIdentifierExpectation]:
    probe = next(p for p in trace.probes if p.design_role == role)
    assert isinstance(probe.expectation, ToolIdentifierExpectation)
    return probe, probe.expectation


def test_design_check_needs_the_design_role_probes(store: Store, out_dir: Path) -> None:
    # The hand-written originals carry no design roles: there is no design to check.
    item = next(
        i for i in build_suite(store, "original", out_dir=out_dir).items if i.trace_id == TRACE
    )
    with pytest.raises(ContinuityError) as err:
        check_design(store, _trace(store, item), item)
    assert (err.value.code, err.value.location) == ("design_check_failed", TRACE)
    assert err.value.message == "no account_reference probe"


def test_design_check_needs_a_redaction_probe(hard_101: tuple[Store, Trace, SuiteItem]) -> None:
    store, trace, item = hard_101
    probes = tuple(p for p in trace.probes if not isinstance(p.expectation, RedactionExpectation))
    assert len(probes) < len(trace.probes)
    with pytest.raises(ContinuityError) as err:
        check_design(store, msgspec.structs.replace(trace, probes=probes), item)
    assert (err.value.code, err.value.location) == ("design_check_failed", trace.trace_id)
    assert err.value.message == "no redaction probe"


def test_design_check_refuses_a_sample_that_did_not_cross_its_boundary(
    hard_101: tuple[Store, Trace, SuiteItem], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cold-rebuild sample forks the native checkpoint (history already on the
    # reader), so the probe child finds no model-change reseed: boundary_unverified.
    store, trace, item = hard_101
    _cold_rebuild_forks_native(monkeypatch, "continuity.runner.samples")
    with pytest.raises(ContinuityError) as err:
        check_design(store, trace, item)
    assert (err.value.code, err.value.location) == ("design_check_failed", trace.trace_id)
    assert err.value.message.startswith("cold-rebuild sample is boundary_unverified")


def test_design_check_refuses_an_account_reference_that_survives_cold_rebuild(
    hard_101: tuple[Store, Trace, SuiteItem],
) -> None:
    # Claim the head-of-pack identifier (which cold rebuild keeps) is the early account
    # reference (which it must drop): the design no longer holds.
    store, trace, item = hard_101
    _, head = _role(trace, "head_identifier")
    probe, account = _role(trace, "account_reference")
    claimed = msgspec.structs.replace(
        probe, expectation=msgspec.structs.replace(account, answer=head.answer)
    )
    with pytest.raises(ContinuityError) as err:
        check_design(store, _with_probe(trace, claimed), item)
    assert (err.value.code, err.value.location) == ("design_check_failed", trace.trace_id)
    assert err.value.message == "the account reference survived cold rebuild"


def test_design_check_refuses_a_secret_found_in_the_retained_store(
    hard_101: tuple[Store, Trace, SuiteItem],
) -> None:
    # Name a value the owner's retained records do hold (the account reference) as the
    # secret: the check finds it outside tool output.
    store, trace, item = hard_101
    _, account = _role(trace, "account_reference")
    probe = next(p for p in trace.probes if isinstance(p.expectation, RedactionExpectation))
    assert isinstance(probe.expectation, RedactionExpectation)
    leaked = msgspec.structs.replace(
        probe, expectation=msgspec.structs.replace(probe.expectation, secret=account.answer)
    )
    with pytest.raises(ContinuityError) as err:
        check_design(store, _with_probe(trace, leaked), item)
    assert (err.value.code, err.value.location) == ("design_check_failed", trace.trace_id)
    assert "the secret appears in: " in err.value.message
    assert "retained store" in err.value.message


# -- checkpoint_contract_failed: a fresh child must see what the replay recorded --------


@pytest.fixture(scope="module")
def original_checkpoint(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Store, CheckpointResult, SuiteResult]:
    root = tmp_path_factory.mktemp("checkpoint")
    store = Store(root / "store")
    suite = build_suite(store, "original", out_dir=root / "out")
    built, _ = build_checkpoints(store, "original", traces=TRACE, out_dir=root / "out")
    return store, built[0], suite


def _receipt(result: CheckpointResult, **changes: Any) -> CheckpointResult:
    return msgspec.structs.replace(
        result, receipt=msgspec.structs.replace(result.receipt, **changes)
    )


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (
            lambda r, s: (_receipt(r, call_log_verified=False), s),
            "tool calls do not match the trace's records",
        ),
        (
            lambda r, s: (_receipt(r, steers_owner=r.receipt.steers_owner - 1), s),
            "not every steer arrived as owner input",
        ),
        (
            lambda r, s: (_receipt(r, truncated_records=r.receipt.truncated_records + 1), s),
            "oversized results were not cut to their 16 KiB head",
        ),
        (
            lambda r, s: (_receipt(r, context_digest="0" * 64), s),
            "the child's context differs from the replayed one",
        ),
        (
            lambda r, s: (msgspec.structs.replace(r, root=r.root + "-elsewhere"), s),
            "the child's context differs from the replayed one",
        ),
        (
            # The four originals share their counts, so only the digest tells them apart.
            lambda r, s: (_receipt(r, trace_digest="0" * 64), s),
            "the checkpoint was replayed from another trace",
        ),
    ],
    ids=["call-log", "steers", "truncation", "context", "root", "other-trace"],
)
def test_a_checkpoint_that_differs_from_its_receipt_fails_the_contract(
    original_checkpoint: tuple[Store, CheckpointResult, SuiteResult],
    damage: Callable[[CheckpointResult, SuiteResult], tuple[CheckpointResult, SuiteResult]],
    problem: str,
) -> None:
    store, result, suite = original_checkpoint
    check_checkpoint(store, result, suite)  # the real checkpoint passes
    bad_result, bad_suite = damage(result, suite)
    with pytest.raises(ContinuityError) as err:
        check_checkpoint(store, bad_result, bad_suite)
    assert (err.value.code, err.value.location) == ("checkpoint_contract_failed", TRACE)
    assert problem in err.value.message.split("; ")


# -- arm_contract_failed: every contract sample must cross its boundary -----------------


class _NotRun:
    """An outside-agent pass that was never started (its `AgentPass` interface)."""

    def result(self) -> str:
        return "not run"

    def check(self) -> None:
        pass

    def stop(self) -> None:
        pass


def _small_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real contract, cut to one original trace, a control and the ledger arm (one
    probe each); its outside-agent pass runs over that one original too."""

    def one_arm(*args: Any, **kwargs: Any) -> Any:
        arms = "cold-rebuild,continuity-ledger-cold"
        return build_units(*args, **{**kwargs, "arms": arms, "probe_limit": 1})

    from continuity.contract_agent import start_outside_agent as agent_pass  # the real pass

    def one_trace(store: Store, traces: Sequence[tuple[str, str]], run_dir: Path) -> Any:
        return agent_pass(store, traces[:1], run_dir)

    monkeypatch.setattr(contract, "CONTRACT_CHECKPOINTS", (("original", TRACE),))
    monkeypatch.setattr(contract, "CONTRACT_DESIGN_TRACES", ())
    monkeypatch.setattr(contract, "build_units", one_arm)
    monkeypatch.setattr(contract, "start_outside_agent", one_trace)


def test_the_small_contract_passes_as_is(
    store: Store, out_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _small_contract(monkeypatch)
    report, path = run_offline_contract(store, out_dir=out_dir)
    assert report.passed and path.is_file()


def test_a_sample_that_does_not_cross_its_boundary_fails_the_contract(
    store: Store, out_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _small_contract(monkeypatch)
    # The outside-agent pass is not what fails here (the passing control above runs it).
    monkeypatch.setattr(contract, "start_outside_agent", lambda *_: _NotRun())
    _cold_rebuild_forks_native(monkeypatch, "continuity.runner.units.run")
    with pytest.raises(ContinuityError) as err:
        run_offline_contract(store, out_dir=out_dir)
    assert (err.value.code, err.value.location) == ("arm_contract_failed", TRACE)
    assert "'cold-rebuild', 'p01', 'boundary_unverified'" in err.value.message
    assert not (out_dir / "contract").exists()  # no report for a failed contract


# -- repeat_unknown: --repeat selects repeats of the plan, never new ones ---------------


def test_a_repeat_outside_the_plan_is_refused(store: Store, tmp_path: Path) -> None:
    run = tmp_path / "out" / "runs" / "r"
    with pytest.raises(UsageError) as err:
        build_units(store, "original", arms="native", repeats=2, only_repeats=[3], run_dir=run)
    assert (err.value.code, err.value.location) == ("repeat_unknown", "--repeat")
    assert not (run / "units").exists()


@pytest.mark.parametrize("repeat", ["2", "1-3", "x"])
def test_doit_units_refuses_a_repeat_outside_the_plan(tmp_path: Path, repeat: str) -> None:
    result = doit(
        tmp_path, "units", "--trace", TRACE, "--arms", "native", "--repeat", repeat, check=False
    )
    assert result.returncode != 0
    assert "repeat_unknown: " in result.stdout + result.stderr
    assert "(at --repeat)" in result.stdout + result.stderr
    assert not (tmp_path / "out" / "runs" / "offline" / "units").exists()


# -- doit score's refusals ---------------------------------------------------------------


@pytest.fixture(scope="module")
def scored_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A small offline run (two arms, one probe): its store and its run directory."""
    root = tmp_path_factory.mktemp("score")
    store = Store(root / "store")
    run = root / "out" / "runs" / "base"
    build_units(
        store, "original", arms="native,cold-rebuild", traces=TRACE, probe_limit=1, run_dir=run
    )
    return store.root, run


@pytest.fixture
def run_copy(scored_run: tuple[Path, Path], tmp_path: Path) -> Iterator[Path]:
    _, run = scored_run
    copy = tmp_path / "run"
    shutil.copytree(run / "units", copy / "units")
    yield copy


def score(tmp_path: Path, run: Path, store: Path) -> str:
    result = doit(tmp_path, "score", "--run-dir", str(run), "--store", str(store), check=False)
    assert result.returncode != 0, result.stdout
    return result.stdout + result.stderr


def _edit(path: Path, change: Callable[[UnitRecord], UnitRecord]) -> None:
    record = msgspec.json.decode(path.read_bytes(), type=UnitRecord)
    path.write_bytes(msgspec.json.encode(change(record)))


def test_score_succeeds_on_the_intact_run(
    scored_run: tuple[Path, Path], run_copy: Path, tmp_path: Path
) -> None:
    store, _ = scored_run
    result = doit(tmp_path, "score", "--run-dir", str(run_copy), "--store", str(store))
    assert "score: 2 units re-scored" in result.stdout


@pytest.mark.parametrize(
    ("damage", "code"),
    [
        (lambda p: p.write_text("{not a unit"), "unit_malformed"),
        (lambda p: p.write_text(json.dumps({"schema": "continuity-unit-v1"})), "unit_malformed"),
        (
            lambda p: _edit(p, lambda r: seal(msgspec.structs.replace(r, arm="no-such-arm"))),
            "unit_malformed",
        ),
        (
            lambda p: _edit(
                p,
                lambda r: msgspec.structs.replace(
                    r, probes=[msgspec.structs.replace(x, answer="forged") for x in r.probes]
                ),
            ),
            "unit_tampered",
        ),
    ],
    ids=["not-json", "not-a-unit", "unknown-arm", "tampered"],
)
def test_score_refuses_a_bad_unit_file(
    scored_run: tuple[Path, Path],
    run_copy: Path,
    tmp_path: Path,
    damage: Callable[[Path], None],
    code: str,
) -> None:
    store, _ = scored_run
    target = sorted((run_copy / "units").glob("*.json"))[0]
    damage(target)
    damaged = target.read_bytes()
    output = score(tmp_path, run_copy, store)
    assert f"{code}: " in output and f"(at {target})" in output
    assert target.read_bytes() == damaged  # refused, not rewritten


def test_score_refuses_a_unit_whose_trace_left_the_store(run_copy: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty-store"
    output = score(tmp_path, run_copy, empty)
    first = sorted((run_copy / "units").glob("*.json"))[0]
    assert "trace_missing: trace brightline-return " in output and f"(at {first})" in output


@pytest.mark.parametrize("units", [False, True], ids=["no-units-dir", "empty-units-dir"])
def test_score_refuses_an_empty_run(
    scored_run: tuple[Path, Path], tmp_path: Path, units: bool
) -> None:
    store, _ = scored_run
    run = tmp_path / "nothing"
    if units:
        (run / "units").mkdir(parents=True)
    else:
        run.mkdir()
    output = score(tmp_path, run, store)
    assert "run_empty: no unit files to re-score" in output and f"(at {run / 'units'})" in output


def test_score_calls_a_run_that_is_not_there_unknown(
    scored_run: tuple[Path, Path], tmp_path: Path
) -> None:
    store, _ = scored_run
    run = tmp_path / "nowhere"
    output = score(tmp_path, run, store)
    assert f"run_unknown: no run '{run}' at {run}; " in output and "(at --run-dir)" in output


def test_score_reads_chunk_subfolders_and_writes_nothing_when_it_refuses(
    scored_run: tuple[Path, Path], run_copy: Path, tmp_path: Path
) -> None:
    store, _ = scored_run
    first, second = sorted((run_copy / "units").glob("*.json"))
    # A stale score the re-score would rewrite, in a chunk subfolder...
    chunk = run_copy / "units" / "chunk-b"
    chunk.mkdir()
    moved = chunk / first.name
    first.rename(moved)
    _edit(
        moved,
        lambda r: seal(
            msgspec.structs.replace(
                r, probes=[msgspec.structs.replace(x, correct=not x.correct) for x in r.probes]
            )
        ),
    )
    stale = moved.read_bytes()
    # ...and a malformed unit beside it: the refusal writes no score artifact at all.
    second.write_text("{not a unit")
    output = score(tmp_path, run_copy, store)
    assert "unit_malformed: " in output
    assert moved.read_bytes() == stale and not (run_copy / "scores").exists()
    # Repaired, the same run re-scores the unit found in the subfolder: a new score
    # artifact beside it, the unit file itself (its original grades) untouched.
    second.unlink()
    result = doit(tmp_path, "score", "--run-dir", str(run_copy), "--store", str(store))
    assert "score: 1 units re-scored" in result.stdout and moved.read_bytes() == stale
    (artifact,) = (run_copy / "scores").glob(f"*/{moved.name}")
    assert "1 probe grades differ from the original" in result.stdout
    assert json.loads(artifact.read_bytes())["unit"] == json.loads(stale)["key"]
