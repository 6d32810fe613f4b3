"""``doit export --format inspect``: a run as Inspect eval logs, read back with
``inspect_ai``'s own reader and served by ``inspect view`` over loopback; without the
extra, refused with ``export_extra_missing``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.graph.test_dodo import doit

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
            seen += 1
        metrics = log.results.scores[0].metrics
        cell = results["accuracy"][suite][arm]["overall"]
        assert metrics["accuracy"].value == pytest.approx(cell["mean"])
        assert metrics["coverage"].value == pytest.approx(cell["coverage"])
        counts = {k: v for k, v in results["outcomes"][suite][arm].items() if v}
        assert log.results.scores[0].metadata == {"outcomes": counts, "valid": cell["valid"]}
    assert seen == len(rows) == _unit_samples(run_dir) > 0


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
