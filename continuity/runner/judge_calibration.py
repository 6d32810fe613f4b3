"""`doit calibrate`: a judge over the labelled calibration suites, and its agreement.

By default the judge grades every suite of docs/validity.md
(`continuity.probes.validity.default_suites`): the held-out suites first, whose figures
estimate agreement on answers nobody tuned for, then the tuning suite, whose figure is
marked an **upper bound** (its answers were read while the graders were developed).
``--cases FILE`` grades that one file instead.

Offline (no ``--provider``) the scripted judge grades every case: no credential, no
network, and figures that only show the mechanics (the scripted judge is a stand-in,
not a grader worth calibrating). With a real provider the judge model grades every case
behind the call cache (a rerun pays for nothing it already has); it never runs where a
``CI`` variable exists and needs an explicit ``--credentials`` file. The per-category
agreement uses the suite's own arithmetic (`continuity.probes.calibration.agreement`)
and is written to ``<out>/calibration/judge-<name>.md`` and ``.json``, suite by suite.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import msgspec

from continuity.errors import UsageError
from continuity.outputs import write_output
from continuity.probes.calibration import (
    UNRESOLVED,
    VERDICTS,
    Agreement,
    CalibrationCase,
    agreement,
    default_cases_path,
    load_cases,
    render_table,
    scorer_verdicts,
)
from continuity.probes.judge import Judge, JudgeCase, JudgeVerdict, ProviderJudge, ScriptedJudge
from continuity.probes.validity import HELD_OUT, default_suites
from continuity.providers.endpoint import EndpointSpec

__all__ = [
    "JudgeCalibration",
    "JudgeChoice",
    "SuiteCalibration",
    "calibrate_judge",
    "judge_for",
    "run_calibration",
    "suite_heading",
    "unresolved_line",
    "write_calibration",
]


class SuiteCalibration(msgspec.Struct, frozen=True, kw_only=True):
    """The judge on one suite: its name (``tuning``, a held-out suite's, or ``cases`` for
    ``--cases``), its file, whether it is held out, the agreement and every verdict."""

    name: str = "cases"
    suite: str
    held_out: bool = False
    cases: int
    agreement: Agreement
    verdicts: list[JudgeVerdict]
    # The cases the deterministic scorer leaves unresolved (the ones a run hands the
    # judge), and the judge's agreement on those alone (None when there are none).
    scorer_unresolved: list[str] = msgspec.field(default_factory=list)
    unresolved_agreement: Agreement | None = None
    # ``--unresolved-only``: the judge saw those cases alone, so `agreement` and
    # `verdicts` cover them and nothing else.
    unresolved_only: bool = False

    @property
    def scorer_coverage(self) -> float | None:
        """The scorer's coverage on the suite: resolved ÷ cases."""
        return 1 - len(self.scorer_unresolved) / self.cases if self.cases else None

    @property
    def upper_bound(self) -> bool:
        """The tuning suite's figure: its answers were read while the graders were built."""
        return self.name == "tuning"


class JudgeCalibration(msgspec.Struct, frozen=True, kw_only=True):
    """What `doit calibrate` writes: the judge and its agreement on every suite graded
    (held-out suites first)."""

    schema: str = "continuity-judge-calibration-v3"  # v3: `unresolved_only`
    judge: str
    suites: list[SuiteCalibration]


class JudgeChoice(msgspec.Struct, frozen=True, kw_only=True):
    """The judge `doit calibrate` grades with: its provider kind (``scripted``, the
    default, or a real one), ``provider:model`` and reasoning effort, the endpoint's
    base URL, the credentials file and the output cap of each judge call ("" and 0 are
    each option's default: the current profile's judge, no effort, the provider's public
    API, no file, the real runs' cap of 4,096 tokens)."""

    provider: str = "scripted"
    judge_model: str = ""
    judge_effort: str = ""
    base_url: str = ""
    credentials: str = ""
    max_output_tokens: int = 0


def judge_for(choice: JudgeChoice, store_root: str, out: Path) -> Judge:
    """The judge `choice` names, after the real-mode guards.

    Raises:
        UsageError: ``plan_invalid`` for an unknown provider, a base URL without a real
            provider or a model that is not ``provider:model`` (both parts non-empty);
            ``effort_invalid`` for a ``--judge-effort`` the provider does not take;
            ``plan_invalid`` too for ``--base-url`` or ``--max-output-tokens`` beside the
            scripted judge; real
            mode also
            ``real_refused_ci`` (a ``CI`` variable exists), ``credentials_required`` (no
            ``--credentials`` for an endpoint away from this machine) and
            ``credentials_missing`` (not a regular file). No credential is read here.
    """
    from continuity.errors import RealModeError
    from continuity.plan.guards import refuse_under_ci
    from continuity.plan.models import DEFAULT_PROFILE, PROFILES
    from continuity.plan.plan import DEFAULT_BASE_URLS
    from continuity.providers.efforts import check_effort
    from continuity.providers.endpoint import is_loopback
    from continuity.runner.real import DEFAULT_MAX_OUTPUT_TOKENS

    kind = choice.provider or "scripted"
    if kind != "scripted":
        refuse_under_ci(what="a real judge")
    if kind not in DEFAULT_BASE_URLS:
        raise UsageError(
            f"unknown provider {kind!r}; use one of {', '.join(DEFAULT_BASE_URLS)}",
            code="plan_invalid",
            location="--provider",
        )
    model = choice.judge_model or PROFILES[DEFAULT_PROFILE].judge_for(kind)
    provider, _, name = model.partition(":")
    if not provider.strip() or not name.strip():
        raise UsageError(
            f"{model!r} is not provider:model", code="plan_invalid", location="--judge-model"
        )
    if choice.judge_effort:
        check_effort(kind, choice.judge_effort, location="--judge-effort")
    base_url = (choice.base_url or DEFAULT_BASE_URLS[kind]).rstrip("/")
    if kind == "scripted":
        for given, option in (
            (base_url, "--base-url"),
            (choice.max_output_tokens, "--max-output-tokens"),
        ):
            if given:
                raise UsageError(
                    f"{option} needs a real --provider", code="plan_invalid", location=option
                )
        return ScriptedJudge()
    credentials = choice.credentials or ""
    if not credentials and not is_loopback(base_url):  # a local server needs no key
        raise RealModeError(
            "a real judge away from this machine needs an explicit --credentials file",
            code="credentials_required",
            location="--credentials",
        )
    if credentials and not os.path.isfile(credentials):  # a stat, never an open
        raise RealModeError(
            "the credentials file does not exist or is not a regular file",
            code="credentials_missing",
            location=credentials,
        )
    spec = msgspec.convert(
        {
            "kind": kind,
            "base_url": base_url,
            "model": model.split(":", 1)[1],
            "credentials_path": os.path.abspath(credentials) if credentials else "",  # none: no key
            "effort": choice.judge_effort or None,
            "slots_dir": str(out / ".slots"),
            "catalog_ref": model,
            "max_output_tokens": choice.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS,
        },
        EndpointSpec,
    )
    return ProviderJudge(spec, store_root, repeat=1)


def calibrate_judge(
    judge: Judge,
    cases: Sequence[CalibrationCase],
    suite: str = "",
    *,
    name: str = "cases",
    held_out: bool = False,
    unresolved_only: bool = False,
) -> SuiteCalibration:
    """Every case of one suite judged once; the judge's agreement with the labels per
    category.

    An ``unreadable`` reply stays in n as a failure of the judge: it never agrees and
    lowers the judge's coverage. A judge that always names an outcome is compared
    outcome by outcome, one that sometimes only says INCORRECT is compared on the
    correct/incorrect call alone. Beside the whole suite, the judge's agreement on the
    cases the deterministic scorer leaves unresolved: the ones a run hands it.
    `unresolved_only` judges those alone (no call for a case the scorer decides)."""
    scorer = scorer_verdicts(cases)
    left = [case for case in cases if scorer[case.id] == UNRESOLVED]
    judged = left if unresolved_only else cases
    verdicts = judge.verdicts(
        [JudgeCase(case.id, case.question, case.expectation, case.answer) for case in judged]
    )
    named = {
        v.probe_id: UNRESOLVED if v.outcome == "unreadable" else v.outcome or "" for v in verdicts
    }
    outcomes = all(outcome in (*VERDICTS, UNRESOLVED) for outcome in named.values())
    return SuiteCalibration(
        name=name,
        suite=suite,
        held_out=held_out,
        cases=len(cases),
        agreement=agreement(judged, named, outcomes=outcomes, grader=judge.name),
        verdicts=list(verdicts),
        scorer_unresolved=[case.id for case in left],
        unresolved_agreement=(
            agreement(left, named, outcomes=outcomes, grader=judge.name) if left else None
        ),
        unresolved_only=unresolved_only,
    )


def suite_heading(entry: SuiteCalibration) -> str:
    """How a suite's figure is introduced, in the terminal and the Markdown."""
    if entry.held_out:
        what = "held out"
    elif entry.upper_bound:
        what = "the tuning suite: an upper bound, its answers were read while the graders "
        what += "were built"
    else:
        what = "given with --cases"
    judged = ""
    if entry.unresolved_only:
        judged = f"; judged: the {len(entry.scorer_unresolved)} the scorer leaves unresolved"
    return f"{entry.name} ({entry.suite}, {entry.cases} labelled cases; {what}{judged})"


def _markdown(result: JudgeCalibration, scripted: bool) -> str:
    lines = [
        f"# Judge calibration: {result.judge}",
        "",
        "Agreement of the judge's verdicts with the labels, per category, on every suite "
        "graded. Held-out figures come first: they estimate agreement on answers nobody "
        "tuned for. The tuning suite's figure is an upper bound.",
        "",
    ]
    if scripted:
        lines += [
            "> The scripted judge is an offline stand-in: these figures show the mechanics "
            "ran, not how good a judge is.",
            "",
        ]
    for entry in result.suites:
        lines += [f"## {suite_heading(entry)}", "", render_table(entry.agreement)]
        misjudged = entry.agreement.misjudged
        lines += [f"Misjudged ({len(misjudged)}): " + (", ".join(misjudged) or "none"), ""]
        lines += [unresolved_line(entry), ""]
        if entry.unresolved_agreement is not None and not entry.unresolved_only:
            lines += [render_table(entry.unresolved_agreement)]  # the table above, else
    return "\n".join(lines)


def unresolved_line(entry: SuiteCalibration) -> str:
    """The scorer's coverage on the suite and the judge's agreement on what it leaves."""
    left = len(entry.scorer_unresolved)
    coverage = entry.scorer_coverage
    text = (
        f"The deterministic scorer leaves {left} of {entry.cases} cases unresolved "
        f"(coverage {100 * (coverage or 0):.1f}%)"
    )
    part = entry.unresolved_agreement
    if part is None:
        return text + "."
    row = part.overall
    return (
        text + f"; on those the judge agrees on correct/incorrect in {row.binary_agree} of "
        f"{row.n} ({100 * (row.binary_agree / row.n if row.n else 0):.1f}%), "
        f"{row.unresolved} unreadable."
    )


def write_calibration(result: JudgeCalibration, folder: Path) -> tuple[Path, Path]:
    """Write ``judge-<name>.md`` and ``.json`` into `folder`; return both paths."""
    stem = "judge-" + re.sub(r"[^A-Za-z0-9._-]+", "-", result.judge).strip("-")
    md, js = folder / f"{stem}.md", folder / f"{stem}.json"
    write_output(js, msgspec.json.format(msgspec.json.encode(result)) + b"\n")
    write_output(md, _markdown(result, result.judge == ScriptedJudge.name).encode("utf-8"))
    return md, js


def _suites(cases: str) -> list[tuple[str, Path, bool]]:
    """(name, file, held out) of every suite to grade: the `cases` file (``--cases``),
    or ("") the held-out suites then the tuning suite."""
    if cases:
        return [("cases", Path(cases), False)]
    suites = default_suites()
    order = [*HELD_OUT, *(n for n in suites if n not in HELD_OUT)]
    return [(name, suites[name], name in HELD_OUT) for name in order if name in suites]


def run_calibration(
    choice: JudgeChoice,
    cases: str,
    store_root: str,
    out: Path,
    *,
    unresolved_only: bool = False,
) -> tuple[JudgeCalibration, Path, Path]:
    """The whole `doit calibrate`: choose the judge, judge every suite (``--cases``: the
    `cases` file alone; each loaded first, so a bad file is refused before any call;
    `unresolved_only`: only the cases the scorer leaves unresolved), write the result
    under ``<out>/calibration/``."""
    folder = out / "calibration"
    judge = judge_for(choice, store_root, folder)
    loaded = [(name, path, held, load_cases(path)) for name, path, held in _suites(cases)]
    result = JudgeCalibration(
        judge=judge.name,
        suites=[
            calibrate_judge(
                judge,
                cases,
                _relative(path),
                name=name,
                held_out=held,
                unresolved_only=unresolved_only,
            )
            for name, path, held, cases in loaded
        ],
    )
    md, js = write_calibration(result, folder)
    return result, md, js


def _relative(path: Path) -> str:
    root = default_cases_path().parents[2]
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()
