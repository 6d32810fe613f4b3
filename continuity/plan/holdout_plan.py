"""``--suite holdout``: a plan's workload from a frozen external source.

A plan on a holdout names the source triple (``--manifest``, ``--manifest-sha256``,
``--statistical-spec``) and a preregistered ``--selection-seed`` (``--per-group``
defaults to the spec's). `holdout_choice` loads the freeze from the store (verifying
its tooling and runtime digests and every trace hash, `continuity.holdout.load_frozen`),
applies ``seeded-sha256-rank-v1`` and returns the `HoldoutBinding` the plan's digest
binds and the selected traces the runner runs. Nothing falls back to a built-in suite:

- the triple, or an external-only option, without ``--suite holdout`` is
  ``holdout_suite_required``; ``--suite holdout`` without the complete triple (or an
  external-only option without it) is ``holdout_source_incomplete``;
- an explicit ``--trace`` is ``holdout_trace_selection_refused`` (unselected families
  are sealed spares, never outcome-driven replacements);
- lookup on a holdout with repeats other than one is ``holdout_repeats_invalid``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from continuity.errors import HoldoutError
from continuity.holdout import (
    HoldoutBinding,
    SelectedTrace,
    check_holdout_repeats,
    holdout_binding,
    load_frozen,
    refuse_explicit_traces,
    select_frozen,
    selected_traces,
    source_from_options,
)
from continuity.store import Store

if TYPE_CHECKING:
    from continuity.plan.request import HoldoutRequest

__all__ = ["HOLDOUT_SUITE", "HoldoutChoice", "external_options", "holdout_choice"]

HOLDOUT_SUITE = "holdout"
# External-only options as option keys (doit's names) and as the user writes them, with
# the value that means "not given" (doit passes every declared option: rules/holdout.py
# declares --selection-seed with -1 and --per-group with 0 as their defaults).
_EXTERNAL = {"selection_seed": ("--selection-seed", -1), "per_group": ("--per-group", 0)}


def _given(request: HoldoutRequest, key: str) -> int | None:
    value: int = getattr(request, key)
    return None if value == _EXTERNAL[key][1] else value


class HoldoutChoice(msgspec.Struct, frozen=True, kw_only=True):
    """A verified holdout selection: what the plan binds and the traces it runs."""

    binding: HoldoutBinding
    traces: tuple[SelectedTrace, ...]
    manifest: str
    spec: str

    @property
    def trace_keys(self) -> list[str]:
        return [t.key for t in self.traces]


def external_options(request: HoldoutRequest) -> list[str]:
    """The external-only options the user gave (by their command-line names)."""
    return [flag for key, (flag, _) in _EXTERNAL.items() if _given(request, key) is not None]


def holdout_choice(
    store: Store,
    request: HoldoutRequest,
    *,
    lookup: bool = False,
    trace: str = "",
    repeats: int = 1,
) -> HoldoutChoice | None:
    """The holdout the request names (None for a built-in suite without any holdout
    option); see the module doc for the rules and codes. `trace` is a run's ``--trace``
    and `repeats` its plan's repeats.

    Raises:
        HoldoutError: the codes above, and those of `source_from_options`,
            `load_frozen` and `select_frozen` (``holdout_not_frozen``,
            ``holdout_freeze_mismatch``, ``holdout_trace_hash_mismatch``,
            ``holdout_selection_seed_required`` ...).
    """
    given = external_options(request)
    source = source_from_options(
        request.manifest or None,
        request.manifest_sha256 or None,
        request.statistical_spec or None,
        external=given,
    )
    suite = request.suite or "original"
    if suite != HOLDOUT_SUITE:
        if source is not None:
            raise HoldoutError(
                f"a holdout source runs as --suite {HOLDOUT_SUITE}, not --suite {suite}",
                code="holdout_suite_required",
                location="--suite",
            )
        return None
    if source is None:
        raise HoldoutError(
            "--suite holdout needs its source: --manifest, --manifest-sha256 and "
            "--statistical-spec (nothing falls back to a built-in suite)",
            code="holdout_source_incomplete",
            location="--manifest",
        )
    if trace:
        refuse_explicit_traces("--trace")
    if lookup:
        check_holdout_repeats(repeats)
    frozen = load_frozen(store, source)
    selection = select_frozen(
        frozen, _given(request, "selection_seed"), _given(request, "per_group")
    )
    return HoldoutChoice(
        binding=holdout_binding(frozen, selection),
        traces=tuple(selected_traces(store, frozen, selection)),
        manifest=str(source.manifest),
        spec=str(source.spec),
    )
