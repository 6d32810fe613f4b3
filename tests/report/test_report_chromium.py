"""report.html in a real browser: headless Debian Chromium at 1,280 px.

The shipped report has no scripts, so the widths are measured on a copy of it with one
appended script that writes every table's box into a ``<pre>``, read back with
``--dump-dom``. The screenshot is of the shipped file and is kept beside it under
``out/runs/<run>/report.png``. Without Chromium the test skips, except under CI (where
.ci/run installs it): there a missing browser fails.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.report.report_page import Page, render_mixed
from tests.report.test_report_html import SECTIONS

VIEWPORT = (1280, 2000)
MEASURE = (
    "<script>(()=>{const d=document.documentElement;"
    "const t=[...document.querySelectorAll('table')].map(e=>{const r=e.getBoundingClientRect();"
    "return {right:Math.ceil(r.right),scroll:e.scrollWidth,"
    "section:(e.closest('section')||{}).id||''}});"
    "const p=document.createElement('pre');p.id='measure';"
    "p.textContent=JSON.stringify({viewport:d.clientWidth,page:d.scrollWidth,tables:t,"
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


def _run(browser: str, profile: Path, *args: str) -> str:
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={profile}",
            f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def page(mixed_base: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    yield render_mixed(mixed_base, tmp_path_factory.mktemp("report-chromium"))


def test_the_report_renders_in_chromium_every_section_present_no_table_too_wide(
    page: Page, tmp_path: Path
) -> None:
    browser = _chromium()
    assert "<script" not in page.html  # the shipped file itself stays script-free
    shot = page.path.parent / "report.png"
    _run(browser, tmp_path / "profile-shot", f"--screenshot={shot}", page.path.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == VIEWPORT  # IHDR: width, height
    assert len(data) > 20_000  # a drawn page, not a blank one
    measured = tmp_path / "measure.html"
    measured.write_text(page.html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom = _run(browser, tmp_path / "profile-dom", "--dump-dom", measured.as_uri())
    found = re.search(r'<pre id="measure">(.*?)</pre>', dom, re.S)
    assert found is not None, dom[-2000:]
    layout = json.loads(html.unescape(found.group(1)))
    assert 1_200 <= layout["viewport"] <= VIEWPORT[0]
    assert layout["page"] <= layout["viewport"]  # no horizontal scrolling
    assert len(layout["tables"]) >= 20
    too_wide = [t for t in layout["tables"] if max(t["right"], t["scroll"]) > layout["viewport"]]
    assert too_wide == []
    ids = set(layout["ids"])
    assert set(SECTIONS) <= ids
    assert {t["section"] for t in layout["tables"]} >= {"suite-0", "suite-1", "run-wide"}
    # every probe sample of the run's unit files is an element the browser laid out
    probes = sum(
        len(json.loads(unit.read_bytes())["probes"])
        for unit in (page.path.parent / "units").rglob("*.json")
    )
    assert len([i for i in ids if re.fullmatch(r"s\d+", i)]) == probes > 0
