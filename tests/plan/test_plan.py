"""Plans, digests, pricing, the dry run and the estimate (all offline, no credential)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.errors import PricingError, UsageError
from continuity.messages import Usage
from continuity.plan.estimate import (
    check_cost_limit,
    check_model_limits,
    confirmed_dry_run,
    dry_run,
    estimate,
    record_dry_run,
)
from continuity.plan.estimate_format import format_dry_run
from continuity.plan.from_request import plan_from_request
from continuity.plan.plan import build_plan, plan_digest
from continuity.plan.pricing import call_cost, default_catalog_path, load_catalog
from continuity.plan.request import PlanRequest
from continuity.plan.workload import PlannedCall, price_calls, workload
from continuity.store import Store
from tests.conftest import REPO

# The default offline plan: original suite, every arm, one repeat, default models.
# Re-pinned by issue 17: the trace schema gained free recall and decoys, so the
# validation code every trace key binds moved, and with it `traces_key` (the plan's
# other fields encode byte for byte as before: compared against 8d99e6a's 364124f0...).
# Re-pinned by issue 34, for two recorded reasons: the trace schema gained the smoke
# family (`traces_key` moved again), and the default reader is the current profile's
# real model, not the seed's. With the seed's reader and a45a6ed's `traces_key`, the
# plan digests exactly as before (`test_the_previous_default_digest_is_reproduced`).
# Re-pinned by issue 35: probe-protocol-v3 (the plan binds the protocol); with
# probe-protocol-v2 put back, the plan digests exactly as before.
DEFAULT_DIGEST = "ed2ed049bae9736005a8ae4adee9d26a4f5dc5935b7ed43b4005d455334a7f2c"
PREVIOUS_DIGEST = "909b0ae06399e76dee862617f9c5a94067ec8e1c590e5a51414e4f7215b0e646"
PREVIOUS_TRACES_KEY = "0b26c6b203b298fa34485761939e806acf7efb99090412b53b55100190b7af1f"


def test_default_offline_plan_digest_is_pinned() -> None:
    assert plan_digest(build_plan()) == DEFAULT_DIGEST
    assert plan_digest(plan_from_request(PlanRequest())) == DEFAULT_DIGEST


def test_the_previous_default_digest_is_reproduced() -> None:
    """The moves are only what issues 34 and 35 record: nothing else in the encoding
    changed."""
    seed = plan_from_request(PlanRequest.of({"models": "seed"}))
    previous = msgspec.structs.replace(
        seed, traces_key=PREVIOUS_TRACES_KEY, probe_protocol="probe-protocol-v2"
    )
    assert plan_digest(previous) == PREVIOUS_DIGEST


@pytest.mark.parametrize(
    "change",
    [
        {"suite": "hard"},
        {"suite": "hard", "seeds": "101-102"},
        {"arms": "native"},
        {"repeats": 2},
        {"probe_limit": 1},
        {"reader": "openai:other"},
        {"effort": "high"},
        {"alternate": "openai:other"},
        {"judge": "openai:judge"},
        {"judge": "openai:judge", "judge_effort": "high"},
        {"provider": "openai-chat", "credentials": "/c.json"},
        {"provider": "anthropic", "credentials": "/c.json"},
    ],
)
def test_every_bound_field_changes_the_digest(change: dict[str, Any]) -> None:
    assert plan_digest(plan_from_request(PlanRequest.of(change))) != DEFAULT_DIGEST


@pytest.mark.parametrize(
    ("base", "change"),
    [
        # Each pair differs in one bound field only, so the field itself is proven bound.
        ({"suite": "hard", "seeds": "101-102"}, {"seeds": "101-103"}),
        ({"suite": "hard", "seeds": "101-102"}, {"seeds": "102-103"}),
        (
            {"provider": "openai-chat", "credentials": "/c.json"},
            {"provider": "openai-responses"},
        ),
        (
            {"provider": "openai-chat", "credentials": "/c.json"},
            {"base_url": "https://models.invalid/v1"},
        ),
        ({"probe_mode": "lookup-allowed-v1"}, {"lookup_reader": "alternate"}),
        ({"judge": "openai:judge"}, {"judge_effort": "high"}),
    ],
)
def test_one_field_changed_alone_changes_the_digest(
    base: dict[str, Any], change: dict[str, Any]
) -> None:
    assert plan_digest(plan_from_request(PlanRequest.of({**base, **change}))) != plan_digest(
        plan_from_request(PlanRequest.of(base))
    )


def test_the_endpoint_is_bound_but_neither_the_credentials_nor_their_path() -> None:
    """A credential decides who pays, not what is measured: a plan is made without one,
    and the dry run's next command runs as printed (issue 34)."""
    base = {"provider": "openai-chat", "credentials": "/a/creds.json"}
    digest = plan_digest(plan_from_request(PlanRequest.of(base)))
    assert (
        plan_digest(
            plan_from_request(PlanRequest.of({**base, "base_url": "http://127.0.0.1:1/v1"}))
        )
        != digest
    )
    assert (
        plan_digest(plan_from_request(PlanRequest.of({**base, "credentials": "/b/creds.json"})))
        == digest
    )
    assert plan_digest(plan_from_request(PlanRequest.of({"provider": "openai-chat"}))) == digest
    plan = plan_from_request(PlanRequest.of(base))
    assert plan.credentials_fingerprint is None
    assert "creds" not in msgspec.json.encode(plan).decode()


@pytest.mark.parametrize(
    "execution",
    [
        {"trace": "brightline-return"},
        {"repeat": "1"},
        {"jobs": 4},
        {"concurrency": 9},
        {"out": "/elsewhere"},
        {"run": "other"},
        {"confirm_plan": "x"},
        {"max_input_tokens": 5},
        {"explain_cache": True},
    ],
)
def test_execution_only_fields_do_not_change_the_digest(execution: dict[str, Any]) -> None:
    assert plan_digest(plan_from_request(PlanRequest.of(execution))) == DEFAULT_DIGEST


@pytest.mark.parametrize(
    ("options", "location"),
    [
        ({"repeats": -1}, "--repeats"),
        ({"reader": "no-colon"}, "--reader"),
        ({"provider": "telepathy"}, "--provider"),
        ({"base_url": "http://127.0.0.1:9"}, "--base-url"),
    ],
)
def test_bad_plan_options(options: dict[str, Any], location: str) -> None:
    with pytest.raises(UsageError) as caught:
        plan_from_request(PlanRequest.of(options))
    assert caught.value.code == "plan_invalid"
    assert caught.value.location == location


def test_unknown_arm_and_suite_keep_their_codes() -> None:
    with pytest.raises(UsageError) as caught:
        plan_from_request(PlanRequest.of({"suite": "nope"}))
    assert caught.value.code == "suite_unknown"


# -- pricing -----------------------------------------------------------------------------


def test_highest_strictly_exceeded_tier_applies_cached_input_included() -> None:
    catalog = load_catalog()
    model = "openai-codex:gpt-6-luna"  # base 1.25/10/0.125; above 200k: 2.5/15/0.25
    at = call_cost(catalog, model, Usage(input=200_000, output=1_000_000))
    assert at == pytest.approx(200_000 * 1.25 / 1e6 + 10.0)  # not strictly above: base
    # 100k fresh + 100,001 cached = 200,001 input tokens: the tier applies to all of it.
    above = call_cost(catalog, model, Usage(input=100_000, cache_read=100_001))
    assert above == pytest.approx(100_000 * 2.5 / 1e6 + 100_001 * 0.25 / 1e6)


def test_cache_writes_are_priced_once_at_the_write_rate() -> None:
    catalog = load_catalog()
    cost = call_cost(
        catalog, "openai-codex:gpt-6.1-sol", Usage(input=1_000, cache_write=400, cache_read=0)
    )
    assert cost == pytest.approx(600 * 2.0 / 1e6 + 400 * 2.5 / 1e6)


def test_unknown_prices_stay_unknown_never_zero() -> None:
    catalog = load_catalog()
    assert call_cost(catalog, "openai:local-model", Usage(input=10)) is None
    assert call_cost(catalog, "nobody:knows", Usage(input=10)) is None
    calls = [
        PlannedCall("answer", "openai:local-model", 100, 0, 0, 10),
        PlannedCall("answer", "openai-codex:gpt-6-mini", 1_000_000, 0, 0, 0),
    ]
    price = price_calls(catalog, calls, cache=False)
    assert price.unpriced_calls == 1 and not price.complete
    assert price.known == pytest.approx(0.25)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(schema="other"),
        lambda d: d["models"]["openai-codex:gpt-6-mini"].update(input=-1),
        lambda d: d["models"]["openai-codex:gpt-6-luna"].update(
            tiers=[{"above_input_tokens": 5}, {"above_input_tokens": 5}]
        ),
        lambda d: d.update(extra=1),
    ],
)
def test_bad_catalogs_are_refused(mutate: Any, tmp_path: Path) -> None:
    from continuity.plan.pricing import default_catalog_path

    document = json.loads(default_catalog_path().read_text())
    mutate(document)
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(document))
    with pytest.raises(PricingError) as caught:
        load_catalog(path)
    assert caught.value.code == "pricing_invalid"
    assert str(path) in caught.value.location


def test_missing_catalog_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PricingError) as caught:
        load_catalog(tmp_path / "missing.json")
    assert caught.value.code == "pricing_invalid"


# -- workload, dry run and estimate --------------------------------------------------


def test_workload_counts_follow_the_plan() -> None:
    one = workload(build_plan(arms="native", probe_limit=2))
    two = workload(build_plan(arms="native", probe_limit=2, repeats=2))
    assert one.units == 4 and one.live_turns == 8  # 4 original traces x 2 probes
    assert two.live_turns == 2 * one.live_turns
    assert one.compaction_calls == 0
    compaction = workload(build_plan(arms="compaction-1", probe_limit=2))
    assert compaction.compaction_calls == compaction.live_turns
    # compaction-2: offline its mid-trace summary is scripted in the checkpoint; a real
    # plan adds one real mid-trace summary per repeat and trace to the per-probe ones.
    offline = workload(build_plan(arms="compaction-2", probe_limit=2, repeats=2))
    assert offline.compaction_calls == offline.live_turns == 16
    real = workload(build_plan(arms="compaction-2", probe_limit=2, repeats=2, mode="real"))
    assert real.compaction_calls == real.live_turns + 4 * 2  # 4 traces x 2 repeats
    store = workload(build_plan(arms="continuity-store", probe_limit=2))
    assert store.answer_calls == 3 * store.live_turns  # search, get, answer
    assert workload(build_plan(judge=None)).judge_calls == 0
    # The judge is opt-in (`--judge none` still means none) and grades every answer.
    assert (
        plan_from_request(PlanRequest.of({"judge": "none"}))
        == plan_from_request(PlanRequest())
        == build_plan()
    )
    judged = workload(build_plan(arms="native,compaction-1", probe_limit=2, judge="openai:j"))
    assert judged.judge_calls == judged.live_turns == 16
    assert {c.model for c in judged.calls if c.role == "judge"} == {"openai:j"}


def _judge_requests(monkeypatch: pytest.MonkeyPatch, cases: list[Any]) -> list[Any]:
    """The requests `ProviderJudge` sends for `cases`, captured in place of the provider
    (no network, no credential)."""
    from contextlib import asynccontextmanager
    from types import SimpleNamespace

    from continuity.probes.judge import ProviderJudge
    from continuity.providers.endpoint import EndpointSpec

    sent: list[Any] = []

    @asynccontextmanager
    async def provider(_spec: Any) -> Any:
        yield None

    class Cached:  # the call cache, bypassed: every request reaches `complete`
        def __init__(self, *_: Any, **__: Any) -> None:
            self.receipts: list[Any] = []
            self.replayed: list[str] = []

    async def complete(_provider: Any, request: Any) -> Any:
        sent.append(request)
        return SimpleNamespace(message=SimpleNamespace(text="CORRECT"))

    monkeypatch.setattr("continuity.providers.real.make_provider", provider)
    monkeypatch.setattr("continuity.providers.cache.CachedProvider", Cached)
    monkeypatch.setattr("continuity.providers.protocol.complete", complete)
    spec = EndpointSpec(
        kind="openai-chat", base_url="http://127.0.0.1:1", model="j", credentials_path="/x"
    )
    ProviderJudge(spec, "/nonexistent-store", repeat=1).verdicts(cases)
    return sent


def test_the_judge_estimate_covers_its_real_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each judge call is priced from its own request: the judge's system prompt and the
    prompt built for that probe, with an answer of the assumed 300 tokens (1,200
    characters). The estimate is never below the request ProviderJudge actually sends."""
    from continuity.plan.workload import ASSUMPTIONS, load_plan_traces
    from continuity.probes.judge import JudgeCase

    plan = build_plan("hard", [101], arms="native", judge="openai:j")
    load = workload(plan)
    probes = [p for t in load_plan_traces(plan) for p in t.probes]
    estimates = [c.input_tokens for c in load.calls if c.role == "judge"]
    assert len(estimates) == len(probes) > 5
    answer = ("It was KLN-4471-QX, confirmed on 18 June at 19:30. " * 40)[
        : 4 * ASSUMPTIONS["answer_output_tokens"]
    ]
    sent = _judge_requests(
        monkeypatch, [JudgeCase(p.probe_id, p.text, p.expectation, answer) for p in probes]
    )
    assert len(sent) == len(probes)
    for estimate_tokens, request in zip(estimates, sent, strict=True):
        chars = len(request.system) + sum(len(m.text) for m in request.messages)
        assert estimate_tokens >= -(-chars // 4) > 400  # the old flat figure underpriced it
        assert estimate_tokens - -(-chars // 4) <= 2  # and the estimate is that request
    assert len({*estimates}) > 1  # per probe, not one flat figure


def test_calls_that_cannot_fit_their_model_refuse_the_confirmation(tmp_path: Path) -> None:
    plan = build_plan("hard", [101], arms="native", probe_limit=1, reader="openai-codex:gpt-6-luna")
    load = workload(plan)
    assert dry_run(plan, load, load_catalog()).over_limit_calls == 0  # 272k fits
    document = json.loads(default_catalog_path().read_text())
    document["models"][plan.reader]["context_window"] = 100_000  # the ~226k probe cannot
    small = tmp_path / "catalog.json"
    small.write_text(json.dumps(document))
    result = dry_run(plan, load, load_catalog(small))
    assert result.over_limit_calls == load.answer_calls > 0
    assert "calls over a limit" in format_dry_run(result)
    with pytest.raises(UsageError) as err:
        check_model_limits(result)
    assert err.value.code == "model_limit_exceeded"
    # Through doit: refused, and nothing recorded as a confirmation.
    refused, _ = guarded_doit(
        tmp_path,
        "dry_run",
        "--suite",
        "hard",
        "--seeds",
        "101",
        "--arms",
        "native",
        "--probe-limit",
        "1",
        "--models",
        "seed",
        "--pricing",
        str(small),
    )
    assert refused.returncode != 0
    assert "model_limit_exceeded" in refused.stdout + refused.stderr
    assert confirmed_dry_run(Store(tmp_path / "store"), plan_digest(plan)) is None


def test_dry_run_prices_upper_bound_above_expected() -> None:
    plan = build_plan()
    result = dry_run(plan, workload(plan), load_catalog())
    assert result.digest == DEFAULT_DIGEST
    assert result.upper_bound.usd is not None and result.expected.usd is not None
    assert result.upper_bound.usd > result.expected.usd > 0
    text = format_dry_run(result)
    assert f"confirmation digest: {DEFAULT_DIGEST}" in text
    for word in (
        "units",
        "live turns",
        "answer calls",
        "compaction calls",
        "judge calls",
        "planned input tokens",
        "upper bound",
        "expected",
    ):
        assert word in text


def test_unpriced_plan_shows_unknown_and_cannot_pass_a_cost_limit() -> None:
    plan = build_plan(reader="openai:local-model", judge=None)
    result = dry_run(plan, workload(plan), load_catalog())
    assert result.upper_bound.usd is None
    assert "unknown" in format_dry_run(result)
    with pytest.raises(UsageError) as caught:
        check_cost_limit(result, 1_000_000.0)
    assert caught.value.code == "cost_unknown"


def test_cost_limit_refuses_an_expensive_plan() -> None:
    plan = build_plan()
    result = dry_run(plan, workload(plan), load_catalog())
    assert result.upper_bound.usd is not None
    check_cost_limit(result, result.upper_bound.usd + 1)
    with pytest.raises(UsageError) as caught:
        check_cost_limit(result, result.upper_bound.usd - 1)
    assert caught.value.code == "cost_limit_exceeded"


def test_estimate_profiles_are_separate_with_cache_sensitivities() -> None:
    plan = build_plan(probe_limit=2)
    load = workload(plan)
    profiles = estimate(plan, load, load_catalog())
    assert [p.role for p in profiles] == ["main", "screening", "high-end"]
    assert [p.model for p in profiles] == [
        plan.reader,
        "openai:gpt-6-luna",
        "anthropic:claude-opus-5-5",
    ]
    for profile in profiles:
        levels = [profile.cache[k].usd for k in ("0%", "50%", "90%")]
        assert all(v is not None for v in levels)
        assert levels[0] > levels[1] > levels[2]  # type: ignore[operator]
        assert profile.cache["0%"].usd == profile.upper_bound.usd
    assert profiles[1].upper_bound.usd < profiles[0].upper_bound.usd  # type: ignore[operator]
    assert profiles[2].upper_bound.usd > profiles[0].upper_bound.usd  # type: ignore[operator]


def test_recorded_dry_run_is_found_by_its_digest(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    plan = build_plan(probe_limit=1)
    result = dry_run(plan, workload(plan), load_catalog())
    path = record_dry_run(store, result, tmp_path / "out")
    assert path.is_file() and (path.parent / "plan.json").is_file()
    assert confirmed_dry_run(store, result.digest) == result
    assert confirmed_dry_run(store, "0" * 64) is None
    assert confirmed_dry_run(store, "not-a-digest") is None


# -- the doit tasks, in a fresh process with every socket refused ----------------------

GUARDED_DOIT = """
import importlib, json, socket, sys
def refuse(*args, **kwargs):
    raise SystemExit(f"network access attempted: {args!r}")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
opened = []
def audit(event, args):
    if event == "open" and args and isinstance(args[0], str):
        opened.append(args[0])
sys.addaudithook(audit)
sys.path.insert(0, sys.argv[1])
from doit.cmd_base import ModuleTaskLoader
from doit.doit_cmd import DoitMain
code = DoitMain(ModuleTaskLoader(importlib.import_module("dodo"))).run(sys.argv[3:])
log = list(opened)
with open(sys.argv[2], "w") as handle:
    json.dump(log, handle)
sys.exit(code)
"""


def guarded_doit(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run a doit task where any socket connection or DNS lookup aborts the process;
    return the result and every file the process opened."""
    log = tmp_path / "opened.json"
    result = subprocess.run(
        [sys.executable, "-c", GUARDED_DOIT, str(REPO), str(log), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={
            **os.environ,
            "CONTINUITY_STORE": str(tmp_path / "store"),
            "CONTINUITY_OUT": str(tmp_path / "out"),
        },
    )
    assert "network access attempted" not in result.stdout + result.stderr
    opened = json.loads(log.read_text()) if log.exists() else []
    return result, opened


def test_dry_run_task_makes_no_network_call_and_reads_no_credential(tmp_path: Path) -> None:
    credentials = tmp_path / "credentials.json"
    credentials.write_text('{"api_key": "sk-secret"}')
    result, opened = guarded_doit(
        tmp_path,
        "dry_run",
        "--provider",
        "openai-chat",
        "--credentials",
        str(credentials),
        "--base-url",
        "https://models.invalid/v1",
        "--probe-limit",
        "1",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "confirmation digest:" in result.stdout and "real plan" in result.stdout
    assert opened, "the audit hook saw no file at all"
    assert str(credentials) not in opened


def test_estimate_task_prints_profiles_and_refuses_real(tmp_path: Path) -> None:
    result, _ = guarded_doit(tmp_path, "estimate", "--probe-limit", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    for word in (
        "main",
        "screening",
        "high-end",
        "cache 0%",
        "cache 50%",
        "cache 90%",
        "call inputs",
    ):
        assert word in result.stdout
    refused, _ = guarded_doit(tmp_path, "estimate", "--real")
    assert refused.returncode != 0
    assert "estimate_real_refused" in refused.stdout + refused.stderr


def test_dry_run_cost_limit_refuses_and_records_nothing(tmp_path: Path) -> None:
    result, _ = guarded_doit(tmp_path, "dry_run", "--cost-limit", "0.01")
    assert result.returncode != 0
    assert "cost_limit_exceeded" in result.stdout + result.stderr
    assert confirmed_dry_run(Store(tmp_path / "store"), DEFAULT_DIGEST) is None
    unknown, _ = guarded_doit(
        tmp_path,
        "dry_run",
        "--reader",
        "openai:local-model",
        "--judge",
        "none",
        "--cost-limit",
        "100",
    )
    assert "cost_unknown" in unknown.stdout + unknown.stderr


def test_plan_task_prints_the_record_and_its_digest(tmp_path: Path) -> None:
    result, _ = guarded_doit(tmp_path, "plan")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"plan digest: {DEFAULT_DIGEST}" in result.stdout
    written = tmp_path / "out" / "plans" / DEFAULT_DIGEST[:16] / "plan.json"
    assert json.loads(written.read_text())["schema"] == "continuity-plan-v1"
    bad, _ = guarded_doit(tmp_path, "plan", "--repeats", "0")
    assert bad.returncode != 0 and "plan_invalid" in bad.stdout + bad.stderr


def test_default_models_come_from_a_profile_genai_prices_prices() -> None:
    """The current profile's models are priced by genai-prices' bundled data (the
    catalog does not list them); the seed profile keeps the specification's bindings."""
    from continuity.plan.models import PROFILES
    from continuity.plan.price_catalog import catalog_day
    from continuity.plan.price_db import database_price

    current = PROFILES["current"]
    catalog = load_catalog()
    for model in {
        *current.reader.values(),
        *current.judge.values(),
        current.screening,
        current.high_end,
    }:
        assert model not in catalog.models, model
        assert database_price(model, catalog_day(catalog)) is not None, model
    assert plan_from_request(PlanRequest()).reader == "openai:gpt-6.1-sol"
    assert (
        plan_from_request(PlanRequest.of({"provider": "anthropic"})).reader
        == "anthropic:claude-sonnet-5-5"
    )
    seed = plan_from_request(PlanRequest.of({"models": "seed"}))
    assert (seed.reader, seed.alternate) == ("openai-codex:gpt-6-luna", "openai-codex:gpt-6.1-sol")
    assert (
        plan_from_request(PlanRequest.of({"models": "seed", "reader": "openai:x"})).reader
        == "openai:x"
    )


def test_an_unknown_model_profile_is_refused() -> None:
    with pytest.raises(UsageError) as refused:
        plan_from_request(PlanRequest.of({"models": "latest"}))
    assert refused.value.code == "plan_invalid" and refused.value.location == "--models"


def test_the_estimate_profiles_follow_the_model_profile(tmp_path: Path) -> None:
    """`doit estimate --models seed` prices the seed's screening model, through doit."""
    for models, screening in (
        ("current", "openai:gpt-6-luna"),
        ("seed", "openai-codex:gpt-6-mini"),
    ):
        result, _ = guarded_doit(tmp_path, "estimate", "--models", models, "--probe-limit", "1")
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"screening {screening}" in result.stdout


@pytest.mark.parametrize(
    ("args", "code", "option"),
    [
        (["dry_run", "--context-window", "0"], "plan_invalid", "--context-window"),
        (["dry_run", "--context-window", "8k"], "plan_invalid", "--context-window"),
        (["dry_run", "--max-output-tokens", "-5"], "plan_invalid", "--max-output-tokens"),
        (["dry_run", "--models", "newest"], "plan_invalid", "--models"),
        (["units", "--real", "--request-timeout", "0"], "option_invalid", "--request-timeout"),
        (["units", "--real", "--request-timeout", "nan"], "option_invalid", "--request-timeout"),
    ],
)
def test_bad_values_of_the_new_plan_and_run_options_are_coded(
    tmp_path: Path, args: list[str], code: str, option: str
) -> None:
    result, _ = guarded_doit(tmp_path, *args)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"{code}:" in output and f"(at {option})" in output, output
    assert "Traceback" not in output


def test_judge_default_is_the_profiles_judge() -> None:
    assert plan_from_request(PlanRequest.of({"judge": "default"})).judge == "openai:gpt-6.1-sol"
    assert plan_from_request(
        PlanRequest.of({"judge": "default", "provider": "anthropic"})
    ).judge == ("anthropic:claude-sonnet-5-5")
    assert plan_from_request(PlanRequest.of({"judge": "default", "models": "seed"})).judge == (
        "openai-codex:gpt-6.1-sol"
    )
    assert plan_from_request(PlanRequest()).judge is None  # still opt-in
