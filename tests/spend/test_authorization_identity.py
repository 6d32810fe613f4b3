"""Single use by what is authorized, not by its spelling (issue 36, item 5): every
respelling of a spent authorization's id (a space at either end, another case,
full-width letters), of its approver or of its approval reference burns the same
identity and is refused ``lookup_authorization_consumed``; a genuinely different
authorization is not."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from continuity.errors import SpendError
from continuity.spend import consumption
from continuity.spend.authorization import (
    Authorization,
    account_commitment,
    validate_authorization,
)
from continuity.spend.consumption import REAL_DOMAIN, canonical_text, consume, registry_entry
from continuity.spend.lease import acquire_lease
from tests.spend.test_authorization import SALT, _authorization, _bindings, _credentials

_ID = "Auth-Pilot-0001"


def _width(text: str) -> str:
    """`text` in full-width letters and digits (NFKC maps them back)."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


VARIANTS = [
    {"id": _ID + " "},
    {"id": " " + _ID},
    {"id": "\t" + _ID + "\u3000"},  # a tab and an ideographic space
    {"id": _ID.upper()},
    {"id": _ID.lower()},
    {"id": _width(_ID)},
    {"id": _width(_ID.swapcase()) + " "},
    {"approver": " OWNER "},
    {"approver": _width("owner")},
    {"approval_reference": "04200"},
]


@pytest.fixture
def credentials(tmp_path: Path) -> Path:
    return _credentials(tmp_path / "auth.json", "acct-1")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    made = tmp_path / "home"
    made.mkdir(mode=0o700)
    monkeypatch.setattr(consumption, "_home", lambda: made)  # only the home lookup
    return made


def _raw(credentials: Path, **change: Any) -> bytes:
    return _authorization(credentials, **{"id": _ID, **change})


def _pilot(tmp_path: Path, name: str, raw: bytes, credentials: Path) -> consumption.Claim:
    """One pilot's consumption of `raw`: validated, then burned under a fresh root."""
    handle = validate_authorization(raw, expected=_bindings(credentials))
    root = tmp_path / "runs" / name
    root.mkdir(parents=True, mode=0o700)
    lease = acquire_lease(root)
    try:
        return consume(
            domain=REAL_DOMAIN,
            authorization_id=handle.authorization_id,
            raw_sha256=handle.raw_sha256,
            output_root=root,
            run_id=f"run-{name}",
            epoch="epoch-1",
            lease=lease,
            revalidate=lambda: None,
            checkouts=[],
            environ={},
            identity=handle.identity,
        )
    finally:
        lease.release()


@pytest.mark.parametrize("change", VARIANTS, ids=[repr(v) for v in VARIANTS])
def test_a_respelled_spent_authorization_is_consumed_already(
    home: Path, tmp_path: Path, credentials: Path, change: dict[str, str]
) -> None:
    first = _pilot(tmp_path, "first", _raw(credentials), credentials)
    assert registry_entry(REAL_DOMAIN, _ID, tmp_path, first.identity).is_dir()
    again = _raw(credentials, **change)
    with pytest.raises(SpendError) as caught:
        _pilot(tmp_path, "second", again, credentials)
    assert caught.value.code == "lookup_authorization_consumed"
    assert not (tmp_path / "runs" / "second" / consumption.CONSUMED_MARKER).exists()


@pytest.mark.parametrize(
    "change",
    [
        {"id": "Auth-Pilot-0002"},
        {"id": _ID + "-b"},
        {"approval_reference": "4201"},
        {"approver": "another owner"},
        {"salt": "6b" * 32, "account_commitment": account_commitment("6b" * 32, "acct-1")},
    ],
)
def test_a_genuinely_different_authorization_is_not_consumed(
    home: Path, tmp_path: Path, credentials: Path, change: dict[str, str]
) -> None:
    first = _pilot(tmp_path, "first", _raw(credentials), credentials)
    second = _pilot(tmp_path, "second", _raw(credentials, **change), credentials)
    assert first.identity != second.identity


def test_an_id_burned_by_the_registry_before_identities_stays_burned(
    home: Path, tmp_path: Path, credentials: Path
) -> None:
    """An entry keyed ``sha256(domain NUL id)`` (the registry's earlier keys) still burns
    the id, literal or canonical."""
    legacy = consumption._key(REAL_DOMAIN, canonical_text(_ID))
    registry = consumption.registry_root(REAL_DOMAIN, tmp_path)
    (registry / legacy).mkdir(parents=True, mode=0o700)
    with pytest.raises(SpendError) as caught:
        _pilot(tmp_path, "first", _raw(credentials, id=_ID.lower() + " "), credentials)
    assert caught.value.code == "lookup_authorization_consumed"


def test_the_faux_smoke_burns_the_canonical_id(home: Path, tmp_path: Path) -> None:
    """A consumption without an artifact (no identity given) burns the id's canonical
    form: a respelled id is spent too."""
    for name, spelled in (("one", "faux-A"), ("two", " FAUX-a ")):
        root = tmp_path / "runs" / name
        root.mkdir(parents=True, mode=0o700)
        lease = acquire_lease(root)
        options: dict[str, Any] = {
            "domain": REAL_DOMAIN, "authorization_id": spelled, "raw_sha256": "0" * 64,
            "output_root": root, "run_id": "r", "epoch": "e", "lease": lease,
            "revalidate": lambda: None, "checkouts": [], "environ": {},
        }  # fmt: skip
        try:
            if name == "one":
                consume(**options)
            else:
                with pytest.raises(SpendError) as caught:
                    consume(**options)
                assert caught.value.code == "lookup_authorization_consumed"
        finally:
            lease.release()


@pytest.mark.parametrize("bad", ["   ", "\u200b" + _ID, "é" + _ID, "x" * 129])
def test_an_id_whose_canonical_form_is_not_short_ascii_is_invalid(
    credentials: Path, bad: str
) -> None:
    with pytest.raises(SpendError) as caught:
        validate_authorization(_raw(credentials, id=bad), expected=_bindings(credentials))
    assert caught.value.code == "lookup_authorization_invalid"


_SPACES = st.text(alphabet=" \t\n\u3000\u00a0", max_size=3)


@given(
    before=_SPACES,
    after=_SPACES,
    flips=st.lists(st.booleans(), min_size=len(_ID), max_size=len(_ID)),
    wide=st.lists(st.booleans(), min_size=len(_ID), max_size=len(_ID)),
)
def test_every_spelling_of_an_id_has_one_identity(
    before: str, after: str, flips: list[bool], wide: list[bool]
) -> None:
    """Spaces at either end, any case and any full-width letters: one identity (the
    validator's handle, without a credentials file: the identity is pure)."""
    from continuity.spend.authorization import authorization_identity

    letters = [(c.swapcase() if flip else c) for c, flip in zip(_ID, flips, strict=True)]
    spelled = "".join(_width(c) if w else c for c, w in zip(letters, wide, strict=True))
    base = Authorization(
        schema=REAL_DOMAIN, id=_ID, bindings=_bindings(Path("/nonexistent")), salt=SALT,
        account_commitment=account_commitment(SALT, "acct-1"),
        issued_at="2026-12-01T09:00:00+00:00", approver="owner", approval_reference="4200",
    )  # fmt: skip
    respelled = msgspec.structs.replace(base, id=before + spelled + after)
    assert unicodedata.normalize("NFKC", spelled).casefold() == _ID.casefold()
    assert authorization_identity(respelled) == authorization_identity(base)
