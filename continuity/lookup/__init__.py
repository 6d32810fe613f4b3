"""Lookup mode (``lookup-allowed-v1``): a metered ConversationHistory budget per probe."""

__all__: list[str] = []
