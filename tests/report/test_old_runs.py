"""Old runs stay readable, and the report's numbers stay pinned.

A unit key binds the unit code's digest, so moving or editing that code gives every
existing unit a key the current code no longer computes. The aggregate and `doit score`
still read such a unit when the store holds it under its key (continuity.report.verify),
without weakening tamper detection: an edited unit is still refused.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import msgspec
import pytest

from continuity.arms import ARMS
from continuity.errors import AggregateError
from continuity.report import collect
from continuity.report.aggregate import aggregate_run
from continuity.report.rescore import rescore_run
from continuity.runner.units.build import UnitRecord, seal, unit_key
from continuity.store import Store

OUTPUTS = ("results", "summary", "report")

# sha256 of the two-suite run's outputs (tests/report/conftest.py `mixed`: one original
# trace x native, cold-rebuild, continuity-store; one hard trace x native, ceiling; two
# repeats; scripted judge) under the units' own grades. Measured before the report
# package was split and typed (issue 12) and after: identical. A change here is a change
# in report numbers or their rendering; say why in the commit. The report's pin moved in
# issue 14 (run header, contents, per-suite sections, charts with axes and intervals,
# the sample drill-down); results.json and summary.md did not. All three moved in issue
# 35: coverage (resolved ÷ valid) and the judge's share beside every accuracy, and the
# judge agreement over the answers both graded, and the chart's axis says accuracy is of
# resolved samples (3b730720..., 6fdf141c..., 9486cefe... before). All three moved with
# probe-protocol-v3: the run header names the protocol, and the report gains the Answer
# line table (results.json ``answer_line``) (70307d32..., bad1c205..., c07d30fc... before).
# All three moved when a refused task became abstained, not correct (issue 35): the
# scripted reader's declined task drafts (23daf639..., 1e10a443..., 91b163a3... before).
# The summary and the report moved when both came to lead with the key findings, and
# the report closed its detail tables in <details>, wrapped them to scroll sideways and
# names the run in its header (c4360a4e..., 6371cece... before); results.json did not.
# The report moved alone when its drill-down came to show what each sample's reader saw
# (its stored context, highlights, tool calls, a unit file link and the page's one script;
# dc4dc63b... before). The report moved alone when each trace's contexts came to be one
# block holding every distinct message once, and the drill-down left out what carries
# nothing: the judge row without a verdict, the quotes' escapes in the tool calls' element
# content and the optional dd end tags (423459b3... before). The summary and the report
# moved when the key findings' sentence came to name the probes UNKNOWN is right on and
# the flat accuracy's figures (1d509043..., de65d75c... before); results.json did not.
PINNED = {
    "results": "ed61aec378db686a9bff98747352064842e192e6e6fbf087a4ae9ce45ad5f3d7",
    "summary": "4337a6206215cb958a760a5a9fb7d92ab46f33c4a5bdb72979cedf53935e44dd",
    "report": "9aadc99a8d6697a088afb7b113aaab08b875222d40a1fca181294d82cb504de5",
}


def _units(run: Path) -> list[Path]:
    return sorted((run / "units").rglob("*.json"))


def _record(path: Path) -> UnitRecord:
    return msgspec.json.decode(path.read_bytes(), type=UnitRecord)


def _move_unit_code(monkeypatch: pytest.MonkeyPatch, salt: str) -> None:
    """Simulate a code move: the unit code digest changes (one more module), and the
    summary caches are cold, so every unit is verified again."""
    module = sys.modules[unit_key.__module__]
    monkeypatch.setattr(module, "UNIT_CODE", (*module.UNIT_CODE, "continuity.errors"))
    monkeypatch.setattr(collect, "SUMMARY_SALT", salt)


def _key_now(record: UnitRecord) -> str:
    return unit_key(
        record.repeat,
        record.trace_key,
        ARMS[record.arm],
        record.checkpoint,
        record.probe_ids,
        record.binding,
        record.probe_protocol,
    )


def test_report_numbers_are_pinned(mixed: tuple[Store, Path]) -> None:
    store, folder = mixed
    _, paths, _ = aggregate_run(store, folder, scorer="original")
    digests = {name: hashlib.sha256(paths[name].read_bytes()).hexdigest() for name in OUTPUTS}
    assert digests == PINNED


def test_units_sealed_by_older_code_still_aggregate_and_score(
    mixed: tuple[Store, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, folder = mixed
    expected: dict[tuple[str, str], bytes] = {}
    for scorer in ("original", "current"):
        paths = aggregate_run(store, folder, scorer=scorer)[1]
        expected.update({(scorer, n): paths[n].read_bytes() for n in OUTPUTS})
    _move_unit_code(monkeypatch, "moved-code")
    record = _record(_units(folder)[0])
    assert _key_now(record) != record.key  # the move re-keys every unit
    for scorer in ("original", "current"):
        _, paths, read = aggregate_run(store, folder, scorer=scorer)
        assert read == len(_units(folder))  # verified again, not served from a cache
        assert {n: paths[n].read_bytes() for n in OUTPUTS} == {
            n: expected[(scorer, n)] for n in OUTPUTS
        }
    scored = rescore_run(store, folder)
    assert scored.units == len(_units(folder))


def _reseal(path: Path, **changes: object) -> None:
    path.write_bytes(msgspec.json.encode(seal(msgspec.structs.replace(_record(path), **changes))))


@pytest.mark.parametrize(
    ("damage", "code"),
    [
        (
            lambda p: _reseal(
                p,
                probes=[
                    msgspec.structs.replace(x, answer="something else") for x in _record(p).probes
                ],
            ),
            "unit_tampered",
        ),
        (lambda p: _reseal(p, repeat=_record(p).repeat + 7), "unit_key_mismatch"),
        (lambda p: _reseal(p, key="ab" * 32), "unit_key_mismatch"),
    ],
    ids=["resealed-answers", "relabelled-repeat", "foreign-key"],
)
def test_an_edited_old_unit_is_still_refused(
    mixed: tuple[Store, Path], monkeypatch: pytest.MonkeyPatch, damage: object, code: str
) -> None:
    store, folder = mixed
    _move_unit_code(monkeypatch, f"edited-{code}")
    assert callable(damage)
    damage(_units(folder)[1])
    with pytest.raises(AggregateError) as err:
        aggregate_run(store, folder, scorer="original")
    assert err.value.code == code


def test_an_old_unit_the_store_does_not_hold_is_refused(
    mixed: tuple[Store, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _, folder = mixed
    _move_unit_code(monkeypatch, "no-store")
    with pytest.raises(AggregateError) as err:
        aggregate_run(Store(tmp_path / "empty-store"), folder, scorer="original")
    assert err.value.code == "unit_key_mismatch"
