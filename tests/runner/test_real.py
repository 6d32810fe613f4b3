"""Real mode end to end against loopback servers speaking the three wire formats.

The model is scripted behind the loopback server; everything else is the real path:
guards, the plan and its recorded dry run, unit workers and forked probe processes,
MCP tool calls, compaction, httpx streaming, the call cache, the ledger and the store.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.errors import RunIncomplete
from continuity.messages import Usage
from continuity.plan.estimate import dry_run, record_dry_run
from continuity.plan.from_request import plan_from_request
from continuity.plan.plan import Plan
from continuity.plan.pricing import load_catalog
from continuity.plan.request import PlanRequest
from continuity.plan.workload import workload
from continuity.probes.availability import needles_for
from continuity.report.aggregate import aggregate_run
from continuity.report.rescore import rescore_run
from continuity.runner.real import run_real
from continuity.runner.real_request import RealRequest
from continuity.runner.units.build import UnitRecord, build_units
from continuity.sampling.receipts import ProcessReceipt
from continuity.servers.wire import Faults, WireServer, serve_in_thread
from continuity.store import Store
from continuity.traces.schema import decode_trace
from continuity.traces.suites import build_suite
from tests.conftest import REPO

TRACE = "brightline-return"


class Rig:
    """A confirmed plan against one loopback server, ready to run."""

    def __init__(self, tmp_path: Path, checkout: Path, url: str, kind: str, **options: Any) -> None:
        self.tmp = tmp_path
        self.store = Store(tmp_path / "store")
        self.checkout = checkout
        self.credentials = tmp_path / "credentials.json"
        self.credentials.write_text('{"api_key": "sk-loopback"}')
        self.output = tmp_path / "run-1"
        self.options = {
            "provider": kind,
            "base_url": url if kind == "anthropic" else url + "/v1",
            "credentials": str(self.credentials),
            "reader": "openai-codex:gpt-6-mini",  # priced in the catalog
            "judge": "openai-codex:gpt-6-mini",
            "arms": "native,compaction-1,continuity-store",
            "probe_limit": 2,
            **options,
        }
        self.plan: Plan = plan_from_request(PlanRequest.of(self.options))
        result = dry_run(self.plan, workload(self.plan), load_catalog())
        record_dry_run(self.store, result, tmp_path / "plans")
        self.digest = result.digest

    def run(self, **extra: Any) -> Any:
        arguments: dict[str, Any] = {
            "confirm": self.digest,
            "credentials": str(self.credentials),
            "output": str(self.output),
            "traces": TRACE,
            "checkout": self.checkout,
            "environ": {},
            "jobs": 1,
        }
        arguments.update(extra)
        return run_real(self.plan, self.store, RealRequest(**arguments))


def probe_replays(store: Store, record: UnitRecord) -> dict[int, set[str]]:
    """The keys of each probe's calls replayed from the call cache, by probe index: kept
    in the probes' ProcessReceipts beside the unit (the sealed call receipts never say)."""
    entry = store.get_action(record.key)
    assert entry is not None
    receipts = msgspec.convert(entry.meta["processes"], list[ProcessReceipt])
    return {r.probe_index: set(r.replayed_calls) for r in receipts}


def judge_replays(store: Store, record: UnitRecord) -> set[str]:
    """The keys of a unit's judge calls replayed from the call cache (its entry's meta)."""
    entry = store.get_action(record.key)
    assert entry is not None
    return set(entry.meta["judge_replayed"])


def units_on_disk(folder: Path) -> dict[str, UnitRecord]:
    return {
        p.name: msgspec.json.decode(p.read_bytes(), type=UnitRecord)
        for p in sorted(folder.glob("*.json"))
    }


@pytest.mark.parametrize("kind", ["openai-chat", "openai-responses", "anthropic"])
def test_real_run_finishes_the_plan_the_offline_run_finishes(
    kind: str, tmp_path: Path, clean_checkout: Path
) -> None:
    app = WireServer(model="served-model-7")
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, kind)
        result = rig.run()
        offline, _, _ = build_units(
            rig.store,
            "original",
            arms=rig.options["arms"],
            traces=TRACE,
            probe_limit=2,
            run_dir=tmp_path / "offline",
        )
        made = app.count()
        results, paths, _ = aggregate_run(rig.store, rig.output)
    real_units = {(r.repeat, r.trace_id, r.arm): r for r in result.records}
    offline_units = {(r.repeat, r.trace_id, r.arm): r for r in offline}
    assert set(real_units) == set(offline_units) and len(real_units) == 3
    for slot, record in real_units.items():
        assert record.probe_ids == offline_units[slot].probe_ids
        assert [p.status for p in record.probes] == ["valid", "valid"], record.probes
        assert record.binding is not None and record.binding["reader"]["kind"] == kind
        for probe in record.probes:
            assert probe.evidence is not None and probe.evidence.calls
            assert all(c.served_model == "served-model-7" for c in probe.evidence.calls)
            assert probe.usage.total_input > 0 and probe.usage.output > 0
    # Compaction really ran on the endpoint, once per probe: no probe reuses another's
    # summary through the call cache (seed 000's confound control).
    compaction = real_units[(1, TRACE, "compaction-1")]
    replays = probe_replays(rig.store, compaction)
    roles = [
        [(c.role, c.key in replays[p.index]) for c in p.evidence.calls] for p in compaction.probes
    ]
    assert ("summary", False) in roles[0] and ("summary", False) in roles[1]
    assert ("summary", True) not in roles[0] + roles[1]
    # The store arm called ConversationHistory through MCP, chosen by the endpoint.
    store_arm = real_units[(1, TRACE, "continuity-store")]
    assert all(p.history_calls >= 1 for p in store_arm.probes)
    # Usage is normalised (cached tokens once) and priced.
    usage = [
        c.usage for r in result.records for p in r.probes if p.evidence for c in p.evidence.calls
    ]
    assert any(u.cache_read > 0 for u in usage)
    if kind == "anthropic":
        assert all(u.cache_write <= u.input for u in usage)
        assert any(u.cache_write > 0 for u in usage)
    assert (results.spend["native"].cost_usd or 0) > 0
    assert results.spend["native"].live_turns == 2
    assert (rig.output / "plan.json").is_file() and paths["report"].is_file()
    # The report prices with the catalog it is given: without the model, unknown.
    from continuity.plan.pricing import default_catalog_path, load_catalog

    document = json.loads(default_catalog_path().read_text())
    ref = real_units[(1, TRACE, "native")].binding["reader"]["ref"]
    del document["models"][ref]
    other = tmp_path / "catalog.json"
    other.write_text(json.dumps(document))
    unpriced, _, _ = aggregate_run(rig.store, rig.output, load_catalog(other))
    assert unpriced.spend["native"].cost_usd is None
    assert unpriced.spend["native"].unpriced_calls > 0
    results, paths, _ = aggregate_run(rig.store, rig.output)
    # A real run's report says so; it never carries the offline caveat.
    summary = paths["summary"].read_text()
    assert "Real run:" in summary and "Offline runs use scripted readers" not in summary
    assert made == sum(
        1
        for r in result.records
        for p in r.probes
        if p.evidence
        for c in p.evidence.calls
        if c.key not in probe_replays(rig.store, r)[p.index]
    ) + sum(
        1 for r in result.records for c in r.judge_calls if c.key not in judge_replays(rig.store, r)
    )


def test_second_run_skips_completed_units_and_calls_nothing(
    tmp_path: Path, clean_checkout: Path
) -> None:
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-chat")
        first = rig.run()
        calls = app.count()
        again = rig.run()
        assert app.count() == calls
    assert first.built == 3 and again.built == 0
    # The plan digest roots the run: its dry run and every finished unit.
    ref = rig.store.get_ref(f"confirmed/{rig.digest}")
    assert ref is not None
    assert set(ref.actions) == {rig.digest} | {r.key for r in first.records}


# Words the scorer cannot call right or wrong (no value, no known decline): the judge
# reads every such answer (continuity.runner.units.grading.judged).
UNSURE = "It is with the courier, I believe."


class UnsureWire(WireServer):
    """The loopback model, answering every probe in words the scorer leaves unresolved."""

    def reply(self, path: str, body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        text, tool = super().reply(path, body)
        return (UNSURE if text in ("UNKNOWN", "ANSWER: UNKNOWN") else text), tool


def test_a_real_unit_rebuilt_from_the_call_cache_is_the_same_bytes(
    tmp_path: Path, clean_checkout: Path
) -> None:
    """Two builds of one real unit, the second replaying every call (its unit file, its
    unit entry and its checkpoint entry deleted; the call cache kept): the unit and the
    checkpoint are the same bytes. Which calls were replayed is kept beside them."""
    app = UnsureWire()  # unresolved answers: each goes to the judge
    with serve_in_thread(app) as url:
        # compaction-2 (d): probe answer and summary calls, a real mid-trace summary in its
        # checkpoint, and the judge.
        rig = Rig(tmp_path, clean_checkout, url, "openai-chat", arms="compaction-2")
        (first,) = rig.run().records
        made = app.count()
        path = rig.output / "units" / f"r1-{TRACE}-compaction-2.json"
        before = path.read_bytes()
        checkpoint = rig.store.get_action(first.checkpoint)
        assert checkpoint is not None and first.mid_trace_calls and first.judge_calls
        assert probe_replays(rig.store, first) == {0: set(), 1: set()}
        assert judge_replays(rig.store, first) == set()
        path.unlink()
        rig.store.action_path(first.key).unlink()
        rig.store.action_path(first.checkpoint).unlink()
        again = rig.run()
        assert app.count() == made  # every call replayed from the call cache
    assert again.built == 1 and path.read_bytes() == before
    rebuilt = rig.store.get_action(first.checkpoint)
    assert rebuilt is not None and rebuilt.output == checkpoint.output  # the same tree
    probe_calls = {
        p.index: {c.key for c in p.evidence.calls} for p in first.probes if p.evidence is not None
    }
    assert probe_replays(rig.store, first) == probe_calls
    assert judge_replays(rig.store, first) == {c.key for c in first.judge_calls}
    entry = rig.store.get_action(first.key)
    assert entry is not None
    mid = [c.key for c in first.mid_trace_calls]
    assert entry.meta["mid_trace_replayed"] == rebuilt.meta["replayed_calls"] == mid


def test_errors_are_never_cached(tmp_path: Path, clean_checkout: Path) -> None:
    app = WireServer(faults=Faults(auth_fail_from=1))
    with serve_in_thread(app) as url:
        rig = Rig(
            tmp_path, clean_checkout, url, "openai-chat", arms="native", judge="none", probe_limit=1
        )
        with pytest.raises(RunIncomplete):
            rig.run()
        assert app.count() == 1
        app.faults = Faults()
        result = rig.run()  # the refused call is made again, not replayed
        assert app.count() == 2
    assert app.calls[0][1] == app.calls[1][1]
    (record,) = result.records
    assert record.probes[0].evidence is not None
    assert record.probes[0].evidence.calls[0].key not in probe_replays(rig.store, record)[0]


def test_auth_failure_stops_admission(tmp_path: Path, clean_checkout: Path) -> None:
    app = WireServer(faults=Faults(auth_fail_from=2))
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-responses", arms="native", judge="none")
        with pytest.raises(RunIncomplete) as caught:
            rig.run(traces=None)  # four traces, two live turns each
        assert app.count() == 2  # the first answer, then the refused call; nothing after
    assert caught.value.code == "run_stopped"
    assert "provider_auth_failed" in caught.value.message
    assert not list((rig.output / "units").glob("*.json"))


def test_observed_input_cap_stops_admission_then_resume_finishes(
    tmp_path: Path, clean_checkout: Path
) -> None:
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "anthropic", arms="native", judge="none")
        with pytest.raises(RunIncomplete) as caught:
            rig.run(max_observed_input_tokens=1)
        assert caught.value.code == "run_stopped"
        assert "max_observed_input_tokens" in caught.value.message
        assert app.count() == 1  # the admitted turn finished; no new turn was admitted
        first_body = app.calls[0][1]
        resumed = rig.run()
        assert app.count() == 2  # only the second probe; the first answer is cached
        assert first_body not in [body for _, body in app.calls[1:]]
    assert [p.status for p in resumed.records[0].probes] == ["valid", "valid"]


def test_planned_live_turn_count_bounds_admission(tmp_path: Path) -> None:
    from continuity.errors import AdmissionStopped
    from continuity.providers.cache import Ledger

    ledger = Ledger.create(
        tmp_path / "ledger.sqlite3", planned_live_turns=2, max_observed_input_tokens=None
    )
    ledger.admit()
    ledger.admit()
    with pytest.raises(AdmissionStopped) as caught:
        ledger.admit()
    assert caught.value.code == "admission_stopped"
    assert ledger.state()["admitted"] == 2
    ledger.close()


KILLABLE = """
import sys
from pathlib import Path
import msgspec
from continuity.plan.plan import Plan
from continuity.runner.real import run_real
from continuity.runner.real_request import RealRequest
from continuity.store import Store
args = msgspec.json.decode(Path(sys.argv[1]).read_bytes())
plan = msgspec.convert(args.pop("plan"), Plan)
store = Store(args.pop("store"))
args["checkout"] = Path(args["checkout"])
run_real(plan, store, RealRequest(**args))
"""


def _start_killable(
    tmp_path: Path,
    rig: Rig,
    clean_checkout: Path,
    extra_env: dict[str, str] | None = None,
    **more: Any,
) -> subprocess.Popen[bytes]:
    """`run_real` for `rig` in its own process (and session), to be killed mid-run;
    `more`: further `run_real` arguments."""
    request = tmp_path / "run.json"
    request.write_bytes(
        msgspec.json.encode(
            {
                "plan": rig.plan,
                "store": str(rig.store.root),
                "confirm": rig.digest,
                "credentials": str(rig.credentials),
                "output": str(rig.output),
                "traces": TRACE,
                "checkout": str(clean_checkout),
                "jobs": 1,
                **more,
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    return subprocess.Popen(
        [sys.executable, "-c", KILLABLE, str(request)],
        cwd=REPO,
        env={**env, **(extra_env or {})},
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_killed_run_resumes_without_recalling_completed_units(
    tmp_path: Path, clean_checkout: Path
) -> None:
    # native: 2 answer calls; compaction-1: 2 summary calls + 1 answer for probe 1, and
    # the same for probe 2 (its own summary). Call 5 hangs; the run is killed there.
    app = WireServer(faults=Faults(hang_from=5))
    with serve_in_thread(app) as url:
        rig = Rig(
            tmp_path, clean_checkout, url, "openai-chat", arms="native,compaction-1", judge="none"
        )
        proc = _start_killable(tmp_path, rig, clean_checkout)
        try:
            deadline = time.monotonic() + 120
            while app.count() < 5:
                assert proc.poll() is None, "the run ended before it could be killed"
                assert time.monotonic() < deadline, "the run never reached call 5"
                time.sleep(0.05)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        before = [json.dumps(body, sort_keys=True) for _, body in app.calls]
        assert len(before) == 5
        app.faults = Faults()
        resumed = rig.run()
        after = [json.dumps(body, sort_keys=True) for _, body in app.calls[5:]]
    # Only the hung call is sent again, plus probe 2's calls, never reached before the kill:
    # its own two summaries (the same requests as probe 1's, each probe its own summary)
    # and its answer.
    assert len(after) == 4
    assert after[0] == before[4]
    assert sorted(after[1:3]) == sorted(before[2:4])
    assert after[3] not in before
    assert {r.arm for r in resumed.records} == {"native", "compaction-1"}
    assert resumed.built == 1  # native finished before the kill and was skipped


def _live_in_group(pgid: int) -> list[str]:
    """The command lines of the live (not zombie) processes of process group `pgid`."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return alive


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_sigkilled_runner_takes_its_unit_worker_and_probe_child_with_it(
    tmp_path: Path, clean_checkout: Path
) -> None:
    """The runner alone is SIGKILLed (not its process group) while its probe child waits
    on a call the server never answers: the zygote, the unit worker and the probe child
    die with it
    instead of waiting on, and no expected value is left outside the store."""
    app = WireServer(faults=Faults(hang_from=1))
    system_tmp = tmp_path / "system-tmp"  # the run's TMPDIR: where tempfile would write
    system_tmp.mkdir()
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-chat", arms="native", judge="none")
        proc = _start_killable(tmp_path, rig, clean_checkout, {"TMPDIR": str(system_tmp)})
        try:
            deadline = time.monotonic() + 120
            while app.count() < 1:  # the probe child's call: it hangs there
                assert proc.poll() is None, "the run ended before it could be killed"
                assert time.monotonic() < deadline, "the run never made its call"
                time.sleep(0.05)
            # The runner thread's zygote, the unit worker forked from it, and the probe
            # child the worker forked (forks keep the zygote's command line).
            workers = [c for c in _live_in_group(proc.pid) if "continuity.zygote" in c]
            assert len(workers) == 3, workers
            os.kill(proc.pid, signal.SIGKILL)  # the runner only: nothing forwards it
            proc.wait(timeout=30)
            gone_by = time.monotonic() + 5
            while _live_in_group(proc.pid) and time.monotonic() < gone_by:
                time.sleep(0.02)
            assert _live_in_group(proc.pid) == []
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # only left when the test failed
    item = next(
        i
        for i in build_suite(rig.store, "original", out_dir=tmp_path / "suite").items
        if i.trace_id == TRACE
    )
    trace = decode_trace(rig.store.get_blob(item.digest))
    needles = {
        v
        for probe in trace.probes
        for v in (lambda n: n.fact + n.superseded)(needles_for(probe.expectation, trace))
        if len(v) >= 4
    }
    markers = [n.encode() for n in needles] + [b'"needles"']
    assert len(markers) > 1
    leftovers = [
        path
        for path in system_tmp.rglob("*")
        if path.is_file() and any(m in path.read_bytes() for m in markers)
    ]
    assert leftovers == []


def test_score_rescores_recorded_answers_with_zero_http_calls(
    tmp_path: Path, clean_checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from continuity.probes.scoring import Score
    from tests.graph.test_dodo import doit

    app = WireServer()
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-chat")
        rig.run()
        aggregate_run(rig.store, rig.output)
        calls = app.count()
        before = units_on_disk(rig.output / "units")
        # Unchanged scorer: the same grades in new score artifacts; units untouched.
        same = rescore_run(rig.store, rig.output)
        assert same.written == same.units == 3 and same.probes_changed == 0
        assert units_on_disk(rig.output / "units") == before
        # A "fixed" scorer: every answer now passes; still no model call.
        monkeypatch.setattr(
            "continuity.runner.units.grading.score_answer",  # what score_result calls
            lambda expectation, answer, **_: Score("correct", True, "patched"),
        )
        for where in ("continuity.report.scores", "continuity.report.rescore"):
            monkeypatch.setattr(f"{where}.scorer_digest", lambda: "f" * 64)
        fixed = rescore_run(rig.store, rig.output)
        assert fixed.probes_changed == sum(
            1 for r in before.values() for p in r.probes if p.status == "valid" and not p.correct
        )
        assert units_on_disk(rig.output / "units") == before  # never rewritten
        results, _, _ = aggregate_run(rig.store, rig.output)
        assert results.accuracy["original"]["native"]["overall"].mean == 1.0
        # The doit task, in its own process, makes no call either.
        result = doit(
            tmp_path, "score", "--run-dir", str(rig.output), "--store", str(rig.store.root)
        )
        assert "no model call" in result.stdout
        assert app.count() == calls


def test_explain_cache_shows_what_went_into_each_key(tmp_path: Path, clean_checkout: Path) -> None:
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = Rig(tmp_path, clean_checkout, url, "openai-chat", arms="compaction-1", judge="none")
        first = rig.run(explain_cache=True)
    assert first.explain_log is not None
    entries = [json.loads(line) for line in Path(first.explain_log).read_text().splitlines()]
    assert {
        "key",
        "hit",
        "role",
        "provider",
        "model",
        "base_url",
        "messages",
        "tools",
        "generation",
        "repeat",
        "probe",
        "system",
    } <= set(entries[0])
    assert entries[0]["provider"] == "openai-chat" and entries[0]["model"] == "gpt-6-mini"
    assert entries[0]["repeat"] == 1
    # Every lookup of a fresh run misses: probe 2 compacts with a summary of its own (its
    # key binds the probe), though its summary requests equal probe 1's.
    assert not any(e["hit"] for e in entries)
    summaries = [e for e in entries if e["role"] == "summary"]
    assert {e["probe"] for e in summaries} == {"compaction-1:0", "compaction-1:1"}
    assert all(e["probe"] is None for e in entries if e["role"] == "answer")
    by_probe = {
        p: sorted(e["messages"]["digest"] for e in summaries if e["probe"] == p)
        for p in ("compaction-1:0", "compaction-1:1")
    }
    assert by_probe["compaction-1:0"] == by_probe["compaction-1:1"]  # the same requests
    assert len({e["key"] for e in entries}) == len(entries)  # but never one shared call


def test_explain_cache_task_output(
    tmp_path: Path, clean_checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from continuity.commands.units import _print_explain

    _print_explain(str(tmp_path / "none.jsonl"))  # every unit was already complete
    assert "no call was looked up" in capsys.readouterr().out
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = Rig(
            tmp_path, clean_checkout, url, "openai-chat", arms="native", judge="none", probe_limit=1
        )
        result = rig.run(explain_cache=True)
    _print_explain(result.explain_log)
    out = capsys.readouterr().out
    assert "cache miss" in out and "openai-chat gpt-6-mini" in out and "repeat=1" in out


def test_repeats_are_independent_samples(tmp_path: Path, clean_checkout: Path) -> None:
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = Rig(
            tmp_path,
            clean_checkout,
            url,
            "openai-chat",
            arms="native",
            judge="none",
            repeats=2,
            probe_limit=1,
        )
        result = rig.run()
        assert app.count() == 2  # same request, two repeats: two calls, not one
        only_two = rig.run(only_repeats=[2])
        assert app.count() == 2 and only_two.built == 0
    keys = {r.repeat: r.probes[0].evidence.calls[0].key for r in result.records}
    assert keys[1] != keys[2]


def test_every_arm_runs_real_with_the_offline_classification(
    tmp_path: Path, clean_checkout: Path
) -> None:
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = Rig(
            tmp_path,
            clean_checkout,
            url,
            "openai-responses",
            arms="all",
            probe_limit=1,
            judge="none",
        )
        result = rig.run()
        offline, _, _ = build_units(
            rig.store, "original", traces=TRACE, probe_limit=1, run_dir=tmp_path / "offline"
        )
    real = {r.arm: [p.status for p in r.probes] for r in result.records}
    expected = {r.arm: [p.status for p in r.probes] for r in offline}
    assert real == expected and len(real) == len(offline) >= 8


SUMMARY_ASK = "You summarize conversations"


def test_confound_controls_one_final_compaction_per_probe_one_mid_trace_per_repeat(
    tmp_path: Path, clean_checkout: Path
) -> None:
    """Seed 000's confound controls, counted on the wire: (c) and (d) compact the final
    context once per probe; (d)'s mid-trace summary is one real call per repeat, shared
    by that repeat's probes, and its spend is in the arm's totals."""
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = Rig(
            tmp_path,
            clean_checkout,
            url,
            "openai-chat",
            arms="compaction-1,compaction-2",
            judge="none",
            repeats=2,
        )
        result = rig.run()
        summaries_on_wire = sum(1 for _, body in app.calls if SUMMARY_ASK in json.dumps(body))
        calls = app.count()
        again = rig.run()  # a resume calls nothing: both the summaries and units are reused
        assert app.count() == calls and again.built == 0
    units = {(r.repeat, r.arm): r for r in result.records}
    assert len(units) == 4
    final_keys: list[str] = []
    for (repeat, arm), record in sorted(units.items()):
        assert [p.status for p in record.probes] == ["valid", "valid"], record.probes
        replays = probe_replays(rig.store, record)
        per_probe = []
        for probe in record.probes:
            assert probe.evidence is not None and probe.evidence.compaction is not None
            summary = [c for c in probe.evidence.calls if c.role == "summary"]
            # One final compaction per probe, made for that probe (never from the cache).
            assert len(summary) == probe.evidence.compaction.summary_requests
            assert not any(c.key in replays[probe.index] for c in summary), (repeat, arm, summary)
            per_probe.append({c.key for c in summary})
        assert per_probe[0].isdisjoint(per_probe[1])
        final_keys += [k for keys in per_probe for k in keys]
    assert len(set(final_keys)) == len(final_keys)  # 2 arms x 2 repeats x 2 probes, distinct
    # (c) has no mid-trace compaction; (d) has one real one per repeat.
    assert all(units[(r, "compaction-1")].mid_trace_calls == [] for r in (1, 2))
    mid = {r: units[(r, "compaction-2")] for r in (1, 2)}
    for record in mid.values():
        events = [p.evidence.mid_trace_compaction for p in record.probes if p.evidence]
        assert len(events) == 2 and events[0] == events[1]  # shared by the repeat's probes
        event = events[0]
        assert event is not None and event.reason == "manual"
        # One compaction: its summary requests (history, and a split turn's prefix).
        assert len(record.mid_trace_calls) == event.summary_requests >= 1
        assert all(c.role == "summary" for c in record.mid_trace_calls)
        # Made for this repeat, not replayed: the unit built its checkpoint and says so
        # beside it, as does the checkpoint's own entry.
        entry, checkpoint = (rig.store.get_action(k) for k in (record.key, record.checkpoint))
        assert entry is not None and checkpoint is not None
        assert entry.meta["mid_trace_replayed"] == checkpoint.meta["replayed_calls"] == []
        assert sum((c.usage for c in record.mid_trace_calls), Usage()) == event.usage
    repeat_keys = [{c.key for c in mid[r].mid_trace_calls} for r in (1, 2)]
    assert repeat_keys[0].isdisjoint(repeat_keys[1])  # each repeat its own sample
    assert mid[1].checkpoint != mid[2].checkpoint  # one checkpoint per repeat
    assert units[(1, "compaction-1")].checkpoint == units[(2, "compaction-1")].checkpoint
    # Every summary on the wire is one of these: finals per probe, plus (d)'s mid-trace.
    assert summaries_on_wire == len(final_keys) + sum(len(k) for k in repeat_keys)
    # The mid-trace spend is in (d)'s totals once per repeat (not once per probe that
    # shares it): in the arm's compaction tokens and its list-price call count.
    mid_input = 0
    for record in mid.values():
        mid_input += sum(c.usage.input for c in record.mid_trace_calls)
        for probe in record.probes:
            assert probe.evidence is not None
            assert probe.compaction_usage == probe.evidence.compaction_usage
    results, _, _ = aggregate_run(rig.store, rig.output)
    d_calls = {
        c.key for r in mid.values() for p in r.probes if p.evidence for c in p.evidence.calls
    }
    d_calls |= repeat_keys[0] | repeat_keys[1]
    assert results.spend["compaction-2"].model_calls == len(d_calls)
    d_input = sum(p.compaction_usage.input for r in mid.values() for p in r.probes)
    assert mid_input > 0
    assert results.spend["compaction-2"].compaction_input == d_input + mid_input


def test_a_failed_mid_trace_summary_leaves_the_unit_unstarted_then_resumes(
    tmp_path: Path, clean_checkout: Path
) -> None:
    """(d)'s real mid-trace summary is the run's first call: refused, it stops admission
    and the unit is neither stored nor materialised; the next run builds it."""
    app = WireServer(faults=Faults(auth_fail_from=1))
    with serve_in_thread(app) as url:
        rig = Rig(
            tmp_path,
            clean_checkout,
            url,
            "openai-chat",
            arms="compaction-2",
            judge="none",
            probe_limit=1,
        )
        with pytest.raises(RunIncomplete) as caught:
            rig.run()
        # The mid-trace compaction's summary requests only (history and a split turn's
        # prefix, sent side by side): no probe was started.
        assert 1 <= app.count() <= 2
        assert all(SUMMARY_ASK in json.dumps(body) for _, body in app.calls)
        app.faults = Faults()
        result = rig.run()
    assert caught.value.code == "run_stopped" and "provider_auth_failed" in caught.value.message
    (record,) = result.records
    assert record.mid_trace_calls and record.probes[0].status == "valid"
    assert record.eligible_terminal is True and record.complete is True
