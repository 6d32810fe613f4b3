"""The catalogue's entries: `UsageError` and its subclasses (bad arguments,
real-mode guards, pricing, inputs, holdouts, lookup policies, comparisons)."""

from __future__ import annotations

from continuity.errors.catalogue.entry import Entry, Row, section

__all__ = ["ENTRIES"]

ENTRIES: tuple[Entry, ...] = (
    *section(
        "UsageError",
        "continuity.errors.types",
        Row("usage_error", "a usage error raised without a more specific code"),
    ),
    *section(
        "UsageError",
        "continuity.traces.suites",
        Row("suite_unknown", "the suite named is not one the catalogue holds"),
        Row("trace_file_unreadable", "a trace file cannot be read"),
        Row("trace_unknown", "the store holds no trace under the item's key"),
    ),
    *section(
        "UsageError",
        "continuity.traces.keys",
        Row("seeds_invalid", "the seeds text is not a valid seed list"),
    ),
    *section(
        "UsageError",
        "continuity.argv",
        Row("store_path_invalid", "the store path exists and is not a directory"),
        Row("option_empty", "an option was given an empty value"),
        Row("option_invalid", "an option's value does not parse as its kind"),
        Row("option_unknown", "the task has no such option (options are never abbreviated)"),
        Row("option_value_unexpected", "a flag option was given a value"),
        Row("option_value_missing", "an option that needs a value was given none"),
        Row("task_unknown", "the name is no doit task, command or target"),
    ),
    *section(
        "UsageError",
        "continuity.outputs",
        Row("out_path_invalid", "the output path cannot be used as a directory"),
    ),
    *section(
        "UsageError",
        "continuity.plan.plan",
        Row("plan_invalid", "the plan's options do not make a valid plan"),
    ),
    *section(
        "UsageError",
        "continuity.plan.from_request",
        Row(
            "lookup_real_refused",
            "the lookup plan is offline only and never calls a real model",
            also=("RealModeError",),
        ),
    ),
    *section(
        "UsageError",
        "continuity.plan.estimate",
        Row("cost_limit_exceeded", "the plan's upper cost bound exceeds the given limit"),
        Row("cost_unknown", "the upper bound cannot be checked: some planned calls are unpriced"),
        Row("model_limit_exceeded", "planned calls exceed their model's context window"),
        Row("cost_limit_invalid", "the cost limit is not a finite number of USD above 0"),
    ),
    *section(
        "UsageError",
        "continuity.commands.estimation",
        Row("estimate_real_refused", "the estimator never runs a real plan"),
    ),
    *section(
        "UsageError",
        "continuity.providers.efforts",
        Row("effort_invalid", "an --effort or --judge-effort the provider does not take"),
    ),
    *section(
        "UsageError",
        "continuity.runner.lookup_budget",
        Row("lookup_output_invalid", "the lookup output directory cannot be created"),
        Row("lookup_output_exists", "a frozen policy or output is never overwritten"),
    ),
    *section(
        "UsageError",
        "continuity.commands.lookup_sizing",
        Row("lookup_output_required", "doit lookup_budget was given no --output directory"),
        Row(
            "lookup_reader_model_invalid",
            "--reader-model is not provider:model, or sits beside a legacy inventory",
        ),
        Row(
            "lookup_legacy_option_refused", "a legacy corpus option given to a fixed-budget sizing"
        ),
    ),
    *section(
        "UsageError",
        "continuity.qualify.select",
        Row("qualify_selector_invalid", "doit qualify's selector options do not combine"),
        Row("qualify_selection_empty", "the selector matches no qualification case"),
        Row("qualify_plans_mixed", "the selection mixes cases of several plans"),
        Row("qualify_unregistered", "the registration names another plan or lists a case twice"),
        Row("case_mismatch", "the registration's cases are not the plan's cases"),
    ),
    *section(
        "UsageError",
        "continuity.qualify.run",
        Row(
            "qualify_workload_failed",
            "an attempt's workload failed: an infrastructure outcome, not a verdict",
            kind="reported",
        ),
    ),
    *section(
        "UsageError",
        "continuity.qualify.faults.common",
        Row(
            "qualify_loss_unconfirmed",
            "an injected loss was not confirmed: an infrastructure outcome",
            kind="reported",
        ),
    ),
    *section(
        "UsageError",
        "continuity.runner.lookup_run",
        Row(
            "lookup_unknown_feasibility",
            "some lookup slots have a feasibility the sizing never measured",
        ),
    ),
    *section(
        "UsageError",
        "continuity.roles.table",
        Row("lookup_role_unknown", "--lookup-role names no known lookup role"),
    ),
    *section(
        "UsageError",
        "continuity.roles.receipt",
        Row("lookup_role_arms_conflict", "--arms conflicts with the arm the lookup role runs"),
        Row(
            "lookup_role_receipt_invalid",
            "the role receipt is not a receipt with a frozen soul binding",
        ),
    ),
    *section(
        "UsageError",
        "continuity.runner.preflight.launch",
        Row(
            "lookup_preflight_root_invalid",
            "preflight's temporary directory lies inside the checkout or store",
        ),
    ),
    *section(
        "UsageError",
        "continuity.plan.holdout_pricing",
        Row(
            "lookup_pricing_blocked",
            "holdout pricing's result when numerical approval is blocked",
            kind="reported",
        ),
    ),
    *section(
        "UsageError",
        "continuity.runner.fixed_budget.sizing",
        Row("lookup_empty_fixed_budget_sha256", "--fixed-budget-sha256 is empty"),
        Row("lookup_fixed_budget_required", "a fixed-budget sizing needs --fixed-budget-sha256"),
    ),
    *section(
        "UsageError",
        "continuity.runner.fixed_budget.scratch",
        Row("lookup_scratch_root_invalid", "the scratch directory lies inside the checkout"),
    ),
    *section(
        "UsageError",
        "continuity.runner.fixed_budget.estimate",
        Row(
            "lookup_output_limit_source_invalid",
            "the output limit's source is not catalog_max or enforced",
        ),
        Row(
            "lookup_output_limit_mismatch",
            "a catalog_max output limit is not the model's catalog maximum",
        ),
    ),
    *section(
        "UsageError",
        "rules.estimate",
        Row("lookup_output_limit_invalid", "--output-limit is not a valid token count"),
    ),
    *section(
        "UsageError",
        "continuity.store._store",
        Row("ref_name_invalid", "a ref name is not a valid ref name"),
    ),
    *section(
        "UsageError",
        "continuity.runner.cluster",
        Row("executor_unavailable", "--executor dask without dask.distributed installed"),
        Row("scheduler_unreachable", "no Dask scheduler answered at --scheduler in time"),
        Row("cluster_task_failed", "Dask lost a group of units (dying workers, a lost scheduler)"),
        Row("cluster_code_mismatch", "a worker built a unit under another key: it runs other code"),
    ),
    *section(
        "UsageError",
        "continuity.probes.real_answers",
        Row("output_exists", "the real-answers output file exists already"),
    ),
    *section(
        "UsageError",
        "continuity.servers.wire_options",
        Row("port_unavailable", "the wire stand-in cannot listen on the given port"),
    ),
    *section(
        "UsageError",
        "continuity.servers.local_model",
        Row("local_model_missing", "the local extra (llama-cpp-python) is not installed"),
        Row("local_server_failed", "llama.cpp's server exited or did not answer in time"),
    ),
    *section(
        "UsageError",
        "continuity.commands.units",
        Row("real_flag_required", "a real --provider runs only with --real"),
    ),
    *section(
        "UsageError",
        "continuity.runner.units.selection",
        Row("repeat_unknown", "--repeat names repeats outside the plan's repeats"),
    ),
    *section(
        "UsageError",
        "continuity.lookup.reader",
        Row("lookup_reader_unknown", "the lookup reader binding is not a known one"),
    ),
    *section(
        "UsageError",
        "continuity.runner.units.store",
        Row(
            "lookup_slot_observed",
            "a run's unit files already hold another observation of the slot",
        ),
    ),
    *section(
        "UsageError",
        "continuity.report.scores",
        Row("scorer_unknown", "--scorer names no known scorer"),
    ),
    *section(
        "UsageError",
        "continuity.report.runs",
        Row(
            "run_unknown",
            "no run or directory by that name (doit aggregate, compare, export, score; "
            "at the option that named it)",
            also=("AggregateError", "CompareError"),
        ),
    ),
    *section(
        "UsageError",
        "continuity.commands.export_run",
        Row("export_format_unknown", "--format names no export format (jsonl, csv, inspect)"),
        Row(
            "export_output_invalid",
            "--output is a directory (a folder for inspect: a file), lies under a file, or "
            "cannot be created or written",
        ),
    ),
    *section(
        "UsageError",
        "continuity.report.inspect_log",
        Row(
            "export_extra_missing",
            "--format inspect without the inspect extra (pip install 'continuity[inspect]')",
        ),
    ),
    *section(
        "RealModeError",
        "continuity.errors.types",
        Row("real_refused", "real mode refused (the base of the real-mode guards)"),
    ),
    *section(
        "RealModeError",
        "continuity.plan.guards",
        Row("real_refused_ci", "a real run never starts where a CI variable exists"),
        Row("real_provider_required", "real mode needs a real endpoint provider"),
        Row(
            "credentials_required",
            "a real run away from this machine needs an explicit --credentials file",
        ),
        Row("confirmation_required", "real mode needs --confirm-plan with a dry run's digest"),
        Row("confirmation_mismatch", "--confirm-plan is not this plan's digest"),
        Row("confirmation_unknown", "no dry run of the plan is recorded in the store"),
        Row("credentials_missing", "the credentials file does not exist or is not a regular file"),
        Row("output_required", "real mode needs an explicit --out directory outside the checkout"),
        Row("output_inside_checkout", "the output directory resolves inside the checkout"),
        Row("checkout_unknown", "the working directory is not a git checkout"),
        Row(
            "checkout_dirty",
            "the checkout's code (package, rules, dodo.py, fixtures) has uncommitted or "
            "untracked paths",
        ),
        Row("checkout_flags_refused", "paths are marked assume-unchanged or skip-worktree"),
        Row(
            "installed_code_modified",
            "a file of the installed distribution's code no longer matches its RECORD hash, "
            "is missing, or is not listed in RECORD",
        ),
    ),
    *section(
        "RealModeError",
        "continuity.runner.windows",
        Row(
            "context_window_exceeded",
            "a planned call does not fit the smallest known context window",
        ),
    ),
    *section(
        "RealModeError",
        "continuity.runner.cost_account",
        Row(
            "cost_cap_output_unenforced", "a cost cap on an endpoint seen to ignore its output cap"
        ),
        Row("cost_cap_invalid", "--cost-cap is not US dollars in whole cents above zero"),
        Row(
            "cost_cap_account_local",
            "--shared-store for a run whose cost-cap account is a file in its --out",
        ),
    ),
    *section(
        "RealModeError",
        "continuity.providers.costcap",
        Row(
            "cost_cap_mismatch",
            "--cost-cap differs from the account's stored cap, without --raise-cap",
        ),
    ),
    *section(
        "PricingError",
        "continuity.errors.types",
        Row("pricing_invalid", "a price catalog or genai-prices lookup is invalid"),
    ),
    *section(
        "InputError",
        "continuity.inputs",
        Row("input_not_a_file", "a directory, device or FIFO where a regular file is read"),
        Row("input_too_large", "a file is over its kind's size limit"),
        Row("input_not_a_directory", "a file where a directory is read"),
    ),
    *section(
        "HoldoutError",
        "continuity.errors.types",
        Row("holdout_error", "a holdout error raised without a more specific code"),
    ),
    *section(
        "HoldoutError",
        "continuity.holdout.source",
        Row(
            "holdout_source_incomplete",
            "--suite holdout lacks its manifest, sha256 or statistical spec",
        ),
        Row(
            "holdout_manifest_sha256_invalid", "the manifest sha256 is not 64 lowercase hex digits"
        ),
        Row("holdout_file_unreadable", "a holdout source file cannot be read"),
        Row("holdout_manifest_sha256_mismatch", "the manifest's sha256 is not the one given"),
        Row("holdout_manifest_invalid", "the holdout manifest is not a valid manifest"),
        Row("holdout_spec_invalid", "the statistical spec is not a valid spec"),
        Row("holdout_group_unknown", "a family's group is not declared by the spec"),
    ),
    *section(
        "HoldoutError",
        "continuity.holdout.validate",
        Row(
            "holdout_group_too_small",
            "a group holds fewer families than the selection takes per group",
        ),
        Row("holdout_trace_hash_mismatch", "a family's trace is not its frozen blob"),
        Row(
            "holdout_trace_invalid",
            "a family's trace fails validation (carries the validator's issues)",
        ),
    ),
    *section(
        "HoldoutError",
        "rules.holdout",
        Row("holdout_output_invalid", "the holdout output directory cannot be used"),
    ),
    *section(
        "HoldoutError",
        "continuity.holdout.overlap",
        Row(
            "holdout_overlap_found",
            "the overlap report lists overlaps, so the source is not frozen",
        ),
        Row("holdout_overlap_invalid", "the overlap report is not a valid report"),
    ),
    *section(
        "HoldoutError",
        "continuity.holdout.freeze",
        Row("holdout_overlap_stale", "the overlap report was made against other references"),
        Row("holdout_overlap_mismatch", "the overlap report is for another manifest or spec"),
        Row("holdout_not_frozen", "the holdout source has not been frozen"),
        Row("holdout_freeze_mismatch", "the source differs from its freeze record"),
    ),
    *section(
        "HoldoutError",
        "continuity.holdout.selection",
        Row(
            "holdout_selection_seed_required",
            "a holdout selection needs a preregistered --selection-seed",
        ),
        Row("holdout_selection_seed_invalid", "the selection seed is not a whole number in range"),
        Row("holdout_per_group_invalid", "--per-group is outside 1 to the smallest group's size"),
    ),
    *section(
        "HoldoutError",
        "continuity.holdout.binding",
        Row("holdout_selection_mismatch", "the selection is not what the seeded rank picks"),
        Row("holdout_trace_selection_refused", "a trace-picking option given for a holdout"),
        Row("holdout_repeats_invalid", "lookup on a holdout needs exactly one repeat"),
    ),
    *section(
        "HoldoutError",
        "continuity.plan.holdout_plan",
        Row("holdout_suite_required", "a holdout source given without --suite holdout"),
    ),
    *section(
        "HoldoutError",
        "continuity.traces.locomo",
        Row("locomo_zip_unreadable", "the LoCoMo archive cannot be read"),
        Row(
            "locomo_format_invalid",
            "a LoCoMo archive member is not the expected format (names member and path)",
        ),
    ),
    *section(
        "HoldoutError",
        "continuity.holdout.locomo_import",
        Row("locomo_output_exists", "the import's output directory exists already"),
        Row("locomo_output_invalid", "the import's output cannot be written"),
    ),
    *section(
        "LookupError_",
        "continuity.errors.types",
        Row("lookup_policy_invalid", "the lookup policy is not a valid policy"),
    ),
    *section(
        "LookupError_",
        "continuity.lookup.policy",
        Row("lookup_policy_sha256_required", "a fixed-budget sizing needs the sha256 of its bytes"),
        Row("lookup_policy_sha256_mismatch", "the policy's sha256 is not the one given"),
        Row("lookup_policy_unbound", "a v1-schema policy binds no protocol or classifier code"),
        Row("lookup_policy_protocol_mismatch", "the sizing was measured under other protocols"),
        Row("lookup_policy_code_mismatch", "the sizing's classes came from other classifier code"),
        Row(
            "lookup_policy_metrics_mismatch",
            "a slot's stored metrics are not its recomputed metrics",
        ),
        Row(
            "lookup_policy_class_mismatch",
            "a slot's stored class is not the class its metrics give",
        ),
    ),
    *section(
        "LookupError_",
        "continuity.lookup.fixed_budget",
        Row(
            "lookup_policy_holdout_mismatch",
            "a fixed-budget sizing run without its holdout selection",
        ),
    ),
    *section(
        "LookupError_",
        "continuity.plan.from_request",
        Row("lookup_policy_reader_mismatch", "the sizing was measured with another reader binding"),
    ),
    *section(
        "LookupError_",
        "continuity.runner.fixed_budget.sizing",
        Row("lookup_fixed_budget_unknown", "the fixed-budget sha256 is not a sha256"),
    ),
    *section(
        "CompareError",
        "continuity.report.compare_runs",
        Row("compare_protocol_mismatch", "the two runs ran under different probe protocols"),
        Row("compare_trace_mismatch", "traces share an id but differ in content"),
    ),
    *section(
        "CompareError",
        "continuity.report.compare",
        Row("compare_scorer_mismatch", "the current scorer does not reproduce both runs' grades"),
        Row("compare_no_pairs", "no slot is resolved in both runs"),
    ),
)
