"""Qualification: the benchmark qualifies its own reliability claims (issue 20).

A catalogue of cases (`cases`), selected under seed 004's discipline (`select`), each
injecting one fault into a real offline workload (`faults`), proven by content-free
receipts (`receipts`), graded by calibrated pure graders (`graders`) and packaged as
evidence per attempt (`package`); `doit qualify` (`rules/qualify.py`) drives them.
"""

__all__: list[str] = []
