"""An anchor opens its sample in a real browser, showing what the model saw.

Headless Debian Chromium opens ``report.html#<sample>`` of a real two-suite run: the
page's script opens that sample and its "what the model saw" element, decodes its
trace's block, joins its context and probe turn and highlights the sample's expected
value. The shipped file's DOM, dumped with
``--dump-dom`` after the script ran, shows the sample open and the needle marked; a
copy with one appended script writes where the first marked needle was laid out, so
the test sees it is on screen. Headless Chromium draws a scrolled page blank in a
screenshot, so the picture is of a copy whose appended script moves the opened sample
to the top; it is kept under the test's temporary folder and must be a drawn
1,280 x 2,000 PNG. Without Chromium the
test skips, except under CI (where .ci/run installs it): there a missing browser fails.
"""

from __future__ import annotations

import html
import json
import re
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.report.report_page import Page, context_of, render_mixed
from tests.report.test_report_chromium import VIEWPORT, _chromium, _run

# Waits for the page's script to have opened the anchor's sample, then writes where the
# sample's first highlighted needle was laid out (and what it says) into a <pre>.
MEASURE = (
    "<script>(function m(){const o=document.body.dataset.opened;"
    "if(!o){setTimeout(m,25);return}"
    "const s=document.getElementById(o),k=s.querySelector('details.seen[open] mark.nd');"
    "const r=k&&k.getBoundingClientRect();const p=document.createElement('pre');"
    "p.id='measure';p.textContent=JSON.stringify({open:s.open,mark:k&&k.textContent,"
    "rect:r&&[r.left,r.top,r.width,r.height],view:[innerWidth,innerHeight]});"
    "document.body.appendChild(p)})()</script>"
)
# Headless Chromium draws a scrolled page blank in its --screenshot, so the picture is
# of a copy whose appended script moves the opened sample to the top of the page.
SHOT = (
    "<script>(function m(){const o=document.body.dataset.opened;"
    "if(!o){setTimeout(m,25);return}"
    "const s=document.getElementById(o);document.body.prepend(s);scrollTo(0,0);"
    "const k=s.querySelector('mark.nd');if(k)k.scrollIntoView({block:'nearest'})})()</script>"
)
WAIT = "--virtual-time-budget=10000"  # the script decodes the context asynchronously


@pytest.fixture(scope="module")
def page(mixed_base: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    yield render_mixed(mixed_base, tmp_path_factory.mktemp("drilldown-chromium"))


def test_an_anchor_opens_its_sample_with_the_needle_highlighted_in_what_the_model_saw(
    page: Page, tmp_path: Path
) -> None:
    browser = _chromium()
    sample = next(
        s
        for s in context_of(page).samples
        if s.arm == "native" and s.category == "tool_identifier" and s.fact == "in_context"
    )
    url = page.path.as_uri() + "#" + sample.anchor

    dom = _run(browser, tmp_path / "profile-dom", WAIT, "--dump-dom", url)
    opened = re.search(rf'<details id="{sample.anchor}" open="">(.*?)</dl></details>', dom, re.S)
    assert opened is not None, "the anchor's sample is not open"
    seen = re.search(r'<details class="seen"[^>]* open=""[^>]*>(.*)', opened.group(1), re.S)
    assert seen is not None, "what the model saw is not open"
    needles = re.findall(r'<mark data-v="\d+" class="nd">([^<]*)</mark>', seen.group(1))
    assert needles and {n.lower() for n in needles} == {sample.needles[0].lower()}
    assert "compaction summary" in seen.group(1) or "user" in seen.group(1)
    # Both parts joined from the trace's block: the context, then the probe turn.
    assert seen.group(1).count('<div class="cx">') == 2 and "probe question" in seen.group(1)
    closed = re.findall(r'<details id="s\d+" open="">', dom)
    assert len(closed) == 1  # only the anchor's sample opened

    measured = page.path.with_name("measure.html")
    measured.write_text(page.html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dump = _run(
        browser,
        tmp_path / "profile-measure",
        WAIT,
        "--dump-dom",
        f"{measured.as_uri()}#{sample.anchor}",
    )
    found = re.search(r'<pre id="measure">(.*?)</pre>', dump, re.S)
    assert found is not None, dump[-2000:]
    layout = json.loads(html.unescape(found.group(1)))
    assert layout["open"] is True and layout["mark"].lower() == sample.needles[0].lower()
    left, top, width, height = layout["rect"]
    view_width, view_height = layout["view"]
    assert width > 0 and height > 0  # laid out, not hidden
    assert 0 <= left < view_width and 0 <= top < view_height  # on screen

    pictured = page.path.with_name("shot.html")
    pictured.write_text(page.html.replace("</body>", SHOT + "</body>"), encoding="utf-8")
    shot = tmp_path / "drilldown.png"
    target = f"{pictured.as_uri()}#{sample.anchor}"
    _run(browser, tmp_path / "profile-shot", WAIT, f"--screenshot={shot}", target)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == VIEWPORT  # IHDR: width, height
    assert len(data) > 20_000  # a drawn page, not a blank one
