"""The witness is an export, the same rule at registration (source) and at run time."""

from __future__ import annotations

import pytest

from continuity.memory import pack
from continuity.roles.guidance import RENDERER_PATH, WITNESS, exports_witness
from continuity.roles.receipt import witness_present
from tests.conftest import REPO


@pytest.mark.parametrize(
    ("source", "exported"),
    [
        (f'__all__ = ["{WITNESS}"]\n{WITNESS} = "use get with a packed id"\n', True),
        (f'__all__ = ("{WITNESS}",)\n{WITNESS}: str = ("a" "b")\n', True),
        (f"# {WITNESS} used to be here\nx = 1\n", False),  # a mention only
        (f'"""{WITNESS} docs."""\n__all__ = ["{WITNESS}"]\n', False),  # listed, never assigned
        (f'{WITNESS} = "text"\n__all__ = ["other"]\n', False),  # assigned, not exported
        (f'__all__ = ["{WITNESS}"]\n{WITNESS} = 3\n', False),  # not text
        (f"def f():\n    {WITNESS} = 'local'\n__all__ = ['{WITNESS}']\n", False),  # local
        (b"def (:\n".decode(), False),  # does not parse
    ],
)
def test_only_an_exported_string_is_the_witness(source: str, exported: bool) -> None:
    assert exports_witness(source.encode()) is exported


def test_the_renderer_at_this_revision_exports_it_both_ways() -> None:
    assert exports_witness((REPO / RENDERER_PATH).read_bytes())
    assert witness_present() and WITNESS in pack.__all__
