"""Traces: the schema, the original suite, the hard generator, distractors, validation."""

__all__ = [
    "bounds",
    "categories",
    "distractors",
    "generator",
    "keys",
    "locomo",
    "prng",
    "schema",
    "suites",
    "tools",
    "validate",
]
