"""The drill-down shows what the model saw: each sample's stored reader context, with
its expected value and any superseded value highlighted, the tool calls it made at the
probe, a link to its unit file, each trace's contexts as one block holding every
distinct message once, and the page's one script, which opens the sample an anchor
names."""

from __future__ import annotations

import html
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from msgspec import UNSET

from continuity.report.drilldown import NOT_KEPT, report_context
from continuity.report.html_context import SCRIPT, decode_block, mark_values
from continuity.report.html_samples import drilldown_html
from continuity.report.results import Sample
from continuity.runner.units.record import UnitRecord, seal
from continuity.sampling.context import ContextCall, ContextMessage
from continuity.store import Store
from tests.report.report_page import Page, context_of, render_mixed


@pytest.fixture(scope="module")
def page(mixed_base: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    yield render_mixed(mixed_base, tmp_path_factory.mktemp("report-context"))


def _details(html: str, anchor: str) -> str:
    """A sample's ``details`` (it holds one nested ``details``: what the model saw)."""
    start = html.index(f'<details id="{anchor}">')
    inner = html.index("</details>", start)
    return html[start : html.index("</details>", inner + 1) + len("</details>")]


def _streams(html: str) -> dict[str, tuple[list[str], list[list[int]]]]:
    """Every trace's block, decoded: its messages and its parts (message numbers)."""
    found = re.findall(r'<div hidden id="(z\d+)">([A-Za-z0-9+/=]+)</div>', html)
    return {block: decode_block(text) for block, text in found}


def _seen(html: str, anchor: str) -> tuple[list[str], list[str], list[str]]:
    """The sample's needle and superseded value numbers and its two parts' markup, joined
    as the page's script joins them."""
    found = re.search(r'<details class="seen" ([^>]*)>', _details(html, anchor))
    assert found is not None, anchor
    attributes = dict(re.findall(r'data-(\w)="([^"]*)"', found.group(1)))
    messages, parts = _streams(html)[attributes["z"]]
    joined = ["".join(messages[m] for m in parts[int(p)]) for p in attributes["p"].split()]
    return attributes.get("n", "").split(), attributes.get("s", "").split(), joined


def _own(markup: str, numbers: list[str]) -> str:
    """`markup` as a sample with value `numbers` sees it: other values' marks unwrapped."""
    return re.sub(
        r'<mark data-v="(\d+)">([^<]*)</mark>',
        lambda m: m.group(0) if m.group(1) in numbers else m.group(2),
        markup,
    )


def test_mark_values_escapes_marks_whole_words_and_prefers_the_longer_value() -> None:
    values = {"noon": 1, "ord-12": 2, "ord-1": 3}
    text = "<b>At noon</b>, not afternoon: ORD-12 then ord-1."
    assert mark_values(text, values) == (
        '&lt;b&gt;At <mark data-v="1">noon</mark>&lt;/b&gt;, not afternoon: '
        '<mark data-v="2">ORD-12</mark> then <mark data-v="3">ord-1</mark>.'
    )
    assert mark_values("<i>", {}) == "&lt;i&gt;"


def test_every_sample_that_ran_carries_what_its_reader_saw(page: Page) -> None:
    context = context_of(page)
    ran = [s for s in context.samples if s.reader_model is not None]
    assert ran and all(s.seen is not None and s.seen_note == "" for s in ran)
    store_arm = [s for s in ran if s.arm == "continuity-store"]
    assert store_arm and all(s.seen and s.seen.tool_calls() for s in store_arm)
    native = [s for s in ran if s.arm == "native" and s.suite == "original"]
    # The probes of a unit share their context part: one digest per unit.
    assert len({(s.repeat, s.seen.digest if s.seen else "") for s in native}) == 2


def _in_context(page: Page, category: str) -> Sample:
    return next(
        s
        for s in context_of(page).samples
        if s.arm == "native" and s.category == category and s.fact == "in_context"
    )


def test_the_needle_is_marked_in_the_context_the_sample_opens(page: Page) -> None:
    sample = _in_context(page, "tool_identifier")
    needles, _, (context, turn) = _seen(page.html, sample.anchor)
    (number,) = needles
    needle = sample.needles[0]
    marked = re.findall(rf'<mark data-v="{number}">([^<]*)</mark>', context)
    assert marked and {m.lower() for m in marked} == {needle.lower()}
    assert "probe question" in turn and "what" in turn.lower()


def test_each_sample_sees_exactly_the_marks_of_its_own_values(page: Page) -> None:
    """Messages are shared across samples and mark every value any of them looks for;
    with the others' marks unwrapped (the script leaves them unclassed), each message
    is marked as its sample's own values alone would mark it."""
    context = context_of(page)
    numbers: dict[str, int] = {}
    checked = 0
    for s in context.samples:
        if s.seen is None:
            continue
        needles, superseded, (markup, _) = _seen(page.html, s.anchor)
        values = [v for v in (*s.needles, *s.superseded) if v.strip()]
        for value, number in zip(values, (*needles, *superseded), strict=True):
            assert numbers.setdefault(value.lower(), int(number)) == int(number)
        own = {v.lower(): numbers[v.lower()] for v in values}
        seen = _own(markup, needles + superseded)
        for message in s.seen.context.messages:
            assert mark_values(message.text, own) in seen
            checked += "<mark" in mark_values(message.text, own)
    assert checked > 0


def test_a_superseded_value_present_is_marked_as_such(page: Page) -> None:
    sample = next(s for s in context_of(page).samples if s.superseded_present and s.arm == "native")
    _, superseded, (context, _) = _seen(page.html, sample.anchor)
    assert superseded and any(f'<mark data-v="{n}">' in context for n in superseded)


def test_tool_calls_and_the_unit_file_link_are_in_the_sample(page: Page) -> None:
    sample = next(s for s in context_of(page).samples if s.arm == "continuity-store" and s.seen)
    details = _details(page.html, sample.anchor)
    assert '<dt>tool calls at the probe</dt><dd><code>ConversationHistory {"' in details
    href = re.search(r'<dt>unit file</dt><dd><a href="([^"]+)">', details)
    assert href is not None and href.group(1) == sample.path
    assert (page.path.parent / href.group(1)).is_file()  # relative to report.html


def test_a_judge_row_only_where_the_judge_gave_a_verdict(page: Page) -> None:
    samples = context_of(page).samples
    judged = next(s for s in samples if s.judge)
    assert f"<dt>judge</dt><dd>{html.escape(judged.judge or '')}<dt>" in page.html
    unjudged = next(s for s in samples if s.judge is None)
    assert "<dt>judge</dt>" not in _details(page.html, unjudged.anchor)


def test_the_page_holds_one_script_and_each_traces_messages_once(page: Page) -> None:
    assert page.html.count("<script") == 1 and SCRIPT in page.html
    for word in ("hashchange", "DecompressionStream", "scrollIntoView", "details.seen"):
        assert word in SCRIPT
    context = context_of(page)
    streams = _streams(page.html)
    traces = {(s.suite, s.trace_id) for s in context.samples if s.seen is not None}
    assert len(streams) == len(traces)  # one block per trace
    distinct = {s.seen.digest for s in context.samples if s.seen is not None}
    contexts = 0
    for messages, parts in streams.values():
        assert messages == sorted(set(messages))  # each once, alike ones side by side
        assert all(0 <= m < len(messages) for part in parts for m in part)
        contexts += sum(1 for part in parts if "system prompt" in messages[part[0]])
        # The parts share messages: the system prompt, and more across arms and probes.
        assert sum(len(part) for part in parts) > len(messages)
    assert contexts == len(distinct) < len(context.samples)


def test_the_arms_of_a_trace_share_their_replayed_messages(page: Page) -> None:
    context = context_of(page)
    native, cold = (
        next(s for s in context.samples if s.suite == "original" and s.arm == arm and s.seen)
        for arm in ("native", "cold-rebuild")
    )
    assert native.seen is not None and cold.seen is not None
    native_messages = set(_seen(page.html, native.anchor)[2][0].split("</div>"))
    cold_messages = set(_seen(page.html, cold.anchor)[2][0].split("</div>"))
    assert native.seen.digest != cold.seen.digest
    assert len(native_messages & cold_messages) > 2  # more than the system prompt and tools


def test_strings_in_what_the_model_saw_are_escaped(page: Page) -> None:
    sample = next(s for s in context_of(page).samples if s.seen is not None)
    assert sample.seen is not None
    hostile = "<script>alert(1)</script><img src=x onerror=1>"
    message = ContextMessage(
        role="assistant",
        text=hostile,
        tool_calls=[ContextCall("c1", "<u>call</u>", {"q": hostile})],
    )
    part = msgspec.structs.replace(
        sample.seen.context,
        model="<i>model</i>",
        system=hostile,
        tools=[hostile],
        messages=[*sample.seen.context.messages, message],
    )
    seen = msgspec.structs.replace(sample.seen, context=part, digest="")
    forged = msgspec.structs.replace(sample, seen=seen, needles=["alert"])
    text = drilldown_html([forged], [forged.suite], [forged.arm])
    assert text.count("<script") == 1 and "<img" not in text and "<u>" not in text
    ((messages, _),) = _streams(text).values()
    markup = "".join(messages)
    for raw in ("<script", "<img", "<u>", "<i>model"):
        assert raw not in markup
    assert "&lt;script&gt;" in markup and '<mark data-v="1">alert</mark>' in markup


def test_a_context_the_store_lost_or_never_kept_is_named_not_fatal(
    page: Page, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(page.path.parent / "units", run / "units")
    store_root = tmp_path / "store"
    shutil.copytree(page.store.root, store_root)
    before = report_context(page.store, page.path.parent)
    lost = next(s for s in before.samples if s.seen is not None)
    assert lost.seen is not None
    for part in (store_root / "objects" / lost.seen.digest[:2]).glob(lost.seen.digest):
        part.chmod(0o644)
        part.unlink()
    after = report_context(Store(store_root), run)
    missing = [s for s in after.samples if s.seen is None and s.reader_model is not None]
    assert missing and all("no longer holds it (object_missing)" in s.seen_note for s in missing)
    bare = msgspec.structs.replace(lost, seen=None, seen_note=NOT_KEPT)
    assert "not kept" in drilldown_html([bare], [bare.suite], [bare.arm])


def test_a_unit_that_kept_no_context_names_none_and_says_so(page: Page, tmp_path: Path) -> None:
    """A unit written before contexts were kept (its evidence has no ``context``): each
    sample has no context digest and the note says it was not kept; as written, each
    names the tree its unit file gives."""
    run = tmp_path / "run"
    shutil.copytree(page.path.parent / "units", run / "units")
    refs: dict[tuple[str, str], str] = {}
    for path in sorted((run / "units").rglob("*.json")):
        record = msgspec.json.decode(path.read_bytes(), type=UnitRecord)
        probes = []
        for probe in record.probes:
            evidence = probe.evidence
            if evidence is not None and evidence.context is not UNSET:
                refs[(path.relative_to(run).as_posix(), probe.probe_id)] = evidence.context.digest
                evidence = msgspec.structs.replace(evidence, context=UNSET)
            probes.append(msgspec.structs.replace(probe, evidence=evidence))
        path.write_bytes(msgspec.json.encode(seal(msgspec.structs.replace(record, probes=probes))))
    kept = report_context(page.store, page.path.parent).samples
    named = {(s.path, s.probe_id): s.context_digest for s in kept if s.context_digest}
    assert refs and named == refs
    bare = [s for s in report_context(page.store, run).samples if s.reader_model is not None]
    assert len(bare) == len(refs)
    assert all(s.context_digest is None and s.seen_note == NOT_KEPT for s in bare)
