"""The probe protocol: the fixed bytes every probe turn carries, and their version.

Every probe turn is the probe's own text followed by one fixed answer-format instruction.
There are two instructions, one per answer form, each identical across arms, traces,
probes and probe modes; neither names a value or a category, and both tell the reader how
to decline: a reader that is never told how to say "I don't know" declines in a hundred
ways, and a scorer then has to guess which of them are abstentions.

- A **value** probe (an identifier, a current value, a status, or an abstention probe:
  `ANSWER_LINE_CATEGORIES`) asks for the reply to end with one line ``ANSWER: <value>``,
  or ``ANSWER: UNKNOWN`` when it never came up (`ANSWER_LINE_INSTRUCTION`), the
  convention of SimpleQA-style graders. The scorer reads that line first
  (`continuity.probes.answer_line`) and falls back to the free text without it.
- A **free-text** probe (a constraint, a redaction, a next action, free recall) is graded
  on the whole reply and keeps probe-protocol-v2's instruction (`PROBE_INSTRUCTION`):
  asking a redaction probe for its value on a line of its own would invite the leak it
  tests.

Changing a byte of either instruction, which categories get which, or how it joins the
probe text changes what readers see, so it bumps `PROBE_PROTOCOL`, which plan digests
and unit keys bind: results under different protocol versions are not comparable.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "ANSWER_LINE_CATEGORIES",
    "ANSWER_LINE_INSTRUCTION",
    "PROBE_INSTRUCTION",
    "PROBE_PROTOCOL",
    "AnswerForm",
    "answer_form",
    "instruction_for",
    "probe_turn_text",
    "unknown_reply",
]

# v1: the probe text alone. v2: the probe text, a blank line, then PROBE_INSTRUCTION.
# v3: as v2, but a value probe's instruction asks for a final ``ANSWER:`` line.
PROBE_PROTOCOL = "probe-protocol-v3"
AnswerForm = Literal["line", "text"]
# The expectation categories (`continuity.traces.schema`) whose reply ends with a line.
ANSWER_LINE_CATEGORIES = frozenset(
    {"tool_identifier", "superseded_current", "commitment_status", "artifact_status", "abstention"}
)
PROBE_INSTRUCTION = (
    "Answer format: if what I am asking about never came up in our conversation (tool "
    "results count as part of it), say that it never came up and answer UNKNOWN."
)
ANSWER_LINE_INSTRUCTION = (
    "Answer format: end your reply with one line of the form ANSWER: <value>, where "
    "<value> is only what I am asking for, exactly as it appeared in our conversation. "
    "If it never came up in our conversation (tool results count as part of it), end "
    "with the line ANSWER: UNKNOWN instead."
)


def answer_form(category: str) -> AnswerForm:
    """How a probe of `category` is answered: on a final line, or in free text."""
    return "line" if category in ANSWER_LINE_CATEGORIES else "text"


def instruction_for(category: str) -> str:
    """The fixed instruction a probe of `category` carries."""
    return ANSWER_LINE_INSTRUCTION if answer_form(category) == "line" else PROBE_INSTRUCTION


def probe_turn_text(probe_text: str, category: str) -> str:
    """The bytes of the user message that asks a probe of `category`."""
    return f"{probe_text}\n\n{instruction_for(category)}"


def unknown_reply(turn_text: str) -> str:
    """What a reader that knows nothing answers to a probe turn, in the form the turn
    asks for (the offline scripted readers' reply; an outside agent may wrap the turn,
    so the instruction is looked for anywhere in it)."""
    return "ANSWER: UNKNOWN" if ANSWER_LINE_INSTRUCTION in turn_text else "UNKNOWN"
