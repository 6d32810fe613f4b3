"""A role child that exits non-zero but leaves a verified receipt is recorded in
launches.json as ``role_child_failed``, the later roles still run, and the aggregate
reports the role as failed (issue 15, item 5: "A non-zero child exit with a verified
receipt is recorded in launches.json, and later roles still run")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from continuity.roles.aggregate_render import compare_aggregate
from continuity.roles.register import register, workload
from continuity.roles.run import Launches, compare_run, failed_launches
from continuity.roles.table import ROLES
from continuity.store import Store
from tests.roles.test_register import Pair, checkout_pair


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    with checkout_pair(tmp_path_factory.mktemp("failed-checkouts")) as made:
        yield made


def test_a_child_that_fails_with_a_receipt_is_recorded_and_the_rest_run(
    pair: Pair, tmp_path: Path
) -> None:
    # A registered trace filter no suite holds: every child refuses it (trace_unknown),
    # exits non-zero, and still leaves its receipt with that outcome.
    store = Store(tmp_path / "store")
    registered = register(
        store,
        (pair.r0, pair.r0_sha),
        (pair.rpack, pair.rpack_sha),
        str(tmp_path / "registration"),
        workload(["original"], ["no-such-trace"], 1),
    )
    output = tmp_path / "run"
    path, returned = compare_run(registered.path, registered.sha256, str(output), store)
    launches = msgspec.json.decode(path.read_bytes(), type=Launches)
    assert launches == returned and failed_launches(launches) == launches.launches
    assert [launch.role for launch in launches.launches] == [role.name for role in ROLES]
    for launch in launches.launches:  # every role ran although the first one failed
        assert launch.exit_code not in (0, None), launch
        assert launch.receipt is not None and launch.receipt_sha256 is not None, launch
        assert launch.reason is not None and launch.reason.startswith("role_child_failed"), launch
        assert "trace_unknown" in launch.reason
        assert launch.build_verified_before and launch.build_verified_after
    report, _ = compare_aggregate(registered.path, registered.sha256, output, store)
    assert {figures.status for figures in report.roles} == {"failed"}
    assert "trace_unknown" in (output / "compare.md").read_text()
