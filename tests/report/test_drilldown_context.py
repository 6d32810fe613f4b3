"""The drill-down shows what the model saw: each sample's stored reader context, with
its expected value and any superseded value highlighted, the tool calls it made at the
probe, a link to its unit file, every distinct context part once in the page, and the
page's one script, which opens the sample an anchor names."""

from __future__ import annotations

import base64
import gzip
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from continuity.report.drilldown import NOT_KEPT, report_context
from continuity.report.html_context import SCRIPT, mark_values
from continuity.report.html_samples import drilldown_html
from continuity.report.results import Sample
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


def _block(html: str, block: str) -> str:
    found = re.search(rf'<div hidden id="{block}">([A-Za-z0-9+/=]+)</div>', html)
    assert found is not None, block
    return gzip.decompress(base64.b64decode(found.group(1))).decode("utf-8")


def _seen(html: str, anchor: str) -> tuple[list[str], list[str], list[str]]:
    """The sample's needle and superseded value numbers and its two part blocks."""
    found = re.search(
        r'<details class="seen" data-n="([\d ]*)" data-s="([\d ]*)">.*?'
        r'data-z="(z\d+)"></div><div class="cx" data-z="(z\d+)">',
        _details(html, anchor),
    )
    assert found is not None, anchor
    return found.group(1).split(), found.group(2).split(), [found.group(3), found.group(4)]


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
    needles, _, (context_block, turn_block) = _seen(page.html, sample.anchor)
    (number,) = needles
    needle = sample.needles[0]
    marked = re.findall(
        rf'<mark data-v="{number}">([^<]*)</mark>', _block(page.html, context_block)
    )
    assert marked and {m.lower() for m in marked} == {needle.lower()}
    turn = _block(page.html, turn_block)
    assert "probe question" in turn and "what" in turn.lower()
    assert page.html.count(f'<div hidden id="{context_block}">') == 1


def test_a_superseded_value_present_is_marked_as_such(page: Page) -> None:
    sample = next(s for s in context_of(page).samples if s.superseded_present and s.arm == "native")
    _, superseded, (context_block, _) = _seen(page.html, sample.anchor)
    block = _block(page.html, context_block)
    assert superseded and any(f'<mark data-v="{n}">' in block for n in superseded)


def test_tool_calls_and_the_unit_file_link_are_in_the_sample(page: Page) -> None:
    sample = next(s for s in context_of(page).samples if s.arm == "continuity-store" and s.seen)
    details = _details(page.html, sample.anchor)
    assert "<dt>tool calls at the probe</dt><dd><code>ConversationHistory {" in details
    href = re.search(r'<dt>unit file</dt><dd><a href="([^"]+)">', details)
    assert href is not None and href.group(1) == sample.path
    assert (page.path.parent / href.group(1)).is_file()  # relative to report.html


def test_the_page_holds_one_script_and_each_distinct_context_once(page: Page) -> None:
    assert page.html.count("<script") == 1 and SCRIPT in page.html
    for word in ("hashchange", "DecompressionStream", "scrollIntoView", "details.seen"):
        assert word in SCRIPT
    context = context_of(page)
    distinct = {s.seen.digest for s in context.samples if s.seen is not None}
    blocks = re.findall(r'<div hidden id="(z\d+)">', page.html)
    contexts = [b for b in blocks if "system prompt" in _block(page.html, b)]
    assert len(contexts) == len(distinct) < len(context.samples)


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
