"""The catalogue's entries: arms, config, ConversationHistory, calibration,
souls, the continuity ledger and cross-checkout roles."""

from __future__ import annotations

from continuity.errors.catalogue.entry import Entry, Row, section

__all__ = ["ENTRIES"]

ENTRIES: tuple[Entry, ...] = (
    *section(
        "ArmError",
        "continuity.arms",
        Row("arm_unknown", "--arms names no known arm"),
        Row(
            "arm_not_available_at_revision",
            "the arm is declared but not runnable at this revision",
            suffix=":<id>",
        ),
        Row(
            "arm_lookup_only",
            "a lookup-only arm in a plan that is not lookup-allowed-v1",
            suffix=":<id>",
        ),
        Row(
            "arm_not_admitted_in_lookup", "an arm lookup-allowed-v1 does not admit", suffix=":<id>"
        ),
        Row("probe_mode_unknown", "--probe-mode names no known probe mode"),
    ),
    *section(
        "ConfigError",
        "continuity.harness.config",
        Row("config_key_unknown", "a harness config key the schema does not have"),
        Row("config_value_invalid", "a harness config value of the wrong type or range"),
    ),
    *section(
        "HistoryError",
        "continuity.servers.history",
        Row("history_invalid_request", "a ConversationHistory request the store cannot answer"),
    ),
    *section(
        "HistoryError",
        "continuity.memory.retained",
        Row("history_record_unknown", "the request names no retained record"),
        Row("history_cursor_invalid", "the request's cursor is not a valid cursor"),
        Row("history_unavailable", "the ConversationHistory process cannot be reached"),
    ),
    *section(
        "CalibrationInvalid",
        "continuity.probes.calibration",
        Row("calibration_case_invalid", "a calibration suite line is malformed (at file:line)"),
        Row("calibration_verdict_invalid", "a grader verdict outside the allowed outcomes"),
        Row(
            "calibration_suite_unreadable",
            "the calibration suite path is missing or not a readable file",
        ),
    ),
    *section(
        "CalibrationInvalid",
        "continuity.probes.validity",
        Row(
            "calibration_blind_exists",
            "a held-out suite's blind measurement exists; it is never rewritten",
        ),
    ),
    *section(
        "SoulError",
        "continuity.lookup.soul",
        Row("lookup_soul_missing", "no known frozen soul by that name, or its file cannot be read"),
        Row(
            "lookup_soul_mismatch",
            "a soul's bytes are not its frozen digest, or a policy binds no known soul",
        ),
    ),
    *section(
        "LedgerError",
        "continuity.errors.types",
        Row("ledger_error", "a ledger error raised without a more specific code"),
    ),
    *section(
        "LedgerError",
        "continuity.memory.ledger",
        Row("ledger_delta_invalid", "an extraction that is not a valid ledger delta"),
    ),
    *section(
        "LedgerError",
        "continuity.memory.ledger_sources",
        Row("ledger_source_corrupt", "a ledger source row does not match its retained record"),
        Row("ledger_source_oversized", "a ledger source is over its size limit"),
    ),
    *section(
        "LedgerError",
        "continuity.memory.ledger_store",
        Row("ledger_store_corrupt", "the ledger store is not a valid store"),
        Row("ledger_store_missing", "there is no ledger store"),
        Row("ledger_unowned", "the ledger store belongs to another session"),
        Row("ledger_journal_invalid", "a ledger state move out of order"),
    ),
    *section(
        "LedgerError",
        "continuity.plan.ledger_plan",
        Row("ledger_plan_invalid", "the ledger's upkeep plan is not valid"),
        Row(
            "ledger_plan_under_reserved", "a ledger reservation is smaller than the planned tokens"
        ),
    ),
    *section(
        "LedgerError",
        "continuity.preparation.capture",
        Row("capture_output_invalid", "--capture-upkeep-output is not an absolute directory"),
        Row(
            "capture_output_exists", "a capture file exists already; captures are never overwritten"
        ),
        Row(
            "capture_output_inside_checkout",
            "an upkeep capture would be written inside the checkout",
        ),
    ),
    *section(
        "RoleError",
        "continuity.errors.types",
        Row("role_error", "a role error raised without a more specific code"),
    ),
    *section(
        "RoleError",
        "continuity.roles.register_git",
        Row("role_revision_invalid", "a revision that is not a full 40-hex commit SHA"),
        Row("role_checkout_unknown", "git cannot read the checkout"),
        Row("role_checkout_dirty", "a registered checkout has changed or untracked entries"),
        Row("role_checkout_flags", "paths are marked assume-unchanged or skip-worktree"),
    ),
    *section(
        "RoleError",
        "continuity.roles.register",
        Row("role_protocol_missing", "the checkout does not declare the role protocol"),
        Row("role_no_difference", "Rpack's tree is R0's: there is no treatment"),
        Row("role_diff_outside_guidance", "differing paths lie outside the guidance paths"),
        Row("role_renderer_untouched", "the difference does not touch the renderer"),
        Row("role_witness_missing", "the witness is not only in Rpack's renderer"),
        Row(
            "lookup_rpack_direction_invalid",
            "the witness is in R0's renderer: the roles are reversed",
        ),
        Row("role_output_not_absolute", "the output directory is not an absolute path"),
        Row("role_output_exists", "the output directory exists already"),
        Row("role_output_inside_checkout", "the output directory resolves inside the checkout"),
        Row("role_output_invalid", "the output directory cannot be created"),
    ),
    *section(
        "RoleError",
        "continuity.roles.register_build",
        Row("role_build_failed", "building a role's checkout failed"),
    ),
    *section(
        "RoleError",
        "continuity.roles.register_holdout",
        Row("role_catalog_cap_required", "an external registration needs --catalog-cap-usd"),
        Row("role_catalog_cap_invalid", "the catalog cap is not a positive amount of whole cents"),
        Row("role_catalog_cap_mismatch", "the catalog cap is not the estimate's proposed cap"),
        Row(
            "role_sizing_dirty",
            "the sizing was measured from a work tree that differed from its commit",
        ),
        Row(
            "role_sizing_revision_mismatch",
            "the sizing was measured at another revision than Rpack",
        ),
    ),
    *section(
        "RoleError",
        "continuity.roles.run",
        Row("role_registration_sha256_mismatch", "the registration's sha256 is not the one given"),
        Row("role_registration_invalid", "the registration cannot be read or is not valid"),
        Row(
            "role_registration_changed", "the registration is not the copy compare_register stored"
        ),
        Row(
            "lookup_pilot_registration_refused",
            "a pilot registration given to an ordinary compare route",
        ),
        Row(
            "role_child_failed",
            "a role launch's child failed (a launches.json reason)",
            kind="reported",
        ),
    ),
    *section(
        "RoleError",
        "continuity.roles.run_launch",
        Row("role_build_changed", "a role's build changed since registration"),
        Row(
            "role_receipt_missing",
            "a role launch wrote no receipt (a launches.json reason)",
            kind="reported",
        ),
        Row(
            "role_receipt_invalid",
            "a role launch's receipt is invalid (a launches.json reason)",
            kind="reported",
        ),
    ),
    *section(
        "RoleError",
        "continuity.commands.role_runs",
        Row("role_launch_failed", "some role launches of doit compare_run failed"),
    ),
    *section(
        "RoleError",
        "continuity.roles.aggregate_read",
        Row("role_launches_invalid", "the launches are not a run of this registration"),
        Row("role_receipt_tampered", "a receipt's sha256 is not the recorded one"),
        Row("role_cross_replay", "a role's receipt lies under another role's directory"),
    ),
    *section(
        "RoleError",
        "continuity.roles.pilot.registration",
        Row(
            "lookup_pilot_registration_not_external",
            "a pilot wraps a registration that binds no frozen holdout",
        ),
        Row(
            "lookup_pilot_registration_sha256_mismatch",
            "the wrapped registration no longer hashes to its bound sha256",
        ),
        Row(
            "lookup_pilot_registration_invalid",
            "the pilot registration or the store's selection is not the registered one",
            also=("SpendError",),
        ),
        Row("lookup_pilot_reader_mismatch", "the reader is not the model the registry registers"),
        Row("lookup_pilot_deadlines_changed", "the descriptor's deadlines are not the bound ones"),
    ),
    *section(
        "RoleError",
        "continuity.roles.pilot.run",
        Row(
            "lookup_pilot_reader_not_ready",
            "the reader's readiness for a capped pilot is not fully known",
        ),
        Row(
            "lookup_pilot_controller_invalid",
            "not run from the registered R0 checkout, or a build or protocol missing",
        ),
    ),
)
