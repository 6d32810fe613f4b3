"""Retained conversation evidence and the deterministic continuity pack."""
