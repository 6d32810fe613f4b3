"""The Unicode CLDR data the scorer reads, and how its snapshots are made.

`babel` ships the CLDR data: currency signs, codes, names and minor digits, and every
locale's month names. Reading them takes babel's 1,100 locales, about two seconds, too
slow for every scorer start; so `build_currencies` and `build_months` read them once and
``python3 -m continuity.probes.cldr`` writes the results as Python modules the scorer
imports (`SNAPSHOTS`: `continuity.probes.currency_table`, read by
`continuity.probes.currencies`; `continuity.probes.month_table`, read by
`continuity.probes.calendar`). A test holds each snapshot equal to what the installed
babel (and wordfreq, which says which words are ordinary English) give, so an upgrade
that changes the data fails until the snapshots are rewritten; the snapshots are scorer
modules, so a rewrite is a new scorer version.
"""

from __future__ import annotations

import pprint
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path

from continuity.probes.normalise import normalise

__all__ = ["SNAPSHOTS", "build_currencies", "build_months", "render"]

# At or above this Zipf frequency (wordfreq's English list) a currency unit is "word-like"
# (continuity.probes.currencies); at or above `_COMMON_ZIPF` a month name of another
# language is an English word too (``mars``, ``julio``) and reads only before a year.
_WORD_ZIPF = 4.0
_COMMON_ZIPF = 3.0


def _sign(text: str) -> str:
    """A CLDR sign as an answer's normalised text writes it (bidi marks dropped)."""
    return normalise("".join(c for c in text if unicodedata.category(c) != "Cf"))


def build_currencies() -> dict[str, object]:
    """The tables of `continuity.probes.currency_table` (what each holds:
    `continuity.probes.currencies`)."""
    from babel import Locale, __version__
    from babel.core import get_global
    from babel.localedata import locale_identifiers
    from babel.numbers import get_currency_name, get_currency_precision, list_currencies
    from wordfreq import zipf_frequency

    # Currencies in tender today: historic codes ("LVR", "ARM", "BAD") and their signs
    # would read identifiers and words as money.
    codes = sorted(
        {
            code
            for entries in get_global("territory_currencies").values()
            for code, _start, end, is_tender in entries
            if end is None and is_tender
        }
        & set(list_currencies())
    )
    signs: dict[str, set[str]] = {}
    for identifier in locale_identifiers():
        for code, sign in Locale.parse(identifier).currency_symbols.items():
            written = _sign(sign)
            if re.fullmatch(r".*[^\W\d_]\.", written):
                written = written[:-1]  # "kr." is "kr" at a sentence's end: one sign
            # The generic sign means "some currency": an amount with it is unreadable.
            if code in codes and written and written != code and written != "¤":
                signs.setdefault(written, set()).add(code)
    english = Locale.parse("en")
    names: dict[str, set[str]] = {}
    for code in codes:
        for form in {get_currency_name(code, count, "en") for count in (None, 1, 2)}:
            written = normalise(form).lower()
            names.setdefault(written, set()).add(code)
            names.setdefault(written.split()[-1], set()).add(code)
    english_signs = {
        sign: code
        for code, sign in english.currency_symbols.items()
        if sign not in (code, "¤") and not any(c.isalpha() for c in sign)
    }
    # Word-likeness is asked of single words only (wordfreq splits "A$" into "a").
    words = {w.lower().rstrip(".") for w in [*codes, *signs, *names]}
    wordlike = sorted(w for w in words if w.isalpha() and zipf_frequency(w, "en") >= _WORD_ZIPF)
    return {
        "BABEL_VERSION": __version__,
        "CODES": tuple(codes),
        "SIGNS": {s: tuple(sorted(c)) for s, c in sorted(signs.items())},
        "NAMES": {n: tuple(sorted(c)) for n, c in sorted(names.items())},
        "ENGLISH_SIGNS": dict(sorted(english_signs.items())),
        "PRECISIONS": {
            code: digits for code in codes if (digits := get_currency_precision(code)) != 2
        },
        "WORDLIKE": tuple(wordlike),
        # Every currency sign Unicode has (category Sc): one not in SIGNS is unknown.
        "SC_CHARS": "".join(
            c for c in map(chr, range(0x110000)) if unicodedata.category(c) == "Sc"
        ),
    }


def build_months() -> dict[str, object]:
    """The tables of `continuity.probes.month_table`: every locale's full month names
    (both grammatical forms CLDR has, ``novembre``, ``listopada``) of three letters or
    more, English ones left to the English reader, each with the months it names in any
    language (``listopad`` is November in Polish and October in Croatian); and those that
    are ordinary English words as well."""
    from babel import Locale, __version__
    from babel.localedata import locale_identifiers
    from wordfreq import zipf_frequency

    english = Locale.parse("en")
    english_names = {
        normalise(name).lower().rstrip(".")
        for context in ("format", "stand-alone")
        for width in ("wide", "abbreviated")
        for name in english.months[context][width].values()
    }
    months: dict[str, set[int]] = {}
    for identifier in locale_identifiers():
        locale = Locale.parse(identifier)
        for context in ("format", "stand-alone"):
            for number, name in locale.months[context]["wide"].items():
                written = normalise(name).lower()
                if written.isalpha() and len(written) >= 3 and written not in english_names:
                    months.setdefault(written, set()).add(number)
    return {
        "BABEL_VERSION": __version__,
        "MONTHS": {name: tuple(sorted(n)) for name, n in sorted(months.items())},
        "COMMON": tuple(sorted(n for n in months if zipf_frequency(n, "en") >= _COMMON_ZIPF)),
    }


def _annotation(value: object) -> str:
    if isinstance(value, dict):
        item = next(iter(value.values()))
        inner = "tuple[int, ...]" if isinstance(item, tuple) and isinstance(item[0], int) else ""
        inner = inner or ("tuple[str, ...]" if isinstance(item, tuple) else type(item).__name__)
        return f"dict[str, {inner}]"
    return "tuple[str, ...]" if isinstance(value, tuple) else type(value).__name__


def render(table: dict[str, object], reader: str) -> str:
    """A snapshot module's source for `table`, read by module `reader`; lines of at most
    100 characters."""
    lines = [
        '"""CLDR data from babel: a generated snapshot (`continuity.probes.cldr`).',
        "",
        "Written by ``python3 -m continuity.probes.cldr``; do not edit. What each table holds",
        f'is in `{reader}`."""',
        "",
        "# ruff: noqa: RUF001",
        "from __future__ import annotations",
        "",
        "__all__ = [",
        *(f'    "{name}",' for name in sorted(table)),
        "]",
        "",
        "# fmt: off",
    ]
    for name, value in table.items():
        lines.append(f"{name}: {_annotation(value)} = (")
        body = pprint.pformat(value, width=92, compact=True)
        lines += ["    " + line for line in body.splitlines()]
        lines.append(")")
    lines.append("# fmt: on")
    return "\n".join(lines) + "\n"


# Snapshot file (beside this module) -> how it is built, and the module that reads it.
SNAPSHOTS: dict[str, tuple[Callable[[], dict[str, object]], str]] = {
    "currency_table.py": (build_currencies, "continuity.probes.currencies"),
    "month_table.py": (build_months, "continuity.probes.calendar"),
}


if __name__ == "__main__":
    for file_name, (build, reader) in SNAPSHOTS.items():
        target = Path(__file__).with_name(file_name)
        target.write_text(render(build(), reader), encoding="utf-8")
        print(f"wrote {target}")
