"""The ledger arm in a run: its binding, and the prepared checkpoint each unit forks.

A run with ``continuity-ledger-cold`` carries one `LedgerRun`: the ledger binding (the
answering sequence A -> R -> A, the extractor, the strict request-cap policy), the
extractor's enforcement class, its endpoint in real mode, and the capture folder of
``--capture-upkeep-output``. `prepare_for_unit` builds (or reuses) the repeat's prepared
checkpoint over the base checkpoint: three extractions per trace and repeat, never per
probe. The controls (native, cold-rebuild, the pack arm and the rest) never get one:
they buy no upkeep.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from continuity.arms import ARMS as _ARMS
from continuity.arms import LEDGER_ARM, arm_config, models_patch
from continuity.harness.keys import real_summarizer_params
from continuity.preparation.extractor import enforcement_class
from continuity.preparation.prepare import Prepared, preparation_key, prepare_checkpoint
from continuity.preparation.receipts import Fault, LedgerBinding
from continuity.providers.endpoint import EndpointSpec, RealBinding
from continuity.store import Store

if TYPE_CHECKING:
    from continuity.harness.checkpoints import CheckpointResult
    from continuity.plan.plan import Plan
    from continuity.providers.cache import Ledger as AdmissionLedger
    from continuity.traces.schema import Trace
    from continuity.zygote import ZygotePool

__all__ = ["LedgerRun", "ledger_run", "ledger_run_for", "prepare_for_unit", "prepared_key"]


class LedgerRun(msgspec.Struct, frozen=True, kw_only=True):
    """How a run keeps the ledger arm's ledger (see the module doc)."""

    binding: LedgerBinding
    enforcement: str
    # (reader, alternate): the plan's R and A (the history replays on R, the stages
    # answer A -> R -> A, the probes switch back to R); None: the arm's configured pair.
    models: tuple[str, str] | None = None
    extractor: EndpointSpec | None = None  # real mode
    context_window: int | None = None  # real mode: the extractor's, from the catalog
    capture: str | None = None  # the checked DIR/upkeep-output folder
    timeout: float = 900.0  # each stage child's limit

    def key_params(self) -> dict[str, Any] | None:
        """What a real prepared checkpoint binds of the extractor endpoint (its
        repeat is bound separately): the endpoint and the model's context window."""
        if self.extractor is None:
            return None
        binding = RealBinding(endpoint=self.extractor, store_root="", repeat=0)
        params = real_summarizer_params(binding)["summarizer"]
        return {"extractor": params, "context_window": self.context_window}


def ledger_run(
    *,
    models: tuple[str, str] | None = None,
    extraction_model: str | None = None,
    require_request_cap: bool = False,
    faults: dict[int, Fault] | None = None,
    extractor: EndpointSpec | None = None,
    context_window: int | None = None,
    capture: str | None = None,
    timeout: float = 900.0,
) -> LedgerRun:
    """The run's ledger binding: `models` (reader R, alternate A; default: the arm's
    configured pair) answer A -> R -> A, and the extractor is R unless
    `extraction_model` names another (never an automatic cheaper model)."""
    configured = arm_config(_ARMS[LEDGER_ARM], models_patch(models)).models
    reader, alternate = configured.reader, configured.alternate
    binding = LedgerBinding(
        sequence=(alternate, reader, alternate),
        extractor=extraction_model or reader,
        require_request_cap=require_request_cap,
        faults=dict(faults or {}),
    )
    enforcement = (
        enforcement_class(extractor.kind, extractor.base_url)
        if extractor is not None
        else "scripted_cap"
    )
    return LedgerRun(
        binding=binding,
        enforcement=enforcement,
        models=models,
        extractor=extractor,
        context_window=context_window,
        capture=capture,
        timeout=timeout,
    )


def ledger_run_for(
    plan: Plan,
    *,
    capture: str | None,
    checkout: Path,
    extractor: EndpointSpec | None = None,
    context_window: int | None = None,
) -> LedgerRun | None:
    """The run's `LedgerRun` for `plan` (None without the ledger arm), after the plan's
    ledger section is checked: this runs before anything executes.

    Raises:
        LedgerError: ``ledger_plan_invalid`` / ``ledger_plan_under_reserved`` for a plan
            that cannot account for the arm's extractions; ``capture_output_invalid``
            for ``--capture-upkeep-output`` without the ledger arm, and the capture
            folder's own codes (`continuity.preparation.capture.capture_folder`).
    """
    from continuity.errors import LedgerError
    from continuity.plan.ledger_plan import check_ledger_plan
    from continuity.preparation.capture import capture_folder

    check_ledger_plan(plan.arms, plan.ledger, reader=plan.reader, alternate=plan.alternate)
    if plan.ledger is None:
        if capture:
            raise LedgerError(
                "--capture-upkeep-output captures the ledger arm's extractions; add "
                "continuity-ledger-cold to --arms",
                code="capture_output_invalid",
                location="--capture-upkeep-output",
            )
        return None
    folder = capture_folder(capture, checkout=checkout) if capture else None
    return ledger_run(
        models=(plan.reader, plan.alternate),
        extraction_model=plan.ledger.extraction_model,
        require_request_cap=plan.ledger.require_request_cap,
        extractor=extractor,
        context_window=context_window,
        capture=str(folder) if folder is not None else None,
    )


def prepared_key(base_key: str, ledger: LedgerRun, repeat: int) -> str:
    return preparation_key(base_key, ledger.binding, repeat, ledger.key_params())


def prepare_for_unit(
    store: Store,
    base: CheckpointResult,
    trace: Trace,
    ledger: LedgerRun,
    *,
    repeat: int,
    real: RealBinding | None,
    zygotes: ZygotePool | None,
) -> Prepared:
    """The repeat's prepared checkpoint over `base` (built once, then reused). In real
    mode the extractor's calls go to the extractor endpoint behind the call cache, with
    the invocation's admission ledger."""
    from continuity.preparation.capture import capture_paths

    captures = None
    if ledger.capture is not None:
        key = prepared_key(base.key, ledger, repeat)
        if store.get_action(key) is None:  # a stored preparation is never captured again
            captures = capture_paths(
                Path(ledger.capture),
                repeat=repeat,
                trace_id=trace.trace_id,
                fictional=trace.fictional,
            )
    extractor = None
    if real is not None and ledger.extractor is not None:
        extractor = msgspec.structs.replace(real, endpoint=ledger.extractor)
    admission = _admission(extractor)
    try:
        return prepare_checkpoint(
            store,
            base,
            arm=LEDGER_ARM,
            binding=ledger.binding,
            repeat=repeat,
            enforcement=ledger.enforcement,
            real=extractor,
            real_params=ledger.key_params(),
            context_window=ledger.context_window,
            captures=captures,
            zygotes=zygotes,
            timeout=ledger.timeout,
            observe=admission.observe if admission is not None else None,
        )
    finally:
        if admission is not None:
            admission.close()


def _admission(real: RealBinding | None) -> AdmissionLedger | None:
    """The invocation's admission ledger (real mode), for a lost acknowledgement."""
    if real is None or real.ledger is None:
        return None
    from continuity.providers.shared_ledger import open_ledger

    return open_ledger(real.ledger)
