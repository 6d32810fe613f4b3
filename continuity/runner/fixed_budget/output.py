"""What a fixed-budget sizing writes: ``summary.md``, and the output directory whole.

`write_sizing` writes the files into a sibling folder and renames it into place, so the
new ``--output`` directory appears whole or not at all. `summary_text` is content-free:
the bindings, the budget, and the slots by role, class and cause.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path

from continuity.errors import UsageError
from continuity.lookup.fixed_budget import FixedBudget
from continuity.outputs import write_output

__all__ = ["summary_text", "write_sizing"]


def summary_text(budget: FixedBudget, sha256: str) -> str:
    """``summary.md``: the bindings and the slots by role and class (content-free)."""
    classes = Counter((s.role, s.classification) for s in budget.slots)
    causes = Counter((s.classification, s.cause) for s in budget.slots if s.cause)
    kinds = Counter(s.kind for s in budget.slots)
    holdout, terms = budget.holdout, budget.budget
    lines = [
        "# Fixed-budget lookup sizing",
        "",
        f"- budget.json sha256 {sha256}",
        f"- source: manifest {holdout.manifest_sha256}, spec {holdout.spec_sha256}, "
        f"freeze {holdout.freeze_digest}",
        f"- selection: {holdout.algorithm} seed {holdout.seed}, {holdout.per_group} per "
        f"group: {', '.join(holdout.selected)} (digest {holdout.selection_digest})",
        f"- fixed budget: {terms.calls} calls, {terms.bytes:,} bytes, {terms.rounds} rounds "
        f"from {terms.policy_file} (sha256 {terms.policy_sha256}); deadlines "
        f"{terms.probe_deadline_seconds:g} s probe, {terms.cleanup_seconds:g} s cleanup, "
        f"{terms.turn_seconds:g} s turn, {terms.watchdog_seconds:g} s watchdog",
        f"- reader binding {budget.reader.binding}: {budget.reader.reader} "
        f"(alternate {budget.reader.alternate})",
        f"- bound to {budget.lookup_protocol} / {budget.probe_protocol}, classifier code "
        f"{budget.classifier_code}",
        f"- measured at commit {budget.code.commit} (dirty: {budget.code.dirty}), "
        f"measurement code {budget.code.measurement_code}",
        f"- slots: {len(budget.slots):,} ({kinds['reference']:,} reference paths, "
        f"{kinds['envelope']:,} full-budget envelopes)",
        "- every role was measured with its own soul and this checkout's renderer, "
        "which carries the pack's retrieval guidance (Rpack): an R0 pack role's observed "
        "context overstates R0 by its guidance allowance",
        "",
        "| role | class | slots |",
        "|---|---|---|",
        *[f"| {role} | {cls} | {n:,} |" for (role, cls), n in sorted(classes.items())],
        "",
        *(
            [
                "| class | cause | slots |",
                "|---|---|---|",
                *[f"| {cls} | {cause} | {n:,} |" for (cls, cause), n in sorted(causes.items())],
            ]
            if causes
            else ["No slot has a failure or exhaustion cause."]
        ),
        "",
    ]
    return "\n".join(lines)


def write_sizing(output: Path, files: dict[str, bytes]) -> None:
    """Write `files` into a sibling folder, then rename it to `output` (which must still
    not exist), so the directory appears whole or not at all.

    Raises:
        UsageError: ``lookup_output_exists`` when `output` appeared meanwhile.
    """
    staging = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    if staging.exists():
        shutil.rmtree(staging)
    try:
        for name, data in files.items():
            write_output(staging / name, data)
        if output.exists():
            raise UsageError(
                "the directory exists; a new one is needed",
                code="lookup_output_exists",
                location=str(output),
            )
        staging.rename(output)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
