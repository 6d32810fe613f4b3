"""`normalise` is fast (regex folding, str.split), and means exactly the reference: NFKC
after removing invisibles, then the fold table through `str.translate`, then whitespace
runs through the regex ``\\s+``. Compared on arbitrary text, weighted toward the code
points the table folds and the spaces it collapses."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.probes import normalise as module

_SPECIAL = "".join(chr(c) for c in module._TABLE) + "\u00a0\u2003\u3000\x1c\x1f\t\n\r\x0b\x0c "
_SPACE = re.compile(r"\s+")


def reference(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text.translate(module._INVISIBLE))
    return _SPACE.sub(" ", folded.translate(module._TABLE)).strip()


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=12),
            st.text(alphabet=_SPECIAL, max_size=6),
            st.text(alphabet="Ａ１ﬁ①\u0301\u0327e-_`'", max_size=6),
        ),
        max_size=12,
    )
)
def test_normalise_equals_the_reference(parts: list[str]) -> None:
    text = "".join(parts)
    assert module.normalise(text) == reference(text)


def test_every_unicode_space_collapses_as_the_regex_does() -> None:
    for code in range(0x110000):
        char = chr(code)
        assert bool(_SPACE.fullmatch(char)) == char.isspace(), hex(code)
