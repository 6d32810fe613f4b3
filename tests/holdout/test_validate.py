"""`validate_source`: every rule, each refusal with its code and location."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.errors import HoldoutError
from continuity.holdout import HoldoutSource, validate_source
from continuity.traces.schema import Trace
from tests.conftest import REPO
from tests.holdout.toy import resign, write_source


@pytest.fixture
def source(tmp_path: Path) -> HoldoutSource:
    return write_source(tmp_path / "src")


def refused(source: HoldoutSource) -> HoldoutError:
    with pytest.raises(HoldoutError) as err:
        validate_source(source)
    return err.value


def rewrite(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads(path.read_bytes())
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_a_valid_source_is_summarised(source: HoldoutSource) -> None:
    validated = validate_source(source)
    assert [f.family.family_id for f in validated.families][:2] == ["toy-north-1", "toy-north-2"]
    assert validated.probes == 12
    summary = validated.summary()
    assert "6 families in 2 groups (north 3, south 3)" in summary
    assert "probes: 12 (abstention 6, free_recall 6)" in summary
    assert source.manifest_sha256 in summary


def test_the_manifest_must_hash_to_the_given_sha256(source: HoldoutSource) -> None:
    other = HoldoutSource(source.manifest, "0" * 64, source.spec)
    error = refused(other)
    assert (error.code, error.location) == ("holdout_manifest_sha256_mismatch", "--manifest-sha256")


@pytest.mark.parametrize("which", ["manifest", "spec"])
def test_missing_files_are_unreadable(source: HoldoutSource, which: str) -> None:
    path = source.manifest if which == "manifest" else source.spec
    path.unlink()
    error = refused(source)
    assert (error.code, error.location) == ("holdout_file_unreadable", str(path))


def test_a_directory_is_not_a_manifest(source: HoldoutSource, tmp_path: Path) -> None:
    error = refused(HoldoutSource(tmp_path, source.manifest_sha256, source.spec))
    assert error.code == "holdout_file_unreadable"


def test_an_oversized_manifest_is_refused_before_it_is_read_whole(source: HoldoutSource) -> None:
    source.manifest.write_bytes(b" " * (4 * 1024 * 1024 + 10))
    error = refused(resign(source))
    assert error.code == "holdout_manifest_invalid"


MANIFEST_CASES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("schema", lambda m: m.update(schema="continuity-holdout-manifest-v9"), "$.schema"),
    ("no source", lambda m: m.pop("source"), "$"),
    ("bad source", lambda m: m.update(source="no spaces allowed"), "$.source"),
    ("unknown field", lambda m: m.update(extra=1), "$"),
    ("no family", lambda m: m.update(families=[]), "$.families"),
    ("wrong type", lambda m: m["families"][2].update(sha256=5), "$.families[2].sha256"),
    ("bad sha", lambda m: m["families"][1].update(sha256="ab" * 31), "$.families[1].sha256"),
    ("bad id", lambda m: m["families"][0].update(family_id="Toy_1"), "$.families[0].family_id"),
    (
        "duplicate id",
        lambda m: m["families"][3].update(family_id="toy-north-1"),
        "$.families[3].family_id",
    ),
    ("bad group", lambda m: m["families"][4].update(group=""), "$.families[4].group"),
    ("parent", lambda m: m["families"][0].update(trace="../x.json"), "$.families[0].trace"),
    (
        "inner parent",
        lambda m: m["families"][0].update(trace="traces/../../x"),
        "$.families[0].trace",
    ),
    ("absolute", lambda m: m["families"][5].update(trace="/etc/hostname"), "$.families[5].trace"),
    ("empty path", lambda m: m["families"][5].update(trace=""), "$.families[5].trace"),
    ("dot path", lambda m: m["families"][5].update(trace="."), "$.families[5].trace"),
]


@pytest.mark.parametrize(
    ("case", "change", "path"), MANIFEST_CASES, ids=[c[0] for c in MANIFEST_CASES]
)
def test_a_malformed_manifest_is_refused_with_its_json_path(
    source: HoldoutSource, case: str, change: Callable[[dict[str, Any]], None], path: str
) -> None:
    rewrite(source.manifest, change)
    error = refused(resign(source))
    assert (error.code, error.location) == ("holdout_manifest_invalid", f"{source.manifest}:{path}")


def test_a_manifest_that_is_not_json_is_invalid(source: HoldoutSource) -> None:
    source.manifest.write_bytes(b"{not json")
    error = refused(resign(source))
    assert (error.code, error.location) == ("holdout_manifest_invalid", f"{source.manifest}:$")


def test_deep_nesting_is_invalid_not_a_crash(source: HoldoutSource) -> None:
    source.manifest.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    assert refused(resign(source)).code == "holdout_manifest_invalid"


def test_a_symlink_leaving_the_manifest_directory_is_refused(
    source: HoldoutSource, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.json"
    trace = source.manifest.parent / "traces" / "toy-north-1.json"
    outside.write_bytes(trace.read_bytes())
    trace.unlink()
    os.symlink(outside, trace)
    error = refused(source)
    assert (error.code, error.location) == (
        "holdout_manifest_invalid",
        f"{source.manifest}:$.families[0].trace",
    )


def test_a_symlink_inside_the_manifest_directory_is_followed(source: HoldoutSource) -> None:
    trace = source.manifest.parent / "traces" / "toy-north-1.json"
    inside = source.manifest.parent / "kept.json"
    trace.rename(inside)
    os.symlink(inside, trace)
    assert len(validate_source(source).families) == 6


SPEC_CASES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("schema", lambda s: s.update(schema="x"), "$.schema"),
    ("source", lambda s: s.update(source="other"), "$.source"),
    ("no groups", lambda s: s.update(groups=[]), "$.groups"),
    ("duplicate group", lambda s: s["groups"].append({"name": "north"}), "$.groups[2].name"),
    ("algorithm", lambda s: s["selection"].update(algorithm="random-v1"), "$.selection.algorithm"),
    ("per group", lambda s: s["selection"].update(per_group=0), "$.selection.per_group"),
    ("repeats", lambda s: s.update(repeats=0), "$.repeats"),
    ("wrong type", lambda s: s.update(repeats="one"), "$.repeats"),
    ("unknown field", lambda s: s["selection"].update(seed=3), "$.selection"),
]


@pytest.mark.parametrize(("case", "change", "path"), SPEC_CASES, ids=[c[0] for c in SPEC_CASES])
def test_a_malformed_spec_is_refused_with_its_json_path(
    source: HoldoutSource, case: str, change: Callable[[dict[str, Any]], None], path: str
) -> None:
    rewrite(source.spec, change)
    error = refused(source)
    assert (error.code, error.location) == ("holdout_spec_invalid", f"{source.spec}:{path}")


def test_a_family_in_an_undeclared_group_is_refused(tmp_path: Path) -> None:
    source = write_source(tmp_path, groups=("north",))
    error = refused(source)
    assert (error.code, error.location) == (
        "holdout_group_unknown",
        f"{source.manifest}:$.families[3].group",
    )


def test_every_group_needs_per_group_families(tmp_path: Path) -> None:
    source = write_source(tmp_path, groups=("north", "south", "west"))
    error = refused(source)
    assert (error.code, error.location) == ("holdout_group_too_small", f"{source.spec}:$.groups[2]")
    error = refused(write_source(tmp_path / "four", per_group=4))
    assert error.code == "holdout_group_too_small"


def test_a_missing_trace_file_is_unreadable(source: HoldoutSource) -> None:
    trace = source.manifest.parent / "traces" / "toy-south-2.json"
    trace.unlink()
    error = refused(source)
    assert (error.code, error.location) == ("holdout_file_unreadable", str(trace))


def test_a_trace_must_hash_to_the_manifests_sha256(source: HoldoutSource) -> None:
    trace = source.manifest.parent / "traces" / "toy-south-3.json"
    trace.write_bytes(trace.read_bytes() + b" ")
    error = refused(source)
    assert (error.code, error.location) == ("holdout_trace_hash_mismatch", str(trace))


def _edited(family_id: str, change: Callable[[Trace], Trace]) -> Callable[[str, Trace], Trace]:
    return lambda name, trace: change(trace) if name == family_id else trace


def test_an_invalid_trace_carries_the_validators_issues(tmp_path: Path) -> None:
    not_fictional = _edited("toy-north-2", lambda t: msgspec.structs.replace(t, fictional=False))
    error = refused(write_source(tmp_path, edit=not_fictional))
    assert error.code == "holdout_trace_invalid"
    assert error.location == "traces/toy-north-2.json"
    assert [issue.code for issue in error.issues] == ["trace_not_fictional"]
    assert "trace_not_fictional" in error.message


def test_a_trace_of_another_family_is_refused(tmp_path: Path) -> None:
    # an original trace fails that family's shape rules first; either way it is refused
    change = _edited("toy-south-1", lambda t: msgspec.structs.replace(t, family="original"))
    error = refused(write_source(tmp_path, edit=change))
    assert error.code == "holdout_trace_invalid"
    assert error.location.startswith("traces/toy-south-1.json")
    assert "shape_out_of_range" in {issue.code for issue in error.issues}


def test_a_valid_trace_of_another_family_is_not_a_holdout_family(tmp_path: Path) -> None:
    original = (REPO / "fixtures" / "original" / "brightline-return.json").read_bytes()
    source = write_source(tmp_path)
    (tmp_path / "traces" / "toy-south-1.json").write_bytes(original)
    trace_id = json.loads(original)["trace_id"]

    def swap(m: dict[str, Any]) -> None:
        m["families"][3].update(family_id=trace_id, sha256=hashlib.sha256(original).hexdigest())

    rewrite(source.manifest, swap)
    error = refused(resign(source))
    assert (error.code, error.location) == (
        "holdout_trace_invalid",
        "traces/toy-south-1.json:$.family",
    )


def test_a_trace_must_carry_its_family_id(tmp_path: Path) -> None:
    change = _edited("toy-south-1", lambda t: msgspec.structs.replace(t, trace_id="toy-north-9"))
    error = refused(write_source(tmp_path, edit=change))
    assert (error.code, error.location) == (
        "holdout_trace_invalid",
        "traces/toy-south-1.json:$.trace_id",
    )
    assert [(i.code, i.location) for i in error.issues] == [("holdout_trace_invalid", "$.trace_id")]


def test_an_oversized_trace_is_refused_unread(source: HoldoutSource) -> None:
    trace = source.manifest.parent / "traces" / "toy-north-3.json"
    with trace.open("r+b") as handle:
        handle.truncate(8 * 1024 * 1024 + 5)
    assert refused(source).code == "holdout_trace_invalid"
