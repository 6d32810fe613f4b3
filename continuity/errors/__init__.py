"""Every error `continuity` raises on purpose, each with a stable code and a location.

The tree::

    ContinuityError                    code, location, message
    ├── UsageError                     bad command-line or API arguments
    │     codes: suite_unknown, seeds_invalid, trace_file_unreadable, store_path_invalid,
    │            plan_invalid, cost_limit_exceeded, cost_unknown, model_limit_exceeded,
    │            estimate_real_refused, pricing_invalid; effort_invalid (an --effort
    │            or --judge-effort the plan's provider does not take, named with its
    │            allowed values: continuity.providers.efforts); option checks (rules.params,
    │            continuity.argv): option_empty, option_invalid, cost_limit_invalid,
    │            out_path_invalid, lookup_output_invalid, option_unknown,
    │            option_value_unexpected, option_value_missing, task_unknown (doit's
    │            own usage errors, coded by continuity.argv); doit qualify's selection
    │            (continuity.qualify.select): qualify_selector_invalid,
    │            qualify_selection_empty, qualify_plans_mixed, qualify_unregistered,
    │            case_mismatch; its infrastructure outcomes (an attempt's outcome.json,
    │            never a verdict): qualify_workload_failed, qualify_loss_unconfirmed;
    │            real-mode guards
    │            (continuity.plan.guards):
    │            real_refused (their base), real_refused_ci, real_provider_required,
    │            credentials_required, confirmation_required, confirmation_mismatch,
    │            confirmation_unknown, credentials_missing, output_required,
    │            output_inside_checkout, checkout_unknown, checkout_dirty,
    │            checkout_flags_refused; before any request of a real run:
    │            context_window_exceeded (a planned call does not fit the smallest
    │            window known, the server's included; continuity.runner.windows),
    │            cost_cap_output_unenforced (a cost cap on an endpoint seen to ignore
    │            its output cap); lookup mode:
    │            lookup_real_refused, lookup_policy_invalid,
    │            lookup_policy_sha256_required, lookup_policy_sha256_mismatch,
    │            lookup_policy_unbound (a v1-schema policy), the policy's bindings
    │            and recomputed slots: lookup_policy_protocol_mismatch,
    │            lookup_policy_code_mismatch, lookup_policy_metrics_mismatch,
    │            lookup_policy_class_mismatch;
    │            lookup_unknown_feasibility, lookup_output_exists, lookup_output_required,
    │            probe_mode_unknown, arm_lookup_only:<id>, arm_not_admitted_in_lookup:<id>
    │            lookup_role_unknown, lookup_role_arms_conflict,
    │            lookup_role_receipt_invalid (--lookup-role, continuity.roles),
    │            lookup_preflight_root_invalid (doit compare_preflight: the temporary
    │            directory lies inside the checkout or the store);
    │            lookup_pricing_blocked (holdout pricing's result code when numerical
    │            approval is blocked, continuity.plan.holdout_pricing; never raised);
    │            a holdout's fixed-budget sizing (doit lookup_budget --fixed-budget-sha256)
    │            and its pricing and plans: lookup_empty_fixed_budget_sha256,
    │            lookup_fixed_budget_unknown, lookup_fixed_budget_required,
    │            lookup_reader_model_invalid (--reader-model: not provider:model, or
    │            beside a legacy inventory), lookup_legacy_option_refused,
    │            lookup_scratch_root_invalid,
    │            lookup_policy_holdout_mismatch, lookup_policy_reader_mismatch,
    │            lookup_output_limit_invalid, lookup_output_limit_source_invalid,
    │            lookup_output_limit_mismatch; reserved for the admission controller
    │            (never raised offline): not_admitted_input_envelope, not_admitted_cap
    │   ├── RealModeError          the real-mode guards above (real_refused and its kin)
    │   ├── PricingError           pricing_invalid (a catalog or genai-prices lookup)
    │   ├── InputError             a file or directory a user named (continuity.inputs):
    │   │                          input_not_a_file (a directory, device, FIFO where a
    │   │                          file is read), input_too_large (over its kind's
    │   │                          limit), input_not_a_directory (a file where a
    │   │                          directory is read)
    │   ├── HoldoutError           an external holdout source (continuity.holdout, doit
    │   │                          holdout_*): holdout_source_incomplete,
    │   │                          holdout_manifest_sha256_invalid, holdout_file_unreadable,
    │   │                          holdout_manifest_sha256_mismatch, holdout_manifest_invalid,
    │   │                          holdout_spec_invalid, holdout_group_unknown,
    │   │                          holdout_group_too_small, holdout_trace_hash_mismatch,
    │   │                          holdout_trace_invalid (with the trace validator's issues),
    │   │                          holdout_output_invalid, holdout_overlap_found,
    │   │                          holdout_overlap_stale, holdout_overlap_mismatch,
    │   │                          holdout_overlap_invalid, holdout_not_frozen,
    │   │                          holdout_freeze_mismatch, holdout_selection_seed_required,
    │   │                          holdout_selection_mismatch, holdout_selection_seed_invalid,
    │   │                          holdout_per_group_invalid, holdout_trace_selection_refused,
    │   │                          holdout_repeats_invalid, holdout_suite_required (a source
    │   │                          without --suite holdout); doit import_locomo
    │   │                          (continuity.traces.locomo): locomo_zip_unreadable,
    │   │                          locomo_format_invalid (with the archive member and JSON
    │   │                          path), locomo_output_exists, locomo_output_invalid
    │   └── LookupError_           lookup_policy_invalid and the lookup-mode codes above
    ├── ArmError                       arm_unknown, arm_not_available_at_revision:<id>
    ├── ConfigError                    config_key_unknown, config_value_invalid
    ├── HistoryError                   history_invalid_request, history_record_unknown,
    │                                  history_cursor_invalid, history_unavailable
    ├── CalibrationInvalid             calibration_case_invalid, calibration_verdict_invalid,
    │                                  calibration_suite_unreadable, calibration_blind_exists
    ├── SoulError                      lookup_soul_missing, lookup_soul_mismatch
    ├── LedgerError                    the continuity ledger and its upkeep
    │                                  (continuity.memory, continuity.preparation):
    │                                  ledger_delta_invalid (an extraction that is not a
    │                                  valid delta), ledger_source_corrupt,
    │                                  ledger_source_oversized, ledger_store_corrupt,
    │                                  ledger_store_missing, ledger_unowned (another
    │                                  session's store), ledger_journal_invalid (a state
    │                                  move out of order), ledger_plan_invalid,
    │                                  ledger_plan_under_reserved, capture_output_invalid,
    │                                  capture_output_exists, capture_output_inside_checkout
    ├── RoleError                      doit compare_register (continuity.roles):
    │                                  role_revision_invalid, role_checkout_unknown,
    │                                  role_checkout_dirty, role_checkout_flags,
    │                                  role_protocol_missing, role_no_difference,
    │                                  role_diff_outside_guidance, role_renderer_untouched,
    │                                  role_witness_missing, lookup_rpack_direction_invalid,
    │                                  role_output_not_absolute, role_output_exists,
    │                                  role_output_inside_checkout, role_output_invalid
    │                                  (cannot be created), role_build_failed,
    │                                  role_catalog_cap_required, role_catalog_cap_invalid,
    │                                  role_catalog_cap_mismatch, role_sizing_dirty,
    │                                  role_sizing_revision_mismatch (external ones);
    │                                  doit compare_run: role_registration_sha256_mismatch,
    │                                  role_registration_invalid,
    │                                  role_registration_changed (not the copy
    │                                  compare_register stored; compare_aggregate
    │                                  too), role_build_changed,
    │                                  role_launch_failed (launches.json reasons, not
    │                                  raised: role_child_failed, role_receipt_missing,
    │                                  role_receipt_invalid);
    │                                  doit compare_aggregate: role_launches_invalid,
    │                                  role_receipt_tampered, role_cross_replay;
    │                                  doit pilot_register (continuity.roles.pilot):
    │                                  lookup_pilot_registration_not_external,
    │                                  lookup_pilot_registration_sha256_mismatch,
    │                                  lookup_pilot_registration_invalid,
    │                                  lookup_pilot_registration_refused (a pilot
    │                                  registration given to an ordinary route),
    │                                  lookup_pilot_reader_mismatch,
    │                                  lookup_pilot_deadlines_changed,
    │                                  lookup_pilot_schedule_mismatch,
    │                                  lookup_pilot_catalog_changed; doit compare_pilot
    │                                  (continuity.roles.pilot_run, pilot_slots):
    │                                  lookup_pilot_reader_not_ready (readiness not
    │                                  fully known), lookup_pilot_controller_invalid
    │                                  (not run from the registered R0 checkout, or a
    │                                  build or the protocol missing),
    │                                  lookup_pilot_registration_invalid (the store's
    │                                  selection is not the registered one)
    ├── SpendError                     the spend controller (continuity.spend), with
    │                                  `outcome` (refused_pre_send, own_abort_after_send,
    │                                  lost, integrity_stop) and, when the permit
    │                                  source's stop failed, stop_code
    │                                  lookup_stop_failed and its cause.
    │                                  Assumptions: lookup_assumptions_changed,
    │                                  lookup_rmax_altered. Cap account:
    │                                  lookup_cap_invalid, not_admitted_cap,
    │                                  lookup_repeated_loss (two consecutive lost
    │                                  slots), lookup_integrity_stop. Contract and
    │                                  options: lookup_contract_mismatch,
    │                                  lookup_option_forbidden,
    │                                  lookup_external_fetch_forbidden,
    │                                  lookup_cache_key_invalid,
    │                                  lookup_auxiliary_caller_on,
    │                                  lookup_method_forbidden. Admission:
    │                                  lookup_concurrent_entry, lookup_request_limit
    │                                  (request 11), lookup_slot_terminal,
    │                                  lookup_payload_invalid,
    │                                  not_admitted_input_envelope (U > I),
    │                                  pilot_empty_final_output, lookup_admit_failed.
    │                                  Permits: lookup_permit_stale,
    │                                  lookup_permit_reused,
    │                                  lookup_permit_digest_mismatch,
    │                                  lookup_permit_rmax_mismatch,
    │                                  lookup_permit_source_invalid,
    │                                  lookup_permit_source_test_only. The fetch:
    │                                  lookup_fetch_unadmitted, lookup_url_mismatch,
    │                                  lookup_header_forbidden, lookup_body_mismatch,
    │                                  lookup_request_failed, lookup_own_abort.
    │                                  Settlement: lookup_unknown_tier,
    │                                  lookup_invalid_usage, lookup_usage_missing,
    │                                  lookup_response_failed,
    │                                  lookup_settlement_violation,
    │                                  lookup_settle_failed. The endpoint refusing the
    │                                  account (sticky stops): lookup_account_refused
    │                                  (401/403), lookup_rate_limited (429),
    │                                  lookup_usage_limit (quota or a usage limit in
    │                                  the stream). The pilot descriptor and
    │                                  estimate: lookup_pilot_cap_invalid,
    │                                  lookup_pilot_cap_not_cents,
    │                                  lookup_pilot_cap_unsafe,
    │                                  lookup_pilot_cap_below_rmax,
    │                                  lookup_pilot_concurrency_invalid,
    │                                  lookup_pilot_descriptor_invalid,
    │                                  lookup_pilot_prices_missing,
    │                                  lookup_pilot_catalog_mismatch,
    │                                  lookup_pilot_catalog_changed,
    │                                  lookup_pilot_schedule_mismatch,
    │                                  lookup_pilot_schedule_seed_invalid;
    │                                  cap-gated readiness's sole blocker (a reported
    │                                  code, never raised): lookup_authorization_required.
    │                                  The writer lease (continuity.spend.lease):
    │                                  lookup_lease_root_invalid, lookup_lease_exists,
    │                                  lookup_lease_failed, lookup_lease_invalid,
    │                                  lookup_lease_released, lookup_lease_not_held.
    │                                  The durable permit source
    │                                  (continuity.spend.durable): lookup_account_invalid,
    │                                  lookup_account_failed (locked past its timeout;
    │                                  an integrity stop) (and lookup_cap_invalid,
    │                                  lookup_permit_stale).
    │                                  Consumption (continuity.spend.consumption):
    │                                  lookup_pilot_environment_refused,
    │                                  lookup_consumption_path_invalid,
    │                                  lookup_pilot_root_used,
    │                                  lookup_authorization_consumed,
    │                                  lookup_consumption_failed,
    │                                  lookup_consumption_invalid. Authorizations
    │                                  (continuity.spend.authorization):
    │                                  lookup_authorization_invalid,
    │                                  lookup_authorization_faux_refused,
    │                                  lookup_authorization_mismatch,
    │                                  lookup_account_unknown, lookup_account_substituted.
    │                                  Harness safety (continuity.spend.safety):
    │                                  lookup_cache_assignment_invalid,
    │                                  lookup_unguarded_dispatch,
    │                                  lookup_auxiliary_callers_forbidden,
    │                                  lookup_model_switch_forbidden,
    │                                  lookup_pilot_boundary_required,
    │                                  lookup_preparation_forbidden,
    │                                  lookup_route_mismatch,
    │                                  lookup_retry_profile_forbidden,
    │                                  lookup_tools_forbidden,
    │                                  lookup_native_identity_forbidden,
    │                                  lookup_child_code_forbidden (a child's done or
    │                                  stop carrying a controller code);
    │                                  lookup_prompt_cache_key_forbidden (the payload's
    │                                  key or either cache header missing or not the
    │                                  assigned key); the child's arrival witness
    │                                  (continuity.spend.arrivals):
    │                                  lookup_arrival_persist_failed,
    │                                  lookup_arrival_receipt_invalid;
    │                                  lookup_journal_failed (the controller journal);
    │                                  lookup_ipc_timeout, lookup_ipc_disconnected;
    │                                  lookup_stopped (continuable, listed in
    │                                  safety.CONTINUABLE: the account answers an
    │                                  admission after a stop with the stop's own
    │                                  code). Slot receipts (continuity.spend.receipts):
    │                                  lookup_receipt_persist_failed,
    │                                  lookup_receipt_invalid, lookup_receipt_duplicate,
    │                                  lookup_receipt_changed, lookup_receipt_unplanned,
    │                                  lookup_receipt_unvisited; the validity stop
    │                                  lookup_invalid_slots (a result, not raised).
    │                                  The controller and its probe child
    │                                  (continuity.spend.controller, ipc, ipc_permits,
    │                                  pilot_child): lookup_ipc_integrity,
    │                                  lookup_ack_unpersisted (a reply the account does
    │                                  not show); the child's exit lines
    │                                  lookup_child_refused (with lookup_parent_mismatch,
    │                                  lookup_lease_foreign or the lease's and the cache
    │                                  assignment's codes) and lookup_child_stopped;
    │                                  pilot_smoke_failed (doit pilot_smoke, a proof
    │                                  that did not hold).
    │                                  Containment's stop codes (a result, not raised;
    │                                  continuity.spend.containment): lookup_worker_lost,
    │                                  lookup_containment_unreconciled. The release gate
    │                                  (continuity.spend.gate, doit compare_pilot):
    │                                  lookup_pilot_real_route_unavailable. A
    │                                  registered pilot's preparation child
    │                                  (continuity.runner.pilot_prepare) exits 3 with
    │                                  lookup_preparation_invalid or the checkpoint's
    │                                  code; the controller stops with
    │                                  lookup_preparation_invalid
    ├── RunIncomplete                  run_incomplete (finished units are kept)
    ├── LookupCoverageIncomplete       lookup_partial_coverage (the units are kept)
    ├── CompareError                   compare_protocol_mismatch, compare_scorer_mismatch,
    │                                  compare_trace_mismatch, compare_no_pairs (doit
    │                                  compare: two runs that cannot be paired); run_unknown
    ├── GateFailed                     regression_found, accuracy_below_threshold: a CI
    │                                  gate (doit compare, doit aggregate --fail-under)
    │                                  found what it was told to fail on; exit status 3;
    │                                  qualify_failed (doit qualify: a case's verdict
    │                                  is fail, its package written first)
    ├── AggregateError                 run_builds_mixed (a run's units built by two unit
    │                                  codes: refused, never pooled),
    │                                  unit_malformed, unit_tampered, unit_key_mismatch,
    │                                  unit_duplicate, run_empty, trace_missing,
    │                                  results_unreadable (--fail-under), ...
    ├── TraceError
    │   ├── TraceInvalid               a trace failed validation; carries every issue found
    │   │     codes: trace_malformed, trace_schema_unsupported, trace_not_fictional,
    │   │            duplicate_id, sequence_invalid, tool_call_invalid, shape_out_of_range,
    │   │            steer_missing, category_missing, correction_missing, evidence_unknown,
    │   │            evidence_mismatch, identifier_outside_tool_output,
    │   │            secret_outside_tool_output, abstention_term_present, probe_leaks_answer,
    │   │            placement_invalid, owner_rules_missing, vocabulary_not_neutral,
    │   │            trace_too_large (a file over the documented maximum size)
    │   └── TraceCollision             two generated traces share an identifier or secret
    │         code: trace_value_collision
    ├── StoreError
    │   ├── ObjectMissing              object_missing
    │   │   └── ObjectCorrupt          object_corrupt (reported, quarantined, never returned)
    │   ├── RecordCorrupt              record_corrupt (an action entry or ref failed its check)
    │   └── DigestInvalid              digest_invalid
    └── HarnessError                   the reference harness could not complete a run
        ├── ScriptExhausted            script_exhausted (a scripted model ran out of steps)
        ├── AdapterError               an outside agent's CAP/0 adapter failed
        │     codes: adapter_start_failed, adapter_protocol_error, adapter_timeout,
        │            adapter_capability_missing:<cap>, agent_manifest_invalid;
        │            the sandbox (continuity.agents.sandbox): sandbox_unavailable (no
        │            bwrap, or user namespaces refused, and no --no-sandbox),
        │            sandbox_path_refused (the agent's folder holds a protected path);
        │            answer_not_from_model (a sample's exclusion class: the adapter's
        │            reply is not the model's final text of the probe turn);
        │            a driven sample's replay codes (continuity.agents.drive):
        │            replay_fidelity_failed, tools_not_offered, replay_unclassified_call,
        │            steer_degraded (a label); copy_unverified (a replay signature
        │            that differs from the trace's first copy: doit agent_check's copy
        │            check, and a sample's exclusion class beside replay_failed,
        │            contradicted and not_crossed); agent_check_failed (a GateFailed, exit 3),
        │            agent_required (doit agent_check without --agent),
        │            agent_contract_failed (the offline contract's outside-agent pass)
        ├── ToolError                  a real MCP tool call failed
        │     codes: tool_server_unavailable, tool_response_malformed, tool_call_failed
        ├── SessionCorrupt             session_corrupt (a durable session file is unreadable)
        ├── ReplayFidelityError        replay_fidelity_failed (replay diverged from the trace)
        ├── CheckpointError            checkpoint_busy, checkpoint_missing, child_failed,
        │     preflight_output_exists, preflight_output_invalid (compare_preflight's --output),
        │     lookup_preparation_invalid (doit compare_preflight: a slot's preparation,
        │     tree limits or dry restore failed; raised after the whole report is written)
        │     (and, as a failed probe result's reason, never raised:
        │     checkpoint_contract_failed, a probe that wrote a file its fresh copy
        │     shares with the checkpoint's template: that sample is excluded)
        ├── ProviderError              a real model endpoint failed
        │     codes: provider_auth_failed, provider_quota_exhausted (both stop admission),
        │            provider_rate_limited, provider_unavailable, provider_request_rejected,
        │            provider_stream_invalid, provider_stream_interrupted,
        │            provider_output_aborted (a ledger extraction streamed past its
        │            output cap and was aborted), provider_output_cap_ignored (the
        │            server wrote past the output cap it was sent; stops admission),
        │            provider_context_exceeded (the request is over the model's
        │            context window, with the server's words), provider_timeout (no
        │            bytes within --request-timeout; not re-sent), credentials_invalid;
        │            the run cost
        │            cap (continuity.providers.costcap, doit units --real --cost-cap):
        │            cost_cap_reached, cost_cap_assumption_broken and
        │            cost_cap_account_failed (all stop admission),
        │            cost_cap_price_unknown, cost_cap_account_invalid;
        │            cost_cap_invalid (a RealModeError: the --cost-cap value),
        │            cost_cap_mismatch (a RealModeError: a --cost-cap other than the
        │            account's stored cap, without --raise-cap)
        ├── AdmissionStopped           admission_stopped (a stop rule fired; resume later)
        └── (lookup probes)            lookup_deadline_exceeded, lookup_turn_timeout,
                                       child_watchdog; tool errors the metering proxy
                                       answers: lookup_budget_exhausted,
                                       lookup_endpoint_refused; lookup_soul_missing and
                                       lookup_soul_mismatch (continuity.lookup.soul)

Raised with the classes above from other modules (by area)::

    store            ref_name_invalid, tree_entry_invalid, restore_target_not_empty
                     store_corrupt, store_repair_incomplete (doit verify)
    traces           distractors_changed_facts, trace_unknown
    availability     status_evidence_missing
    calibration      calibration_case_invalid (a malformed suite line, at file:line),
                     calibration_verdict_invalid (a grader verdict outside the outcomes),
                     calibration_suite_unreadable (a suite path that is missing or not
                     a readable file, e.g. a directory), calibration_blind_exists (a
                     held-out suite's blind measurement is taken once, never rewritten);
                     output_exists, real_answer_failed (python -m
                     continuity.probes.real_answers: the output file is there already;
                     the server gave no answer)
    arms, config     arm_unknown, arm_not_available_at_revision:<id>, config_key_unknown,
                     config_value_invalid
    harness          turn_round_limit, tool_not_offered, workspace_not_empty,
                     lookup_cleanup_timeout, boundary_record_mismatch, probe_request_invalid,
                     worker_request_invalid (the unit worker's stdin request)
    steer inbox      steer_conflict (an id offered again with other text), steer_invalid,
                     steer_unknown, steer_consumed_twice, steer_inbox_invalid
                     (continuity.harness.steer_inbox); live_io_failed,
                     live_workspace_busy (python -m continuity.harness.live)
    model proxy      replay_unclassified_call, tools_not_offered, replay_fidelity_failed
                     (answered as HTTP 400 error codes and kept as the proxy's problems),
                     proxy_request_invalid (a body it cannot read), proxy_no_reader
                     (continuity.servers.model_proxy); turn_failed (a driven sample:
                     the adapter reported a turn failed)
    MCP fixture      request_too_large (HTTP 413: a body over the loopback limit,
                     continuity.servers.asgi.body_limited)
    wire stand-in    port_unavailable (python -m continuity.servers.wire --port: in use)
    local model      local_model_missing (the local extra is not installed),
                     local_server_failed (llama.cpp's server exited or did not answer;
                     python -m continuity.servers.local_model)
    ConversationHistory  history_unavailable, history_invalid_request,
                     history_record_unknown, history_cursor_invalid
    offline contract arm_contract_failed, checkpoint_contract_failed,
                     design_check_failed
    ledger smoke     ledger_smoke_failed (doit ledger_smoke: a mechanism check did not
                     hold; the report names it)
    units            real_flag_required, repeat_unknown, run_stopped, run_incomplete,
                     lookup_reader_unknown, lookup_inventory_empty,
                     lookup_inventory_failed, lookup_partial_coverage (skipped slots;
                     the units are kept), lookup_slot_observed (never overwritten)
    aggregate, score unit_malformed, unit_tampered, unit_key_mismatch, unit_duplicate,
                     run_empty, trace_missing, score_tampered (a score artifact),
                     scorer_unknown (--scorer), unit_protocol_mixed (units of
                     different probe protocols), run_manifest_malformed (a run.json
                     that is not a run manifest)

`Interrupted` (SIGINT, SIGTERM) is a `KeyboardInterrupt` beside the tree, never caught as
an error: it prints one line and exits 130 or 143 (`continuity.interrupts`).

A base class raised without a specific code falls back to its own: continuity_error,
usage_error, trace_error, store_error, harness_error, provider_error, role_error,
ledger_error, holdout_error, spend_error.

A user can grep the code; tests assert it (and a test checks that every code the
source raises is listed here). `str(error)` is always
``"<code>: <message> (at <location>)"``.
"""

from continuity.errors.types import (
    EXIT_GATE,
    AdapterError,
    AdmissionStopped,
    AggregateError,
    ArmError,
    CalibrationInvalid,
    CheckpointError,
    CompareError,
    ConfigError,
    ContinuityError,
    DigestInvalid,
    EmptyStream,
    GateFailed,
    HarnessError,
    HistoryError,
    HoldoutError,
    InputError,
    Interrupted,
    Issue,
    LedgerError,
    LookupCoverageIncomplete,
    LookupError_,
    ObjectCorrupt,
    ObjectMissing,
    PricingError,
    ProviderError,
    RealModeError,
    RecordCorrupt,
    ReplayFidelityError,
    RoleError,
    RunIncomplete,
    ScriptExhausted,
    SessionCorrupt,
    SoulError,
    SpendError,
    StoreError,
    ToolError,
    TraceCollision,
    TraceError,
    TraceInvalid,
    UsageError,
    first_coded,
    typed_error,
)

__all__ = [
    "EXIT_GATE",
    "AdapterError",
    "AdmissionStopped",
    "AggregateError",
    "ArmError",
    "CalibrationInvalid",
    "CheckpointError",
    "CompareError",
    "ConfigError",
    "ContinuityError",
    "DigestInvalid",
    "EmptyStream",
    "GateFailed",
    "HarnessError",
    "HistoryError",
    "HoldoutError",
    "InputError",
    "Interrupted",
    "Issue",
    "LedgerError",
    "LookupCoverageIncomplete",
    "LookupError_",
    "ObjectCorrupt",
    "ObjectMissing",
    "PricingError",
    "ProviderError",
    "RealModeError",
    "RecordCorrupt",
    "ReplayFidelityError",
    "RoleError",
    "RunIncomplete",
    "ScriptExhausted",
    "SessionCorrupt",
    "SoulError",
    "SpendError",
    "StoreError",
    "ToolError",
    "TraceCollision",
    "TraceError",
    "TraceInvalid",
    "UsageError",
    "first_coded",
    "typed_error",
]
