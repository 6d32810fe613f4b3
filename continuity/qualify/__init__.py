"""Qualification: the benchmark qualifies its own reliability claims.

A catalogue of cases (`cases`), selected fail-closed (`select`), each
injecting one fault into a real offline workload (`faults`), proven by content-free
receipts (`receipts`), graded by calibrated pure graders (`graders`) and packaged as
evidence per attempt (`package`); `doit qualify` (`continuity.commands.qualification`)
drives them.
"""

__all__ = [
    "cases",
    "package",
    "run",
    "select",
]
