"""Retained conversation evidence and the deterministic continuity pack."""

__all__: list[str] = []
