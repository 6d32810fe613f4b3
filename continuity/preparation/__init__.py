"""Ledger preparation (layer 9): three upkeep stages in three fresh processes over a
replayed checkpoint, each crossing a model-change boundary, and the integrity checks
that make the prepared checkpoint a valid ledger treatment or an invalid one."""

__all__ = [
    "capture",
    "extractor",
    "prepare",
    "receipts",
]
