"""One probe sample, the probe child (layer 9): the unit worker, a fresh process per
probe that crosses the arm's boundary and asks the reader, and the sealed evidence and
receipts it reports.

(Scoring the answer a sample holds is `continuity.probes`.)"""

__all__ = [
    "boundary",
    "context",
    "history_witness",
    "receipts",
    "worker",
]
