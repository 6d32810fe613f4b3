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

KEYS = {"key", "checkpoint", "content_digest"}

# mode/arm -> (sha256 of the reader-request dump, sha256 of the unit without its keys)
GOLDEN = {
    "recall/native": (
        "40348177151356bf743b8de560ae779dc933ccb984886344ffe9e5db76434b6e",
        "b24155be5780766a719b92bd94f349c76d9db3220695f7ded573cf53acf0a22d",
    ),
    "recall/continuity-store-compaction": (
        "52f94f32dd1b6847e721d3ee5b6673580ae72dc511592a5ed15d625b3b667f29",
        "481812008d2675dc52e82e43b837ad926236230c390511c1f961011a201b408a",
    ),
    "recall/continuity-pack-cold": (
        "5b5b4b368cb25421b66bfddde10698f99359f5a73ae92742a3ee6bd695661bd4",
        "c80512c1dd5424d8949f688e1a3430562b44215cf3084a652c55b89889b8a0b5",
    ),
    "recall/restart-switch-compact": (
        "26bb61a259735cbc29c5c8f7edefebf185822151b189c8c54a08a03485b2e290",
        "395b5cdae6348bb8ee5881491024de0a72083b3b82bb2fe918044464ced2fcb7",
    ),
    "lookup/native-lookup": (
        "f2d17f13f43efa8868754488b4adae0c3a8f29fc35cf7466cdf1c0e37abf5b28",
        "476e497f545a4e49f13f02286351189ca45120be43db0c39a4b6d8b7d395e40d",
    ),
    "lookup/continuity-pack-cold": (
        "3d898168a070a28c58d01dcda90dea115955f154a2ffe787c939aa574b302f66",
        "4506ac70d3c8eedf1d58f9757acfcd074a873c1e259993fff34b43db2aef262b",
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
