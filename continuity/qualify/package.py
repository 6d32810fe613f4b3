"""Evidence packages: one per attempt, never rewritten.

``<out>/qualify/<plan>/<case>/attempt-<n>/`` holds:

- ``case.json``: the case definition and its knobs;
- ``inputs/``: the assertion inputs (the fault receipts and the affected receipts),
  **cloned before grading**, so later cleanup cannot change what was graded;
- ``timings.json``: wall seconds of the attempt's phases (latency, kept apart);
- ``provenance.json``: the source revision and a digest of the qualification code;
- ``verdict-1.json``: the verdict with its named causes, and its grader version;
- ``outcome.json``: ``completed`` or ``infrastructure_failed`` with a code (an attempt
  that could not run its workload at all), so failed attempts stay inspectable.

`regrade` grades a package's cloned inputs again with the current graders and writes
``verdict-<n+1>.json`` beside the earlier ones: an earlier verdict is never rewritten.
`report` summarises every attempt, keeping lifecycle correctness (the verdicts),
infrastructure availability (the outcomes) and latency (the timings) separate.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec

from continuity.digest import code_digest
from continuity.inputs import DOCUMENT_MAX_BYTES, read_user_bytes
from continuity.outputs import write_output
from continuity.qualify.cases import Case, case_by_id
from continuity.qualify.graders import Verdict, grade_fault
from continuity.qualify.receipts import (
    AFTER,
    BEFORE,
    FINAL,
    FaultAfter,
    FaultBefore,
    FaultFinal,
    read_receipt,
)

__all__ = ["QUALIFY_CODE", "Attempt", "new_attempt", "regrade", "report"]

QUALIFY_CODE = (
    "continuity.qualify.cases",
    "continuity.qualify.select",
    "continuity.qualify.receipts",
    "continuity.qualify.graders",
    "continuity.qualify.package",
    "continuity.qualify.faults",
)


def _write(path: Path, value: Any) -> None:
    write_output(path, msgspec.json.format(msgspec.json.encode(value)))


class Attempt:
    """One attempt's package directory (see the module doc)."""

    def __init__(self, root: Path, case: Case) -> None:
        self.root, self.case = root, case
        self.work = root / "work"  # where the fault writes its receipts as it goes

    def clone_inputs(self, affected: dict[str, Path]) -> Path:
        """Copy the receipts and the affected files into ``inputs/`` (before grading)."""
        inputs = self.root / "inputs"
        inputs.mkdir(parents=True, exist_ok=True)
        for name in (BEFORE, AFTER, FINAL):
            if (self.work / name).is_file():
                shutil.copyfile(self.work / name, inputs / name)
        for name, path in affected.items():
            if path.is_file():
                shutil.copyfile(path, inputs / f"affected-{name}")
        return inputs

    def grade(self, expected_code: str | None = None) -> Verdict:
        """Grade the cloned inputs and write the next verdict file."""
        return _grade_into(self.root, self.case, expected_code)

    def finish(self, outcome: str, code: str | None, timings: dict[str, float]) -> None:
        _write(self.root / "outcome.json", {"outcome": outcome, "code": code})
        _write(self.root / "timings.json", {k: round(v, 3) for k, v in timings.items()})


def new_attempt(out: Path, case: Case, revision: str) -> Attempt:
    """A new attempt directory for `case` under `out` (the next free number)."""
    folder = out / "qualify" / case.plan / case.name
    folder.mkdir(parents=True, exist_ok=True)
    number = 1 + sum(1 for p in folder.iterdir() if p.name.startswith("attempt-"))
    root = folder / f"attempt-{number}"
    root.mkdir()
    _write(root / "case.json", {"id": case.id, **msgspec.to_builtins(case)})
    provenance = {"revision": revision, "qualification_code": code_digest(QUALIFY_CODE)}
    _write(root / "provenance.json", provenance)
    return Attempt(root, case)


def _grade_into(root: Path, case: Case, expected_code: str | None) -> Verdict:
    inputs = root / "inputs"
    verdict = grade_fault(
        case.knobs,
        read_receipt(inputs, BEFORE, FaultBefore),
        read_receipt(inputs, AFTER, FaultAfter),
        read_receipt(inputs, FINAL, FaultFinal),
        expected_code=expected_code,
        in_flight=case.in_flight,
    )
    number = 1 + sum(1 for p in root.glob("verdict-*.json"))
    _write(root / f"verdict-{number}.json", verdict)
    return verdict


def regrade(attempt: Path, expected_code: str | None = None) -> Verdict:
    """Grade a package's cloned inputs again; the new verdict goes beside the old ones."""
    recorded = msgspec.json.decode(_read(attempt / "case.json", "the case record"))
    case = case_by_id(str(recorded.get("id")))
    if case is None:
        raise ValueError(f"no case {recorded.get('id')!r} in this catalogue")
    return _grade_into(attempt, case, expected_code)


def _read(path: Path, what: str) -> bytes:
    """A package file's bytes, bounded (`read_user_bytes`: ``input_not_a_file``,
    ``input_too_large``)."""
    return read_user_bytes(path, limit=DOCUMENT_MAX_BYTES, what=what)


def _json(path: Path) -> Any:
    return msgspec.json.decode(_read(path, "a package file")) if path.is_file() else None


def _summary(attempts: list[Path]) -> tuple[Counter[str], Counter[str], list[float]]:
    verdicts: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    seconds: list[float] = []
    for attempt in attempts:
        latest = sorted(attempt.glob("verdict-*.json"), key=lambda p: int(p.stem[8:]))
        if latest:
            verdicts[_json(latest[-1])["status"]] += 1
        outcome = _json(attempt / "outcome.json")
        if outcome is not None:
            outcomes[outcome["outcome"]] += 1
        timings = _json(attempt / "timings.json")
        if timings is not None:
            seconds.append(sum(timings.values()))
    return verdicts, outcomes, seconds


def report(out: Path) -> list[str]:
    """One line per case and knobs (attempts under other knobs are never compared):
    lifecycle verdicts (each attempt's latest), infrastructure outcomes and latency (the
    median attempt's seconds), each counted apart: an infrastructure failure is never a
    verdict."""
    lines = []
    for folder in sorted((out / "qualify").glob("*/*")):
        configurations: dict[str, list[Path]] = {}
        for attempt in sorted(folder.glob("attempt-*")):
            recorded = _json(attempt / "case.json") or {}
            knobs = recorded.get("knobs") or {}
            label = ", ".join(f"{k} {v}" for k, v in sorted(knobs.items())) or "knobs unknown"
            configurations.setdefault(label, []).append(attempt)
        for label, attempts in configurations.items():
            verdicts, outcomes, seconds = _summary(attempts)
            latency = f"{sorted(seconds)[len(seconds) // 2]:.1f} s" if seconds else "-"
            lines.append(
                f"{folder.parent.name}/{folder.name} [{label}]: {len(attempts)} attempts; "
                f"lifecycle {dict(sorted(verdicts.items())) or '-'}; infrastructure "
                f"{dict(sorted(outcomes.items())) or '-'}; latency median {latency}"
            )
    return lines
