"""The free selection replay: three provider-free passes through the real retention,
selection, fitting and offer settlement, pinned by compact snapshots, and the bonus
selector's regressions against the frozen base selector."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from continuity.memory.selection_replay import PassResult, replay_selection
from continuity.memory.upkeep_selection import spans_of
from tests.memory import selection_cases
from tests.memory.selection_cases import BASE_CAPS, COMPLETION, NEXT_ACTION, RULES, cases

# One worker runs this module: its module fixture is built once, not once per worker.
pytestmark = pytest.mark.xdist_group("selection-replay")

FROZEN: dict[str, dict[str, list[dict[str, Any]]]] = msgspec.json.decode(
    selection_cases.SNAPSHOTS.read_bytes()
)
CASES = cases()


@pytest.fixture(scope="module")
def replays() -> dict[str, dict[str, list[PassResult]]]:
    return {
        name: {
            "base": replay_selection(trace, caps=BASE_CAPS),
            "candidate": replay_selection(trace),
        }
        for name, trace in CASES.items()
    }


def test_every_pass_returns_its_exact_fitted_sources_the_empty_one_included(
    replays: dict[str, dict[str, list[PassResult]]],
) -> None:
    for name, runs in replays.items():
        for result in runs["candidate"]:
            assert result.snapshot.outcome == "analysis_only", name  # provider-free: empty
            assert result.fitted, f"{name} pass {result.snapshot.stage} offered nothing"
            for source in result.fitted:
                spans = {s.index: s for s in spans_of(source.descriptor, source.record)}
                for index, size, digest in source.spans:
                    assert (spans[index].bytes, spans[index].digest) == (size, digest)


def test_snapshots_are_pinned(replays: dict[str, dict[str, list[PassResult]]]) -> None:
    """Offers pinned by digest, counts, owner ordinals, caps and budget projections:
    a change to retention, spans or selection shows here (re-freeze on purpose with
    ``python3 -m tests.memory.selection_cases --write``)."""
    assert set(FROZEN) == set(replays)
    for name, runs in replays.items():
        for selector in ("base", "candidate"):
            got = [msgspec.to_builtins(r.snapshot) for r in runs[selector]]
            assert got == FROZEN[name][selector], (name, selector)


def _offered_by_pass(results: list[PassResult]) -> dict[str, int]:
    """Input id (turn id) -> the pass that first offered it."""
    first: dict[str, int] = {}
    for result in results:
        for source in result.fitted:
            first.setdefault(source.descriptor.input_id, result.snapshot.stage)
    return first


@pytest.mark.parametrize("name", list(CASES))
def test_the_bonus_keeps_the_base_selection(
    name: str, replays: dict[str, dict[str, list[PassResult]]]
) -> None:
    base, candidate = replays[name]["base"], replays[name]["candidate"]
    for old, new in zip(base, candidate, strict=True):
        o, n = old.snapshot, new.snapshot
        assert n.tool_records >= 0.8 * o.tool_records, (name, o.stage)
        # The candidate is the base selector plus the bonus band: no cap on fitted spans,
        # no delta cap and no budget was lowered to make room for it.
        assert n.max_spans == o.max_spans and n.input_tokens == o.input_tokens
        if o.stage == 1:  # the same history: every base offer is kept, the cap is the same
            assert n.limit == o.limit
            assert set(o.source_digests) <= set(n.source_digests)


def test_owner_rules_and_the_next_action_stay_in_their_pass_and_the_missed_report_is_offered(
    replays: dict[str, dict[str, list[PassResult]]],
) -> None:
    base = _offered_by_pass(replays["transition"]["base"])
    candidate = _offered_by_pass(replays["transition"]["candidate"])
    for turn in (*RULES, NEXT_ACTION):
        if turn in base:
            assert candidate.get(turn, 99) <= base[turn], turn
    assert NEXT_ACTION in base  # the newest owner paragraphs: base offers them first
    assert COMPLETION not in base  # the recency-first selector misses the short report
    assert candidate.get(COMPLETION) == 1  # the bonus offers it in the first pass


@pytest.mark.parametrize(("name", "kind"), [("owner-flood", "tool"), ("tool-flood", "owner")])
def test_a_flood_still_offers_the_other_source_within_three_passes(
    name: str, kind: str, replays: dict[str, dict[str, list[PassResult]]]
) -> None:
    for selector in ("base", "candidate"):
        offered = [getattr(r.snapshot, f"{kind}_records") for r in replays[name][selector]]
        assert any(offered), (name, selector)
