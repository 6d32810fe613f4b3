"""compare.md and compare.html of `doit compare_aggregate` (static: no scripts)."""

from __future__ import annotations

from html import escape
from pathlib import Path

import msgspec

from continuity.outputs import write_output
from continuity.report.sections import num, pct
from continuity.roles.aggregate import (
    CompareReport,
    Contrast,
    RoleFigures,
    aggregate,
    child_failed,
)
from continuity.store import Store

__all__ = ["compare_aggregate", "compare_html", "compare_markdown", "compare_tables"]

_Table = tuple[str, list[str], list[list[str]], str]


def _role_row(figures: RoleFigures) -> list[str]:
    cell = figures.lookup
    reasons = "; ".join(
        f"{launch.suite}: {launch.missing_reason}"
        if launch.missing_reason
        else f"{launch.suite}: child exit {launch.exit_code}, outcome {launch.outcome or '-'}"
        for launch in figures.launches
        if launch.missing_reason or child_failed(launch.exit_code, launch.outcome)
    )
    head = [figures.role, figures.arm, figures.code, figures.soul, figures.status]
    if cell is None:
        return [*head, *["-"] * 7, reasons or "-"]
    return [
        *head,
        str(cell.slots_planned),
        str(cell.missing),
        str(cell.duplicate),
        str(cell.inventory_infeasible),
        f"{pct(cell.exact.rate)} ({cell.exact.correct}/{cell.exact.n})",
        f"{pct(cell.exact_with_failures.rate)} "
        f"({cell.exact_with_failures.correct}/{cell.exact_with_failures.n})",
        str(cell.failed_feasible),
        reasons or "-",
    ]


def _contrast_row(c: Contrast) -> list[str]:
    return [
        f"{c.a} - {c.b}",
        c.about,
        str(c.planned),
        str(c.paired_completed),
        f"{c.a_only} / {c.b_only}",
        num(c.delta_pp),
        str(c.failure_inclusive),
        f"{c.a_only_with_failures} / {c.b_only_with_failures}",
        num(c.delta_with_failures_pp),
    ]


def compare_tables(report: CompareReport) -> list[_Table]:
    """The roles table and the contrasts table: (title, header, rows, note)."""
    return [
        (
            "Roles",
            [
                "role",
                "arm",
                "code",
                "soul",
                "status",
                "planned",
                "missing",
                "duplicate",
                "infeasible (reference limitation)",
                "exact",
                "exactWithFailures",
                "failed feasible",
                "missing reason",
            ],
            [_role_row(f) for f in report.roles],
            "Exact: correct over completed eligible exact-value slots observed once. "
            "exactWithFailures also counts failed feasible slots as incorrect. Missing "
            "slots are coverage only; infeasible native paths are the registered reference "
            "limitations, not reader failures. Duplicates (a slot observed more than once) "
            "are counted and never scored or costed.",
        ),
        (
            "Contrasts (a - b)",
            [
                "contrast",
                "what differs",
                "planned",
                "paired completed",
                "discordant a only / b only",
                "delta pp",
                "failure-inclusive",
                "discordant (with failures)",
                "delta pp (with failures)",
            ],
            [_contrast_row(c) for c in report.contrasts],
            f"Paired over exact-value slots both roles completed. {report.disclaimer}",
        ),
    ]


def _header(report: CompareReport) -> list[str]:
    work = report.workload
    scope = "restricted workload" if work.restricted else "full workload"
    return [
        f"registration sha256 {report.registration_sha256}",
        f"registration digest {report.registration_digest}",
        f"{scope}: suites {', '.join(work.suites)}; traces {', '.join(work.traces) or 'all'}; "
        f"probe limit {work.probe_limit or 'none'}; repeats {work.repeats}; "
        f"{report.slots_planned} planned slots per role",
        report.planned_source,
        report.disclaimer,
    ]


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def compare_markdown(report: CompareReport) -> str:
    """compare.md: the header lines, then each table with its note."""
    lines = ["# Cross-checkout lookup comparison", ""]
    lines += [f"- {line}" for line in _header(report)]
    for title, header, rows, note in compare_tables(report):
        lines += [
            "",
            f"## {title}",
            "",
            "| " + " | ".join(header) + " |",
            "|" + "---|" * len(header),
        ]
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
        lines += ["", note]
    return "\n".join(lines) + "\n"


def compare_html(report: CompareReport) -> str:
    """compare.html: one static page (no scripts) with the same content."""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<title>Cross-checkout lookup comparison</title></head><body>",
        "<h1>Cross-checkout lookup comparison</h1><ul>",
        *(f"<li>{escape(line)}</li>" for line in _header(report)),
        "</ul>",
    ]
    for title, header, rows, note in compare_tables(report):
        parts.append(f"<section><h2>{escape(title)}</h2><table><thead><tr>")
        parts += [f"<th>{escape(h)}</th>" for h in header]
        parts.append("</tr></thead><tbody>")
        for row in rows:
            parts.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>")
        parts.append(f"</tbody></table><p>{escape(note)}</p></section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def compare_aggregate(
    registration: Path, sha256: str, output: Path, store: Store | None = None
) -> tuple[CompareReport, Path]:
    """`doit compare_aggregate`: verify and join (`continuity.roles.aggregate.aggregate`;
    the registration is the copy registered in `store`, the default store when None),
    then write ``compare.json``, ``compare.md`` and ``compare.html`` in `output`, each
    atomically; return the report and the JSON's path. Nothing is written on a refusal.

    Raises:
        RoleError: every refusal of `continuity.roles.aggregate_read`.
        InputError: a registration, run directory or file that is not what is read.
    """
    report = aggregate(registration, sha256, output, store)
    target = output / "compare.json"
    write_output(target, msgspec.json.format(msgspec.json.encode(report)) + b"\n")
    write_output(output / "compare.md", compare_markdown(report).encode())
    write_output(output / "compare.html", compare_html(report).encode())
    return report, target
