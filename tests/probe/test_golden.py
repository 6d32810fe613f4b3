"""What the probe child produces, pinned: the bytes every reader request carries and the
unit's contents apart from its keys, for probes 1-2 of brightline-return under recall
and lookup mode, over arms that cross every kind of boundary (none, compaction, restart
with a model switch, the retained store, the pack).

Measured before the probe child moved out of the harness (``continuity/harness/probe.py``
at the commit that made ``continuity/probe/``) and again after it was split into steps:
identical. A key binds code digests, so it moves when code moves; nothing else may.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.arms import ARMS
from continuity.runner.units import run_unit
from continuity.store import Store
from continuity.traces.suites import build_suite
from continuity.traces.validate import load_trace
from tests.lookup.test_lookup_run import frozen_run

KEYS = {"key", "checkpoint", "content_digest", "trace_key"}

# mode/arm -> (sha256 of the reader-request dump, sha256 of the unit without its keys)
GOLDEN = {
    "recall/native": (
        "40348177151356bf743b8de560ae779dc933ccb984886344ffe9e5db76434b6e",
        "eef05584d14c3c71acdf35512e36cf4b377973974c75be2a9f4790c541f5daa9",
    ),
    "recall/continuity-store-compaction": (
        "52f94f32dd1b6847e721d3ee5b6673580ae72dc511592a5ed15d625b3b667f29",
        "2ed4fc30d02f7f46009be8fab2e5f1e2eb17e00a9d9676cd6258dee2e72a6e24",
    ),
    "recall/continuity-pack-cold": (
        "5b5b4b368cb25421b66bfddde10698f99359f5a73ae92742a3ee6bd695661bd4",
        "aaf735826e51cf2cb49113db71cd459537da794f458c9b85a215bb93eb07202d",
    ),
    "recall/restart-switch-compact": (
        "26bb61a259735cbc29c5c8f7edefebf185822151b189c8c54a08a03485b2e290",
        "3fea4223974a6dfcbbfb640d5eb20907857e4bbcbea1b9d262e5bbda187078d0",
    ),
    # The lookup units' contents moved with issue 17's frozen policy only: their binding
    # names its sha256 (budget-v2.json -> budget-v3.json); nothing else in them differs.
    "lookup/native-lookup": (
        "f2d17f13f43efa8868754488b4adae0c3a8f29fc35cf7466cdf1c0e37abf5b28",
        "e89ea5c36e66e15f2e4aa11b23b50e66101976189186baa14eb4240e818b71a6",
    ),
    # Moved by issue 15's treatment: the lookup pack now carries PACK_RETRIEVAL_GUIDANCE
    # (its bytes in the request, its tokens in the pack receipt). Recall-only pins hold.
    "lookup/continuity-pack-cold": (
        "7ae016ef5b760daa524b7b7c978711e4ea3539a9affcbbe6467af4f5ebc7bd18",
        "b99d869ece3ac2e66cddaa727e44d3feb61474eb378cb7d9f17803726e799564",
    ),
}


def without_keys(value: Any) -> Any:
    """`value` (builtins) with every key field removed, at any depth."""
    if isinstance(value, dict):
        return {k: without_keys(v) for k, v in value.items() if k not in KEYS}
    if isinstance(value, list):
        return [without_keys(v) for v in value]
    return value


@pytest.mark.parametrize("case", GOLDEN)
def test_prompt_bytes_and_unit_contents_are_pinned(tmp_path: Path, case: str) -> None:
    mode, arm = case.split("/")
    store = Store(tmp_path / "store")
    item = build_suite(store, "original", out_dir=tmp_path / "out").items[0]
    trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
    assert trace.trace_id == "brightline-return"
    dump = tmp_path / "requests.jsonl"
    lookup = frozen_run() if mode == "lookup" else None
    record, _ = run_unit(
        store, trace, item, ARMS[arm], probe_limit=2, dump_requests=dump, lookup=lookup
    )
    content = json.dumps(without_keys(msgspec.to_builtins(record)), sort_keys=True)
    prompts, unit = GOLDEN[case]
    assert hashlib.sha256(dump.read_bytes()).hexdigest() == prompts
    assert hashlib.sha256(content.encode()).hexdigest() == unit
