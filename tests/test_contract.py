"""The offline contract's own checks, through the Python API. (The whole contract runs
through doit in tests/graph/test_dodo.py, and again in CI.)"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from continuity.contract import check_distractor_pairs
from continuity.errors import ContinuityError
from continuity.store import Store
from continuity.traces.schema import decode_trace, encode_trace
from continuity.traces.suites import SuiteItem, build_suite


def test_a_distractor_trace_with_changed_facts_fails_the_contract(
    store: Store, out_dir: Path
) -> None:
    hard = build_suite(store, "hard", (101,), out_dir=out_dir)
    dx = build_suite(store, "hard-distractors", (101,), out_dir=out_dir)
    check_distractor_pairs(store, hard, dx)  # the real pair is sound
    trace = decode_trace(store.get_blob(dx.items[0].digest))
    probe = trace.probes[0]
    changed = msgspec.structs.replace(probe, text=probe.text + " Really?")
    tampered = msgspec.structs.replace(trace, probes=(changed, *trace.probes[1:]))
    blob = store.put_blob(encode_trace(tampered))
    item = SuiteItem(trace.trace_id, dx.items[0].key, blob.digest, blob.size, "built")
    bad = msgspec.structs.replace(dx, items=(item,))
    with pytest.raises(ContinuityError) as err:
        check_distractor_pairs(store, hard, bad)
    assert (err.value.code, err.value.location) == ("distractors_changed_facts", trace.trace_id)
    lonely = msgspec.structs.replace(hard, items=())
    with pytest.raises(ContinuityError) as err:
        check_distractor_pairs(store, lonely, dx)
    assert "no hard twin" in err.value.message
