"""The unit worker imports what its probe children need before it forks them."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHECK = """
import sys
from continuity.probe.worker import UnitRequest, warm_imports
before = set(sys.modules)
warm_imports(UnitRequest(store_root="-", tree="-", workspace="-", arm=sys.argv[1], probes=[]))
print(" ".join(sorted(set(sys.modules) - before)))
"""


@pytest.mark.parametrize(
    ("arm", "expected"),
    [
        ("native", {"anyio._backends._asyncio", "continuity.probe.child"}),
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
