"""The scorer's version: which code and data grade a recorded answer.

The digest covers every scoring module (`SCORER_MODULES`) and the installed versions of
the data packages the scorer reads (`SCORER_DATA`). Score artifacts are keyed by it
(continuity.report.scores, which re-exports these names), and each invocation in a run
manifest records the one in force when its units were graded
(continuity.runner.manifest), so `doit compare --scorer original` can tell whether two
runs were graded by the same scorer. It lives beside the scoring modules, below the
runner, so both the runner and the report can name it.
"""

from __future__ import annotations

from continuity.digest import code_digest, value_digest

__all__ = ["SCORER_DATA", "SCORER_MODULES", "scorer_digest"]

SCORER_MODULES = (
    "continuity.probes.scoring",
    "continuity.probes.outcome",
    "continuity.probes.answer_line",
    "continuity.probes.score_values",
    "continuity.probes.score_text",
    "continuity.probes.normalise",
    "continuity.probes.values",
    "continuity.probes.mentions",
    "continuity.probes.money",
    "continuity.probes.numbers",
    "continuity.probes.currencies",
    "continuity.probes.currency_table",
    "continuity.probes.month_table",
    "continuity.probes.calendar",
    "continuity.probes.polarity",
    "continuity.probes.statuses",
    "continuity.probes.abstention",
    "continuity.probes.quantities",
    "continuity.probes.availability",
    "continuity.probes.free_recall",
    "continuity.probes.recall_items",
    "continuity.probes.recall_words",
    "continuity.probes.paraphrase",
    "continuity.probes.relative_dates",
    "continuity.probes.leaks",
)

# Third-party data the scorer reads: the forbidden-name rule looks words up in
# wordfreq's shipped frequency list, free recall compares words by snowballstemmer's
# Porter stems, and amounts and dates read currencies and month names from babel's CLDR
# data (snapshotted by continuity.probes.cldr, which a test holds equal to the installed
# babel), so their versions are part of the scorer's version.
SCORER_DATA = ("wordfreq", "snowballstemmer", "babel")


def scorer_digest() -> str:
    """The current scorer's version: the code digest of the scoring modules and the
    installed versions of the data packages it reads (`SCORER_DATA`)."""
    from importlib.metadata import version

    data = {name: version(name) for name in SCORER_DATA}
    return value_digest(("continuity-scorer", code_digest(SCORER_MODULES), data))
