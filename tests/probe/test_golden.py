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
from tests.lookup.test_lookup_run import as_protocol, frozen_run

KEYS = {"key", "checkpoint", "content_digest", "trace_key"}

# mode/arm -> (sha256 of the reader-request dump, sha256 of the unit without its keys).
# Re-pinned by probe-protocol-v3 (issue 35). Against the v2 pins below, a unit differs
# only in its protocol, the lookup policy's sha256 (budget-v3.json -> budget-v4.json),
# the scripted reader's decline (``ANSWER: UNKNOWN``, the form a value probe now asks
# for) with its score reason, and the token and byte counts the longer instruction moves;
# the dump with v2's instruction put back gives the v2 dump exactly.
GOLDEN = {
    "recall/native": (
        "fea8975409a2ca10cb9b356fe110140912730fc74c7c3e0756b30f2d08fd3ae2",
        "c82e55bcc8a5a0b88a3e4575d23f2030b1b8ec9b51ded72245cd5ff19f6e35a7",
    ),
    "recall/continuity-store-compaction": (
        "e5ad1ce396e24cb54dfa9d9b41a77e0a8433eefd5e10c86ed420c9ad9b505b78",
        "d04d2e0d0522076d7426a7d7b75b12ad4f2d5e42be969f31a64beedda4fe69aa",
    ),
    "recall/continuity-pack-cold": (
        "6d9cd6f33073b2ca1d7f7b5ebae6cb120f9ecf4abd6cf4fc31b7d9f6cfec3af4",
        "1fbfd9bf4d5cf137beed53126dbb5e13a564d10437728e0100539e8d069ebce0",
    ),
    "recall/restart-switch-compact": (
        "a4a0634edff8be901c0a6bcf009a1f82393a79c4d24c2c282de922a4e893ac33",
        "17839ef87f9d917745025dfe9017505ba7ad9ab8c92fee9a4a47fc86e602d054",
    ),
    "lookup/native-lookup": (
        "d118bc2233ad5bb2b1e70fc1883cfd03d69dd9dce8b97fa85f0b6c396fcdba5e",
        "7c627c15f1feefdd3f8ef2594dd5c2cb8a4dcfc3ac8255b9e6808afb708269fb",
    ),
    "lookup/continuity-pack-cold": (
        "faafae65f28247b9532fe5dccdc57b64d7f2cd4185e0cb720dc97a6c839217be",
        "795a421036409db617d3dd48f61f99ca4690c976c0550459103fe095a11a65fe",
    ),
}
# The same dumps under probe-protocol-v2. The lookup units' contents had moved with
# issue 17's frozen policy only, and the lookup pack's with issue 15's
# PACK_RETRIEVAL_GUIDANCE; recall-only pins held through both.
GOLDEN_V2_PROMPTS = {
    "recall/native": "40348177151356bf743b8de560ae779dc933ccb984886344ffe9e5db76434b6e",
    "recall/continuity-store-compaction": (
        "52f94f32dd1b6847e721d3ee5b6673580ae72dc511592a5ed15d625b3b667f29"
    ),
    "recall/continuity-pack-cold": (
        "5b5b4b368cb25421b66bfddde10698f99359f5a73ae92742a3ee6bd695661bd4"
    ),
    "recall/restart-switch-compact": (
        "26bb61a259735cbc29c5c8f7edefebf185822151b189c8c54a08a03485b2e290"
    ),
    "lookup/native-lookup": "f2d17f13f43efa8868754488b4adae0c3a8f29fc35cf7466cdf1c0e37abf5b28",
    "lookup/continuity-pack-cold": (
        "7ae016ef5b760daa524b7b7c978711e4ea3539a9affcbbe6467af4f5ebc7bd18"
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
    v2 = as_protocol(dump.read_bytes(), 2)
    assert hashlib.sha256(v2).hexdigest() == GOLDEN_V2_PROMPTS[case]
    assert hashlib.sha256(content.encode()).hexdigest() == unit
