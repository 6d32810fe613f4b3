"""The real-answer collector (`python3 -m continuity.probes.real_answers`): what each
request carries, and its coded errors. The collection itself ran against llama.cpp's
server with SmolLM2 (holdout-v4); here no model is needed."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from continuity.probes.real_answers import TURN_CHARS, cited_facts, excerpt, main, shipped_traces


def test_every_probe_gets_a_short_excerpt_holding_its_cited_turns() -> None:
    traces = shipped_traces()
    assert len(traces) == 8  # four originals, hard seeds 101-104
    for trace in traces:
        for probe in trace.probes:
            text = excerpt(trace, probe)
            assert text and text == excerpt(trace, probe)  # deterministic
            # Each cited turn is cut to TURN_CHARS (plus two ellipses), three turns at most
            # for an abstention probe, which cites none.
            cited = {e for f in cited_facts(probe.expectation) for e in f.evidence} or {
                "1",
                "2",
                "3",
            }
            assert len(text) <= len(cited) * (TURN_CHARS + 8), probe.probe_id
            assert probe.text not in text  # the question is asked after, never inside


def test_an_existing_output_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "answers.jsonl"
    out.write_text("kept\n")
    assert main(["--base-url", "http://127.0.0.1:9/v1", "--output", str(out)]) == 2
    assert "output_exists" in capsys.readouterr().err
    assert out.read_text() == "kept\n"


def test_a_server_that_does_not_answer_is_a_coded_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nothing listens
    out = tmp_path / "answers.jsonl"
    assert main(["--base-url", f"http://127.0.0.1:{port}/v1", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "real_answer_failed" in err and "brightline-return/p01" in err
    assert out.read_text() == ""  # nothing half-written: no answer was given


def test_a_missing_option_is_a_usage_error() -> None:
    assert main([]) == 2


def test_hard_seeds_choose_the_traces_asked() -> None:
    traces = shipped_traces((105, 107), originals=False)
    assert [t.trace_id for t in traces][:2] and len(traces) == 2
    assert all(
        t.trace_id.startswith("gen-") and t.trace_id.endswith(("105", "107")) for t in traces
    )


@pytest.mark.parametrize("seeds", ["", "a,b", "0", "105,-1"])
def test_bad_hard_seeds_are_a_usage_error(tmp_path: Path, seeds: str) -> None:
    out = tmp_path / "answers.jsonl"
    argv = ["--base-url", "http://127.0.0.1:9/v1", "--output", str(out), "--hard-seeds", seeds]
    assert main(argv) == 2
    assert not out.exists()
