"""The guarded request contract ``lookup-guard-v1``: what one guarded provider may do.

`GuardContract` freezes the reader binding a guard dispatches to (provider, model, API,
base URL, effort) and, optionally, the prompt cache key (which must contain the run's
unique id). `SOL_CONTRACT` is the lookup reader binding's (``openai-codex:gpt-6.1-sol``
at high effort, over the Responses API at the Codex backend). A reader on a vendor API
that enforces the output cap (a catalog-bounded-v1 registry,
`continuity.spend.assumptions.VENDOR_PROVIDERS`) gets `contract_for`'s: its provider and
model over the Responses API at the vendor's URL (`VENDOR_BASE_URLS`). `check_contract`
refuses a contract whose provider and model are not its registry's, an API other than
the Responses API, and an effort other than Sol's for Sol or a known one for a vendor
reader. The base URL is the one field a contract may set apart, so the tests can point
a guard at a loopback server. Each provider names the account a request is made for in
its own header (`ACCOUNT_HEADERS`: ``chatgpt-account-id`` for the Codex backend,
``openai-project`` for OpenAI's API).

The streaming call is the only dispatch, and its options are allowlisted
(`check_options`), all refused *before* admission:

- ``transport`` must be ``"sse"`` and ``max_retries`` must be ``0`` on every call;
- a caller-supplied HTTP transport, client or fetch (``fetch``, ``client``,
  ``http_transport``, or a ``transport`` that is not the text ``"sse"``), even one
  passed explicitly as None, is ``lookup_external_fetch_forbidden``: the only sender is
  the guard's own single-shot send;
- a retry profile or budget, or any option not listed, is ``lookup_option_forbidden``;
- non-empty caller ``headers`` or ``env`` are ``lookup_option_forbidden``;
- a loop-supplied ``model`` must be the contract's model id
  (``lookup_contract_mismatch``), and a ``session_id`` must be the declared cache key
  (``lookup_cache_key_invalid``).

Before the permit is consumed, the headers the request carries are limited to
`SEND_HEADERS` (compared as lowercase names); an unknown header is an integrity stop
with no send. `check_auxiliary_callers` is the entry and child check that nothing but
the reader can call a model: no judge, and memory, subagents, upkeep, compaction and an
output schema explicitly off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from continuity.errors import SpendError
from continuity.spend.assumptions import ASSUMED_V1, CATALOG_BOUNDED_VERSION, Assumptions
from continuity.spend.authorization import ACCOUNT_HEADER
from continuity.spend.safety import ResolvedSettings

__all__ = [
    "ACCOUNT_HEADERS",
    "ALLOWED_OPTIONS",
    "GUARD_CONTRACT",
    "SEND_HEADERS",
    "SOL_CONTRACT",
    "VENDOR_BASE_URLS",
    "VENDOR_EFFORTS",
    "AuxiliaryCallers",
    "GuardContract",
    "callers_of",
    "check_auxiliary_callers",
    "check_contract",
    "check_options",
    "contract_for",
]

GUARD_CONTRACT = "lookup-guard-v1"
SEND_HEADERS = frozenset(
    {
        "originator",
        "user-agent",
        "authorization",
        "chatgpt-account-id",
        "openai-project",
        "openai-beta",
        "accept",
        "content-type",
        "session-id",
        "x-client-request-id",
        "content-encoding",
    }
)
# Pi's simple stream options and the agent loop's, as far as this harness has them.
ALLOWED_OPTIONS = frozenset(
    {"transport", "max_retries", "model", "session_id", "headers", "env", "on_payload"}
)
_FETCH_OPTIONS = frozenset({"fetch", "client", "http_transport"})
# the header each provider names a request's account in (the send checks it)
ACCOUNT_HEADERS = {"openai-codex": ACCOUNT_HEADER, "openai": "openai-project"}
VENDOR_BASE_URLS = {"openai": "https://api.openai.com/v1"}
VENDOR_EFFORTS = frozenset({"minimal", "low", "medium", "high"})


class GuardContract(msgspec.Struct, frozen=True, kw_only=True):
    """The frozen binding of one guard (version ``lookup-guard-v1``)."""

    version: str = GUARD_CONTRACT
    provider: str  # the catalog's provider part: openai-codex
    model: str  # the model sent on the wire
    api: str  # the endpoint kind: openai-responses
    base_url: str
    effort: str
    prompt_cache_key: str | None = None
    max_retries: int = 0
    transport: str = "sse"

    @property
    def model_id(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def account_header(self) -> str:
        return ACCOUNT_HEADERS.get(self.provider, ACCOUNT_HEADERS["openai-codex"])


SOL_CONTRACT = GuardContract(
    provider="openai-codex",
    model="gpt-6.1-sol",
    api="openai-responses",
    base_url="https://chatgpt.com/backend-api/codex",
    effort="high",
)


def contract_for(
    assumptions: Assumptions, *, effort: str, base_url: str | None = None
) -> GuardContract:
    """The contract of the reader `assumptions` registers (`base_url` replaces the
    contract's own only where a test points it at loopback)."""
    if assumptions.version != CATALOG_BOUNDED_VERSION:
        return msgspec.structs.replace(SOL_CONTRACT, base_url=base_url or SOL_CONTRACT.base_url)
    provider, _, model = assumptions.model.partition(":")
    return GuardContract(
        provider=provider,
        model=model,
        api="openai-responses",
        base_url=base_url or VENDOR_BASE_URLS.get(provider, ""),
        effort=effort,
    )


def check_contract(
    contract: GuardContract, run_id: str, assumptions: Assumptions = ASSUMED_V1
) -> None:
    """Refuse a contract that is not ``lookup-guard-v1`` with SSE and zero retries, that
    is not `assumptions`' reader (see the module doc), or whose cache key does not
    contain `run_id`.

    Raises:
        SpendError: ``lookup_contract_mismatch``, ``lookup_cache_key_invalid``.
    """
    if contract.version != GUARD_CONTRACT or contract.max_retries != 0:
        raise SpendError(
            f"a guard contract is {GUARD_CONTRACT} with max_retries 0",
            code="lookup_contract_mismatch",
            location="contract",
            outcome="refused_pre_send",
        )
    if contract.transport != "sse":
        raise SpendError(
            "a guard contract streams over SSE",
            code="lookup_contract_mismatch",
            location="contract",
            outcome="refused_pre_send",
        )
    reference = contract_for(assumptions, effort=contract.effort)
    for name in ("provider", "model", "api", "effort"):
        if getattr(contract, name) != getattr(reference, name):
            raise SpendError(
                f"the contract's {name} is {getattr(contract, name)!r}, not the registered "
                f"reader's {getattr(reference, name)!r}",
                code="lookup_contract_mismatch",
                location=f"contract.{name}",
                outcome="refused_pre_send",
            )
    vendor = assumptions.version == CATALOG_BOUNDED_VERSION
    if vendor and contract.effort not in VENDOR_EFFORTS:
        raise SpendError(
            f"the contract's effort {contract.effort!r} is not one of {sorted(VENDOR_EFFORTS)}",
            code="lookup_contract_mismatch",
            location="contract.effort",
            outcome="refused_pre_send",
        )
    key = contract.prompt_cache_key
    if key is not None and (not run_id or run_id not in key):
        raise SpendError(
            "the contract's prompt cache key must contain the run id",
            code="lookup_cache_key_invalid",
            location="contract.prompt_cache_key",
            outcome="refused_pre_send",
        )


def check_options(options: Mapping[str, Any], contract: GuardContract) -> None:
    """Refuse options outside the allowlist (see the module docstring).

    Raises:
        SpendError: ``lookup_external_fetch_forbidden``, ``lookup_option_forbidden``,
            ``lookup_contract_mismatch``, ``lookup_cache_key_invalid`` (all
            ``refused_pre_send``).
    """
    for name in options:
        if name in _FETCH_OPTIONS:
            raise SpendError(
                f"a caller-supplied {name} is refused (the guard's single-shot send is the "
                "only transport)",
                code="lookup_external_fetch_forbidden",
                location=f"options.{name}",
                outcome="refused_pre_send",
            )
        if name not in ALLOWED_OPTIONS:
            raise SpendError(
                f"option {name!r} is not allowed on a guarded request",
                code="lookup_option_forbidden",
                location=f"options.{name}",
                outcome="refused_pre_send",
            )
    transport = options.get("transport")
    if "transport" in options and not isinstance(transport, str):
        raise SpendError(
            "a caller-supplied transport is refused",
            code="lookup_external_fetch_forbidden",
            location="options.transport",
            outcome="refused_pre_send",
        )
    if transport != "sse":
        raise SpendError(
            "every guarded call sets transport 'sse'",
            code="lookup_option_forbidden",
            location="options.transport",
            outcome="refused_pre_send",
        )
    retries = options.get("max_retries")
    if not isinstance(retries, int) or isinstance(retries, bool) or retries != 0:
        raise SpendError(
            "every guarded call sets max_retries 0",
            code="lookup_option_forbidden",
            location="options.max_retries",
            outcome="refused_pre_send",
        )
    for name in ("headers", "env"):
        if options.get(name):
            raise SpendError(
                f"caller {name} are refused",
                code="lookup_option_forbidden",
                location=f"options.{name}",
                outcome="refused_pre_send",
            )
    if "model" in options and options["model"] != contract.model_id:
        raise SpendError(
            f"the loop's model {options['model']!r} is not the contract's {contract.model_id}",
            code="lookup_contract_mismatch",
            location="options.model",
            outcome="refused_pre_send",
        )
    if "session_id" in options and options["session_id"] != contract.prompt_cache_key:
        raise SpendError(
            "the session id must be the contract's prompt cache key",
            code="lookup_cache_key_invalid",
            location="options.session_id",
            outcome="refused_pre_send",
        )
    if "on_payload" in options and not callable(options["on_payload"]):
        raise SpendError(
            "on_payload must be callable",
            code="lookup_option_forbidden",
            location="options.on_payload",
            outcome="refused_pre_send",
        )


class AuxiliaryCallers(msgspec.Struct, frozen=True, kw_only=True):
    """The resolved configuration of every caller besides the reader (None: unset)."""

    judge: str | None
    memory: bool | None
    subagents: bool | None
    upkeep: bool | None
    compaction: bool | None
    output_schema: object | None


def callers_of(settings: ResolvedSettings) -> AuxiliaryCallers:
    """The auxiliary callers of resolved `settings` (what the guard checks at entry)."""
    return AuxiliaryCallers(
        judge=settings.judge,
        memory=settings.memory,
        subagents=settings.subagents,
        upkeep=settings.upkeep,
        compaction=settings.compaction,
        output_schema=settings.output_schema,
    )


def check_auxiliary_callers(config: AuxiliaryCallers, *, where: str = "entry") -> None:
    """Nothing but the reader calls a model: no judge, memory, subagents, upkeep and
    compaction *explicitly* false (unset is refused), and no output schema.

    Raises:
        SpendError: ``lookup_auxiliary_caller_on`` at `where` and the field.
    """
    if config.judge is not None:
        raise SpendError(
            f"a judge ({config.judge}) would call a model",
            code="lookup_auxiliary_caller_on",
            location=f"{where}.judge",
        )
    for name in ("memory", "subagents", "upkeep", "compaction"):
        if getattr(config, name) is not False:
            raise SpendError(
                f"{name} must be explicitly off (it is {getattr(config, name)!r})",
                code="lookup_auxiliary_caller_on",
                location=f"{where}.{name}",
            )
    if config.output_schema is not None:
        raise SpendError(
            "an output schema must be off",
            code="lookup_auxiliary_caller_on",
            location=f"{where}.output_schema",
        )
