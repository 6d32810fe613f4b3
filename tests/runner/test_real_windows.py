"""Context windows before spending: a planned call that cannot fit the server's window is
refused before any request; one the dry run can see is a blocker there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from continuity.errors import RealModeError, UsageError
from continuity.plan.estimate import check_model_limits, dry_run, record_dry_run
from continuity.plan.from_request import plan_from_request
from continuity.plan.pricing import load_catalog
from continuity.plan.request import PlanRequest
from continuity.plan.workload import workload
from continuity.runner.real import run_real
from continuity.runner.real_request import RealRequest
from continuity.servers.wire import WireServer, serve_in_thread
from continuity.store import Store


def _confirmed(tmp_path: Path, url: str, **extra: Any) -> tuple[Any, Store, str]:
    options = {
        "suite": "smoke",
        "provider": "openai-chat",
        "base_url": url + "/v1",
        "reader": "local:smollm2",
        "effort": "none",
        "arms": "native",
        "probe_limit": 1,
        **extra,
    }
    plan = plan_from_request(PlanRequest.of(options))
    store = Store(tmp_path / "store")
    result = dry_run(plan, workload(plan), load_catalog())
    record_dry_run(store, result, tmp_path / "plans")
    return plan, store, result.digest


def test_a_call_over_the_servers_window_is_refused_before_any_request(
    tmp_path: Path, clean_checkout: Path
) -> None:
    """The server lists a 3,000-token window (as vLLM does); every planned call's input
    plus the 4,096-token output cap is over it: refused with its code, nothing sent."""
    app = WireServer(context_window=3_000)
    with serve_in_thread(app) as url:
        plan, store, digest = _confirmed(tmp_path, url)
        with pytest.raises(RealModeError) as refused:
            run_real(
                plan,
                store,
                RealRequest(
                    confirm=digest,
                    credentials=None,
                    output=str(tmp_path / "run"),
                    checkout=clean_checkout,
                    environ={},
                    jobs=1,
                ),
            )
    error = refused.value
    assert error.code == "context_window_exceeded"
    assert "3,000 (GET " in error.message and "max_model_len" in error.message
    assert error.location == plan.endpoint.base_url
    assert app.calls == []  # the model list is not a model call; nothing else was sent
    assert not (tmp_path / "run" / "units").exists()


def test_a_window_that_fits_lets_the_run_proceed(tmp_path: Path, clean_checkout: Path) -> None:
    app = WireServer(context_window=50_000)
    with serve_in_thread(app) as url:
        plan, store, digest = _confirmed(tmp_path, url, max_output_tokens=64)
        result = run_real(
            plan,
            store,
            RealRequest(
                confirm=digest,
                credentials=None,
                output=str(tmp_path / "run"),
                checkout=clean_checkout,
                environ={},
                jobs=1,
            ),
        )
    assert result.built == 1 and app.calls
    assert all(body.get("max_tokens") == 64 for _, body in app.calls)


def test_the_dry_run_blocks_calls_over_a_stated_window() -> None:
    plan = plan_from_request(
        PlanRequest.of(
            {
                "suite": "smoke",
                "provider": "openai-chat",
                "base_url": "http://127.0.0.1:9/v1",
                "reader": "local:smollm2",
                "context_window": 2_000,
            }
        )
    )
    result = dry_run(plan, workload(plan), load_catalog())
    assert result.over_limit_calls > 0
    with pytest.raises(UsageError) as blocked:
        check_model_limits(result)
    assert blocked.value.code == "model_limit_exceeded"
    assert blocked.value.location == "--context-window"
    assert "--context-window 2,000" in blocked.value.message
    # A smaller output cap makes the same calls fit.
    fitting = plan_from_request(
        PlanRequest.of(
            {
                "suite": "smoke",
                "provider": "openai-chat",
                "base_url": "http://127.0.0.1:9/v1",
                "reader": "local:smollm2",
                "context_window": 8_192,
                "max_output_tokens": 64,
                "arms": "native,cold-rebuild,continuity-store",
            }
        )
    )
    assert dry_run(fitting, workload(fitting), load_catalog()).over_limit_calls == 0


def test_the_window_and_the_cap_are_bound_but_absent_leaves_the_digest() -> None:
    from continuity.plan.plan import plan_digest

    base = {"provider": "openai-chat", "base_url": "http://127.0.0.1:9/v1"}
    plain = plan_digest(plan_from_request(PlanRequest.of(base)))
    assert (
        plan_digest(plan_from_request(PlanRequest.of({**base, "context_window": 8_192}))) != plain
    )
    assert (
        plan_digest(plan_from_request(PlanRequest.of({**base, "max_output_tokens": 64}))) != plain
    )
    assert (
        plan_digest(plan_from_request(PlanRequest.of({**base, "credentials": "/a.json"}))) == plain
    )


def test_a_run_on_a_server_that_ignores_the_cap_stops(tmp_path: Path, clean_checkout: Path) -> None:
    """The first reply past the cap stops the run (no new turn is admitted), the finished
    units stay, and the endpoint can no longer be given a cost cap."""
    from continuity.errors import RunIncomplete
    from continuity.servers.wire import Faults

    app = WireServer(faults=Faults(ignore_output_cap=True))
    with serve_in_thread(app) as url:
        plan, store, digest = _confirmed(
            tmp_path, url, reader="openai-codex:gpt-6-mini", max_output_tokens=8
        )
        arguments: dict[str, Any] = {
            "confirm": digest,
            "credentials": None,
            "output": str(tmp_path / "run"),
            "checkout": clean_checkout,
            "environ": {},
            "jobs": 1,
        }
        with pytest.raises(RunIncomplete) as stopped:
            run_real(plan, store, RealRequest(**arguments))
        assert "provider_output_cap_ignored" in stopped.value.message
        calls = len(app.calls)
        with pytest.raises(RealModeError) as refused:
            run_real(plan, store, RealRequest(cost_cap="1", **arguments))
    assert calls == 1
    assert refused.value.code == "cost_cap_output_unenforced"
    assert "endpoints/output-cap-ignored/" in refused.value.message
