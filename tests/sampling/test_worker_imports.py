"""The unit worker imports what its probe children need before it forks them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from continuity.arms import ARMS, replay_config_for
from continuity.harness.checkpoints import build_checkpoint
from continuity.runner.units.selection import limited, probe_slots
from continuity.store import Store
from continuity.traces.suites import build_suite
from continuity.traces.validate import load_trace

CHECK = """
import sys
from continuity.sampling.worker import UnitRequest, warm_imports
before = set(sys.modules)
warm_imports(UnitRequest(store_root="-", tree="-", workspace="-", arm=sys.argv[1], probes=[]))
print(" ".join(sorted(set(sys.modules) - before)))
"""


@pytest.mark.parametrize(
    ("arm", "expected"),
    [
        ("native", {"anyio._backends._asyncio", "continuity.sampling.child"}),
        (
            "continuity-store",
            {
                "anyio._backends._asyncio",
                "continuity.harness.toolbox",
                "continuity.servers.history",
            },
        ),
    ],
)
def test_warm_imports_loads_what_every_child_needs(arm: str, expected: set[str]) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHECK, arm], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(out.stdout.split())
    assert expected <= loaded, expected - loaded
    assert "continuity.servers.history" not in loaded or arm != "native"


CHILD_IMPORTS = """
import json, sys
import msgspec
import continuity.sampling.child as child_module
from continuity.sampling.worker import UnitRequest, run_unit, warm_zygote
warm_zygote()
real_probe = child_module.run_probe
async def watched(workspace, request, **kw):
    before = set(sys.modules)
    try:
        return await real_probe(workspace, request, **kw)
    finally:
        with open(sys.argv[2], "a") as log:
            log.write(json.dumps(sorted(set(sys.modules) - before)) + "\\n")
child_module.run_probe = watched
request = msgspec.json.decode(sys.argv[1], type=UnitRequest)
outcomes = run_unit(request).outcomes
assert all(o.error is None for o in outcomes), [o.error for o in outcomes]
"""


@pytest.mark.parametrize("arm", ["native", "continuity-store", "continuity-pack-cold"])
def test_a_probe_child_forked_after_warm_zygote_imports_nothing(
    arm: str, store: Store, out_dir: Path, tmp_path: Path
) -> None:
    """What the zygote preloads (`warm_zygote`) is all any probe child needs: a module a
    child imported itself would be compiled and executed again in every probe."""
    suite = build_suite(store, "original", out_dir=out_dir)
    item = suite.items[0]
    trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
    checkpoint = build_checkpoint(
        store,
        trace,
        trace_key=item.key,
        trace_digest=item.digest,
        config=replay_config_for(ARMS[arm]),
    )
    specs, _ = probe_slots(trace, ARMS[arm], limited(trace, 2), None)
    request = {
        "store_root": str(store.root),
        "tree": checkpoint.tree.digest,
        "workspace": checkpoint.root,
        "arm": arm,
        "probes": msgspec.to_builtins(specs),
    }
    log = tmp_path / "imports.jsonl"
    ran = subprocess.run(
        [sys.executable, "-c", CHILD_IMPORTS, json.dumps(request), str(log)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    imported = [json.loads(line) for line in log.read_text().splitlines()]
    assert imported == [[], []]
