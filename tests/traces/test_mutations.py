"""Property test: valid traces mutated into malformed ones are always refused cleanly.

Every mutation below is guaranteed to break the trace, so each of the 1,100 examples
must end in `TraceInvalid`, never in another exception and never in acceptance.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuity.errors import TraceInvalid
from continuity.traces.validate import load_trace
from tests.conftest import ORIGINALS

FILES = sorted(p.name for p in ORIGINALS.glob("*.json"))


@functools.cache
def source(name: str) -> bytes:
    return (ORIGINALS / name).read_bytes()


def _containers(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    found = []
    if isinstance(node, dict):
        found.append((path, node))
        for key, value in node.items():
            found += _containers(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _containers(value, (*path, index))
    return found


def _string_leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    leaves = []
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, str) and key != "date":
                leaves.append(((*path,), key))
            leaves += _string_leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            leaves += _string_leaves(value, (*path, index))
    return leaves


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


MUTATIONS = (
    "truncate",
    "wrong_type",
    "unknown_field",
    "duplicate_turn_id",
    "not_fictional",
    "dangling_evidence",
)


@settings(
    max_examples=1100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.sampled_from(FILES), st.sampled_from(MUTATIONS), st.data())
def test_malformed_traces_are_refused_without_crashing(
    name: str, mutation: str, data: st.DataObject
) -> None:
    raw = source(name)
    if mutation == "truncate":
        cut = data.draw(st.integers(min_value=1, max_value=len(raw) - 2))
        broken = raw[:cut]
    else:
        doc = json.loads(raw)
        if mutation == "wrong_type":
            parent, key = data.draw(st.sampled_from(_string_leaves(doc)))
            _get(doc, parent)[key] = data.draw(
                st.integers() | st.booleans() | st.none() | st.lists(st.integers(), max_size=2)
            )
        elif mutation == "unknown_field":
            _, container = data.draw(st.sampled_from(_containers(doc)))
            key = data.draw(st.text(min_size=1, max_size=12).filter(lambda k: k not in container))
            container[key] = data.draw(st.integers() | st.text(max_size=5))
        elif mutation == "duplicate_turn_id":
            all_turns = [t for s in doc["sessions"] for t in s["turns"]]
            a, b = data.draw(
                st.lists(
                    st.sampled_from(range(len(all_turns))), min_size=2, max_size=2, unique=True
                )
            )
            all_turns[b]["turn_id"] = all_turns[a]["turn_id"]
        elif mutation == "not_fictional":
            doc["fictional"] = data.draw(st.sampled_from([False, None, 0, 1, "true", "yes"]))
        else:
            probe = data.draw(st.sampled_from(doc["probes"]))
            facts = [v for v in probe["expectation"].values() if isinstance(v, dict)]
            facts += [
                f
                for v in probe["expectation"].values()
                if isinstance(v, list)
                for f in v
                if isinstance(f, dict)
            ]
            if not facts:  # abstention probes name no evidence: break the category instead
                probe["expectation"]["category"] = "telepathy"
            else:
                fact = data.draw(st.sampled_from(facts))
                fact["evidence"] = [*fact["evidence"], "no-such-turn-" + mutation]
        broken = json.dumps(doc).encode()
    try:
        load_trace(broken, source=name)
    except TraceInvalid as exc:
        assert exc.issues and exc.code
    else:
        raise AssertionError(f"{mutation} on {name} was accepted")
