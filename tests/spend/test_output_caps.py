"""An output cap grounded in serialization: each back end's real client sends a probe
request whose cap is the sentinel, and the exact bytes it sent carry the cap field, or,
for the Codex subscription backend, none (`continuity.spend.output_caps`). Readiness
reads its verdict from this evidence (tests/plan/test_readiness.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec
import pytest

from continuity.errors import SpendError
from continuity.providers.endpoint import EndpointSpec
from continuity.providers.real import make_provider
from continuity.spend import output_caps
from continuity.spend.contract import SOL_CONTRACT
from continuity.spend.output_caps import BACKENDS, SENTINEL, cap_evidence, sent_body
from continuity.spend.settle import UNCAPPED_PROVIDERS
from tests.spend.conftest import Rig
from tests.spend.sse import text_reply
from tests.spend.test_guard import drain

CAP_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


@pytest.mark.parametrize(
    ("backend", "field"),
    [
        ("anthropic", "max_tokens"),
        ("openai-chat", "max_completion_tokens"),  # at api.openai.com
        ("openai-responses", "max_output_tokens"),
    ],
)
def test_a_vendor_back_ends_bytes_carry_the_cap(backend: str, field: str) -> None:
    body = sent_body(backend)
    assert f'"{field}":{SENTINEL}'.encode() in body  # in the exact bytes sent
    assert msgspec.json.decode(body)[field] == SENTINEL
    evidence = cap_evidence(backend)
    assert evidence.fields == (field,) and evidence.subscription is False
    assert evidence.body_sha256 == hashlib.sha256(body).hexdigest()


def test_the_codex_subscription_backends_bytes_carry_no_cap() -> None:
    body = sent_body("openai-codex")
    document = msgspec.json.decode(body)
    assert str(SENTINEL).encode() not in body
    assert not set(CAP_FIELDS) & set(document)
    # it is the guard's client for Sol's contract: its model, effort and URL
    assert document["model"] == SOL_CONTRACT.model
    assert document["reasoning"] == {"effort": SOL_CONTRACT.effort}  # effort survives
    evidence = cap_evidence("openai-codex")
    assert evidence.fields == () and evidence.subscription is True
    assert evidence.url == SOL_CONTRACT.base_url
    assert SOL_CONTRACT.provider in UNCAPPED_PROVIDERS


def test_every_back_end_is_probed() -> None:
    assert set(BACKENDS) == {"anthropic", "openai-chat", "openai-responses", "openai-codex"}


@pytest.mark.anyio
async def test_a_guarded_sol_request_sends_no_cap_over_the_wire(rig: Rig) -> None:
    # the whole guard, over real HTTP to a loopback server: the body it received
    rig.script(text_reply())
    guard = rig.guard(max_output_tokens=SENTINEL)
    await drain(guard)
    ((_, body),) = rig.app.requests
    assert not set(CAP_FIELDS) & set(msgspec.json.decode(body))
    assert str(SENTINEL).encode() not in body


def test_a_client_that_sends_nothing_is_coded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = EndpointSpec(
        kind="anthropic",
        base_url="https://api.anthropic.com",
        model="claude-probe",
        credentials_path=str(tmp_path / "missing.json"),  # refused before any send
        max_output_tokens=SENTINEL,
        max_retries=0,
    )
    broken = output_caps._Backend(
        "https://api.anthropic.com", False, lambda t: make_provider(spec, transport=t)
    )
    monkeypatch.setitem(output_caps._BACKENDS, "anthropic", broken)
    with pytest.raises(SpendError) as caught:
        sent_body("anthropic")
    assert (caught.value.code, caught.value.location) == ("output_cap_probe_failed", "anthropic")
