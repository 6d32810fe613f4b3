"""The hard-suite generator: determinism, golden digests, and every shape invariant.

The invariant checks here are written against the seed's "Each generated trace has"
list directly, not through the validator, so a bug in one cannot hide a bug in the
other.
"""

from __future__ import annotations

import functools
import inspect
import re
from pathlib import Path

import pytest

from continuity.digest import digest_bytes
from continuity.store import Store
from continuity.traces import generator
from continuity.traces.bounds import (
    estimate_tokens,
    is_text_message,
    projected_records,
    retained_bytes,
)
from continuity.traces.generator import generate_trace
from continuity.traces.prng import Rng
from continuity.traces.schema import (
    ActiveConstraintExpectation,
    OwnerMessage,
    Probe,
    RedactionExpectation,
    Steer,
    SupersededCurrentExpectation,
    ToolIdentifierExpectation,
    ToolResult,
    Trace,
    encode_trace,
    iter_turns,
)
from continuity.traces.suites import build_suite
from continuity.traces.validate import CREDENTIAL_ASSIGNMENT, sensitive_word, trace_issues

GOLDEN = {
    101: "b6bdca8731fc532e6d17a7a26ecb97fa1c8dcfbe75c917495efbc6033791be8f",
    102: "a2add5623422562941bdb5c2dba729f5d90e8ebdb45f9e36bee3457b7661a81f",
    103: "b034a360b82748fbc8bf0f1b8027a01e1fd607fc930203655071f4e0c9cc658c",
    104: "19c97c81f0a3bb60ca6f8d719d719ebeda428d4aa7df1cd51076a4480df10f58",
    105: "0ef0468e19f9b2bfef925a5558b769c7cb1493a23424a00ae78f5ede63d37067",
    106: "3b7daeccdd57c2c2254befcd6fdc693eae1103f2d9230ed4ad5be5b3411c1baf",
    107: "c87b760044519cc34f52e5a2c49138f17bddd9bd6466a90e10bb8c2ba666fa8f",
    108: "058df87ea93b166aa526e31db816d4be8bad5939610216a940b26e8794383203",
}
# The distractor twins and seeds outside the default range, pinned too: moving generator
# code between modules must never change a byte.
GOLDEN_DISTRACTORS = {
    101: "ec8b5b64f850178d6bebc677f4c85932938b4bba3b519b2d236303e252bed78b",
    102: "6bbc6a52e572af7e0d70ab125f512921466aac684d750283bb589a77b3b673dd",
    103: "de48627433c5fb6d0c2c7432fc3206e340fd1c5a8bc0e0532d386fc435e8734f",
    104: "cf45fc62c461eb199fe3dbffa1e523bf4dcd715b259750ad8144986f4110d77c",
}
GOLDEN_OTHER_SEEDS = {
    1: "3a5a53d054a2246916604dd07e94780a015dd4a65b52dbc7054257136beb64ea",
    2**40: "2dc81f9127a04d1b73e51bbd30573435c71319fe797f3de0837f56956ab2dd7c",
}


@functools.cache
def trace(seed: int) -> Trace:
    return generate_trace(seed)


def records(t: Trace) -> list[ToolResult]:
    return [turn for _, _, turn in iter_turns(t) if isinstance(turn, ToolResult)]


def role(t: Trace, name: str) -> Probe:
    return next(p for p in t.probes if p.design_role == name)


def record_of(t: Trace, turn_id: str) -> tuple[int, ToolResult]:
    for index, record in enumerate(records(t)):
        if record.turn_id == turn_id:
            return index, record
    raise AssertionError(turn_id)


def test_prng_matches_the_reference_algorithms() -> None:
    from continuity.traces.prng import _splitmix64

    # splitmix64's published first outputs for seed 0.
    state, first = _splitmix64(0)
    assert first == 0xE220A8397B1DCDAF
    assert _splitmix64(state)[1] == 0x6E789E6AA1B965F4
    # xoshiro256**'s reference outputs from the state (1, 2, 3, 4).
    reference = Rng(0)
    reference._s = [1, 2, 3, 4]
    assert [reference.next_u64() for _ in range(4)] == [11520, 0, 1509978240, 1215971899390074240]
    rng = Rng(101)
    assert [rng.next_u64() for _ in range(3)] == [
        414284020431279075,
        14500621894164967116,
        10173066809531919792,
    ]
    assert Rng.derive(101, "a").next_u64() != Rng.derive(101, "b").next_u64()


def test_prng_helpers_stay_in_range() -> None:
    rng = Rng(7)
    assert {rng.between(3, 5) for _ in range(200)} == {3, 4, 5}
    assert sorted(rng.sample(range(10), 10)) == list(range(10))
    with pytest.raises(ValueError):
        rng.below(0)


def test_generator_never_uses_the_random_module() -> None:
    package = Path(inspect.getfile(generator)).parent
    sources = [*package.glob("*.py"), package.parent / "filler.py", package.parent / "prng.py"]
    assert len(sources) > 4
    for path in sources:
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(import random|from random )", source, re.M), path


@pytest.mark.parametrize("seed", sorted(GOLDEN))
def test_golden_digests(seed: int) -> None:
    assert digest_bytes(encode_trace(trace(seed))) == GOLDEN[seed]


@pytest.mark.parametrize("seed", sorted(GOLDEN_DISTRACTORS))
def test_golden_distractor_digests(seed: int) -> None:
    data = encode_trace(generate_trace(seed, distractors=True))
    assert digest_bytes(data) == GOLDEN_DISTRACTORS[seed]


@pytest.mark.parametrize("seed", sorted(GOLDEN_OTHER_SEEDS))
def test_golden_digests_outside_the_default_seeds(seed: int) -> None:
    assert digest_bytes(encode_trace(generate_trace(seed))) == GOLDEN_OTHER_SEEDS[seed]


def test_generating_twice_gives_identical_bytes() -> None:
    assert encode_trace(generate_trace(103)) == encode_trace(generate_trace(103))
    assert encode_trace(generate_trace(103, distractors=True)) == encode_trace(
        generate_trace(103, distractors=True)
    )


def test_two_stores_get_identical_digests(tmp_path: Path) -> None:
    first = build_suite(Store(tmp_path / "a"), "hard", out_dir=tmp_path / "out-a")
    second = build_suite(Store(tmp_path / "b"), "hard", out_dir=tmp_path / "out-b")
    assert [i.digest for i in first.items] == [i.digest for i in second.items]
    assert first.tree == second.tree
    assert [i.key for i in first.items] == [i.key for i in second.items]


def test_scenarios_cycle_with_fresh_values() -> None:
    ids = [generator.trace_id_for(s) for s in range(101, 110)]
    assert ids[:3] == ["gen-grant-101", "gen-oven-102", "gen-rowing-103"]
    assert ids[8] == "gen-grant-109"
    grant_a, grant_b = trace(101), trace(109)
    assert grant_a.scenario == grant_b.scenario
    values_a = {p.probe_id: p.expectation for p in grant_a.probes}
    values_b = {p.probe_id: p.expectation for p in grant_b.probes}
    assert values_a["p01"] != values_b["p01"]
    assert len(records(grant_a)) != len(records(grant_b)) or (
        [len(r.output) for r in records(grant_a)] != [len(r.output) for r in records(grant_b)]
    )


def _identifiers_and_secret(t: Trace) -> set[str]:
    values: set[str] = set()
    for probe in t.probes:
        exp = probe.expectation
        if isinstance(exp, ToolIdentifierExpectation):
            values |= {exp.answer.value, *(f.value for f in exp.superseded)}
        if isinstance(exp, RedactionExpectation):
            values.add(exp.secret.value)
    return values


def test_no_two_generated_traces_share_an_identifier_or_secret() -> None:
    seen: dict[str, int] = {}
    for seed in range(101, 125):
        for value in _identifiers_and_secret(trace(seed)):
            assert value not in seen, f"{value} in seeds {seen.get(value)} and {seed}"
            seen[value] = seed


@pytest.mark.parametrize("seed", range(101, 125))
def test_every_seed_is_valid_and_meets_each_invariant(seed: int) -> None:
    t = trace(seed)
    assert trace_issues(t) == []
    turns = [turn for _, _, turn in iter_turns(t)]
    recs = records(t)
    sizes = [len(r.output.encode("utf-8")) for r in recs]

    # 84-116 owner turns over 7-10 sessions, and 64-96 tool records.
    assert 84 <= sum(isinstance(x, OwnerMessage) for x in turns) <= 116
    assert 7 <= len(t.sessions) <= 10
    assert 64 <= len(recs) <= 96
    # 8-64 KiB results; two or three over 16 KiB, including the booking pack.
    assert all(8192 <= s <= 65536 for s in sizes)
    oversized = [r for r, s in zip(recs, sizes, strict=True) if s > 16384]
    assert 2 <= len(oversized) <= 3
    assert any("booking pack" in r.output[:200].lower() for r in oversized)
    assert {r.tool_kind for r in recs} == {"email", "chat", "web", "document", "calendar", "parcel"}
    # Three mid-turn steers, each delivered during a call and answered.
    steers = [x for x in turns if isinstance(x, Steer)]
    assert len(steers) == 3
    for steer in steers:
        index = turns.index(steer)
        previous = turns[index - 1]
        assert isinstance(previous, ToolResult) and previous.call_id == steer.during_call
    # Three superseding corrections: a date moved twice, an amount revised once.
    date = role(t, "moved_date").expectation
    amount = role(t, "revised_amount").expectation
    assert isinstance(date, SupersededCurrentExpectation)
    assert isinstance(amount, SupersededCurrentExpectation)
    assert len(date.superseded) == 2 and len(amount.superseded) == 1
    assert re.fullmatch(r"\d{1,2} [A-Z][a-z]+ \d{4}", date.current.value)
    assert amount.current.value.startswith("$")
    # Three owner rules in turn 1.
    first = turns[0]
    assert isinstance(first, OwnerMessage)
    rules = role(t, "owner_rules").expectation
    assert isinstance(rules, ActiveConstraintExpectation)
    assert len(rules.required) >= 3 and all(f.value in first.text for f in rules.required)
    assert first.text.count("never") >= 3
    # The early account reference: outside the last-64 window and the projection.
    account = role(t, "account_reference").expectation
    assert isinstance(account, ToolIdentifierExpectation)
    index, record = record_of(t, account.answer.evidence[0])
    position = turns.index(record)
    assert sum(is_text_message(x) for x in turns[position + 1 :]) >= 64
    assert index not in projected_records(recs)
    newer = recs[index + 1 :]
    assert len(newer) >= 32 or sum(retained_bytes(r) for r in newer) > 65536
    # An identifier in the middle of a long result, beyond heads and tails.
    mid = role(t, "mid_result_identifier").expectation
    assert isinstance(mid, ToolIdentifierExpectation)
    _, record = record_of(t, mid.answer.evidence[0])
    offset = record.output.index(mid.answer.value)
    assert offset >= 2000 and offset + len(mid.answer.value) <= len(record.output) - 2000
    # One at the head of an oversized result, with a superseded decoy; a control that
    # survives cold rebuild because its record is among the newest projected.
    head = role(t, "head_identifier").expectation
    assert isinstance(head, ToolIdentifierExpectation)
    index, record = record_of(t, head.answer.evidence[0])
    assert len(record.output.encode()) > 16384
    assert record.output.encode().index(head.answer.value.encode()) < 16384
    assert index in projected_records(recs)
    assert head.superseded and head.superseded[0].value != head.answer.value
    decoy_index, _ = record_of(t, head.superseded[0].evidence[0])
    assert decoy_index < index
    # A secret-looking temporary password in one tool result only.
    secret = next(
        p.expectation for p in t.probes if isinstance(p.expectation, RedactionExpectation)
    )
    assert isinstance(secret, RedactionExpectation)
    holders = [r for r in recs if secret.secret.value in r.output]
    assert len(holders) == 1 and CREDENTIAL_ASSIGNMENT.search(holders[0].output)
    runs = {secret.secret.value[i : i + 8] for i in range(len(secret.secret.value) - 7)}
    others = "\n".join(
        x.output if isinstance(x, ToolResult) else getattr(x, "text", "")
        for x in turns
        if x is not holders[0]
    )
    assert not any(run in others for run in runs)
    # The size target: 212k-232k estimated tokens at the probe.
    assert 212_000 <= estimate_tokens(t) <= 232_000
    # Neutral vocabulary.
    assert all(
        sensitive_word(getattr(x, "output", "") or getattr(x, "text", "")) is None for x in turns
    )
