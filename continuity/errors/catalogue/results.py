"""The catalogue's entries: runs, gates, aggregation, traces and the store."""

from __future__ import annotations

from continuity.errors.catalogue.entry import Entry, Row, section

__all__ = ["ENTRIES"]

ENTRIES: tuple[Entry, ...] = (
    *section(
        "ContinuityError",
        "continuity.errors.types",
        Row("continuity_error", "a deliberate error raised without a more specific code"),
    ),
    *section(
        "ContinuityError",
        "continuity.contract",
        Row("distractors_changed_facts", "the distractors changed a trace's facts"),
        Row(
            "arm_contract_failed", "the offline contract found units an arm's judge did not resolve"
        ),
        Row(
            "checkpoint_contract_failed",
            "a probe changed a file it shares with the checkpoint (also a probe result's reason)",
        ),
    ),
    *section(
        "ContinuityError",
        "continuity.contract_agent",
        Row(
            "agent_contract_failed",
            "the offline contract's outside-agent pass found invalid samples",
        ),
    ),
    *section(
        "ContinuityError",
        "continuity.runner.design",
        Row("design_check_failed", "the run design lacks a probe role it needs"),
    ),
    *section(
        "ContinuityError",
        "continuity.probes.real_answers",
        Row("real_answer_failed", "the server gave no answer"),
    ),
    *section(
        "ContinuityError",
        "continuity.runner.ledger_smoke",
        Row(
            "ledger_smoke_failed",
            "a doit ledger_smoke mechanism check did not hold (the report names it)",
        ),
    ),
    *section(
        "ContinuityError",
        "continuity.runner.inventory",
        Row("lookup_inventory_empty", "no reference path discovered its source"),
    ),
    *section(
        "ContinuityError",
        "continuity.runner.inventory_paths",
        Row("lookup_inventory_failed", "a reference path of the lookup inventory failed"),
    ),
    *section(
        "RunIncomplete",
        "continuity.runner.units.build",
        Row(
            "run_incomplete", "some units of a real run did not finish; the finished ones are kept"
        ),
        Row("run_stopped", "a stop rule ended a real run; the finished units are kept"),
    ),
    *section(
        "LookupCoverageIncomplete",
        "continuity.errors.types",
        Row(
            "lookup_partial_coverage",
            "planned slots were skipped as infeasible; the units are kept",
        ),
    ),
    *section(
        "GateFailed",
        "continuity.commands.comparison",
        Row(
            "regression_found",
            "doit compare found a significant drop it was told to fail on (exit 3)",
        ),
    ),
    *section(
        "GateFailed",
        "continuity.report.threshold",
        Row(
            "accuracy_below_threshold",
            "doit aggregate --fail-under found accuracies below the threshold (exit 3)",
        ),
    ),
    *section(
        "GateFailed",
        "continuity.qualify.run",
        Row(
            "qualify_failed",
            "doit qualify: a case's verdict is fail (its package is written first)",
        ),
    ),
    *section(
        "GateFailed",
        "continuity.agents.check",
        Row("agent_check_failed", "doit agent_check: some checks failed (exit 3)"),
    ),
    *section(
        "AggregateError",
        "continuity.report.collect",
        Row("run_builds_mixed", "a run's units were built by several unit codes; never pooled"),
        Row("unit_duplicate", "a slot appears in two unit files"),
        Row(
            "run_empty",
            "the run directory is there but holds no unit files",
            also=(
                "CompareError",
                "UsageError",
            ),
        ),
    ),
    *section(
        "AggregateError",
        "continuity.report.verify",
        Row("unit_malformed", "a file that is not a unit record"),
        Row("unit_tampered", "a unit's content does not match its digest"),
        Row("unit_key_mismatch", "a unit's key is not the key of its content"),
    ),
    *section(
        "AggregateError",
        "continuity.report.scores",
        Row("trace_missing", "a unit's trace is not in the store"),
        Row("score_tampered", "a score artifact's content does not match its digest"),
    ),
    *section(
        "AggregateError",
        "continuity.report.threshold",
        Row("results_unreadable", "the results hold no accuracy for --fail-under to gate on"),
    ),
    *section(
        "AggregateError",
        "continuity.report.aggregate",
        Row("unit_protocol_mixed", "the units ran under different probe protocols"),
    ),
    *section(
        "AggregateError",
        "continuity.runner.manifest",
        Row("run_manifest_malformed", "a run.json that is not a run manifest"),
    ),
    *section(
        "TraceError",
        "continuity.errors.types",
        Row("trace_error", "a trace error raised without a more specific code"),
    ),
    *section(
        "TraceError",
        "continuity.probes.availability",
        Row("status_evidence_missing", "no evidence turn states a subject's status"),
    ),
    *section(
        "TraceInvalid",
        "continuity.traces.validate",
        Row(
            "trace_malformed",
            "not JSON, wrong types, unknown fields, bad ids, or a field past its limit",
        ),
        Row("trace_schema_unsupported", "schema_version is not the one this build reads"),
        Row("trace_too_large", "the trace file is over the trace size limit"),
    ),
    *section(
        "TraceInvalid",
        "continuity.traces.validate._structure",
        Row("trace_not_fictional", "fictional is not true"),
        Row("duplicate_id", "a session, turn, call or probe id repeats"),
        Row(
            "sequence_invalid", "turns in the wrong order (calls, results, steers, replies, dates)"
        ),
        Row(
            "tool_call_invalid",
            "an unknown tool, arguments not matching its schema, or a wrong result",
        ),
    ),
    *section(
        "TraceInvalid",
        "continuity.traces.validate._shape",
        Row("shape_out_of_range", "counts or sizes outside the family's shape"),
        Row("steer_missing", "fewer mid-turn steers than the family needs"),
        Row(
            "category_missing",
            "a required probe category (or pair, or early constraint) is missing",
        ),
    ),
    *section(
        "TraceInvalid",
        "continuity.traces.validate._evidence",
        Row(
            "correction_missing",
            "a superseded_current probe with nothing superseded, or a missing change",
        ),
        Row("evidence_unknown", "a fact names no evidence, or a turn id that does not exist"),
        Row("evidence_mismatch", "a value does not occur verbatim in a turn named as its evidence"),
        Row("identifier_outside_tool_output", "a tool identifier appears outside tool output"),
        Row("secret_outside_tool_output", "the redaction secret appears outside tool output"),
        Row("abstention_term_present", "a never-mentioned term does occur in the conversation"),
        Row("probe_leaks_answer", "a probe's text contains an expected value"),
        Row(
            "placement_invalid", "a superseded value does not come first, or a placement rule fails"
        ),
    ),
    *section(
        "TraceInvalid",
        "continuity.traces.validate._design",
        Row("owner_rules_missing", "the hard suite's three owner rules in turn 1 are missing"),
        Row(
            "vocabulary_not_neutral",
            "a generated suite uses relationship, health, religion or politics terms",
        ),
    ),
    *section(
        "TraceCollision",
        "continuity.errors.types",
        Row("trace_value_collision", "two generated traces share an identifier or secret"),
    ),
    *section(
        "StoreError",
        "continuity.errors.types",
        Row("store_error", "a store error raised without a more specific code"),
    ),
    *section(
        "StoreError",
        "continuity.store._store",
        Row("tree_entry_invalid", "a tree entry name is not valid"),
        Row("restore_target_not_empty", "a restore target is not empty"),
    ),
    *section(
        "StoreError",
        "continuity.store.backends",
        Row(
            "store_backend_unsupported",
            "a shared store URL is not a directory, file:// or s3:// URL (or s3fs is missing)",
        ),
        Row("store_backend_failed", "the shared store's backend refused or failed an operation"),
    ),
    *section(
        "StoreError",
        "continuity.store.shared",
        Row("store_ref_contended", "a shared ref kept changing: every compare-and-swap lost"),
    ),
    *section(
        "StoreError",
        "continuity.commands.store_upkeep",
        Row("store_corrupt", "doit verify found corrupt files (quarantined)"),
        Row("store_repair_incomplete", "doit verify --repair could not rebuild some refs"),
    ),
    *section(
        "ObjectMissing",
        "continuity.store._store",
        Row("object_missing", "the store holds no object by that digest"),
    ),
    *section(
        "ObjectCorrupt",
        "continuity.store._store",
        Row(
            "object_corrupt",
            "an object's bytes do not hash to its name (reported, quarantined, never returned)",
        ),
    ),
    *section(
        "RecordCorrupt",
        "continuity.store._store",
        Row("record_corrupt", "an action entry or ref failed its check"),
    ),
    *section(
        "DigestInvalid",
        "continuity.digest",
        Row("digest_invalid", "a digest is not a valid digest"),
    ),
)
