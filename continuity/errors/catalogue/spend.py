"""The catalogue's entries: `SpendError`, the spend controller of a capped real
pilot (`continuity.spend`)."""

from __future__ import annotations

from continuity.errors.catalogue.entry import Entry, Row, section

__all__ = ["ENTRIES"]

ENTRIES: tuple[Entry, ...] = (
    *section(
        "SpendError",
        "continuity.errors.types",
        Row("spend_error", "a spend error raised without a more specific code"),
    ),
    *section(
        "SpendError",
        "continuity.spend.guard",
        Row(
            "lookup_stop_failed",
            "stopping the pilot failed (a stop_code beside the error's own code)",
        ),
        Row("lookup_contract_mismatch", "a guarded call's contract is not the guard contract"),
        Row("lookup_option_forbidden", "a guarded call sets an option the contract forbids"),
        Row("lookup_method_forbidden", "a call the guard does not allowlist"),
        Row("lookup_concurrent_entry", "a second request entered while one is in flight"),
        Row("lookup_request_limit", "a request beyond the number a probe run may admit"),
        Row("lookup_slot_terminal", "a request for a slot that has already ended"),
        Row(
            "pilot_empty_final_output",
            "an empty or length-terminal reply cannot issue a finalization request",
        ),
        Row("lookup_admit_failed", "admission failed with an unexpected error"),
        Row("lookup_request_failed", "the request failed before a response: the slot is lost"),
        Row("lookup_own_abort", "the guard aborted its own request"),
        Row("lookup_settle_failed", "settling a permit failed"),
        Row(
            "lookup_account_refused",
            "the endpoint refused the account (HTTP 401/403): a sticky stop",
        ),
        Row(
            "lookup_rate_limited", "the endpoint rate-limited the account (HTTP 429): a sticky stop"
        ),
        Row(
            "lookup_usage_limit",
            "a quota or usage limit, in the status or the stream: a sticky stop",
        ),
    ),
    *section(
        "SpendError",
        "continuity.spend.assumptions",
        Row(
            "lookup_assumptions_changed",
            "the registry's stated digest is not the digest of what it binds",
        ),
        Row("lookup_rmax_altered", "the registry's stated Rmax is not the Rmax its values compute"),
    ),
    *section(
        "SpendError",
        "continuity.spend.account",
        Row("lookup_cap_invalid", "the account was created for another cap or Rmax"),
        Row("not_admitted_cap", "admitting the request's Rmax would take spend past the cap"),
        Row("lookup_repeated_loss", "two consecutive lost slots: a stop"),
    ),
    *section(
        "SpendError",
        "continuity.spend.controller",
        Row("lookup_integrity_stop", "an integrity stop of the controller"),
    ),
    *section(
        "SpendError",
        "continuity.spend.contract",
        Row("lookup_external_fetch_forbidden", "a caller-supplied transport is refused"),
        Row(
            "lookup_cache_key_invalid",
            "the contract's prompt cache key does not contain the run id",
        ),
        Row("lookup_auxiliary_caller_on", "an auxiliary caller (a judge) would call a model"),
    ),
    *section(
        "SpendError",
        "continuity.spend.admission",
        Row("lookup_payload_invalid", "the request payload is not a valid payload"),
        Row(
            "not_admitted_input_envelope",
            "the request's input tokens exceed the input envelope (U > I)",
        ),
    ),
    *section(
        "SpendError",
        "continuity.spend.permits",
        Row("lookup_permit_stale", "a permit the source did not issue in its live epoch"),
        Row("lookup_permit_reused", "a permit used again, or with no active hold to settle"),
        Row(
            "lookup_permit_digest_mismatch",
            "the body digest differs from the permit's payload digest",
        ),
        Row("lookup_permit_rmax_mismatch", "the request's Rmax is not the account's"),
        Row(
            "lookup_permit_source_invalid",
            "the permit source does not implement the permit contract",
        ),
        Row(
            "lookup_permit_source_test_only",
            "a test-only permit source cannot admit a real request",
        ),
    ),
    *section(
        "SpendError",
        "continuity.spend.transport",
        Row("lookup_fetch_unadmitted", "a fetch entered without an admission, or twice for one"),
        Row("lookup_url_mismatch", "the request goes to another URL than the contract's"),
        Row("lookup_header_forbidden", "the request carries a header that is not allowed"),
        Row("lookup_body_mismatch", "the final body differs from the admitted payload"),
    ),
    *section(
        "SpendError",
        "continuity.spend.settle",
        Row(
            "lookup_unknown_tier",
            "the response reported an unknown service tier: an integrity stop",
        ),
        Row("lookup_invalid_usage", "the reported usage cannot settle: an integrity stop"),
        Row("lookup_usage_missing", "the response reported no usage: the slot is lost"),
        Row("lookup_response_failed", "the response failed: the slot is lost"),
        Row(
            "lookup_settlement_violation",
            "a settled cost breaks a registered implication: an integrity stop",
        ),
    ),
    *section(
        "SpendError",
        "continuity.spend.descriptor",
        Row(
            "lookup_pilot_cap_invalid", "the pilot cap is not a plain decimal amount of US dollars"
        ),
        Row("lookup_pilot_cap_not_cents", "the pilot cap is not a whole number of cents"),
        Row("lookup_pilot_cap_unsafe", "the pilot cap's cents exceed the largest safe integer"),
        Row(
            "lookup_pilot_cap_below_rmax",
            "the pilot cap is below Rmax: no request could be admitted",
        ),
        Row("lookup_pilot_concurrency_invalid", "a cap-gated pilot runs one slot at a time"),
        Row(
            "lookup_pilot_descriptor_invalid",
            "a pilot descriptor field is not the value it must be",
        ),
        Row("lookup_pilot_catalog_mismatch", "the catalog differs from the registered assumptions"),
        Row(
            "lookup_pilot_catalog_changed",
            "the catalog binding's digest is not its contents' digest",
            also=("RoleError",),
        ),
        Row(
            "lookup_pilot_schedule_mismatch",
            "the pilot schedule's version is not the current one",
            also=("RoleError",),
        ),
        Row("lookup_pilot_schedule_seed_invalid", "the schedule seed is outside the safe range"),
    ),
    *section(
        "SpendError",
        "continuity.plan.pilot_catalog",
        Row(
            "lookup_pilot_prices_missing", "the catalog lacks a price the pilot's reservation needs"
        ),
    ),
    *section(
        "SpendError",
        "continuity.plan.readiness",
        Row(
            "lookup_authorization_required",
            "cap-gated readiness's sole blocker: an authorization is needed",
            kind="reported",
        ),
    ),
    *section(
        "SpendError",
        "continuity.plan.attestation",
        Row(
            "lookup_authorization_sha256_mismatch",
            "the authorization's bytes do not hash to the stated sha256",
        ),
    ),
    *section(
        "SpendError",
        "continuity.spend.output_caps",
        Row(
            "output_cap_probe_failed",
            "a back end's client did not send exactly one output-cap probe request",
        ),
    ),
    *section(
        "SpendError",
        "continuity.spend.lease",
        Row("lookup_lease_root_invalid", "the writer lease's directory cannot be used"),
        Row("lookup_lease_exists", "a lease file is already there"),
        Row("lookup_lease_failed", "the writer lease could not be taken"),
        Row("lookup_lease_invalid", "the lease file is not a valid lease database"),
        Row("lookup_lease_released", "the writer lease was released"),
        Row("lookup_lease_not_held", "nobody holds the writer lease"),
    ),
    *section(
        "SpendError",
        "continuity.spend.durable",
        Row("lookup_account_invalid", "the account file is not an account"),
        Row(
            "lookup_account_failed",
            "the account failed (locked past its timeout): an integrity stop",
        ),
    ),
    *section(
        "SpendError",
        "continuity.spend.consumption",
        Row(
            "lookup_pilot_environment_refused",
            "a real authorization is never consumed under CI or debugging",
        ),
        Row(
            "lookup_consumption_path_invalid",
            "the output root and the consumption registry overlap",
        ),
        Row("lookup_pilot_root_used", "the pilot's output root is not unused"),
        Row("lookup_authorization_consumed", "the authorization was consumed already"),
        Row("lookup_consumption_failed", "the consumption registry entry cannot be made"),
        Row("lookup_consumption_invalid", "the consumption claim is not valid for this run"),
    ),
    *section(
        "SpendError",
        "continuity.spend.authorization",
        Row(
            "lookup_authorization_invalid",
            "the authorization's bytes or bindings are missing or invalid",
        ),
        Row(
            "lookup_authorization_faux_refused", "a faux authorization given to the real validator"
        ),
        Row(
            "lookup_authorization_mismatch", "the authorization binds another value than the run's"
        ),
        Row("lookup_account_unknown", "the credentials name no account"),
        Row(
            "lookup_account_substituted",
            "the credentials are another account's than the approved one",
        ),
    ),
    *section(
        "SpendError",
        "continuity.spend.safety",
        Row("lookup_cache_assignment_invalid", "the prompt cache assignment is not valid"),
        Row("lookup_unguarded_dispatch", "a send outside the guard, or minted for another process"),
        Row(
            "lookup_auxiliary_callers_forbidden", "an auxiliary caller or host override is enabled"
        ),
        Row("lookup_model_switch_forbidden", "resolved model switching is enabled"),
        Row("lookup_pilot_boundary_required", "the arm has no prepared boundary a pilot can serve"),
        Row("lookup_preparation_forbidden", "an operation that is not a pilot operation"),
        Row(
            "lookup_route_mismatch",
            "model, fallback, transport or retry settings differ from the contract",
        ),
        Row(
            "lookup_retry_profile_forbidden",
            "an outage budget, retry profile or prebuilt model list is set",
        ),
        Row(
            "lookup_tools_forbidden",
            "the history endpoint offers tools other than the allowed ones",
        ),
        Row("lookup_native_identity_forbidden", "the native transcript was changed in place"),
        Row("lookup_child_code_forbidden", "a child's done or stop carries a controller code"),
        Row(
            "lookup_prompt_cache_key_forbidden",
            "the payload's cache key or a cache header is missing or not the assigned key",
        ),
        Row(
            "lookup_stopped",
            "an admission after a stop: answered with the stop's own code (continuable)",
        ),
    ),
    *section(
        "SpendError",
        "continuity.spend.arrivals",
        Row("lookup_arrival_persist_failed", "the child's arrival witness cannot be written"),
        Row(
            "lookup_arrival_receipt_invalid",
            "the child's arrival witnesses do not match its consumptions",
        ),
    ),
    *section(
        "SpendError",
        "continuity.spend.schedule",
        Row("lookup_journal_failed", "the controller journal cannot be written"),
    ),
    *section(
        "SpendError",
        "continuity.spend.ipc",
        Row("lookup_ipc_timeout", "no IPC frame within the deadline"),
        Row("lookup_ipc_disconnected", "the IPC peer closed the channel"),
        Row("lookup_ipc_integrity", "an IPC frame is malformed, out of sequence or unexpected"),
    ),
    *section(
        "SpendError",
        "continuity.spend.receipts",
        Row("lookup_receipt_persist_failed", "a slot receipt could not be persisted"),
        Row("lookup_receipt_invalid", "a slot receipt is inconsistent"),
        Row("lookup_receipt_duplicate", "the slot already has a receipt"),
        Row("lookup_receipt_changed", "a slot receipt differs from the journal"),
        Row("lookup_receipt_unplanned", "a receipt for a slot that is not in the schedule"),
        Row("lookup_receipt_unvisited", "a receipt for a slot the run never reached"),
        Row(
            "lookup_invalid_slots",
            "the validity stop: over 10 % of admitted slots are invalid",
            kind="reported",
        ),
    ),
    *section(
        "SpendError",
        "continuity.spend.ipc_permits",
        Row("lookup_ack_unpersisted", "an acknowledged change the account does not show"),
    ),
    *section(
        "SpendError",
        "continuity.spend.pilot_child",
        Row(
            "lookup_child_refused",
            "the probe child's exit line when it refuses to start (with the cause's code)",
            kind="reported",
        ),
        Row("lookup_parent_mismatch", "the child's parent is not the claim's live controller"),
        Row(
            "lookup_lease_foreign",
            "the writer lease is held by another process than the controller",
        ),
        Row(
            "lookup_child_stopped",
            "the probe child's exit line when it stops on an error",
            kind="reported",
        ),
    ),
    *section(
        "SpendError",
        "continuity.spend.real_checks",
        Row("lookup_plan_mismatch", "the child's plan is not the registered, authorized one"),
        Row("lookup_role_mismatch", "the slot's role and arm are not one registered role"),
        Row(
            "lookup_build_mismatch",
            "the child does not run the registered, authorized build of its role's checkout",
        ),
        Row(
            "lookup_code_mismatch",
            "the running code is not the registered, authorized code of its role's checkout",
        ),
        Row(
            "lookup_readiness_blocked",
            "the registered pilot's cap-gated readiness is blocked: no real send is minted",
        ),
    ),
    *section(
        "SpendError",
        "continuity.roles.pilot.smoke",
        Row("pilot_smoke_failed", "a doit pilot_smoke proof did not hold"),
    ),
    *section(
        "SpendError",
        "continuity.spend.containment",
        Row(
            "lookup_worker_lost",
            "processes of the child's group survived its end: a stop",
            kind="reported",
        ),
        Row(
            "lookup_containment_unreconciled",
            "a live process no proven signal can end: an absorbing stop",
            kind="reported",
        ),
    ),
    *section(
        "SpendError",
        "continuity.spend.recovery",
        Row(
            "lookup_recovery_unreconciled",
            "a process group a crashed controller recorded still runs: the lease is not taken",
        ),
        Row(
            "lookup_recovery_unobservable",
            "a crashed controller's records cannot be read in this boot: the lease is not taken",
        ),
        Row(
            "lookup_recovery_failed",
            "the registry cannot be read or the recovery record cannot be written",
        ),
    ),
    *section(
        "SpendError",
        "continuity.spend.gate",
        Row(
            "lookup_pilot_real_route_unavailable",
            "the capped real lookup route is closed in this build",
        ),
    ),
    *section(
        "SpendError",
        "continuity.spend.preparation",
        Row(
            "lookup_preparation_invalid",
            "a slot's preparation, tree limits or dry restore failed",
            also=("CheckpointError",),
        ),
    ),
)
