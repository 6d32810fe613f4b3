"""Retained conversation evidence and the deterministic continuity pack."""

__all__ = [
    "history",
    "ledger",
    "ledger_journal",
    "ledger_prompt",
    "ledger_store",
    "pack",
    "retained",
    "upkeep",
    "upkeep_receipts",
    "upkeep_selection",
]
