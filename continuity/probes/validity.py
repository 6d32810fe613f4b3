"""The scorer's recorded agreement on two calibration suites, and docs/validity.md.

Two suites measure the deterministic scorer against a careful human reader:

- the **tuning** suite (`fixtures/calibration/answers-v1.jsonl`): the scorer was developed
  while its authors could see these answers, so its figure is an upper bound;
- the **held-out** suite (`fixtures/calibration/holdout-v1.jsonl`): written by someone who
  had seen neither the scorer nor the tuning cases. Its first measurement was blind; that
  figure is frozen in `fixtures/calibration/holdout-v1-blind.json`, which no recorder
  writes, and docs/validity.md prints it verbatim beside the current figure. Once the
  scorer's developers have read the held-out misjudgements, later figures on it are not
  blind: only a fresh set, written without sight of scorer or suites, measures blind again.

``python3 -m continuity.probes.validity --record`` (`record`) is the one way
`fixtures/calibration/scorer-agreement.json` and `docs/validity.md` change.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from continuity.errors import CalibrationInvalid
from continuity.probes.calibration import (
    SCORER_NAME,
    agreement,
    default_cases_path,
    default_doc_path,
    default_holdout_path,
    default_record_path,
    load_cases,
    render_table,
    scorer_verdicts,
)
from continuity.probes.validity_doc import render_validity_doc
from continuity.probes.validity_record import BlindMeasurement, ScorerRecord, SuiteRecord

__all__ = [
    "BLIND_PATHS",
    "HELD_OUT",
    "SUITE_NAMES",
    "BlindMeasurement",
    "ScorerRecord",
    "SuiteRecord",
    "default_blind_path",
    "default_suites",
    "load_blind",
    "load_record",
    "main",
    "record",
    "record_blind",
    "render_validity_doc",
]

SUITE_NAMES: tuple[str, ...] = (
    "tuning",
    "holdout",
    "holdout-free-recall",
    "holdout-v3",
    "holdout-v4",
    "holdout-v5",
    "holdout-v6",
)
HELD_OUT: tuple[str, ...] = (
    "holdout",
    "holdout-free-recall",
    "holdout-v3",
    "holdout-v4",
    "holdout-v5",
    "holdout-v6",
)
_ROOT = Path(__file__).resolve().parents[2]
_CALIBRATION = _ROOT / "fixtures" / "calibration"
# Each held-out suite's frozen first (blind) measurement.
BLIND_PATHS: dict[str, Path] = {
    "holdout": _CALIBRATION / "holdout-v1-blind.json",
    "holdout-free-recall": _CALIBRATION / "holdout-free-recall-v2-blind.json",
    "holdout-v3": _CALIBRATION / "holdout-v3-blind.json",
    "holdout-v4": _CALIBRATION / "holdout-v4-blind.json",
    "holdout-v5": _CALIBRATION / "holdout-v5-blind.json",
    "holdout-v6": _CALIBRATION / "holdout-v6-blind.json",
}


def default_suites() -> dict[str, Path]:
    """Each suite's name and its JSONL file in this checkout."""
    return {
        "tuning": default_cases_path(),
        "holdout": default_holdout_path(),
        "holdout-free-recall": _CALIBRATION / "holdout-free-recall-v2.jsonl",
        "holdout-v3": _CALIBRATION / "holdout-v3.jsonl",
        "holdout-v4": _CALIBRATION / "holdout-v4.jsonl",
        "holdout-v5": _CALIBRATION / "holdout-v5.jsonl",
        "holdout-v6": _CALIBRATION / "holdout-v6.jsonl",
    }


def default_blind_path(name: str = "holdout") -> Path:
    """The frozen first (blind) measurement of a held-out suite."""
    return BLIND_PATHS[name]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _relative(path: Path) -> str:
    try:
        return path.resolve().relative_to(_ROOT).as_posix()
    except ValueError:
        return path.as_posix()


def load_record(path: Path | None = None) -> ScorerRecord:
    return msgspec.json.decode((path or default_record_path()).read_bytes(), type=ScorerRecord)


def load_blind(path: Path | None = None) -> BlindMeasurement:
    return msgspec.json.decode((path or default_blind_path()).read_bytes(), type=BlindMeasurement)


def _git(*args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(_ROOT), *args], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else ""


def record_blind(name: str, suite: Path | None = None, path: Path | None = None) -> Path:
    """Take a held-out suite's first (blind) measurement with the current scorer and
    freeze it: the scorer's commit (HEAD) and the commit that last wrote the suite are
    recorded beside the figure. Run it once, before anyone working on the scorer reads
    the suite, and commit the file; it is never rewritten.

    Raises:
        CalibrationInvalid: ``calibration_blind_exists`` when the measurement was taken
            already, ``calibration_suite_unreadable`` for a missing suite.
    """
    if name not in HELD_OUT:
        raise CalibrationInvalid(
            f"{name!r} is not a held-out suite; held-out suites are {', '.join(HELD_OUT)}",
            location="--record-blind",
        )
    target = path or BLIND_PATHS[name]
    if target.exists():
        raise CalibrationInvalid(
            f"the blind measurement of {name} was taken already; it is never rewritten",
            code="calibration_blind_exists",
            location=str(target),
        )
    suite = suite or default_suites()[name]
    cases = load_cases(suite)
    measured = BlindMeasurement(
        suite=_relative(suite),
        suite_sha256=_digest(suite),
        cases=len(cases),
        scorer_commit=_git("rev-parse", "HEAD"),
        suite_commit=_git("log", "-1", "--format=%H", "--", str(suite)),
        agreement=agreement(cases, scorer_verdicts(cases), grader=SCORER_NAME),
    )
    target.write_bytes(msgspec.json.format(msgspec.json.encode(measured), indent=2) + b"\n")
    return target


def record(
    suites: Mapping[str, Path] | None = None,
    record_path: Path | None = None,
    doc_path: Path | None = None,
    blind_paths: Mapping[str, Path] | None = None,
) -> ScorerRecord:
    """Score every suite (name to JSONL path, `SUITE_NAMES` order) with the current
    scorer; write the record and the validity page. Blind measurements are read, never
    written; raises `CalibrationInvalid` when a held-out suite has none, or when its
    blind measurement was taken on another file."""
    suites = dict(suites or default_suites())
    if unknown := sorted(set(suites) - set(SUITE_NAMES)):
        raise CalibrationInvalid(f"unknown suite(s) {unknown}; suites are {SUITE_NAMES}")
    paths = {**BLIND_PATHS, **(blind_paths or {})}
    blinds: dict[str, BlindMeasurement] = {}
    for name in (n for n in HELD_OUT if n in suites):
        if not paths[name].is_file():
            raise CalibrationInvalid(
                f"the held-out suite {name} has no blind measurement yet: take it first "
                f"with --record-blind {name}, before anyone reads the suite",
                location=str(paths[name]),
            )
        blinds[name] = load_blind(paths[name])
        if _digest(suites[name]) != blinds[name].suite_sha256:
            raise CalibrationInvalid(
                f"the held-out suite {name} is not the one its blind measurement was taken on",
                location=str(suites[name]),
            )
    loaded = {name: load_cases(path) for name, path in suites.items()}
    verdicts = {name: scorer_verdicts(chosen) for name, chosen in loaded.items()}
    result = ScorerRecord(
        suites=tuple(
            SuiteRecord(
                name=name,
                suite=_relative(suites[name]),
                suite_sha256=_digest(suites[name]),
                cases=len(loaded[name]),
                agreement=agreement(loaded[name], verdicts[name], grader=SCORER_NAME),
            )
            for name in SUITE_NAMES
            if name in suites
        )
    )
    record_path = record_path or default_record_path()
    record_path.write_bytes(msgspec.json.format(msgspec.json.encode(result), indent=2) + b"\n")
    doc_path = doc_path or default_doc_path()
    doc_path.parent.mkdir(parents=True, exist_ok=True)
    doc = render_validity_doc(result, loaded, verdicts, blinds, HELD_OUT)
    doc_path.write_text(doc, encoding="utf-8")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m continuity.probes.validity",
        description="The deterministic scorer's agreement with the labelled calibration suite.",
    )
    parser.add_argument("--record", action="store_true", help="rewrite the record and the doc")
    parser.add_argument(
        "--record-blind",
        choices=HELD_OUT,
        default=None,
        help="take a new held-out suite's blind first measurement (once; never rewritten)",
    )
    parser.add_argument("--cases", type=Path, default=None, help="print one suite (JSONL) only")
    parser.add_argument("--record-path", type=Path, default=None)
    parser.add_argument("--doc", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.record_blind:
        written = record_blind(args.record_blind)
        sys.stdout.write(f"blind measurement of {args.record_blind} frozen in {written}\n")
        return 0
    if args.record:
        recorded = record(None, args.record_path, args.doc)
        results = {entry.name: entry.agreement for entry in recorded.suites}
    else:
        chosen = {"cases": args.cases} if args.cases else default_suites()
        results = {}
        for name, path in chosen.items():
            cases = load_cases(path)
            results[name] = agreement(cases, scorer_verdicts(cases), grader=SCORER_NAME)
    for name, result in results.items():
        sys.stdout.write(f"{name}:\n" + render_table(result))
        sys.stdout.write(f"misjudged: {len(result.misjudged)} {', '.join(result.misjudged)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
