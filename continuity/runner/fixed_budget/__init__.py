"""Fixed-budget sizing of a holdout source (``doit lookup_budget --fixed-budget-sha256``)
and its pricing (``doit estimate`` with a source).

`sizing` selects the jobs and writes the sizing; `measure` keys and measures one job's
slot records; `scratch` is the private store they are measured in; `output` writes the
sizing's files; `estimate` prices a source from its sizing."""

__all__ = [
    "estimate",
    "sizing",
]
