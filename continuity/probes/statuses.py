"""Status answers: the status an answer asserts for its subject.

Natural forms map onto the status vocabulary (case ignored):

| status | forms |
|---|---|
| SENT | sent, went/gone out, emailed, mailed, dispatched, delivered, submitted, posted |
| DRAFTED, DRAFT | drafted, a draft, in draft, draft (not after ``the``, ``my`` ...), WIP |
| SCHEDULED | scheduled, queued, set to go out |
| CANCELLED | cancelled, canceled, called off, scrapped, withdrawn, abandoned |
| DECLINED | declined, refused, rejected, turned down |
| FINAL | final, finalised, finalized, signed off, approved, locked |
| SHARED | shared, circulated, distributed, published, sent (for a document) |
| ARCHIVED | archived, filed away, in the archive |
| SUPERSEDED | superseded, replaced, obsolete, outdated, out of date, no longer current |

A status word naming a mail folder or a place (``the SENT folder``, ``shared drive``) is
not a status. Each form is read through `polarity.stances` without supersession: a
negated, hypothetical or asked form asserts nothing (``not sent yet`` asserts no SENT,
``was it sent, or only drafted?`` asserts nothing). A plain ``drafted``/``prepared``
(or ``finalised`` for a document) is a stage a later status supersedes, so ``drafted and
then sent`` asserts SENT; it stands alone only when nothing else is asserted. A negated
SENT with ``yet`` implies the draft stage, and a negated FINAL with ``yet`` the draft.

A status is the subject's state now, so a form in the future or under a modal (``will be
final``, ``it'll be sent``, ``is going to be``, ``is to be``, ``ready to be sent``,
``should go out``) asserts nothing, like one in a temporal clause about what has not
happened (``before it's sent``, ``once it goes out``: `polarity`). ``yet to be sent`` and
``still to be sent``, like a negated ``not sent yet``, imply the draft stage.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from continuity.probes.polarity import Stance, stances

__all__ = ["StatusReading", "asserted_statuses", "status_spans"]

_OBJECT = (
    r"(?!\s+(?:folder|folders|items|box|inbox|mailbox|tab|label|drive|drives|space|area|answer))"
)
_REFERENCE = (
    r"(?<!\bthe )(?<!\bmy )(?<!\bour )(?<!\byour )(?<!\bthis )(?<!\bthat )(?<!\bhis )(?<!\bher )"
)
_COMMITMENT: dict[str, tuple[str, ...]] = {
    "SENT": (
        r"sent",
        r"(?:went|gone|goes)\s+out",
        r"sent\s+(?:\w+\s+)?(?:out|off|over)",
        r"e-?mailed",
        r"mailed",
        r"dispatched",
        r"delivered",
        r"submitted",
        r"posted",
    ),
    "DRAFTED": (
        r"(?:only|just|still|merely)\s+(?:been\s+)?(?:drafted|prepared|written)",
        r"drafted\s+only",
        r"(?:in|at)\s+(?:the\s+)?draft(?:\s+(?:form|stage|status))?",
        _REFERENCE + r"drafts?(?!\s+(?:folder|folders|items|box))(?!ed)",
        r"unsent",
        r"work\s+in\s+progress",
    ),
    "SCHEDULED": (r"scheduled", r"queued", r"set\s+to\s+(?:go\s+out|send|be\s+sent)"),
    "CANCELLED": (
        r"cancell?ed",
        r"called\s+(?:\w+\s+)?off",
        r"scrapped",
        r"withdrawn",
        r"abandoned",
    ),
    "DECLINED": (r"declined", r"refused", r"rejected", r"turned\s+(?:\w+\s+)?down"),
}
_ARTIFACT: dict[str, tuple[str, ...]] = {
    "DRAFT": (
        r"(?:only|just|still|merely)\s+(?:been\s+)?drafted",
        r"(?:in|at)\s+(?:the\s+)?draft(?:\s+(?:form|stage|status))?",
        _REFERENCE + r"drafts?(?!\s+(?:folder|folders|items|box))(?!ed)",
        r"work\s+in\s+progress",
        r"wip",
        r"unfinished",
    ),
    "FINAL": (
        r"final(?!\s+answer)(?!ly)",
        r"signed[\s-]off",
        r"approved",
        r"locked",
    ),
    "SHARED": (
        r"shared",
        r"circulated",
        r"distributed",
        r"published",
        r"sent\s+(?:out|round|around|over|to)",
    ),
    "ARCHIVED": (r"archived", r"filed\s+away", r"in\s+the\s+archive"),
    "SUPERSEDED": (
        r"superseded",
        r"replaced",
        r"obsolete",
        r"outdated",
        r"out\s+of\s+date",
        r"no\s+longer\s+(?:current|in\s+use|valid|used)",
    ),
}
# Stages that a later status supersedes: they stand only when nothing else is asserted.
_STAGES: dict[str, tuple[str, str]] = {
    "commitment": ("DRAFTED", r"drafted|prepared|written(?:\s+up)?"),
    "artifact": ("DRAFT", r"drafted"),
}
_ARTIFACT_STAGE_FINAL = r"finali[sz]ed|completed|finished"


def _compile(forms: dict[str, tuple[str, ...]]) -> list[tuple[str, re.Pattern[str]]]:
    return [
        (status, re.compile(r"\b(?:" + form + r")\b" + _OBJECT, re.IGNORECASE))
        for status, options in forms.items()
        for form in options
    ]


_FORMS = {"commitment": _compile(_COMMITMENT), "artifact": _compile(_ARTIFACT)}
_WEAK = {
    "commitment": [
        (
            _STAGES["commitment"][0],
            re.compile(r"\b(?:" + _STAGES["commitment"][1] + r")\b", re.IGNORECASE),
        )
    ],
    "artifact": [
        (
            _STAGES["artifact"][0],
            re.compile(r"\b(?:" + _STAGES["artifact"][1] + r")\b", re.IGNORECASE),
        ),
        ("FINAL", re.compile(r"\b(?:" + _ARTIFACT_STAGE_FINAL + r")\b", re.IGNORECASE)),
    ],
}
_VOCABULARY = {"commitment": tuple(_COMMITMENT), "artifact": tuple(_ARTIFACT)}
_YET = re.compile(r"\byet\b|\bstill\s+to\s+be\b", re.IGNORECASE)
# Before a status form: it speaks of the future or of what may be, not of the state now.
_FUTURE = re.compile(
    r"(?:\b(?:will|shall|would|could|should|might|may|must|can|cannot|gonna)|'ll)"
    r"\s+(?:(?:not|then|only|also|just|soon|probably|definitely|never)\s+)?"
    r"(?:(?:be|get|go|have\s+been)\s+)?(?:\w+\s+)?$"
    r"|\bto\s+(?:be|get|have\s+been)\s+(?:\w+\s+)?$"
    r"|\bgets?\s+(?:\w+\s+)?$",  # "it gets mailed": habitual or future, not a state
    re.IGNORECASE,
)
_IMPLIED = {"commitment": {"SENT": "DRAFTED"}, "artifact": {"FINAL": "DRAFT", "SHARED": "DRAFT"}}


class StatusReading(NamedTuple):
    statuses: frozenset[str]  # the statuses asserted (empty: none)
    forms: int  # how many status forms the answer holds, asserted or not
    # The statuses it names without asserting them, each with how: negated, asked,
    # hypothetical (not yet, or only possible) or past.
    unasserted: frozenset[tuple[str, str]] = frozenset()


def status_spans(text: str, kind: str) -> list[tuple[int, int]]:
    """Where normalised `text` holds a status form of `kind`, asserted or not."""
    return [(start, end) for start, end, _, _ in _forms(text, kind)]


def _forms(text: str, kind: str) -> list[tuple[int, int, str, bool]]:
    found: dict[tuple[int, int], tuple[int, int, str, bool]] = {}
    # The vocabulary's own words in capitals ("DRAFTED") are the answer format's words.
    for status in _VOCABULARY[kind]:
        for m in re.finditer(r"\b" + status + r"\b" + _OBJECT, text):
            found.setdefault(m.span(), (m.start(), m.end(), status, True))
    for status, pattern in _FORMS[kind]:
        for m in pattern.finditer(text):
            found.setdefault(m.span(), (m.start(), m.end(), status, True))
    for status, pattern in _WEAK[kind]:
        for m in pattern.finditer(text):
            if not any(a <= m.start() < b for a, b in found):
                found.setdefault(m.span(), (m.start(), m.end(), status, False))
    spans = sorted(found.values())
    # nested forms ("only drafted" holds "drafted"): the outer one stands
    return [
        f for f in spans if not any(g is not f and g[0] <= f[0] and f[1] <= g[1] for g in spans)
    ]


_CHAIN = re.compile(r"\s*(?:,\s*)?(?:or|,|and/or)\s+(?:(?:a|an|the|maybe|perhaps)\s+)?", re.I)


def _future(text: str, forms: list[tuple[int, int, str, bool]], read: list[Stance]) -> list[Stance]:
    """`read` with each asserted form under a future or modal marker made hypothetical,
    and the forms chained to it as options (``could be a draft, final or archived``)."""
    result = list(read)
    for i, (start, _, _, _) in enumerate(forms):
        if result[i] != "asserted":
            continue
        chained = i > 0 and result[i - 1] == "hypothetical"
        chained = chained and bool(_CHAIN.fullmatch(text[forms[i - 1][1] : start]))
        if chained or _FUTURE.search(text[max(0, start - 40) : start]):
            result[i] = "hypothetical"
    return result


def asserted_statuses(text: str, kind: str) -> StatusReading:
    """The statuses normalised `text` asserts; `kind` is ``commitment`` or ``artifact``."""
    forms = _forms(text, kind)
    stance = _future(text, forms, stances(text, [(a, b) for a, b, *_ in forms], supersession=False))
    strong = {
        s for (_, _, s, firm), st in zip(forms, stance, strict=True) if firm and st == "asserted"
    }
    weak = {
        s
        for (_, _, s, firm), st in zip(forms, stance, strict=True)
        if not firm and st == "asserted"
    }
    implied = {
        _IMPLIED[kind][s]
        for (_, end, s, _), st in zip(forms, stance, strict=True)
        if st in ("negated", "hypothetical")
        and s in _IMPLIED[kind]
        and (_YET.search(text, end, end + 24) or _YET.search(text, max(0, end - 40), end))
    }
    chosen = strong or weak or implied
    if kind == "artifact" and chosen & {"SHARED", "ARCHIVED"}:
        chosen = chosen - {"FINAL"}  # a shared or archived document is final as well
    named = zip((s for _, _, s, _ in forms), stance, strict=True)
    unasserted = {(s, st) for s, st in named if st != "asserted"}
    return StatusReading(frozenset(chosen), len(forms), frozenset(unasserted))
