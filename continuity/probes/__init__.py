"""Probes: deterministic scoring, the optional judge, availability analysis."""

__all__: list[str] = []
