"""Abstention: whether an answer declines, and whether it still guesses.

An answer abstains when a clause of it says the thing is unknown, was never mentioned or
cannot be found, in any tense, contraction or word order: ``UNKNOWN``; a negation before
a verb of telling (``wasn't mentioned``, ``we never discussed a marquee``, ``it did not
come up``, ``nobody specified``) or of knowing or finding (``I don't know``, ``I can't
find``, ``I don't recall``, ``I don't have any information``); ``no record``/``no
information``/``no idea``/``no mention``; ``there is no ... in our conversation``;
``nothing about``; ``not sure``/``unsure``/``unclear``; ``not in our conversation``;
not at hand (``I don't have it to hand``, ``not on file``, ``not in front of me``);
deferring to the source (``I'd need to check the original email``); and asking for the
source again (``could you paste the confirmation again?``), even as a question.
Any other phrase inside a question (from the clause that opens it: ``I don't have that
to hand - could you resend it?`` declines before it asks), in an ``if``/``whether``
clause, or in a clause that tells someone how to decline (``say that it never came up
and answer UNKNOWN``, ``end with the line ANSWER: UNKNOWN``) does not abstain.

`guesses` finds a clause that, outside any abstention, commits to something anyway
(``it's probably ...``, ``I think it was ...``, ``it might be ...``): an answer that
abstains and then guesses has not abstained.
"""

from __future__ import annotations

import re

from continuity.probes.polarity import clause_bounds, sentence_bounds, stances

__all__ = ["HEDGE", "abstains", "abstention_clauses", "claims", "guesses", "only_declines"]

_NEG = r"(?:\bnot|\bnever|n't|\bno one|\bnobody|\bunable to|\bfailed to|\bcannot)"
_GAP = r"\s+(?:[\w']+\s+){0,5}?"
_TELLING = (
    r"(?:mention|discuss|talk|rais|cover|brought|bring|specif|stat|said|say|note|appear"
    r"|feature|refer|record|includ|exist|arrang|book|hir|organi[sz]|set|come\s+up|gave|giv"
    r"|told|provid|ask|shar"
    r"|came\s+up|comes\s+up|crop|show\s+up|turn\s+up|surfac)\w*"
)
_KNOWING = (
    r"(?:find|found|see|seen|saw|locat|recall|remember|know|knew|tell|determin|confirm"
    r"|identif|access|verif|spot|retriev|answer|have|had|got)\w*"
)
_ABSTAIN = re.compile(
    r"\bunknown\b"
    + r"|"
    + _NEG
    + _GAP
    + r"\b"
    + _TELLING
    + r"|"
    + _NEG
    + r"\s+(?:\w+\s+){0,2}?\b"
    + _KNOWING
    + r"|\bno\s+(?:\w+\s+){0,2}?(?:information|info|record|records|mention|mentions|details"
    r"|data|indication|evidence|trace|idea|knowledge|reference|note|notes|sign|recollection"
    r"|memory|recall)\b"
    # Idioms of not remembering: "doesn't ring a bell", "rings no bells", "I draw a blank".
    r"|(?:\bnot|\bnever|n't)\s+(?:\w+\s+)?ring\s+(?:a|any)\s+bells?\b|\brings?\s+no\s+bells?\b"
    r"|\bdr[ae]w(?:s|ing)?\s+a\s+blank\b"
    r"|\b(?:there\s+(?:is|was|are|were|has been|have been)|there's|i\s+(?:see|found|have|had)"
    r"|we\s+(?:have|had))\s+no\b"
    r"|\bno\s+\w+(?:\s+\w+)?\s+(?:was|were|has\s+been|had\s+been|is|are|got)\b"
    r"|\bnothing\s+(?:about|on|regarding|related|in|was|has been|came|comes|that|like)\b"
    r"|\bnot\s+(?:\w+\s+)?(?:sure|certain|aware|known|available|specified|clear)\b|\bunsure\b"
    r"|\bunclear\b|\bno such\b|\bnever\s+heard\b"
    r"|\bnot\s+(?:\w+\s+){0,3}?(?:in|part of|anywhere in|from)\s+(?:our|the|this|my|your)\s+"
    r"(?:conversation|chat|discussion|history|context|messages|records|notes|thread)"
    # Not at hand: "I haven't got it in front of me", "it's not on file".
    r"|(?:\bnot|n't)\s+(?:\w+\s+){0,3}?(?:to\s+hand|on\s+hand|on\s+file|on\s+record"
    r"|in\s+front\s+of\s+me|handy|with\s+me)\b"
    # Deferring to the source: "I'd need to check the original email".
    r"|\b(?:i|we|you)(?:'d|'ll|\s+would|\s+will)\s+(?:\w+\s+)?(?:need|have)\s+to\s+"
    r"(?:check|look|confirm|verify|dig|find|search|go\s+back)\b",
    re.IGNORECASE,
)
# Asking for the source again declines even as a question: "could you paste it again?".
_REQUEST_SOURCE = re.compile(
    r"\b(?:could|can|would|will)\s+you\s+(?:please\s+)?(?:re-?send|re-?paste|paste|send|forward"
    r"|re-?share|share|remind\s+me|give\s+me|dig\s+out|look\s+up|check|confirm)\b"
    r"|\bplease\s+(?:re-?send|re-?paste|paste|forward|re-?share)\b",
    re.IGNORECASE,
)
_QUALIFIER = re.compile(r"\b(?:if|whether|unless)\b[^,.;:!?]*$", re.IGNORECASE)
# A clause that tells someone how to decline ("say that it never came up and answer
# UNKNOWN", "end with the line ANSWER: UNKNOWN": the answer format echoed back) is an
# instruction, not a refusal.
_DIRECTIVE = re.compile(
    r"\W*(?:and\s+|then\s+)?(?:please\s+)?(?:(?:say|answer|reply|respond|write|state)\s+"
    r"(?:that|with|so|it|unknown)\b|(?:end|finish|close)\s+(?:your\s+(?:reply|answer)\s+)?with\b)",
    re.IGNORECASE,
)
_GUESS = re.compile(
    r"\b(?:probably|likely|presumably|perhaps|maybe|possibly|i\s+(?:think|believe|guess|assume"
    r"|suspect|reckon)|my\s+(?:best\s+)?guess(?:\s+is)?|best\s+guess)\s+(?:that\s+)?"
    r"(?:it|that|this|the\s+\w+|they|we|he|she|you)?\s*(?:'s|'re|is|was|were|are|will\s+be"
    r"|would\s+be|cost|costs|charged|booked|arranged|hired|used|had|came|went)\b"
    r"|\b(?:it|that|this|they)\s+(?:might|may|could|must|would)\s+(?:have\s+)?be(?:en)?\b"
    r"|\bi(?:'d|\s+would)\s+(?:guess|say|think|assume|imagine)\b|,\s+i\s+(?:think|believe|guess)\b",
    re.IGNORECASE,
)


_CLAIM = re.compile(
    r"\b(?:it|that|this|they|he|she|which)(?:'s|'re|\s+(?:is|was|were|are|cost|costs|charged"
    r"|came|comes|would\s+be|will\s+be|might\s+be|may\s+be|could\s+be))\b",
    re.IGNORECASE,
)
# A value offered as an estimate rather than reported: "about £300", "most venues charge
# ...", "usually": after a decline it is a guess at the answer.
_ESTIMATE = re.compile(
    r"\b(?:about|around|roughly|approximately|approx|circa|something\s+like|in\s+the\s+region"
    r"\s+of|ballpark)\s*$",
    re.IGNORECASE,
)
_GENERIC_CLAIM = re.compile(
    r"\b(?:typically|usually|normally|generally|on\s+average|tends?\s+to|most\s+\w+\s+"
    r"(?:charge|cost|ask|run|are|go\s+for))\b",
    re.IGNORECASE,
)
# The asked thing handed over by a pronoun object: "we booked it for £40", "I paid them".
_HANDED = re.compile(
    r"\b(?:we|you|i|they)\s+(?:\w+\s+)?\w+ed\s+(?:it|them)\b|\b(?:we|you|i|they)\s+"
    r"(?:paid|got|bought|set|put|made|took|gave|sold|kept|left|sent|had)\s+(?:it|them)\b",
    re.IGNORECASE,
)
# A report of what the conversation did hold, without a verb: "- only the marquee, ...".
_ONLY = re.compile(r"\W*(?:(?:but|though)\s+)?(?:only|just|merely|simply)\b", re.IGNORECASE)
_RELATIVE = re.compile(r"\W*(?:which|that|who|whose)\b", re.IGNORECASE)
_NEGATIVE = re.compile(r"\b(?:not|never|no)\b|n't\b", re.IGNORECASE)
# A clause reporting what the conversation did hold ("the only van we discussed was ...",
# "you mentioned ..."): a value there describes it, unless the clause names the subject or
# the verb's object is a pronoun for it ("we booked it for £400").
_HELD = re.compile(
    r"\b(?:we|you|i)\s+(?:only\s+|did\s+|had\s+|have\s+)?(?:discussed|talked\s+about"
    r"|mentioned|covered|went\s+over|ordered|booked|arranged)\b(?!\s+(?:it|them|that|this|one)\b)",
    re.IGNORECASE,
)


# Where a question starts within its sentence: an auxiliary or a wh-word opening a clause.
_QUESTION_START = re.compile(
    r"\W*(?:(?:and|but|so|or)\s+)?(?:could|can|would|will|do|does|did|is|are|was|were|have"
    r"|has|had|should|shall|may|might|what|which|who|whom|whose|where|when|why|how)\b",
    re.IGNORECASE,
)


def _asks(text: str, position: int) -> bool:
    """Whether `position` lies in a question: a sentence ending in ``?``, from the first
    clause that opens as a question (``I don't have it to hand - could you paste it?``
    declines, then asks). With no such opener the whole sentence asks."""
    for start, end in sentence_bounds(text):
        if start <= position < end:
            if not text[start:end].rstrip().endswith("?"):
                return False
            openers = [
                a
                for a, _ in clause_bounds(text)
                if start <= a < end and _QUESTION_START.match(text, a)
            ]
            return not openers or position >= openers[0]
    return False


def abstention_clauses(text: str) -> list[tuple[int, int]]:
    """The clauses of normalised `text` that abstain (see the module doc)."""
    found: list[tuple[int, int]] = []
    quoted = False  # the clause after a directive's colon is what it says to write
    for start, end in clause_bounds(text):
        if quoted or _DIRECTIVE.match(text, start):
            clause = text[start:end].rstrip()
            quoted = clause.endswith(":") and clause.lower().endswith("answer:")
            continue
        for m in _ABSTAIN.finditer(text, start, end):
            if _QUALIFIER.search(text, start, m.start()) or _asks(text, m.start()):
                continue
            found.append((start, end))
            break
        else:
            request = _REQUEST_SOURCE.search(text, start, end)
            if request and not _QUALIFIER.search(text, start, request.start()):
                found.append((start, end))
    return found


def abstains(text: str) -> bool:
    return bool(abstention_clauses(text))


def only_declines(text: str) -> bool:
    """Whether every clause of normalised `text` that holds a word abstains: a reply that
    is a refusal and nothing else (a draft with "I'm not sure" in one clause is not)."""
    declined = abstention_clauses(text)
    worded = [(a, b) for a, b in clause_bounds(text) if re.search(r"[^\W\d_]", text[a:b])]
    return bool(declined) and all(
        any((a <= start and end <= b) or (start <= a and b <= end) for a, b in declined)
        for start, end in worded
    )


# A word that hedges: it may offer a guess ("probably a lemon cake", "it could be the 2 kW
# one") or only soften a decline ("maybe you mean someone else?"). One vocabulary, read by
# `guesses` here and by the value scorers' candidate doubt.
HEDGE = re.compile(
    r"\b(?:i\s+(?:think|believe|guess|reckon|suspect)|my\s+guess|probably|likely|presumably"
    r"|perhaps|maybe|possibly|might\s+(?:have\s+)?be|could\s+(?:have\s+)?be)\b",
    re.IGNORECASE,
)


def guesses(text: str) -> bool:
    """Whether a clause outside every abstention commits to an answer anyway: a guess
    (``it's probably ...``, ``I'd guess ...``), or a claim (``it was the 2 kW one``) in a
    sentence that hedges it (``..., I believe``)."""
    declined = abstention_clauses(text)
    sentences = sentence_bounds(text)
    for start, end in clause_bounds(text):
        if (start, end) in declined or _asks(text, start):
            continue
        if _GUESS.search(text, start, end):
            return True
        if _CLAIM.search(text, start, end) and not _NEGATIVE.search(text, start, end):
            sentence = next((a, b) for a, b in sentences if a <= start < b or b == len(text))
            if HEDGE.search(text, *sentence):
                return True
    return False


def claims(text: str, position: int, subject: tuple[str, ...]) -> bool:
    """Whether the value at `position` is offered as the answer: its clause lies outside
    every abstention and names the asked-about `subject`, hands it over with a pronoun
    (``it's ...``, ``they charged ...``), guesses, or is little more than the value. A
    clause that reports what the conversation did hold (``the only van we discussed was
    ...``, ``you mentioned ...``) without naming the subject or guessing offers none."""
    clauses = clause_bounds(text)
    for index, (start, end) in enumerate(clauses):
        if not start <= position < end:
            continue
        if (start, end) in abstention_clauses(text):
            return False
        clause = text[start:end]
        words = re.findall(r"[A-Za-z]+", clause)
        spans = [m.span() for s in subject for m in re.finditer(re.escape(s), text[:end], re.I)]
        spans = sorted(span for span in spans if span[0] >= start)
        named = "asserted" in stances(text, spans, supersession=False)
        guessed = bool(
            _GUESS.search(clause)
            or _ESTIMATE.search(text, start, position)
            or _GENERIC_CLAIM.search(clause)
            or _HANDED.search(clause)
        )
        # A relative clause ("..., which costs £900") belongs to the clause before it.
        held_by = clauses[index - 1] if index and _RELATIVE.match(clause) else (start, end)
        held = bool(_HELD.search(text, *held_by) or _ONLY.match(text, held_by[0]))
        if not named and held and not guessed:
            return False  # "the only heater we discussed was ..., and that's the first one"
        return bool(named or _CLAIM.search(clause) or guessed or len(words) <= 3)
    return False
