"""The offline contract's headline: per suite and arm, where each probed fact was."""

from __future__ import annotations

from continuity.contract_headline import ArmHeadline, headline, headline_lines, headline_markdown

COUNTS = {
    "hard": {
        "compaction-1": {"in_context": 1, "retrievable": 0, "absent": 9, "not_applicable": 4},
        "native": {"in_context": 10, "retrievable": 0, "absent": 0, "not_applicable": 4},
        "continuity-store": {"in_context": 2, "retrievable": 5, "absent": 3},
    },
    "original": {"native": {"not_applicable": 3}},
}


def test_each_arm_counts_its_facts_in_context_retrievable_and_lost_in_plan_order() -> None:
    [hard, original] = headline(COUNTS, ["native", "compaction-1", "ceiling", "continuity-store"])
    assert hard.suite == "hard" and original.suite == "original"
    assert hard.arms == (
        ArmHeadline("native", 10, 10, 0, 0),
        ArmHeadline("compaction-1", 10, 1, 0, 9),  # samples needing no fact left out
        ArmHeadline("continuity-store", 10, 2, 5, 3),
    )  # an arm the suite did not run (ceiling) has no row
    assert original.arms == (ArmHeadline("native", 0, 0, 0, 0),)


def test_the_lines_end_with_numbers_and_a_suite_without_facts_shows_dashes() -> None:
    lines = headline_lines(headline(COUNTS, ["native", "compaction-1", "continuity-store"]))
    assert lines[0].startswith("where each probed fact was after the boundary")
    store = next(line for line in lines if "continuity-store" in line)
    assert store.split() == ["continuity-store", "10", "20%", "50%", "30%"]
    assert lines[-1].split() == ["native", "0", "-", "-", "-"]
    table = headline_markdown(headline(COUNTS, ["native"]))
    assert "| hard | native | 10 | 10 | 0 | 0 |" in table
