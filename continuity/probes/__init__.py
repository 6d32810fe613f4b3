"""Probes: deterministic scoring, the optional judge, availability analysis."""
