"""The catalogue's entries: `HarnessError` and its subclasses (the harness,
outside agents, tools, checkpoints, providers)."""

from __future__ import annotations

from continuity.errors.catalogue.entry import Entry, Row, section

__all__ = ["ENTRIES"]

ENTRIES: tuple[Entry, ...] = (
    *section(
        "HarnessError",
        "continuity.errors.types",
        Row("harness_error", "the reference harness could not complete a run"),
    ),
    *section(
        "HarnessError",
        "continuity.harness.loop",
        Row("turn_round_limit", "more tool rounds in one turn than allowed"),
        Row("tool_not_offered", "the model called a tool but none is offered"),
    ),
    *section(
        "HarnessError",
        "continuity.harness.replay",
        Row("workspace_not_empty", "replay needs an empty workspace"),
    ),
    *section(
        "HarnessError",
        "continuity.lookup.probe",
        Row("lookup_cleanup_timeout", "the lookup probe's cleanup passed its allowance"),
    ),
    *section(
        "HarnessError",
        "continuity.sampling.pilot_probe",
        Row("probe_session_diverged", "the pilot probe's session on disk is not the one in memory"),
        Row("probe_runtime_retired", "a turn asked of a retired or disposed pilot probe runtime"),
    ),
    *section(
        "HarnessError",
        "continuity.sampling.boundary",
        Row(
            "boundary_record_mismatch",
            "the session file records other operations than the probe performed",
        ),
    ),
    *section(
        "HarnessError",
        "continuity.sampling.child",
        Row("probe_request_invalid", "the probe child's request is not valid"),
    ),
    *section(
        "HarnessError",
        "continuity.sampling.lookup",
        Row("lookup_deadline_exceeded", "the lookup probe passed its deadline"),
        Row("lookup_turn_timeout", "the probe turn passed its safety timeout"),
    ),
    *section(
        "HarnessError",
        "continuity.sampling.worker",
        Row(
            "child_watchdog",
            "the probe child ran past the watchdog and was killed (an outcome)",
            kind="reported",
        ),
    ),
    *section(
        "HarnessError",
        "continuity.lookup.meter",
        Row(
            "lookup_budget_exhausted",
            "the metering proxy's tool error: the lookup budget is spent",
            kind="reported",
        ),
        Row(
            "lookup_endpoint_refused",
            "the metering proxy's tool error: the endpoint is refused",
            kind="reported",
        ),
    ),
    *section(
        "HarnessError",
        "continuity.harness.steer_inbox",
        Row("steer_conflict", "a steer id offered again with other text"),
        Row("steer_invalid", "a steer is not valid (it needs an id)"),
        Row("steer_unknown", "the session delivered a steer the inbox does not hold"),
        Row("steer_consumed_twice", "a steer would be consumed a second time"),
        Row("steer_inbox_invalid", "the file is not a steer inbox"),
    ),
    *section(
        "HarnessError",
        "continuity.harness.live",
        Row(
            "live_io_failed",
            "python -m continuity.harness.live could not read or write a file (a printed line)",
            kind="reported",
        ),
        Row("live_workspace_busy", "another harness runs this live session"),
    ),
    *section(
        "ScriptExhausted",
        "continuity.errors.types",
        Row("script_exhausted", "a scripted model ran out of steps"),
    ),
    *section(
        "AdapterError",
        "continuity.agents.client",
        Row("adapter_start_failed", "the adapter's command cannot be started"),
        Row("adapter_protocol_error", "the adapter broke the CAP/0 protocol"),
        Row("adapter_timeout", "the adapter gave no answer within its timeout"),
    ),
    *section(
        "ArmError",
        "continuity.agents.drive",
        Row(
            "agent_pack_invalid",
            "the reference harness's pack for the outside pack arm is invalid: nothing to inject",
        ),
    ),
    *section(
        "AdapterError",
        "continuity.agents.check",
        Row(
            "adapter_capability_missing",
            "the adapter lacks a capability the run needs",
            suffix=":<cap>",
        ),
        Row(
            "copy_unverified",
            "a replay signature differs from the trace's first copy (a check and an exclusion)",
            kind="reported",
        ),
    ),
    *section(
        "AdapterError",
        "continuity.agents.manifest",
        Row("agent_manifest_invalid", "the agent manifest is not valid"),
    ),
    *section(
        "AdapterError",
        "continuity.agents.sandbox",
        Row("sandbox_unavailable", "no bwrap, or user namespaces refused, and no --no-sandbox"),
        Row(
            "sandbox_path_refused", "the agent's folder holds a path an outside agent must not see"
        ),
    ),
    *section(
        "AdapterError",
        "continuity.runner.units.record",
        Row(
            "answer_not_from_model",
            "the adapter's reply is not the model's final text (a sample's exclusion class)",
            kind="reported",
        ),
    ),
    *section(
        "AdapterError",
        "continuity.agents.drive",
        Row(
            "steer_degraded",
            "steers queued, late or not injected (a sample's label)",
            kind="reported",
        ),
        Row(
            "turn_failed",
            "the adapter reported a turn failed (a driven sample's code)",
            kind="reported",
        ),
    ),
    *section(
        "AdapterError",
        "continuity.servers.model_proxy",
        Row(
            "replay_unclassified_call",
            "the model proxy cannot classify a request (an HTTP 400 problem)",
            kind="reported",
        ),
        Row(
            "tools_not_offered",
            "a reply's tool the agent does not offer (an HTTP 400 problem)",
            kind="reported",
        ),
        Row(
            "proxy_request_invalid", "the model proxy cannot read the request body", kind="reported"
        ),
        Row("proxy_no_reader", "the model proxy has no reader in forward mode", kind="reported"),
    ),
    *section(
        "AdapterError",
        "continuity.servers.asgi",
        Row(
            "request_too_large", "HTTP 413: a request body over the loopback limit", kind="reported"
        ),
    ),
    *section(
        "UsageError",
        "continuity.commands.agent_check",
        Row("agent_required", "doit agent_check was given no --agent"),
    ),
    *section(
        "ToolError",
        "continuity.harness.toolbox",
        Row("tool_server_unavailable", "the MCP tool server cannot be reached"),
        Row("tool_response_malformed", "the MCP tool server sent a malformed message"),
        Row("tool_call_failed", "a real MCP tool call failed"),
    ),
    *section(
        "SessionCorrupt",
        "continuity.errors.types",
        Row("session_corrupt", "a durable session file is unreadable"),
    ),
    *section(
        "ReplayFidelityError",
        "continuity.agents.drive",
        Row("replay_fidelity_failed", "the replay diverged from the trace"),
    ),
    *section(
        "CheckpointError",
        "continuity.harness.checkpoints",
        Row("checkpoint_busy", "a checkpoint stayed locked past its timeout"),
        Row("checkpoint_missing", "no verified checkpoint by that key"),
        Row("child_failed", "a child process died without reporting an outcome"),
    ),
    *section(
        "CheckpointError",
        "continuity.commands.preflight_runs",
        Row("preflight_output_exists", "compare_preflight's --output exists already"),
        Row("preflight_output_invalid", "compare_preflight's --output cannot be created"),
    ),
    *section(
        "CheckpointError",
        "continuity.sampling.worker",
        Row("worker_request_invalid", "the unit worker's stdin request does not decode"),
    ),
    *section(
        "ProviderError",
        "continuity.errors.types",
        Row("provider_error", "a provider error raised without a more specific code"),
    ),
    *section(
        "ProviderError",
        "continuity.providers.refusals",
        Row("provider_auth_failed", "the endpoint refused the credentials (stops admission)"),
        Row(
            "provider_quota_exhausted", "the endpoint refused on quota or billing (stops admission)"
        ),
        Row("provider_rate_limited", "HTTP 429 after every allowed retry"),
        Row("provider_unavailable", "the endpoint failed after every allowed retry"),
        Row("provider_request_rejected", "the endpoint rejected the request"),
        Row(
            "provider_context_exceeded",
            "the request is over the model's context window (with the server's words)",
        ),
    ),
    *section(
        "ProviderError",
        "continuity.providers.http",
        Row("provider_stream_invalid", "the response stream is not a valid stream"),
        Row(
            "provider_stream_interrupted",
            "the stream broke after the request was admitted (not retried)",
        ),
        Row(
            "provider_output_cap_ignored",
            "the server wrote past the output cap it was sent (stops admission)",
        ),
        Row("provider_timeout", "no bytes within --request-timeout (not re-sent)"),
    ),
    *section(
        "ProviderError",
        "continuity.memory.upkeep",
        Row(
            "provider_output_aborted",
            "a ledger extraction streamed past its output cap and was aborted",
        ),
    ),
    *section(
        "ProviderError",
        "continuity.providers.transport",
        Row("credentials_invalid", "the credentials file cannot be read"),
    ),
    *section(
        "ProviderError",
        "continuity.providers.costcap",
        Row(
            "cost_cap_reached",
            "a request would take committed spend past the cost cap (stops admission)",
        ),
        Row(
            "cost_cap_assumption_broken", "a cost cap's assumption does not hold (stops admission)"
        ),
        Row("cost_cap_account_failed", "the cost-cap account failed (stops admission)"),
        Row(
            "cost_cap_price_unknown",
            "the cost-cap account has no rates for the model",
            also=("RealModeError",),
        ),
        Row("cost_cap_account_invalid", "the run's cost-cap account is missing or invalid"),
    ),
    *section(
        "AdmissionStopped",
        "continuity.errors.types",
        Row("admission_stopped", "a stop rule fired: the invocation admits no more live turns"),
    ),
)
