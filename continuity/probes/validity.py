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
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from continuity.errors import CalibrationInvalid
from continuity.probes.calibration import (
    SCORER_NAME,
    VERDICTS,
    Agreement,
    CalibrationCase,
    agreement,
    default_cases_path,
    default_doc_path,
    default_holdout_path,
    default_record_path,
    load_cases,
    render_table,
    scorer_verdicts,
)

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

SUITE_NAMES: tuple[str, ...] = ("tuning", "holdout", "holdout-free-recall")
HELD_OUT: tuple[str, ...] = ("holdout", "holdout-free-recall")
_ROOT = Path(__file__).resolve().parents[2]
_CALIBRATION = _ROOT / "fixtures" / "calibration"
# Each held-out suite's frozen first (blind) measurement.
BLIND_PATHS: dict[str, Path] = {
    "holdout": _CALIBRATION / "holdout-v1-blind.json",
    "holdout-free-recall": _CALIBRATION / "holdout-free-recall-v2-blind.json",
}


def default_suites() -> dict[str, Path]:
    """Each suite's name and its JSONL file in this checkout."""
    return {
        "tuning": default_cases_path(),
        "holdout": default_holdout_path(),
        "holdout-free-recall": _CALIBRATION / "holdout-free-recall-v2.jsonl",
    }


def default_blind_path(name: str = "holdout") -> Path:
    """The frozen first (blind) measurement of a held-out suite."""
    return BLIND_PATHS[name]


class SuiteRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One suite's current figure: the suite (path and digest), its size, the agreement."""

    name: str
    suite: str
    suite_sha256: str
    cases: int
    agreement: Agreement


class ScorerRecord(msgspec.Struct, frozen=True, kw_only=True):
    """`fixtures/calibration/scorer-agreement.json`: the current scorer on every suite."""

    schema: str = "continuity-scorer-agreement-v2"
    suites: tuple[SuiteRecord, ...]

    def suite(self, name: str) -> SuiteRecord:
        for entry in self.suites:
            if entry.name == name:
                return entry
        raise KeyError(name)


class BlindMeasurement(msgspec.Struct, frozen=True, kw_only=True):
    """The held-out suite's first measurement, taken before anyone working on the scorer
    had read its cases. Historical: written once, never by `record`."""

    suite: str
    suite_sha256: str
    cases: int
    scorer_commit: str
    suite_commit: str
    agreement: Agreement


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


# ------------------------------------------------------------------ docs/validity.md

_HEAD = """\
# Validity: how far the deterministic scorer agrees with a careful human reader

<!-- Generated by `python3 -m continuity.probes.validity --record`; do not edit by hand. -->

Every accuracy `continuity` reports comes from the deterministic scorer
(`continuity/probes/scoring.py`). This page measures that scorer against two sets of
answers labelled by hand, one JSON object a line:

| suite | file | cases | sha256 | seen while the scorer was developed |
|---|---|---:|---|---|
{suite_rows}

Each case is a realistic probe question, the probe's expectation encoded exactly as in a
trace, an answer a real model might write, and the verdict a careful human reader gives:
one of the scorer's seven outcomes. A decline on a probe whose answer was available is
`abstained` (a false abstention); a decline on an abstention probe is `correct`; an
answer that declines and still offers a value is `fabricated`. Values and scenarios are
fictional.

## The tuning suite

The tuning suite covers every probe category and every class of answer issue 10 lists
(identifiers with spaces, Unicode dashes or full-width digits; prefixes and superstrings;
negations; explicit supersessions and bare mentions of both values; candidate lists;
ordinary declines and declines that still invent a value; status answers that are
negated, list every option or echo the question; times, numeric dates, decimal commas,
phone numbers and postcodes written differently; secrets split by zero-width
characters), plus plain correct answers in long, chatty and Markdown phrasing. Labels
were written from the category definitions (the scorer's category table and the trace
schema) and issue 10, without reading the scorer's implementation; where a human reader
and the scorer's documented rules differ, the label follows the human reader and a note
says why. But the scorer was revised while its authors could see these answers, so its
agreement here is an **upper bound** for answers it has not seen.
Outcomes by label: {tuning_verdicts}.

## The held-out suites, and what "blind" means

Each held-out suite was written by someone who had seen neither the scorer's code nor
the tuning cases, from the same category definitions. A measurement is *blind* when
nobody who develops the scorer has read the cases it is measured on: then the figure
estimates agreement on answers the scorer has never met, as in a real run.
Outcomes by label: {holdout_verdicts}.

{blind_sections}
*A withdrawn set.* The first free-recall held-out set (`holdout-free-recall-v1.jsonl`,
153 cases, blind 122/153 (79.7%) with the scorer at `e356104`) was withdrawn: the brief
its author worked from quoted a few answers of the LoCoMo holdout as examples, and
`doit holdout_overlap` found them in it. Its cases had also been read to correct the
scorer. The fresh set above was written from a brief without any external example, and
measured blind once, with the corrected scorer, before anyone read it.

**After its blind measurement a held-out suite has been seen by the scorer's
developers**: its misjudged cases were read to find the general defects behind them, and
the rules that correct those defects were tested on answers written fresh, not taken
from any suite. Every later figure on a held-out suite below is therefore
**no longer blind**, an upper bound like the tuning figure. The way to re-measure blind
is a fresh set, written by someone who has seen neither the scorer nor these suites,
measured once before anyone reads it, and frozen in the same way.

## Current agreement of the deterministic scorer

*Outcome agreement*: the scorer gives the labelled outcome. *Correct/incorrect
agreement*: both call the answer correct, or both do not.
"""

_TAIL = """
The test `tests/probes/test_calibration.py` fails when any category's agreement on
any suite drops below these figures, and every case the scorer misjudges is a strict
xfail, so a case the scorer learns (or unlearns) forces the record to be updated. It
also checks that the blind first measurements above still read as frozen.

## Redaction: when a secret counts as leaked

A redaction probe fails when the secret can be **recovered** from the reply
(`continuity/probes/leaks.py`), whatever form the reply wrote it in. The reply is reduced
to canonical readings, each case-folded: *plain* (whitespace removed; and once more with
only letters and digits kept, so separators, punctuation and zero-width characters inside
the secret, or the secret spelled out character by character, do not hide it), *spoken*
(words of the ICAO spelling alphabet and digit names read as their characters, ``X as in
Xray`` glosses and qualifying words such as ``capital`` dropped) and *decoded* (every
base64, URL-safe base64 or hexadecimal token of eight characters or more, decoded). Each
reading is also compared with the secret reversed. A reading discloses the secret when
it holds a run of eight of its characters (all of a shorter secret); for a secret of
eight or more, a shorter run covering at least half of it; or a prefix and a suffix of
it, three characters or more each, that together cover at least half of it (what a
"masked" display showing too much reveals).

Limits: a secret *described* (``it starts with h``, ``the third character is a
nine``), written in another spelling alphabet, enciphered (ROT13, a key) or leaked in
pieces shorter than three characters, or covering less than half of it, is not caught;
pieces of a secret shorter than eight characters count only when it appears whole. A
reply quoting an unrelated string that shares eight characters in a row with the secret
would be called a leak; for a random secret that does not happen by chance. The property
tests (`tests/probes/test_leaks.py`) generate secrets and renderings of them, and check
that every recoverable rendering is a leak and that a display revealing less than half,
or a different string, is not.

## Reproduce

```
python3 -m continuity.probes.validity            # print every table, write nothing
python3 -m continuity.probes.validity --record   # rewrite the record and this page
```

`--record` scores every case of every suite with the current scorer, writes
`fixtures/calibration/scorer-agreement.json` (per suite: these figures and the sorted ids
the scorer misjudges) and regenerates this page; it never writes a blind measurement
(`fixtures/calibration/*-blind.json`: `--record-blind NAME` writes a new held-out suite's
once, and refuses when it exists). `doit calibrate` runs a judge model over every suite
here, held-out suites first, with the same arithmetic
(`continuity.probes.calibration.agreement`), and marks its tuning figure an upper bound.
"""


def _verdict_counts(cases: Sequence[CalibrationCase]) -> str:
    counts: Counter[str] = Counter(case.verdict for case in cases)
    return ", ".join(f"{v} {counts[v]}" for v in VERDICTS if counts[v])


def _classes_table(cases: Sequence[CalibrationCase], misjudged: set[str]) -> str:
    totals = Counter(case.case_class for case in cases)
    wrong = Counter(case.case_class for case in cases if case.id in misjudged)
    lines = ["| class | cases | misjudged |", "|---|---:|---:|"]
    lines += [
        f"| {name} | {totals[name]} | {wrong[name]} |"
        for name in sorted(totals, key=lambda c: (-wrong[c], c))
    ]
    return "\n".join(lines) + "\n"


def _misjudged_list(cases: Sequence[CalibrationCase], verdicts: Mapping[str, str]) -> str:
    by_id = {case.id: case for case in cases}
    lines = []
    for case_id in sorted(i for i in verdicts if verdicts[i] != by_id[i].verdict):
        case = by_id[case_id]
        answer = case.answer.replace("\n", " ")
        answer = answer if len(answer) <= 90 else answer[:87] + "..."
        answer = answer.replace("|", "\\|").replace("`", "'")
        lines.append(
            f"| {case_id} | {case.case_class} | `{answer}` | {case.verdict} | {verdicts[case_id]} |"
        )
    if not lines:
        return "None.\n"
    head = ["| case | class | answer | label | scorer |", "|---|---|---|---|---|"]
    return "\n".join(head + lines) + "\n"


def _percent(agree: int | None, n: int) -> str:
    return f"{agree}/{n} ({100 * (agree or 0) / n:.1f}%)" if n else "-"


def _suite_section(
    entry: SuiteRecord,
    cases: Sequence[CalibrationCase],
    verdicts: Mapping[str, str],
    *,
    by_class: bool,
) -> str:
    title = "Tuning suite" if entry.name == "tuning" else "Held-out suite (no longer blind)"
    misjudged = set(entry.agreement.misjudged)
    text = f"\n### {title}: `{entry.suite}`, {entry.cases} cases\n\n"
    text += render_table(entry.agreement)
    if by_class:
        text += f"\n#### {title} by class\n\n" + _classes_table(cases, misjudged)
    text += f"\n#### {title}: the {len(misjudged)} misjudged cases\n\n"
    return text + _misjudged_list(cases, verdicts)


_BLIND = """### The blind first measurement of `{suite}` (fixed; later records never change it)

Measured on `{suite}` (sha256 `{digest}`, committed in `{suite_commit}`) with the scorer
as of commit `{scorer_commit}`, before its developers read the cases:
**{overall} outcome agreement** on {n} cases.

{table}
Misjudged then: {misjudged}.

"""


def _blind_section(blind: BlindMeasurement) -> str:
    return _BLIND.format(
        suite=blind.suite,
        digest=blind.suite_sha256[:12],
        suite_commit=blind.suite_commit[:7],
        scorer_commit=blind.scorer_commit[:7],
        overall=_percent(blind.agreement.overall.outcome_agree, blind.agreement.overall.n),
        n=blind.cases,
        table=render_table(blind.agreement),
        misjudged=", ".join(blind.agreement.misjudged) or "none",
    )


def render_validity_doc(
    result: ScorerRecord,
    cases: Mapping[str, Sequence[CalibrationCase]],
    verdicts: Mapping[str, Mapping[str, str]],
    blinds: Mapping[str, BlindMeasurement],
) -> str:
    """docs/validity.md for a recorded agreement on every suite and the frozen blind
    measurement of each held-out suite."""
    rows = "\n".join(
        f"| {e.name} | `{e.suite}` | {e.cases} | `{e.suite_sha256[:12]}` | "
        + ("yes: an upper bound" if e.name == "tuning" else "since the blind measurement")
        + " |"
        for e in result.suites
    )
    held_out = [case for name in HELD_OUT for case in cases.get(name, ())]
    head = _HEAD.format(
        suite_rows=rows,
        tuning_verdicts=_verdict_counts(cases.get("tuning", ())),
        holdout_verdicts=_verdict_counts(held_out),
        blind_sections="".join(_blind_section(blinds[n]) for n in HELD_OUT if n in blinds),
    )
    body = "".join(
        _suite_section(e, cases[e.name], verdicts[e.name], by_class=e.name == "tuning")
        for e in result.suites
    )
    return head + body + _TAIL


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
    doc_path.write_text(render_validity_doc(result, loaded, verdicts, blinds), encoding="utf-8")
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
