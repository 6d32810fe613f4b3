"""The source triple: all three or none; external-only options never stand alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from continuity.errors import HoldoutError
from continuity.holdout import EXTERNAL_ONLY_OPTIONS, HoldoutSource, source_from_options

SHA = "a" * 64


def test_no_triple_and_no_external_option_is_no_source() -> None:
    assert source_from_options(None, None, None) is None
    assert source_from_options("", " ", "") is None


def test_the_complete_triple_is_a_source() -> None:
    source = source_from_options("m.json", SHA, "s.json")
    assert source == HoldoutSource(Path("m.json"), SHA, Path("s.json"))


@pytest.mark.parametrize(
    ("manifest", "sha", "spec", "first_missing"),
    [
        ("m.json", None, None, "--manifest-sha256"),
        (None, SHA, None, "--manifest"),
        (None, None, "s.json", "--manifest"),
        ("m.json", SHA, None, "--statistical-spec"),
        ("m.json", None, "s.json", "--manifest-sha256"),
        (None, SHA, "s.json", "--manifest"),
    ],
)
def test_a_partial_triple_is_refused_at_the_first_missing_option(
    manifest: str | None, sha: str | None, spec: str | None, first_missing: str
) -> None:
    with pytest.raises(HoldoutError) as err:
        source_from_options(manifest, sha, spec)
    assert (err.value.code, err.value.location) == ("holdout_source_incomplete", first_missing)
    assert "built-in" in err.value.message


@pytest.mark.parametrize("option", EXTERNAL_ONLY_OPTIONS)
def test_external_only_options_without_the_triple_are_refused(option: str) -> None:
    with pytest.raises(HoldoutError) as err:
        source_from_options(None, None, None, external={option})
    assert (err.value.code, err.value.location) == ("holdout_source_incomplete", "--manifest")
    assert option in err.value.message


def test_external_only_options_with_a_partial_triple_name_the_missing_option() -> None:
    with pytest.raises(HoldoutError) as err:
        source_from_options("m.json", SHA, None, external={"--selection-seed"})
    assert (err.value.code, err.value.location) == (
        "holdout_source_incomplete",
        "--statistical-spec",
    )


@pytest.mark.parametrize("sha", ["abc", "A" * 64, "g" * 64, "a" * 63, "a" * 65, SHA + "\n0"])
def test_a_malformed_manifest_sha256_is_refused(sha: str) -> None:
    with pytest.raises(HoldoutError) as err:
        source_from_options("m.json", sha, "s.json")
    assert (err.value.code, err.value.location) == (
        "holdout_manifest_sha256_invalid",
        "--manifest-sha256",
    )
