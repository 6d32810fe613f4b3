"""Probes: deterministic scoring, the optional judge, availability analysis."""

__all__ = [
    "answer_line",
    "availability",
    "calibration",
    "judge",
    "protocol",
    "scorer_version",
    "scoring",
    "token_f1",
    "validity",
]
