"""Lookup mode (``lookup-allowed-v1``): a metered ConversationHistory budget per probe."""

__all__ = [
    "budget",
    "fixed_budget",
    "fixed_budget_classify",
    "meter",
    "pilot_settings",
    "policy",
    "probe",
    "reader",
    "receipts",
    "sizing",
    "soul",
    "sources",
    "state",
]
