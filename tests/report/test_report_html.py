"""report.html: one static file with a run header, contents, per-suite sections, charts
with scales and intervals, coloured deltas, and a drill-down of every sample."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from continuity.report.charts import delta_class, wilson
from continuity.report.html_context import SCRIPT
from continuity.report.html_samples import drilldown_html
from continuity.report.html_tables import MAX_COLUMNS, grouped, table_html
from continuity.report.render import render_html
from continuity.report.results import ReportContext
from continuity.report.sections import spend_table
from continuity.runner.units.build import UnitRecord
from tests.report.report_page import Page, context_of, render_mixed

SECTIONS = ("run", "contents", "overview", "suite-0", "suite-1", "run-wide", "index", "samples")


@pytest.fixture(scope="module")
def page(mixed_base: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    yield render_mixed(mixed_base, tmp_path_factory.mktemp("report-page"))


def test_the_report_is_one_static_file_with_one_inline_script_and_no_url(page: Page) -> None:
    text = page.html
    # The one script is the drill-down's own (it opens anchors and fills contexts).
    assert text.lower().count("<script") == 1 and SCRIPT in text and "src=" not in text
    assert "http:" not in text and "https:" not in text and "url(" not in text
    assert "@import" not in text and "<link" not in text and "<iframe" not in text
    # every link stays in the page, or opens a unit file of the run beside it
    links = re.findall(r'href="([^"]*)"', text)
    assert {link[0] for link in links} == {"#", "u"}
    assert all((page.path.parent / link).is_file() for link in links if link[0] != "#")


def test_every_section_is_in_the_contents_and_the_header_names_the_run(page: Page) -> None:
    for anchor in SECTIONS:
        assert f'id="{anchor}"' in page.html
        if anchor not in ("run", "contents"):
            assert f'href="#{anchor}"' in page.html
    assert "<h2>Suite: original</h2>" in page.html and "<h2>Suite: hard</h2>" in page.html
    manifest = context_of(page).manifest
    assert manifest is not None
    latest = manifest.latest
    for value in (latest.plan_digest[:16], latest.reader, manifest.started, "scripted"):
        assert value in page.html
    assert "Offline run." in page.html


def test_every_sample_has_a_collapsed_drilldown_that_the_index_links_to(page: Page) -> None:
    units = [
        msgspec.json.decode(p.read_bytes(), type=UnitRecord)
        for p in sorted((page.path.parent / "units").glob("*.json"))
    ]
    probes = sum(len(u.probes) for u in units)
    anchors = re.findall(r'<details id="(s\d+)">', page.html)
    assert len(anchors) == len(set(anchors)) == probes
    assert "<details open" not in page.html  # collapsed
    index = page.html[page.html.index('id="index"') : page.html.index('id="samples"')]
    linked = re.findall(r'href="#(s\d+)"', index)
    assert sorted(set(linked)) == sorted(anchors)
    assert len(linked) == 2 * probes  # once by outcome, once by category
    for outcome in {p.outcome for u in units for p in u.probes if p.status == "valid"}:
        assert f'id="ix-o-{outcome}"' in index
    for category in {p.category for u in units for p in u.probes}:
        assert f'id="ix-c-{category}"' in index
    context = context_of(page)
    # The judge (opted in) reads next actions and what the scorer leaves unresolved.
    sample = next(s for s in context.samples if s.status == "valid" and s.category == "next_action")
    details = re.search(rf'<details id="{sample.anchor}">.*?</details>', page.html)
    assert details is not None
    for field in ("question", "expected", "answer", "score reason", "availability", "boundary"):
        assert f"<dt>{field}</dt>" in details.group(0)
    assert sample.path.startswith("units/") and sample.path in details.group(0)
    assert sample.judge is not None and sample.judge in details.group(0)  # judge opted in
    assert sample.question not in ("", None) and "unknown" not in sample.question


def test_strings_from_traces_and_answers_are_escaped(page: Page) -> None:
    context = context_of(page)
    hostile = msgspec.structs.replace(
        context.samples[0],
        answer="<script>alert(1)</script>",
        question='What is "x" & <b>y</b>?',
        trace_id="<img onerror=1>",
    )
    forged = ReportContext(
        manifest=context.manifest,
        reader_models=["<i>model</i>"],
        history_models=[],
        samples=[hostile, *context.samples[1:]],
    )
    text = render_html(page.results, forged)
    assert text.count("<script") == 1 and "<img" not in text and "<b>y" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "What is &quot;x&quot; &amp; &lt;b&gt;y&lt;/b&gt;?" in text
    assert drilldown_html([hostile], ["original"], ["native"]).count("<script") == 1


def test_offline_leads_with_availability_and_marks_accuracy_as_mechanics(page: Page) -> None:
    text = page.html
    assert text.index("Where the answer-bearing fact was") < text.index("Accuracy (mechanics")
    section = text[text.index('id="suite-0"') : text.index('id="suite-1"')]
    assert section.index("Availability and loss attribution") < section.index(
        "Accuracy per arm (mechanics)"
    )


def test_wide_tables_are_split_and_integers_grouped(page: Page) -> None:
    assert grouped("7153149") == "7,153,149" and grouped("-12345") == "-12,345"
    assert grouped("r1 22.5% (40)") == "r1 22.5% (40)" and grouped("812") == "812"
    title, header, rows, note = spend_table(page.results)
    assert len(header) > MAX_COLUMNS  # the spend table is split
    rendered = table_html(page.results, (title, header, rows, note))
    parts = re.findall(r"<thead><tr>(.*?)</tr></thead>", rendered)
    assert len(parts) >= 2 and all(p.count("<th>") <= MAX_COLUMNS for p in parts)
    assert all(p.startswith("<th>arm</th>") for p in parts)  # each part keeps its key
    assert "part 1 of" in rendered
    big = (title, header, [[rows[0][0], *["7153149"] * (len(header) - 1)]], note)
    assert "7,153,149" in table_html(page.results, big)


def test_deltas_are_coloured_by_direction_and_by_their_interval(page: Page) -> None:
    header = ["suite", "arm", "pairs", "delta (pp)", "95% bootstrap CI (pp)"]
    rows = [
        ["original", "cold-rebuild", "10", "-12.5", "[-20.0, -5.0]"],
        ["original", "continuity-store", "10", "3.0", "[-1.0, 6.0]"],
        ["original", "ceiling", "10", "0.0", "[0.0, 0.0]"],
    ]
    text = table_html(page.results, ("t", header, rows, ""))
    assert '<td class="down">-12.5</td>' in text
    assert '<td class="up-pale">3.0</td>' in text
    assert '<td class="flat">0.0</td>' in text
    assert delta_class(4.0, 1.0, 7.0) == "up" and delta_class(-4.0, None, None) == "down-pale"
    assert delta_class(None, None, None) == "flat"


def test_wilson_intervals_are_the_textbook_values() -> None:
    assert wilson(0, 0) is None
    low, high = wilson(5, 10) or (0.0, 0.0)
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)
    low, high = wilson(0, 20) or (1.0, 1.0)
    assert low == 0.0 and round(high, 4) == 0.1611
    low, high = wilson(20, 20) or (0.0, 0.0)
    assert round(low, 4) == 0.8389 and high == 1.0


def test_the_charts_have_axes_scales_and_intervals(page: Page) -> None:
    overview = page.html[page.html.index('id="overview"') : page.html.index('id="suite-0"')]
    assert overview.count("<svg") >= 3
    for tick in ("0%", "20%", "100%", "accuracy (resolved samples)", "share"):
        assert f">{tick}</text>" in overview
    assert "95% Wilson interval" in overview
    if page.results.paired:
        assert "95% paired bootstrap interval" in overview
        assert "arm minus native, percentage points" in overview


def test_a_trace_gone_from_the_store_leaves_its_questions_unknown(
    page: Page, tmp_path: Path
) -> None:
    from continuity.report.drilldown import UNKNOWN, report_context
    from continuity.store import Store

    context = report_context(Store(tmp_path / "empty-store"), page.path.parent)
    assert context.samples and {s.question for s in context.samples} == {UNKNOWN}
    assert {s.expected for s in context.samples} == {UNKNOWN}
    assert all(s.answer for s in context.samples)  # the unit files still tell the rest


def test_a_real_run_leads_with_accuracy_under_a_real_banner(page: Page) -> None:
    spend = dict(page.results.spend)
    spend["native"] = msgspec.structs.replace(spend["native"], model_calls=3)
    real = msgspec.structs.replace(page.results, spend=spend)
    text = render_html(real, context_of(page))
    assert '<p class="note real"><b>Real run.</b> Answers came from' in text
    assert "Offline run." not in text and "mechanics" not in text
    assert text.index(">Accuracy</text>") < text.index("Where the answer-bearing fact was")
