"""A registered build runs its own children: one exported before a child module moved
into its package (`runner/preflight/`, `roles/pilot/`) runs that module by its earlier
name, never a name its export does not hold."""

from __future__ import annotations

import pytest

from continuity.roles.pilot.slots import _preparer_of
from continuity.roles.register_build import BuildReceipt
from continuity.runner.preflight.records import CHILD_MODULE
from continuity.runner.preflight.run import _Build, _build_code


@pytest.mark.parametrize(
    ("files", "module"),
    [
        ({"continuity/runner/preflight/child.py": "a"}, CHILD_MODULE),
        ({"continuity/runner/preflight_child.py": "a"}, "continuity.runner.preflight_child"),
    ],
)
def test_a_preflight_slot_runs_the_child_its_build_holds(
    files: dict[str, str], module: str
) -> None:
    code = _build_code("r0", _Build(python="/venv/bin/python", files=files))
    assert code.missing is None and code.module == module
    assert code.command == ["/venv/bin/python", "-I", "-B"]


def test_a_build_without_the_child_is_reported_missing() -> None:
    code = _build_code("rpack", _Build(python="/venv/bin/python", files={"dodo.py": "a"}))
    assert code.missing is not None and "continuity/runner/preflight/child.py" in code.missing


def _receipt(files: dict[str, str]) -> BuildReceipt:
    return BuildReceipt(venv="/v", python="/v/bin/python", python_version="3.11.7",
                        site_packages="/v/lib", src="/s", files=files, pth_sha256="0" * 64,
                        files_digest="0" * 64, seconds=0.0)  # fmt: skip


def test_a_pilot_slot_names_the_preparer_its_build_holds() -> None:
    assert _preparer_of(None) is None  # this controller's own code: the config's preparer
    assert _preparer_of(_receipt({"continuity/roles/pilot/prepare.py": "a"})) is None
    earlier = _receipt({"continuity/runner/pilot_prepare.py": "a"})
    assert _preparer_of(earlier) == "continuity.runner.pilot_prepare"
