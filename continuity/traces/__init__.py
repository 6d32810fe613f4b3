"""Traces: the schema, the original suite, the hard generator, distractors, validation."""

__all__: list[str] = []
