"""What the probe child produces, pinned: the bytes every reader request carries and the
unit's contents apart from its keys, for probes 1-2 of brightline-return under recall
and lookup mode, over arms that cross every kind of boundary (none, compaction, restart
with a model switch, the retained store, the pack).

Measured before the probe child moved out of the harness (``continuity/harness/probe.py``
at the commit that made ``continuity/sampling/``) and again after it was split into steps:
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
from continuity.runner.units.build import run_unit
from continuity.runner.units.execution import Execution
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
# the dump with v2's instruction put back gives the v2 dump exactly. The units moved
# again (no dump did) when each sample's evidence came to name the store tree of what
# its reader saw (``context``); with that field removed they hash to the previous pins
# (c82e55bc..., d04d2e0d..., 1fbfd9bf..., 17839ef8..., fac8c294..., 4bd6e481...).
GOLDEN = {
    "recall/native": (
        "7c52c452b4ac9d1148f5ae8b204c405b7bdf003ce49e704d8e8639f9706dd0ed",
        "53c387a6c1ae9621a97f8f541bc10d90fe47801d48b6d6d7ec5b8b2f380bcfcc",
    ),
    "recall/continuity-store-compaction": (
        "744fcdef863d0735c303b848e3e8cba9e69bd854b44b7fe65029be8b534f0a90",
        "8d14188f42ff262a836773f71d17148e5a90428e9c94067b9dca398eed5c7348",
    ),
    "recall/continuity-pack-cold": (
        "0df9936899e769f88933639de9820afb56a54bb12605de079cc3760a4573d3ef",
        "a9549c746da9492f8020a0801c55ea7098547356c18783b9e0797e36fc233fab",
    ),
    "recall/restart-switch-compact": (
        "99537be39ae24b996d6f0dec173bd44226feca1255bfca30c7e60040d245507c",
        "460a304e6405ffc10e86e959ab5a0b8713a0147277665faa588be5933fc5eb01",
    ),
    "lookup/native-lookup": (
        "632c1bfa4aa562851ec3e255269e67510fd7100b7598703e8fa60f62d59c9df3",
        "bca57fc30cfa77b15a68ac34fc8f1396c8be93c125df82806cbeeb57ba68a8bb",
    ),
    "lookup/continuity-pack-cold": (
        "95bf04deb26350d0dfc7d8d11a1e5d720bf28b788d1ee3d23ba06019eddf27d8",
        "f2f088f09c8b993b4ab7892876bf03832036969321decae73204d854b8116004",
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
        store,
        trace,
        item,
        ARMS[arm],
        probe_limit=2,
        dump_requests=dump,
        execution=Execution(lookup=lookup),
    )
    content = json.dumps(without_keys(msgspec.to_builtins(record)), sort_keys=True)
    prompts, unit = GOLDEN[case]
    assert hashlib.sha256(dump.read_bytes()).hexdigest() == prompts
    v2 = as_protocol(dump.read_bytes(), 2)
    assert hashlib.sha256(v2).hexdigest() == GOLDEN_V2_PROMPTS[case]
    assert hashlib.sha256(content.encode()).hexdigest() == unit
