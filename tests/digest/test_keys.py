"""Canonical encoding and artifact keys (property tests)."""

from __future__ import annotations

import copy
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.digest import (
    KeySpec,
    artifact_key,
    canonical,
    check_digest,
    code_digest,
    value_digest,
)
from continuity.errors import DigestInvalid

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.binary(max_size=20)
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(st.text(max_size=8) | st.integers(), children, max_size=5)
    ),
    max_leaves=25,
)


@given(values)
def test_equal_values_give_equal_keys(value: Any) -> None:
    assert canonical(value) == canonical(copy.deepcopy(value))
    assert value_digest(value) == value_digest(copy.deepcopy(value))


@given(st.dictionaries(st.text(max_size=8), values, min_size=2, max_size=8), st.randoms())
def test_dict_order_never_matters(mapping: dict[str, Any], rnd: Any) -> None:
    items = list(mapping.items())
    rnd.shuffle(items)
    assert value_digest(dict(items)) == value_digest(mapping)


def test_one_in_every_type_never_collides() -> None:
    ones = [1, "1", 1.0, True, b"1", [1], (1,), {"1": 1}, {1: 1}, None, frozenset({1})]
    digests = {value_digest(v) for v in ones}
    # list and tuple are the same sequence on purpose (JSON round trips turn one into
    # the other); everything else must differ.
    assert len(digests) == len(ones) - 1
    assert value_digest([1]) == value_digest((1,))


@given(st.integers())
def test_int_and_its_string_and_float_differ(number: int) -> None:
    assert value_digest(number) != value_digest(str(number))
    assert value_digest(number) != value_digest(float(number))


def test_bool_and_int_keys_in_dicts_differ() -> None:
    assert value_digest({True: "x"}) != value_digest({1: "x"})
    assert value_digest({"1": "x"}) != value_digest({1: "x"})


specs = st.builds(
    KeySpec,
    kind=st.text(min_size=1, max_size=10),
    salt=st.text(max_size=10),
    code=st.text(max_size=10),
    params=st.dictionaries(st.text(max_size=5), scalars, max_size=4),
    inputs=st.dictionaries(st.text(max_size=5), st.text(max_size=10), max_size=3),
)


@given(specs, st.sampled_from(["kind", "salt", "code", "params", "inputs"]))
@settings(max_examples=300)
def test_changing_any_field_changes_the_key(spec: KeySpec, field: str) -> None:
    import msgspec

    current = getattr(spec, field)
    if field in ("params", "inputs"):
        changed = dict(current)
        changed["\x00extra"] = "v"
    else:
        changed = current + "\x00"
    other = msgspec.structs.replace(spec, **{field: changed})
    assert other.key() != spec.key()


def test_changing_a_param_value_or_input_key_changes_the_key() -> None:
    base = dict(kind="trace", salt="s1", code="c", params={"seed": 101}, inputs={"a": "k1"})
    key = artifact_key(**base)  # type: ignore[arg-type]
    assert artifact_key(**{**base, "params": {"seed": 102}}) != key  # type: ignore[arg-type]
    assert artifact_key(**{**base, "params": {"seed": "101"}}) != key  # type: ignore[arg-type]
    assert artifact_key(**{**base, "inputs": {"a": "k2"}}) != key  # type: ignore[arg-type]
    assert artifact_key(**{**base, "inputs": {"b": "k1"}}) != key  # type: ignore[arg-type]
    assert artifact_key(**base) == key  # type: ignore[arg-type]


def test_paths_and_objects_cannot_enter_a_key() -> None:
    with pytest.raises(TypeError):
        canonical(Path("/tmp"))
    with pytest.raises(TypeError):
        canonical(object())


def test_check_digest_rejects_non_digests() -> None:
    check_digest("a" * 64)
    for bad in ("A" * 64, "a" * 63, "../../etc/passwd", ""):
        with pytest.raises(DigestInvalid) as err:
            check_digest(bad)
        assert err.value.code == "digest_invalid"


def test_code_digest_follows_file_contents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "cdpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "rule.py").write_text("SALT = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = code_digest(["cdpkg.rule"])
    assert code_digest(["cdpkg.rule"]) == first
    whole = code_digest(["cdpkg"])
    assert whole != first
    (package / "rule.py").write_text(textwrap.dedent("SALT = 2\n"))
    from continuity import digest

    digest._code_digest.cache_clear()
    assert code_digest(["cdpkg.rule"]) != first
    sys.modules.pop("cdpkg", None)


def test_an_unset_field_is_left_out_of_the_pre_image() -> None:
    """A field added later as UNSET keeps every earlier value's digest (as msgspec leaves
    it out of an encoding)."""
    from msgspec import UNSET, defstruct

    before = defstruct("Record", [("a", int)], frozen=True)
    after = defstruct("Record", [("a", int), ("b", object, UNSET)], frozen=True)
    assert value_digest(after(a=1)) == value_digest(before(a=1))
    assert value_digest(after(a=1, b=2)) != value_digest(before(a=1))
