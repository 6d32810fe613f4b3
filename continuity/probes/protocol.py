"""The probe protocol: the fixed bytes every probe turn carries, and their version.

Every probe turn is the probe's own text followed by one fixed answer-format instruction.
The instruction is identical across arms, traces, probes and probe modes, names no value,
and tells the reader how to decline: a reader that is never told how to say "I don't know"
declines in a hundred ways, and a scorer then has to guess which of them are abstentions.

Changing a byte of the instruction (or how it joins the probe text) changes what every
reader sees, so it bumps `PROBE_PROTOCOL`, which plan digests and unit keys bind: results
under different protocol versions are not comparable.
"""

from __future__ import annotations

__all__ = ["PROBE_INSTRUCTION", "PROBE_PROTOCOL", "probe_turn_text"]

# v1: the probe text alone. v2: the probe text, a blank line, then PROBE_INSTRUCTION.
PROBE_PROTOCOL = "probe-protocol-v2"
PROBE_INSTRUCTION = (
    "Answer format: if what I am asking about never came up in our conversation (tool "
    "results count as part of it), say that it never came up and answer UNKNOWN."
)


def probe_turn_text(probe_text: str) -> str:
    """The bytes of the user message that asks a probe."""
    return f"{probe_text}\n\n{PROBE_INSTRUCTION}"
