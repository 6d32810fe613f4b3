"""Neutral filler prose and the exact-size composition of generated tool results.

Filler is repetitive business prose about equipment, logistics and vendors. It carries
no facts: no identifiers, amounts, month-name dates or probe terms, so every answer in a
generated trace comes from a deliberately placed fact. `compose` builds a tool result of
an exact byte size with facts anchored at chosen offsets; it also remembers which units
are whole filler units, the only places the hard-distractors variant may rewrite.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from continuity.traces.prng import Rng
from continuity.traces.scenarios import Scenario

__all__ = ["DISTRACTOR_LABELS", "FillerSource", "compose", "distractor_unit"]

_VERBS = (
    "confirmed",
    "checked",
    "noted",
    "rechecked",
    "updated",
    "logged",
    "queried",
    "measured",
    "scheduled",
    "rearranged",
    "agreed",
    "flagged",
)
_LOGISTICS = (
    "the pallet labels",
    "the loading bay",
    "the delivery window",
    "the tail-lift van",
    "the storage shelving",
    "the packing list",
    "the invoice copy",
    "the site access",
    "the parking permit",
    "the goods-in desk",
    "the doorway width",
    "the floor protection",
    "the collection slot",
    "the spare keys",
    "the waste removal",
    "the cable ties",
    "the stock count",
    "the dust sheets",
    "the trolley route",
    "the lift dimensions",
)
_ROLES = (
    "the site manager",
    "the warehouse team",
    "the driver",
    "the accounts clerk",
    "the workshop lead",
    "the volunteer coordinator",
    "the duty manager",
    "the goods-in supervisor",
    "the estimator",
    "the dispatcher",
)
_TIMES = (
    "early in the morning",
    "before noon",
    "after lunch",
    "late in the afternoon",
    "at the start of the shift",
    "at the end of the day",
)
_QUANT = ("two", "three", "four", "five", "six", "a handful of", "several", "a dozen")
_TEMPLATES = (
    "{P} {v} {L} with {R} and asked for nothing else to change.",
    "As agreed, {E} should be handled {T}, with {L} kept clear for the team.",
    "{R} {v} {L} again; the note from the last visit still applies.",
    "There is no change to {O} this week, although {L} may need a second look.",
    "{P} mentioned that {q} crates of {E} parts are stacked near {L}.",
    "Please keep {L} free {T} so that {R} can move {E} without delays.",
    "The notes on {O} were {v} and filed with {D}.",
    "{R} prefers that {E} stays on its pallet until {L} has been {v}.",
    "We {v} {O} during the call, and {P} will circulate a short summary.",
    "The usual reminder applies: {L} is shared with the neighbouring unit {T}.",
    "{P} asked whether {D} reflects {O}; the answer is yes for now.",
    "Nothing in {D} contradicts what {R} said about {L}.",
    "For the record, {q} people will be needed to move {E} safely.",
    "The draft wording about {O} was {v} but not yet circulated.",
    "{R} will bring {q} spare straps and the trolley for {E}.",
    "If {L} is busy {T}, the fallback is the side entrance as before.",
    "The team {v} the checklist item on {O} and left a comment for {P}.",
    "A photo of {L} was added to the shared folder for reference.",
    "{P} is happy with the plan for {O} as long as {L} stays tidy.",
    "No further action is needed on {L}; {R} has it covered.",
    "The general point stands: {E} must be kept dry and off the floor.",
    "{P} and {R} walked through {O} and agreed the order of work.",
    "It is worth checking {L} {T}, because deliveries tend to bunch up.",
    "The minutes say {O} was discussed briefly and parked for later.",
)
# Every distractor unit starts with one of these labels and contains no newline.
DISTRACTOR_LABELS: tuple[str, ...] = (
    "Hypothetical correction, not a real change:",
    "Worked example only (not a real booking):",
    "Hypothetical scenario, for planning practice:",
    "Illustration from an old template, not our job:",
)
_DISTRACTOR_TEMPLATES = (
    "Hypothetical correction, not a real change: if the {label} were {id}, the {amount} "
    "would have been {money}. No action is needed.",
    "Worked example only (not a real booking): a reference such as {id} and a figure of "
    "{money} for {amount} are shown here for illustration.",
    "Hypothetical scenario, for planning practice: had {event} moved to {date}, the team "
    "would have rebooked. This did not happen.",
    "Illustration from an old template, not our job: reference {id}, {amount} {money}, "
    "date {date}. Ignore for this project.",
)


class FillerSource:
    """Filler units for one trace, from a pre-rendered pool of neutral sentences."""

    def __init__(
        self, rng: Rng, scenario: Scenario, people: Sequence[str], towns: Sequence[str]
    ) -> None:
        self.rng = rng
        self.people = tuple(people)
        self.towns = tuple(towns)
        pool = []
        for _ in range(360):
            template = rng.choice(_TEMPLATES)
            sentence = template.format(
                P=rng.choice(self.people),
                R=rng.choice(_ROLES),
                L=rng.choice(_LOGISTICS),
                E="the " + rng.choice(scenario.equipment),
                O=rng.choice(scenario.topics),
                D="the " + rng.choice(scenario.documents),
                T=rng.choice(_TIMES),
                q=rng.choice(_QUANT),
                v=rng.choice(_VERBS),
            )
            pool.append(sentence[0].upper() + sentence[1:])
        self.sentences = tuple(pool)

    def sentence(self) -> str:
        return self.sentences[self.rng.below(len(self.sentences))]

    def paragraph(self) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.between(3, 6)))

    def unit(self, kind: str, date: str) -> str:
        """One filler unit shaped for a tool kind (prose paragraph, chat line, entry)."""
        rng = self.rng
        if kind == "chat":
            first = rng.choice(self.people).split()[0]
            return f"[{rng.between(7, 18):02d}:{rng.below(60):02d}] {first}: {self.sentence()}"
        if kind == "calendar":
            start = rng.between(8, 16)
            return (
                f"{date} {start:02d}:{rng.choice(('00', '30'))}-{start + 1:02d}:00  "
                f"{rng.choice(self.towns)} planning slot\n    Notes: {self.sentence()} "
                f"{self.sentence()}"
            )
        if kind == "parcel":
            return (
                f"{date} {rng.between(6, 20):02d}:{rng.below(60):02d}  "
                f"{rng.choice(self.towns)} depot  In transit. {self.sentence()}"
            )
        return self.paragraph()


def compose(
    size: int,
    header: str,
    anchors: Sequence[tuple[int, str]],
    unit: Callable[[], str],
    *,
    separator: str = "\n\n",
    footer: str = "",
    replace: Callable[[str], str | None] | None = None,
) -> str:
    """Build text of exactly `size` characters.

    `header` comes first; each anchor's text starts at (or just after) its target
    offset; filler units fill the gaps; `footer` ends the text. `replace`, when given,
    may swap a whole filler unit for another of the same length (hard-distractors);
    it is never offered truncated units, facts, headers or footers.
    """
    parts = [header]
    length = len(header)

    def fill(until: int) -> None:
        nonlocal length
        while length < until:
            room = until - length
            piece = unit()
            chunk = separator + piece
            if len(chunk) <= room:
                if replace is not None:
                    swapped = replace(piece)
                    if swapped is not None:
                        if len(swapped) != len(piece):
                            raise AssertionError("a distractor must keep the unit's length")
                        chunk = separator + swapped
                parts.append(chunk)
                length += len(chunk)
                continue
            cut = chunk[:room]
            space = cut.rfind(" ")
            if space > len(separator):
                cut = cut[:space]
            cut = cut.ljust(room)
            parts.append(cut)
            length += room

    for offset, text in sorted(anchors):
        fill(offset - len(separator))
        parts.append(separator + text)
        length += len(separator) + len(text)
    fill(size - len(footer))
    parts.append(footer)
    text = "".join(parts)
    if len(text) != size:
        raise AssertionError(f"composed {len(text)} characters, wanted {size}")
    return text


def distractor_unit(
    rng: Rng, length: int, values: dict[str, str], filler: Callable[[], str]
) -> str:
    """A labelled hypothetical paragraph of exactly `length` characters."""
    text = rng.choice(_DISTRACTOR_TEMPLATES).format(**values)
    while len(text) < length:
        text += " " + filler()
    if len(text) > length:
        cut = text[:length]
        space = cut.rfind(" ")
        text = (cut[:space] if space > 0 else cut).ljust(length)
    return text
