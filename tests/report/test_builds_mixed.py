"""A run's units come from one unit code (`continuity.report.collect.check_builds`):
units two builds made are refused, named, never pooled."""

from __future__ import annotations

from pathlib import Path

import pytest

from continuity.errors import AggregateError
from continuity.report.collect import check_builds
from continuity.store import Store


def _unit(store: Store, key: str, code: str | None) -> None:
    meta = {"trace_id": "t", "arm": "native", "repeat": 1}
    if code is not None:
        meta["unit_code"] = code
    store.record_action(key, kind="unit", output=store.put_blob(key.encode()), meta=meta)


def test_units_of_two_unit_codes_are_refused_and_named(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    for key, code in (("a" * 64, "A"), ("b" * 64, "B"), ("c" * 64, "A")):
        _unit(store, key, code)
    units = [("r1-x-native.json", "a" * 64), ("r1-y-native.json", "b" * 64)]
    units.append(("r1-z-native.json", "c" * 64))
    with pytest.raises(AggregateError) as caught:
        check_builds(store, units, tmp_path / "units")
    assert caught.value.code == "run_builds_mixed"
    assert "r1-y-native.json" in caught.value.message  # the minority build's unit
    assert "r1-x-native.json" not in caught.value.message


def test_one_code_or_units_stored_before_codes_were_kept_pool(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    _unit(store, "a" * 64, "A")
    _unit(store, "b" * 64, "A")
    _unit(store, "c" * 64, None)  # stored before the unit code was kept: not compared
    units = [("a.json", "a" * 64), ("b.json", "b" * 64), ("c.json", "c" * 64)]
    check_builds(store, units, tmp_path / "units")
