"""``doit qualify``: the benchmark qualifies its own reliability (`continuity.qualify`).

``--list [--group G]`` lists cases; ``--group G``, ``--case NAME``, ``--id FULL_ID``,
``--suite S`` or ``--all`` selects (explicit-only groups only by name, case or id) and
runs one attempt per case, each an evidence package under ``<out>/qualify/``;
``--report`` summarises every attempt so far.
"""

from __future__ import annotations

from continuity.requests import Request

__all__ = ["QualifyRequest", "qualify"]


class QualifyRequest(Request, frozen=True, kw_only=True):
    """`doit qualify`: what to do (``list``, ``report`` or run) and which cases (a
    ``group``, a ``case`` name, a full ``id``, a ``suite`` or ``all``); "" and False
    select nothing."""

    list: bool = False
    group: str = ""
    case: str = ""
    id: str = ""
    suite: str = ""
    all: bool = False
    report: bool = False


def qualify(request: QualifyRequest) -> str:
    """List the cases, summarise the attempts, or run the selected cases; the summary
    line (a listing or a report: its lines).

    Raises:
        UsageError: ``qualify_selector_invalid`` (two selectors, or ``--list`` /
            ``--report`` beside one) before anything is read or run; an unknown group,
            case, id or suite (`continuity.qualify.select.select_cases`).
    """
    from pathlib import Path

    from continuity.outputs import resolve_out_path
    from continuity.qualify.cases import CATALOGUE
    from continuity.qualify.package import report
    from continuity.qualify.run import run_selection
    from continuity.qualify.select import check_request, listing, select_cases

    group = request.group or None
    case = request.case or None
    case_id = request.id or None
    suite = request.suite or None
    every = request.all
    # two selectors, or --list / --report beside one, are refused before anything runs
    check_request(
        listing=request.list,
        report=request.report,
        group=group,
        case=case,
        case_id=case_id,
        suite=suite,
        every=every,
    )
    out = Path(resolve_out_path(request.out or None))
    if request.report:
        lines = report(out)
        return "\n".join(lines) if lines else f"qualify: no attempt under {out / 'qualify'}"
    if request.list:
        cases = [c for c in CATALOGUE if group is None or c.group == group]
        return "\n".join(listing(cases))
    selection = select_cases(group=group, case=case, case_id=case_id, suite=suite, every=every)
    results = run_selection(selection, out)
    return f"qualify: {len(results)} attempts packaged under {out / 'qualify'}"
