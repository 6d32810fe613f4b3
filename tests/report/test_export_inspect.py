"""``doit export --format inspect``: a run as Inspect eval logs, read back with
``inspect_ai``'s own reader (each sample's messages what its reader saw, or the
question and answer when the store no longer holds that) and served by ``inspect
view`` over loopback; a folder it cannot fill leaves nothing behind; without the extra,
refused with ``export_extra_missing``."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.graph.test_dodo import doit

if TYPE_CHECKING:
    from inspect_ai.log import EvalSample

ARMS = "native,cold-rebuild,continuity-store"


def _have_inspect() -> bool:
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError:
        if "CI" in os.environ:  # CI installs the test extra, which holds inspect_ai
            raise
        return False
    return True


needs_inspect = pytest.mark.skipif(not _have_inspect(), reason="inspect_ai is not installed")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke suite over three arms, aggregated and exported as JSON Lines and as
    Inspect logs; its tmp folder (store/, out/)."""
    root = tmp_path_factory.mktemp("export_inspect")
    doit(root, "units", "--suite", "smoke", "--arms", ARMS)
    doit(root, "aggregate")
    doit(root, "export")
    return root


def _unit_samples(run_dir: Path) -> int:
    units = sorted((run_dir / "units").rglob("*.json"))
    return sum(len(json.loads(path.read_text())["probes"]) for path in units)


@needs_inspect
def test_the_logs_read_back_with_inspects_reader_one_sample_per_unit_sample(run: Path) -> None:
    from inspect_ai.log import read_eval_log

    run_dir = run / "out" / "runs" / "offline"
    line = doit(run, "export", "--format", "inspect").stdout
    folder = run_dir / "export" / "inspect"
    assert f"written to {folder}" in line and "3 Inspect logs" in line
    rows = {
        (r["suite"], r["arm"], r["trace_id"], r["probe_id"], r["repeat"]): r
        for r in map(json.loads, (run_dir / "export" / "samples.jsonl").read_text().splitlines())
    }
    results = json.loads((run_dir / "results.json").read_text())
    logs = sorted(folder.glob("*.eval"))
    assert [p.name for p in logs] == [f"offline_smoke_{a}.eval" for a in sorted(ARMS.split(","))]
    seen = 0
    for path in logs:
        log = read_eval_log(str(path))
        assert log.status == "success" and log.samples is not None and log.results is not None
        suite, arm = log.eval.task, log.eval.solver
        assert arm is not None and log.results.total_samples == len(log.samples)
        for sample in log.samples:
            trace_id, probe_id = str(sample.id).split("/")
            row = rows[(suite, arm, trace_id, probe_id, sample.epoch)]
            assert (sample.input, sample.target) == (row["question"], row["expected"])
            assert sample.output.completion == row["answer"]
            assert sample.scores is not None
            score = sample.scores["outcome"]
            assert score.value == (row["outcome"] or row["status"])
            assert score.explanation == row["score_reason"]
            meta = sample.metadata
            assert (meta["suite"], meta["arm"], meta["category"]) == (suite, arm, row["category"])
            assert (meta["fact"], meta["status"], meta["cost_usd"]) == (
                row["fact"], row["status"], row["cost_usd"],
            )  # fmt: skip
            _check_messages(run, sample, row)
            seen += 1
        metrics = log.results.scores[0].metrics
        cell = results["accuracy"][suite][arm]["overall"]
        assert metrics["accuracy"].value == pytest.approx(cell["mean"])
        assert metrics["coverage"].value == pytest.approx(cell["coverage"])
        counts = {k: v for k, v in results["outcomes"][suite][arm].items() if v}
        assert log.results.scores[0].metadata == {"outcomes": counts, "valid": cell["valid"]}
    assert seen == len(rows) == _unit_samples(run_dir) > 0


def _check_messages(run: Path, sample: EvalSample, row: dict[str, Any]) -> None:
    """The sample's messages are its stored reader context as stored (system prompt,
    messages, the probe turn with its tool calls and results), then the answer; the
    needles are metadata, never added to what the reader saw."""
    from continuity.report.inspect_log import SEEN_MESSAGES
    from continuity.sampling.context import load_context
    from continuity.store import ObjectRef, Store

    seen = load_context(Store(run / "store"), ObjectRef("tree", row["context"], 0))
    stored = [*seen.context.messages, *seen.turn.messages]
    system, *middle, answer = sample.messages
    assert (system.role, system.text) == ("system", seen.context.system)
    assert [(m.role, m.text) for m in middle] == [(m.role, m.text) for m in stored]
    assert (answer.role, answer.text) == ("assistant", row["answer"])
    for shown, kept in zip(middle, stored, strict=True):
        if shown.role == "user":
            assert (shown.metadata or {}).get("source") == kept.source
        if shown.role == "tool":
            assert (shown.tool_call_id, shown.function) == (kept.call_id, kept.tool)
        if shown.role == "assistant":
            calls = [(c.id, c.function, c.arguments) for c in shown.tool_calls or []]
            assert calls == [(c.call_id, c.name, c.arguments) for c in kept.tool_calls]
    assert sample.metadata["messages"] == SEEN_MESSAGES
    assert sample.metadata["tools_offered"] == seen.context.tools
    assert sample.metadata["needles"] == row["needles"]
    assert sample.metadata["probe_tool_calls"] == row["probe_tool_calls"]


@needs_inspect
def test_a_context_the_store_no_longer_holds_leaves_the_question_and_answer(
    run: Path, tmp_path: Path
) -> None:
    from inspect_ai.log import read_eval_log

    from continuity.store import Store

    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    rows = [
        json.loads(line)
        for line in (copy / "out" / "runs" / "offline" / "export" / "samples.jsonl")
        .read_text()
        .splitlines()
    ]
    lost = rows[0]["context"]
    Store(copy / "store").object_path(lost).unlink()  # as if gc had taken it
    folder = tmp_path / "logs"
    doit(copy, "export", "--format", "inspect", "--output", str(folder))
    doit(copy, "export")
    again = (copy / "out" / "runs" / "offline" / "export" / "samples.jsonl").read_text()
    by_context = {r["context"]: r for r in map(json.loads, again.splitlines())}
    assert by_context[lost]["context_note"].startswith("the store no longer holds it")
    fallback = 0
    for path in sorted(folder.glob("*.eval")):
        for sample in read_eval_log(str(path)).samples or []:
            if sample.metadata["context"] != lost:
                assert sample.messages[0].role == "system"
                continue
            fallback += 1
            assert [(m.role, m.text) for m in sample.messages] == [
                ("user", sample.input), ("assistant", sample.output.completion)
            ]  # fmt: skip
            assert sample.metadata["messages"].startswith(
                "the question and the answer only: the store no longer holds it"
            )
    assert fallback == sum(r["context"] == lost for r in rows) > 0


@needs_inspect
def test_a_folder_it_cannot_fill_gets_no_log_and_its_code(run: Path, tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    (folder / "offline_smoke_native.eval" / "inside").mkdir(parents=True)  # a log's name
    (folder / "notes.txt").write_text("kept")
    before = sorted(folder.rglob("*"))
    result = doit(run, "export", "--format", "inspect", "--output", str(folder), check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "Traceback" not in output
    found = re.search(r"^export_output_invalid: .* \(at (.+)\)$", output, re.MULTILINE)
    assert found is not None and found.group(1) == str(folder), output
    assert "offline_smoke_native.eval" in found.group(0)
    assert sorted(folder.rglob("*")) == before  # no log, no partial one


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(url: str, deadline: float) -> bytes:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return bytes(response.read())
        except urllib.error.HTTPError:
            raise  # the server answered: no retry
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.25)


@needs_inspect
def test_inspect_view_serves_the_exported_logs_over_loopback(run: Path, tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    doit(run, "export", "--format", "inspect", "--output", str(folder))
    written = sorted(p.name for p in folder.glob("*.eval"))
    assert len(written) == 3
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "inspect_ai", "view", "--log-dir", str(folder),
         "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path,
        start_new_session=True,
    )  # fmt: skip
    try:
        body = _get(f"http://127.0.0.1:{port}/api/log-files", time.monotonic() + 90)
        names = sorted(f["name"] for f in json.loads(body)["files"])
        assert [Path(name).name for name in names] == written
        quoted = urllib.parse.quote(names[0], safe="")
        log = json.loads(_get(f"http://127.0.0.1:{port}/api/logs/{quoted}", time.monotonic()))
        assert log["eval"]["task"] == "smoke" and len(log["samples"]) > 0
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=20)


def test_without_inspect_ai_the_inspect_format_is_refused_with_its_code(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from continuity.commands.export_run import ExportRequest, export
    from continuity.errors import UsageError

    for name in ("inspect_ai", "inspect_ai.log"):
        monkeypatch.setitem(sys.modules, name, None)  # None in sys.modules: ImportError
    request = ExportRequest(
        store=str(run / "store"), out=str(run / "out"), format="inspect",
        output=str(run / "never"),
    )  # fmt: skip
    with pytest.raises(UsageError) as refused:
        export(request)
    assert (refused.value.code, refused.value.location) == ("export_extra_missing", "--format")
    assert "pip install 'continuity[inspect]'" in str(refused.value)
    assert not (run / "never").exists()
