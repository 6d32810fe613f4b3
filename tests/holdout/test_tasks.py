"""The doit tasks: through doit's command line for a few, their actions in process for
the rest (the project's own references, never small ones, so the tasks check for real)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from doit.exceptions import TaskFailed

from continuity.holdout import HoldoutSource
from continuity.holdout.selection import MAX_SEED
from continuity.store import Store
from rules.holdout import (
    SELECTION_PARAMS,
    task_holdout_freeze,
    task_holdout_overlap,
    task_holdout_select,
    task_holdout_validate,
)
from rules.params import TaskSpec
from tests.conftest import REPO, store_files
from tests.holdout.toy import doit_args, write_source


def doit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CONTINUITY_STORE": str(tmp_path / "store"),
        "CONTINUITY_OUT": str(tmp_path / "out"),
    }
    env.pop("CI", None)
    return subprocess.run(
        [sys.executable, "-m", "doit", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def run(task: Callable[[], TaskSpec], **options: Any) -> TaskFailed | None:
    """The task's action in this process, as doit calls it."""
    action = task()["actions"][0]
    return action(**options)


def options(source: HoldoutSource, **more: Any) -> dict[str, Any]:
    return {
        "manifest": str(source.manifest),
        "manifest_sha256": source.manifest_sha256,
        "statistical_spec": str(source.spec),
        **more,
    }


@pytest.fixture
def source(tmp_path: Path) -> HoldoutSource:
    return write_source(tmp_path / "src")


def test_doit_holdout_validate_prints_the_summary(tmp_path: Path, source: HoldoutSource) -> None:
    result = doit(tmp_path, "holdout_validate", *doit_args(source))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 families in 2 groups (north 3, south 3)" in result.stdout
    assert "probes: 12" in result.stdout
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("holdout_validate: the source is valid; nothing written")


def test_doit_refuses_a_partial_triple_without_a_fallback(
    tmp_path: Path, source: HoldoutSource
) -> None:
    result = doit(
        tmp_path, "holdout_select", "--manifest", str(source.manifest), "--selection-seed", "3"
    )
    assert result.returncode != 0
    assert (
        "holdout_source_incomplete: " in result.stdout + result.stderr
        and "(at --manifest-sha256)" in result.stdout + result.stderr
    )
    # nothing was built or selected from a built-in suite
    store = Store(tmp_path / "store")
    assert store.list_refs("traces") == [] and store_files(store) == {}
    assert not (tmp_path / "out").exists()


def test_doit_refuses_a_malformed_seed_before_anything_runs(
    tmp_path: Path, source: HoldoutSource
) -> None:
    result = doit(tmp_path, "holdout_select", *doit_args(source), "--selection-seed", "1.5")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("holdout_selection_seed_invalid: ")
    assert result.stderr.strip().endswith("(at --selection-seed)")


def test_the_tasks_overlap_freeze_and_select(
    tmp_path: Path, source: HoldoutSource, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "store")
    assert run(task_holdout_validate, **options(source)) is None
    out = tmp_path / "overlap"
    assert run(task_holdout_overlap, **options(source, output=str(out))) is None
    report = json.loads((out / "overlap.json").read_bytes())
    assert report["overlaps"] == [] and report["counts"]["references"] > 30
    assert "no overlap; report in" in capsys.readouterr().out

    freeze = options(source, overlap=str(out / "overlap.json"), store=store)
    assert run(task_holdout_freeze, **freeze) is None
    assert "is frozen: freeze" in capsys.readouterr().out
    assert run(task_holdout_freeze, **freeze) is None
    assert "was already frozen" in capsys.readouterr().out

    assert run(task_holdout_select, **options(source, store=store, selection_seed=17)) is None
    printed = capsys.readouterr().out
    assert "north: toy-north-1, toy-north-2" in printed
    assert "south: toy-south-2, toy-south-3" in printed and "sealed spares: 2" in printed
    assert "seed 17 selects 4 families (2 per group)" in printed

    failed = run(task_holdout_select, **options(source, store=store, selection_seed=-1))
    assert isinstance(failed, TaskFailed)
    assert str(failed.message).startswith("holdout_selection_seed_required: ")
    failed = run(task_holdout_select, **options(source, store=store, selection_seed=1, per_group=4))
    assert isinstance(failed, TaskFailed)
    assert str(failed.message).startswith("holdout_per_group_invalid: ")


def test_a_planted_overlap_fails_the_task_after_writing_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    phrase = "Answer format: if what I am asking about never came up"  # the probe protocol

    def edit(family_id: str, trace: Any) -> Any:
        import msgspec

        if family_id != "toy-south-1":
            return trace
        probe = msgspec.structs.replace(trace.probes[0], text=f"{phrase}?")
        return msgspec.structs.replace(trace, probes=(probe, trace.probes[1]))

    source = write_source(tmp_path / "src", edit=edit)
    out = tmp_path / "overlap"
    failed = run(task_holdout_overlap, **options(source, output=str(out)))
    assert isinstance(failed, TaskFailed)
    assert str(failed.message).startswith("holdout_overlap_found: ")
    overlaps = json.loads((out / "overlap.json").read_bytes())["overlaps"]
    planted = [o for o in overlaps if o["location"] == "$.probes[0].text"]
    assert {(o["kind"], o["family_id"]) for o in planted} == {("phrase", "toy-south-1")}
    assert {o["reference"] for o in planted} >= {"prompt/probe-instruction"}
    failed = run(
        task_holdout_freeze,
        **options(source, overlap=str(out / "overlap.json"), store=str(tmp_path / "store")),
    )
    assert isinstance(failed, TaskFailed)
    assert str(failed.message).startswith("holdout_overlap_found: ")


@pytest.mark.parametrize(
    ("task", "more", "code"),
    [
        (task_holdout_validate, {}, "holdout_source_incomplete"),
        (task_holdout_overlap, {"output": ""}, "holdout_output_invalid"),
        (task_holdout_freeze, {"overlap": ""}, "holdout_overlap_invalid"),
    ],
)
def test_missing_task_options_are_coded(
    source: HoldoutSource, task: Callable[[], TaskSpec], more: dict[str, Any], code: str
) -> None:
    given = {} if task is task_holdout_validate else options(source)
    failed = run(task, **given, **more)
    assert isinstance(failed, TaskFailed)
    assert str(failed.message).startswith(f"{code}: ")


def test_the_seed_option_allows_exactly_the_seeds_the_rule_takes() -> None:
    kind = SELECTION_PARAMS[0]["type"]
    assert getattr(kind, "maximum", None) == MAX_SEED and getattr(kind, "minimum", None) == 0
