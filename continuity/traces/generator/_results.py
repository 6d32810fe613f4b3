"""What each tool result of a generated trace says: its fact, header, body and decoys.

`record_output` writes one record's output: a kind-specific header (and footer), the
record's fact at its placement (near the head, or in the middle of a long thread), and
neutral filler from `continuity.traces.filler` up to the record's exact size.
`distractor_replacer` swaps some filler units for labelled hypothetical corrections of
the same length, from a second, independent stream.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from continuity.traces.filler import FillerSource, compose, distractor_unit
from continuity.traces.generator._cast import ID_ALPHABET, LETTERS, World, long_date
from continuity.traces.generator._placement import Record
from continuity.traces.prng import Rng

__all__ = ["distractor_replacer", "record_output"]


def _record_fact(world: World, record: Record) -> tuple[str, str, str]:
    """(subject or title, fact text placed in the body, fact placement) for a record."""
    s, w = world.scenario, world
    role = record.role
    if role == "account":
        return (
            f"Welcome to {w.vendor}",
            f"Welcome to {w.vendor}. Your {s.account_label} is {w.account_ref}. Please "
            "quote it on every order and call.",
            "head",
        )
    if role == "date0":
        return (
            f"Confirming {s.event}",
            f"{w.contact} here: we can confirm {s.event} for {w.dates[0]}. I'll send the "
            "paperwork separately.",
            "head",
        )
    if role == "amount0":
        return (
            "Quotation",
            f"Quoted total for {s.amount_subject}: {w.amounts[0]}, valid for thirty days.",
            "head",
        )
    if role == "secret":
        return (
            f"Your {s.portal} access",
            f"Your {s.portal} account is ready.\nUsername: {w.owner_email}\nTemporary "
            f"password: {w.secret}\nPlease change it after your first sign-in.",
            "head",
        )
    if role == "provisional":
        return (
            "Provisional booking",
            f"We have pencilled you in. Provisional {s.booking_label}: "
            f"{w.provisional_ref}. The final reference will follow in the "
            f"{s.booking_pack}.",
            "head",
        )
    if role == "mid":
        return (
            f"Re: {s.topics[1]}",
            f"{w.contact} wrote: I have opened a {s.case_label} for this, {w.case_id}. "
            "Please use it if you chase us.",
            "middle",
        )
    if role == "amount1":
        return (
            f"Revised figure: {s.amount_subject}",
            f"Revised figure for {s.amount_subject}: {w.amounts[1]}. This replaces the "
            f"earlier quote of {w.amounts[0]}.",
            "head",
        )
    if role == "date2":
        return (
            f"Change to {s.event}",
            f"Apologies for another change: {s.event} has moved again and is now "
            f"confirmed for {w.dates[2]}.",
            "head",
        )
    return ("", "", "")


def _header(world: World, record: Record, subject: str, rng: Rng) -> tuple[str, str]:
    s, w = world.scenario, world
    if record.kind == "email":
        sender = w.contact if record.role else rng.choice(w.people)
        local = sender.lower().replace(" ", ".")
        return (
            f"From: {sender} <{local}@{w.domain}>\nTo: {w.owner} <{w.owner_email}>\n"
            f"Date: {record.date}\nSubject: {subject or rng.choice(s.topics).capitalize()}\n\n"
            f"Hello {w.owner.split()[0]},",
            f"\n\nBest regards,\n{sender}\n{w.vendor}",
        )
    if record.kind == "document":
        title = (
            s.booking_pack.capitalize()
            if record.role == "booking_pack"
            else (subject or rng.choice(s.documents).capitalize())
        )
        head = f"{title} - {w.vendor}\nVersion {rng.between(2, 9)}, last edited {record.date}\n"
        if record.role == "booking_pack":
            head += (
                f"{s.booking_label.capitalize()}: {w.booking_ref} (replaces the provisional "
                "reference)\n"
            )
        return head, ""
    if record.kind == "web":
        site = rng.choice(s.sites)
        return f"{site} | {rng.choice(s.topics).capitalize()}\nhttps://{site}.example/\n", ""
    if record.kind == "chat":
        return f"#{rng.choice(s.channels)} - messages since {record.date}\n", ""
    if record.kind == "calendar":
        return f"Calendar for {w.owner}, from {record.date}\n", ""
    return f"{w.carrier} tracking: {rng.choice(s.shipments)}\nStatus: In transit\n", ""


def record_output(
    rng: Rng,
    world: World,
    record: Record,
    filler: FillerSource,
    replace: Callable[[str], str | None] | None,
) -> str:
    subject, fact, placement = _record_fact(world, record)
    header, footer = _header(world, record, subject, rng)
    anchors: list[tuple[int, str]] = []
    if placement == "head":
        anchors.append((len(header) + rng.between(150, 900), fact))
    elif placement == "middle":
        anchors.append((record.size * rng.between(40, 55) // 100, fact))
    separator = "\n" if record.kind in ("chat", "calendar", "parcel") else "\n\n"
    return compose(
        record.size,
        header,
        anchors,
        lambda: filler.unit(record.kind, record.date),
        separator=separator,
        footer=footer,
        replace=replace,
    )


def distractor_replacer(seed: int, world: World) -> Callable[[str], str | None]:
    """Swap about one long filler unit in seven for a labelled hypothetical one."""
    rng = Rng.derive(seed, "hard-distractors")
    s = world.scenario
    padding = FillerSource(rng, s, world.people, world.towns)
    real = {
        world.account_ref,
        world.case_id,
        world.provisional_ref,
        world.booking_ref,
        *world.dates,
        *world.amounts,
    }
    prefix_acc, prefix_case, prefix_book = s.id_prefixes

    def decoy_id() -> str:
        while True:
            form = rng.below(3)
            if form == 0:
                value = f"{prefix_acc}-{rng.token(ID_ALPHABET, 6)}"
            elif form == 1:
                value = f"{prefix_case}-{rng.between(10_000, 99_999)}-{rng.token(LETTERS, 2)}"
            else:
                value = f"{prefix_book}-{rng.token(ID_ALPHABET, 4)}-{rng.token(ID_ALPHABET, 4)}"
            if not any(value in r or r in value for r in real):
                return value

    def replace(piece: str) -> str | None:
        if len(piece) < 240 or not rng.chance(1, 7):
            return None
        while True:
            amount = f"${rng.between(1_000, 12_000):,}.00"
            day = world.start + dt.timedelta(days=rng.between(35, 95))
            date = long_date(day)
            if amount not in real and date not in real:
                break
        values = {
            "label": rng.choice((s.account_label, s.case_label, s.booking_label)),
            "id": decoy_id(),
            "amount": s.amount_subject,
            "money": amount,
            "event": s.event,
            "date": date,
        }
        return distractor_unit(rng, len(piece), values, padding.sentence)

    return replace
