"""`doit units --agent --real`: the probe forwarded to a real reader endpoint (a loopback
stand-in speaking the OpenAI wire format) through the guarded real mode and the call
cache. The replay stays scripted; the agent, MCP, HTTP, the ledger and the store are the
real path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from msgspec import UNSET

from continuity.agents.manifest import load_manifest
from continuity.agents.readers import NO_RESULT, model_request
from continuity.contract_agent import TOY_MANIFEST
from continuity.errors import ContinuityError, RunIncomplete
from continuity.lookup.policy import load_policy
from continuity.messages import AssistantMessage, ToolResultMessage, UserMessage
from continuity.plan.estimate import dry_run, record_dry_run
from continuity.plan.estimate_format import format_dry_run
from continuity.plan.from_request import plan_from_request
from continuity.plan.pricing import load_catalog
from continuity.plan.request import PlanRequest
from continuity.plan.workload import ASSUMPTIONS, workload
from continuity.probes.protocol import probe_turn_text, unknown_reply
from continuity.providers.endpoint import EndpointSpec
from continuity.report.aggregate import aggregate_run
from continuity.runner.agent_real import run_real_agent
from continuity.runner.real_request import RealRequest
from continuity.runner.units.store import replayed_calls
from continuity.servers.history import INPUT_SCHEMA
from continuity.servers.proxy_script import WireMessage, WireRequest
from continuity.servers.wire import Faults, WireServer, serve_in_thread
from continuity.store import Store
from continuity.traces.suites import build_suite
from tests.harness.test_replay import trace_named

TRACE = "brightline-return"


def _rig(
    tmp_path: Path,
    url: str,
    agent: Path = TOY_MANIFEST,
    arms: str = "native,new_session",
    **extra: str,
) -> dict[str, Any]:
    store = Store(tmp_path / "store")
    credentials = tmp_path / "credentials.json"
    credentials.write_text('{"api_key": "sk-loopback"}')
    options = {"agent": str(agent), "provider": "openai-chat", "base_url": url + "/v1",
               "credentials": str(credentials), "reader": "openai-codex:gpt-6-mini",
               "arms": arms, "probe_limit": 1, **extra}  # fmt: skip
    plan = plan_from_request(PlanRequest.of(options))
    result = dry_run(plan, workload(plan), load_catalog())
    record_dry_run(store, result, tmp_path / "plans")
    item = next(i for i in build_suite(store, "original", out_dir=tmp_path).items
                if i.trace_id == TRACE)  # fmt: skip
    return {"store": store, "plan": plan, "digest": result.digest, "credentials": credentials,
            "traces": [(item.key, trace_named(TRACE))], "agent": agent}  # fmt: skip


def _run(rig: dict[str, Any], tmp_path: Path, checkout: Path, **extra: Any) -> Any:
    request = RealRequest(
        confirm=rig["digest"],
        credentials=str(rig["credentials"]),
        output=str(tmp_path / "run"),
        checkout=checkout,
        environ={},
        **extra,
    )
    manifest = load_manifest(rig["agent"])
    return run_real_agent(rig["plan"], rig["store"], manifest, rig["traces"], request)


def test_the_probe_goes_to_the_real_reader_once_and_reruns_reuse_units_and_calls(
    tmp_path: Path, clean_checkout: Path
) -> None:
    app = WireServer(model="served-model-7")
    with serve_in_thread(app) as url:
        rig = _rig(tmp_path, url)
        assert workload(rig["plan"]).answer_calls == 8  # 4 originals x one probe x two arms
        shown = format_dry_run(dry_run(rig["plan"], workload(rig["plan"]), load_catalog()))
        assert "agent toy 0.1.0 (manifest " in shown and "only the probe is sent" in shown
        build, _ = _run(rig, tmp_path, clean_checkout)
        made = app.count()
        again, _ = _run(rig, tmp_path, clean_checkout)
        assert app.count() == made == 2  # the rerun reused both units: no call
        for record in build.records:  # the units lost, the call cache kept
            rig["store"].action_path(record.key).unlink()
        rebuilt, _ = _run(rig, tmp_path, clean_checkout)
        assert app.count() == 2  # every probe call replayed from the call cache
    assert build.built == 2 and again.built == 0 and rebuilt.built == 2
    assert [r.content_digest for r in rebuilt.records] == [r.content_digest for r in build.records]
    replayed = set().union(*(replayed_calls(rig["store"], r) for r in rebuilt.records))
    assert replayed == {p.agent.calls[0].key for r in rebuilt.records for p in r.probes
                        if p.agent is not UNSET}  # fmt: skip
    for record in build.records:
        assert record.binding is not None and record.binding["reader"]["kind"] == "openai-chat"
        probe = record.probes[0]
        # The loopback model read the owner turn's answer-line instruction through the agent.
        assert probe.status == "valid" and probe.answer == unknown_reply(
            probe_turn_text("?", probe.category)
        )
        assert probe.agent is not UNSET and len(probe.agent.calls) == 1
        assert probe.agent.calls[0].served_model == "served-model-7"
        assert probe.usage.total_input > 0 and probe.usage.output > 0
    sent = [body for _, body in app.calls]
    question = trace_named(TRACE).probes[0].text
    assert all(question in str(body["messages"][-1]["content"]) for body in sent)
    assert len(sent[0]["messages"]) > len(sent[1]["messages"])  # native keeps more than new
    results, _, _ = aggregate_run(rig["store"], tmp_path / "run")
    assert results.spend["agent-native"].model_calls == 1


def test_a_real_compact_sample_sends_the_agents_summary_request_then_its_probe(
    tmp_path: Path, clean_checkout: Path
) -> None:
    """The agent's own compaction in real mode: its summary request goes to the reader
    endpoint as a ``summary`` call (estimated in the dry run), then the probe; the
    summary the real model wrote is what the probe request carries."""
    app = WireServer(model="served-model-7")
    compacting = TOY_MANIFEST.parent / "v1.toml"
    with serve_in_thread(app) as url:
        rig = _rig(tmp_path, url, agent=compacting, arms="compact")
        planned = workload(rig["plan"])
        # 4 originals x one probe: a summary call per sample beside its answer
        assert planned.answer_calls == 4 and planned.compaction_calls == 4
        build, _ = _run(rig, tmp_path, clean_checkout)
    probes = [p for r in build.records for p in r.probes]
    assert len(probes) == 1 and app.count() == 2  # the run's one trace
    for probe in probes:
        assert probe.agent is not UNSET and probe.agent.verdict == "verified"
        assert [c.role for c in probe.agent.calls] == ["summary", "answer"]
        assert len(probe.agent.summaries) == 1 and probe.status == "valid"
        assert "from the loopback model" in probe.agent.summaries[0]


def test_a_real_switch_sends_the_probe_to_the_model_the_plan_names(
    tmp_path: Path, clean_checkout: Path
) -> None:
    """The switch arm's probe goes to ``--switch-model`` (the request names it, the
    receipt is its call); native's goes to the reader. Naming the second model keys
    the switch arm's units only: native's unit is the one a plan without it builds."""
    app = WireServer(model="served-model-7")
    v1 = TOY_MANIFEST.parent / "v1.toml"
    with serve_in_thread(app) as url:
        rig = _rig(tmp_path, url, agent=v1, arms="native,switch",
                   switch_model="local:other-model")  # fmt: skip
        assert "the agent switches to local:other-model" in format_dry_run(
            dry_run(rig["plan"], workload(rig["plan"]), load_catalog())
        )
        build, _ = _run(rig, tmp_path, clean_checkout)
        alone = _rig(tmp_path / "native", url, agent=v1, arms="native")
        alone_build, _ = _run(alone, tmp_path / "native", clean_checkout)
    by_arm = {r.arm: r for r in build.records}
    assert [b["model"] for _, b in app.calls[:2]] == ["gpt-6-mini", "other-model"]
    switched = by_arm["agent-switch"].probes[0]
    assert switched.agent is not UNSET and switched.agent.verdict == "verified"
    assert [(c.served_model, c.billed_as) for c in switched.agent.calls] == [
        ("served-model-7", "local:other-model")
    ]
    assert by_arm["agent-switch"].binding is not None
    assert by_arm["agent-switch"].binding["switch"]["model"] == "other-model"
    # The report bills the switch arm's call as the model it switched to (unpriced here),
    # the native arm's as the reader (priced), and the drill-down names the model.
    results, paths, _ = aggregate_run(rig["store"], tmp_path / "run")
    assert results.spend["agent-switch"].unpriced_calls == 1
    assert results.spend["agent-switch"].cost_usd is None
    assert results.spend["agent-native"].unpriced_calls == 0
    assert "switched to cont-switch (local:other-model)" in paths["report"].read_text()
    native = by_arm["agent-native"]
    assert native.binding is not None and "switch" not in native.binding
    assert native.key == alone_build.records[0].key


def test_a_real_store_sample_looks_records_up_through_the_agent(
    tmp_path: Path, clean_checkout: Path
) -> None:
    """The store arm's real reader is offered ConversationHistory (its real
    definition), calls it through the agent and the meter, then answers from the
    result; the dry run planned the reference store arm's rounds."""
    app = WireServer(model="served-model-7")
    with serve_in_thread(app) as url:
        rig = _rig(tmp_path, url, agent=TOY_MANIFEST.parent / "v1.toml",
                   arms="continuity-store")  # fmt: skip
        assert workload(rig["plan"]).answer_calls == 4 * ASSUMPTIONS["history_rounds"]
        build, _ = _run(rig, tmp_path, clean_checkout)
    probe = build.records[0].probes[0]
    assert probe.agent is not UNSET and probe.agent.verdict == "verified"
    assert probe.status == "valid" and probe.agent.lookup_calls == 1
    assert [c.role for c in probe.agent.calls] == ["answer", "answer"]
    first, second = (body for _, body in app.calls)
    assert [t["function"]["name"] for t in first["tools"]] == ["ConversationHistory"]
    assert first["tools"][0]["function"]["parameters"] == INPUT_SCHEMA
    assert second["messages"][-1]["role"] == "tool"  # the record the agent fetched
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "ConversationHistory"


def test_a_real_store_reader_that_never_stops_looking_must_answer(
    tmp_path: Path, clean_checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader's calls are passed on in at most the policy's call budget plus one
    requests of a sample (the reference lookup loop's bound); after that the tool stays
    offered but its calls are dropped and the reply's text is the answer, so a model
    that calls the tool forever cannot run up calls."""
    monkeypatch.setattr(WireServer, "reply", _always_searches)
    app = WireServer(model="served-model-7")
    with serve_in_thread(app) as url:
        rig = _rig(tmp_path, url, agent=TOY_MANIFEST.parent / "v1.toml",
                   arms="continuity-store")  # fmt: skip
        build, _ = _run(rig, tmp_path, clean_checkout)
    budget = load_policy().calls
    assert len(app.calls) == budget + 2 and all("tools" in body for _, body in app.calls)
    probe = build.records[0].probes[0]
    assert probe.agent is not UNSET and probe.agent.lookup_calls == budget
    assert probe.agent.verdict == "verified"  # the meter received the refused call too


def _always_searches(self: WireServer, path: str, body: dict[str, Any]) -> tuple[str, Any]:
    """A model that searches whenever a tool is offered, else declines."""
    if body.get("tools"):
        return "", {"action": "search", "query": "anything", "limit": 5}
    return "ANSWER: UNKNOWN", None


def test_a_failing_reader_stops_the_run_and_seals_nothing(
    tmp_path: Path, clean_checkout: Path
) -> None:
    app = WireServer(faults=Faults(auth_fail_from=1))
    with serve_in_thread(app) as url:
        rig = _rig(tmp_path, url)
        with pytest.raises(RunIncomplete) as caught:
            _run(rig, tmp_path, clean_checkout)
    assert caught.value.code in ("run_incomplete", "run_stopped")
    assert not list((tmp_path / "run" / "units").glob("*.json"))


def test_real_agent_units_keep_every_guard(tmp_path: Path, clean_checkout: Path) -> None:
    with serve_in_thread(WireServer()) as url:
        rig = _rig(tmp_path, url)
        with pytest.raises(ContinuityError) as caught:
            _run({**rig, "digest": "0" * 64}, tmp_path, clean_checkout)
    assert caught.value.code == "confirmation_mismatch"


def test_the_agents_request_becomes_the_readers_with_calls_and_results_paired() -> None:
    spec = EndpointSpec(kind="openai-chat", base_url="http://127.0.0.1:1", model="m",
                        credentials_path="/nonexistent")  # fmt: skip
    wire = WireRequest(model="cont-main", system="be brief", stream=False, tools=("find",),
                       messages=(
        WireMessage("user", "look it up"),
        WireMessage("assistant", "", (("find", '{"q": "x"}'), ("find", "not json"))),
        WireMessage("tool", "first"),
        WireMessage("tool", "second"),
        WireMessage("tool", "orphan"),
        WireMessage("assistant", "", (("find", "{}"),)),
        WireMessage("user", "and now?"),
    ))  # fmt: skip
    request = model_request(wire, spec)
    kinds = [type(m).__name__ for m in request.messages]
    assert kinds == ["UserMessage", "AssistantMessage", "ToolResultMessage",
                     "ToolResultMessage", "UserMessage", "AssistantMessage",
                     "ToolResultMessage", "UserMessage"]  # fmt: skip
    call = request.messages[1]
    assert isinstance(call, AssistantMessage)
    assert [c.arguments for c in call.tool_calls] == [{"q": "x"}, {"arguments": "not json"}]
    first, second = request.messages[2], request.messages[3]
    assert isinstance(first, ToolResultMessage) and isinstance(second, ToolResultMessage)
    assert (first.call_id, second.call_id) == (call.tool_calls[0].call_id,
                                               call.tool_calls[1].call_id)  # fmt: skip
    orphan, unanswered = request.messages[4], request.messages[6]
    assert isinstance(orphan, UserMessage) and "orphan" in orphan.text
    assert isinstance(unanswered, ToolResultMessage) and unanswered.text == NO_RESULT
    assert request.system == "be brief" and request.tools == ()
