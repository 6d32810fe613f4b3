"""`doit calibrate`: a judge over the labelled calibration suite, and its agreement.

Offline (no ``--provider``) the scripted judge grades every case: no credential, no
network, and figures that only show the mechanics (the scripted judge is a stand-in,
not a grader worth calibrating). With a real provider the judge model grades every case
behind the call cache (a rerun pays for nothing it already has); it never runs where a
``CI`` variable exists and needs an explicit ``--credentials`` file. The per-category
agreement uses the suite's own arithmetic (`continuity.probes.calibration.agreement`)
and is written to ``<out>/calibration/judge-<name>.md`` and ``.json``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from continuity.errors import UsageError
from continuity.outputs import write_output
from continuity.probes.calibration import (
    VERDICTS,
    Agreement,
    CalibrationCase,
    agreement,
    default_cases_path,
    load_cases,
    render_table,
)
from continuity.probes.judge import Judge, JudgeCase, JudgeVerdict, ProviderJudge, ScriptedJudge
from continuity.providers.endpoint import EndpointSpec

__all__ = [
    "JudgeCalibration",
    "calibrate_judge",
    "judge_for",
    "run_calibration",
    "write_calibration",
]


class JudgeCalibration(msgspec.Struct, frozen=True, kw_only=True):
    """What `doit calibrate` writes: the judge, the suite it ran on and its agreement."""

    schema: str = "continuity-judge-calibration-v1"
    judge: str
    suite: str
    cases: int
    agreement: Agreement
    verdicts: list[JudgeVerdict]


def judge_for(options: Mapping[str, Any], store_root: str, out: Path) -> Judge:
    """The judge `doit calibrate`'s options choose, after the real-mode guards.

    Raises:
        UsageError: ``plan_invalid`` for an unknown provider, a base URL without a real
            provider or a model that is not ``provider:model`` (both parts non-empty); real
            mode also
            ``real_refused_ci`` (a ``CI`` variable exists), ``credentials_required`` (no
            ``--credentials`` for an endpoint away from this machine) and
            ``credentials_missing`` (not a regular file). No credential is read here.
    """
    from continuity.errors import RealModeError
    from continuity.plan.models import DEFAULT_PROFILE, PROFILES
    from continuity.plan.plan import DEFAULT_BASE_URLS
    from continuity.providers.endpoint import is_loopback

    kind = options.get("provider") or "scripted"
    if kind != "scripted" and "CI" in os.environ:
        raise RealModeError(
            "a real judge never runs where a CI variable exists (even an empty one)",
            code="real_refused_ci",
            location="$CI",
        )
    if kind not in DEFAULT_BASE_URLS:
        raise UsageError(
            f"unknown provider {kind!r}; use one of {', '.join(DEFAULT_BASE_URLS)}",
            code="plan_invalid",
            location="--provider",
        )
    model = options.get("judge_model") or PROFILES[DEFAULT_PROFILE].judge_for(kind)
    provider, _, name = model.partition(":")
    if not provider.strip() or not name.strip():
        raise UsageError(
            f"{model!r} is not provider:model", code="plan_invalid", location="--judge-model"
        )
    base_url = (options.get("base_url") or DEFAULT_BASE_URLS[kind]).rstrip("/")
    if kind == "scripted":
        if base_url:
            raise UsageError(
                "--base-url needs a real --provider", code="plan_invalid", location="--base-url"
            )
        return ScriptedJudge()
    credentials = options.get("credentials") or ""
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
            "credentials_path": os.path.abspath(credentials),
            "effort": options.get("judge_effort") or None,
            "slots_dir": str(out / ".slots"),
            "catalog_ref": model,
        },
        EndpointSpec,
    )
    return ProviderJudge(spec, store_root, repeat=1)


def calibrate_judge(
    judge: Judge, cases: Sequence[CalibrationCase], suite: str = ""
) -> JudgeCalibration:
    """Every case judged once; the judge's agreement with the labels per category.

    An ``unreadable`` reply counts as no verdict. A judge that always names an outcome
    is compared outcome by outcome, one that sometimes only says INCORRECT is compared
    on the correct/incorrect call alone."""
    verdicts = judge.verdicts(
        [JudgeCase(case.id, case.question, case.expectation, case.answer) for case in cases]
    )
    named = {v.probe_id: v.outcome or "" for v in verdicts if v.outcome != "unreadable"}
    outcomes = all(outcome in VERDICTS for outcome in named.values())
    result = agreement(cases, named, outcomes=outcomes, grader=judge.name)
    return JudgeCalibration(
        judge=judge.name,
        suite=suite,
        cases=len(cases),
        agreement=result,
        verdicts=list(verdicts),
    )


def _markdown(result: JudgeCalibration, scripted: bool) -> str:
    lines = [
        f"# Judge calibration: {result.judge}",
        "",
        f"{result.cases} labelled cases from `{result.suite}`; agreement of the judge's "
        "verdicts with the labels, per category.",
        "",
    ]
    if scripted:
        lines += [
            "> The scripted judge is an offline stand-in: these figures show the mechanics "
            "ran, not how good a judge is.",
            "",
        ]
    lines += [render_table(result.agreement)]
    misjudged = result.agreement.misjudged
    lines += [f"Misjudged ({len(misjudged)}): " + (", ".join(misjudged) or "none"), ""]
    return "\n".join(lines)


def write_calibration(result: JudgeCalibration, folder: Path) -> tuple[Path, Path]:
    """Write ``judge-<name>.md`` and ``.json`` into `folder`; return both paths."""
    stem = "judge-" + re.sub(r"[^A-Za-z0-9._-]+", "-", result.judge).strip("-")
    md, js = folder / f"{stem}.md", folder / f"{stem}.json"
    write_output(js, msgspec.json.format(msgspec.json.encode(result)) + b"\n")
    write_output(md, _markdown(result, result.judge == ScriptedJudge.name).encode("utf-8"))
    return md, js


def run_calibration(
    options: Mapping[str, Any], store_root: str, out: Path
) -> tuple[JudgeCalibration, Path, Path]:
    """The whole `doit calibrate`: choose the judge, judge the suite, write the result."""
    folder = out / "calibration"
    judge = judge_for(options, store_root, folder)
    path = Path(options["cases"]) if options.get("cases") else default_cases_path()
    result = calibrate_judge(judge, load_cases(path), _relative(path))
    md, js = write_calibration(result, folder)
    return result, md, js


def _relative(path: Path) -> str:
    root = default_cases_path().parents[2]
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()
