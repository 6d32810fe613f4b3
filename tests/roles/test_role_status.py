"""A role whose child failed with a verified receipt is reported as failed, its exit and
outcome shown, never as present (its units still count)."""

from __future__ import annotations

import pytest

from continuity.roles.aggregate import _role_figures
from continuity.roles.aggregate_read import RoleSuite
from continuity.roles.aggregate_render import _role_row
from continuity.roles.table import ROLES


def _suites(exit_code: int | None, outcome: str | None, reason: str | None) -> list[RoleSuite]:
    """Every role launched on one suite; `pack`'s launch as given, the others complete."""
    return [
        RoleSuite(
            role=role,
            suite="original",
            exit_code=exit_code if role.name == "pack" else 0,
            outcome=outcome if role.name == "pack" else "complete",
            reason=reason if role.name == "pack" else None,
            units=[],
            planned=[],
        )
        for role in ROLES
    ]


@pytest.mark.parametrize(
    ("exit_code", "outcome", "reason", "status", "shown"),
    [
        (0, "complete", None, "present", None),
        (1, "trace_unknown", None, "failed", "child exit 1, outcome trace_unknown"),
        (0, "admission_stopped", None, "failed", "outcome admission_stopped"),
        (-9, None, "role_receipt_missing: none", "missing", "role_receipt_missing: none"),
    ],
)
def test_a_failed_child_is_not_reported_present(
    exit_code: int | None, outcome: str | None, reason: str | None, status: str, shown: str | None
) -> None:
    figures = {f.role: f for f in _role_figures(_suites(exit_code, outcome, reason), {}, {}, {})}
    pack = figures["pack"]
    assert pack.status == status
    assert {f.status for name, f in figures.items() if name != "pack"} == {"present"}
    reasons = _role_row(pack)[-1]
    assert reasons == "-" if shown is None else shown in reasons
