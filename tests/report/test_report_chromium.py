"""report.html in a real browser: headless Debian Chromium at 1,280 px.

The layout is measured on a copy of the shipped report with one appended script that
writes what it measured into a ``<pre>``, read back with ``--dump-dom``: the page's
height with its detail tables closed (as shipped) and open, the key-findings box's
rows, then, every detail table opened, each table's box and every header word the
browser broke across lines. The screenshots are of the shipped file and are kept
beside it under ``out/runs/<run>/``. Without Chromium the tests skip, except under CI
(where .ci/run installs it): there a missing browser fails.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.report.report_page import Page, render_mixed
from tests.report.test_report_html import SECTIONS

VIEWPORT = (1280, 2000)
MEASURE = (
    "<script>(()=>{const d=document.documentElement;"
    "const top=e=>e?Math.round(e.getBoundingClientRect().top+scrollY):null;"
    "const height=()=>({page:d.scrollHeight,index:top(document.getElementById('index'))});"
    "const closed=height();const kf=document.getElementById('findings');"
    "const box=kf.getBoundingClientRect();"
    "const findings={first:document.querySelector('section').id,"
    "bottom:Math.ceil(box.bottom+scrollY),right:Math.ceil(box.right),"
    "suites:[...kf.querySelectorAll('.kf-suite')].map(s=>({suite:s.dataset.suite,"
    "rows:[...s.querySelectorAll('tbody tr')].map(r=>({arm:r.dataset.arm,"
    "facts:+r.dataset.facts,in_context:+r.dataset.inContext,"
    "retrievable:+r.dataset.retrievable,lost:+r.dataset.lost,"
    "cells:[...r.cells].map(c=>c.innerText)}))}))};"
    "document.querySelectorAll('details.tbl').forEach(e=>{e.open=true});"
    "const opened=height();const broken=[];"
    "document.querySelectorAll('th').forEach(th=>{const w=document.createTreeWalker(th,4);"
    "for(let n=w.nextNode();n;n=w.nextNode()){const re=/\\S+/g;let m;"
    "while((m=re.exec(n.data))){const g=document.createRange();"
    "g.setStart(n,m.index);g.setEnd(n,m.index+m[0].length);"
    "const lines=new Set([...g.getClientRects()].map(x=>Math.round(x.top)));"
    "if(lines.size>1)broken.push(m[0])}}});"
    "const t=[...document.querySelectorAll('table')].map(e=>{const r=e.getBoundingClientRect();"
    "return {right:Math.ceil(r.right),scroll:e.scrollWidth,"
    "section:(e.closest('section')||{}).id||''}});"
    "const p=document.createElement('pre');p.id='measure';"
    "p.textContent=JSON.stringify({viewport:d.clientWidth,page:d.scrollWidth,tables:t,"
    "closed:closed,opened:opened,findings:findings,broken:broken,"
    "ids:[...document.querySelectorAll('[id]')].map(e=>e.id)});"
    "document.body.appendChild(p)})()</script>"
)


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if "CI" in os.environ:
            pytest.fail("chromium is missing under CI: .ci/run installs it with apt-get")
        pytest.skip("chromium is not installed (apt-get install chromium); CI installs it")
    return found


def _run(browser: str, profile: Path, *args: str, size: tuple[int, int] = VIEWPORT) -> str:
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={profile}",
            f"--window-size={size[0]},{size[1]}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _png(data: bytes) -> tuple[tuple[int, int], int]:
    """A PNG's (width, height) and how many distinct byte values its pixel rows hold
    (a blank page holds a handful; a drawn one, most of the 256)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    size = struct.unpack(">II", data[16:24])  # IHDR: width, height
    pixels, at = b"", 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        if data[at + 4 : at + 8] == b"IDAT":
            pixels += data[at + 8 : at + 8 + length]
        at += 12 + length
    return (size[0], size[1]), len(set(zlib.decompress(pixels)))


@pytest.fixture(scope="module")
def page(mixed_base: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    yield render_mixed(mixed_base, tmp_path_factory.mktemp("report-chromium"))


@pytest.fixture(scope="module")
def layout(page: Page, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What the browser laid out (see `MEASURE`), from one ``--dump-dom``."""
    browser = _chromium()
    root = tmp_path_factory.mktemp("report-layout")
    measured = root / "measure.html"
    measured.write_text(page.html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom = _run(browser, root / "profile-dom", "--dump-dom", measured.as_uri())
    found = re.search(r'<pre id="measure">(.*?)</pre>', dom, re.S)
    assert found is not None, dom[-2000:]
    measured_layout: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return measured_layout


def test_the_report_renders_in_chromium_every_section_present_no_table_too_wide(
    page: Page, layout: dict[str, Any], tmp_path: Path
) -> None:
    browser = _chromium()
    assert page.html.count("<script") == 1  # the shipped file: the drill-down's script only
    shot = page.path.parent / "report.png"
    _run(browser, tmp_path / "profile-shot", f"--screenshot={shot}", page.path.as_uri())
    data = shot.read_bytes()
    assert _png(data)[0] == VIEWPORT
    assert len(data) > 20_000  # a drawn page, not a blank one
    assert 1_200 <= layout["viewport"] <= VIEWPORT[0]
    assert layout["page"] <= layout["viewport"]  # no horizontal scrolling
    assert len(layout["tables"]) >= 20
    too_wide = [t for t in layout["tables"] if max(t["right"], t["scroll"]) > layout["viewport"]]
    assert too_wide == []
    assert layout["broken"] == []  # no header word split across lines (retrievabl|e)
    ids = set(layout["ids"])
    assert set(SECTIONS) <= ids
    assert {t["section"] for t in layout["tables"]} >= {"suite-0", "suite-1", "run-wide"}
    # every probe sample of the run's unit files is an element the browser laid out
    probes = sum(
        len(json.loads(unit.read_bytes())["probes"])
        for unit in (page.path.parent / "units").rglob("*.json")
    )
    assert len([i for i in ids if re.fullmatch(r"s\d+", i)]) == probes > 0


def test_the_detail_tables_are_closed_so_the_page_is_shorter(layout: dict[str, Any]) -> None:
    closed, opened = layout["closed"], layout["opened"]
    assert 0 < closed["index"] < closed["page"] and opened["index"] > 0
    # opening every per-suite and run-wide table adds most of the page above the index
    assert opened["index"] - closed["index"] > closed["index"]


def test_the_key_findings_box_leads_with_a_row_per_arm_as_results_json_says(
    page: Page, layout: dict[str, Any]
) -> None:
    found = layout["findings"]
    assert found["first"] == "findings"  # the first section of the page
    assert found["right"] <= layout["viewport"]
    results = json.loads((page.path.parent / "results.json").read_text())
    expected = {
        (suite, arm): (
            c["in_context"] + c["retrievable"] + c["absent"],
            c["in_context"],
            c["retrievable"],
            c["absent"],
        )
        for suite, by_arm in results["availability"].items()
        for arm, c in by_arm.items()
    }
    shown: dict[tuple[str, str], tuple[int, int, int, int]] = {}
    for suite in found["suites"]:
        for row in suite["rows"]:
            counts = (row["facts"], row["in_context"], row["retrievable"], row["lost"])
            shown[suite["suite"], row["arm"]] = counts
            # the cells the reader sees: arm, accuracy, coverage, facts, then each place
            # as "share (count)"
            cells = row["cells"]
            assert cells[0] == row["arm"] and cells[3] == f"{row['facts']:,}"
            assert [int(re.findall(r"\((\d+)\)", c)[0]) for c in cells[4:7]] == list(counts[1:])
            overall = results["accuracy"][suite["suite"]][row["arm"]]["overall"]
            assert cells[1] == f"{100 * overall['mean']:.1f}%"
    assert shown == expected
    assert [s["suite"] for s in found["suites"]] == results["suites"]


def test_a_screenshot_of_the_key_findings_box_is_drawn(
    page: Page, layout: dict[str, Any], tmp_path: Path
) -> None:
    browser = _chromium()
    shot = page.path.parent / "report-findings.png"
    size = (VIEWPORT[0], layout["findings"]["bottom"] + 8)  # the title and the box
    _run(
        browser,
        tmp_path / "profile-findings",
        f"--screenshot={shot}",
        page.path.as_uri(),
        size=size,
    )
    dimensions, values = _png(shot.read_bytes())
    assert dimensions == size
    assert values > 128  # text, table rules and the coloured bars, not a blank page
