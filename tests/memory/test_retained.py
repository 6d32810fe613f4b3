"""The retained evidence store: retention rules, search, paging."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from continuity.digest import digest_bytes
from continuity.errors import HistoryError
from continuity.memory.retained import GET_PAGE_BYTES, RetainedStore

BIG = "".join(
    f"Line {i:05d}: pallet {i % 7} goes to bay {i % 3}; booking pack note é.\n" for i in range(700)
)


@pytest.fixture
def retained(tmp_path: Path) -> Iterator[RetainedStore]:
    store = RetainedStore(tmp_path / "retained.sqlite3")
    store.retain_owner(
        "Never mention Project Larkspur to the vendors.", source="owner", entry_ref="e1"
    )
    store.retain_owner("Hold the escalation, just draft it.", source="steer", entry_ref="e2")
    store.retain_tool_result(
        "Portal ready.\nTemporary password: Qx7#mP2qLw9!",
        tool="email_search",
        tool_kind="email",
        entry_ref="e3",
    )
    store.retain_tool_result(BIG, tool="document_open", tool_kind="document", entry_ref="e4")
    for index in range(12):
        store.retain_tool_result(
            f"Tracking update {index}: the crates reached Ashford depot.",
            tool="parcel_track",
            tool_kind="parcel",
            entry_ref=f"t{index}",
        )
    yield store
    store.close()


def test_a_credential_result_is_omitted_whole(retained: RetainedStore) -> None:
    stats = retained.stats()
    assert (stats.owner_records, stats.tool_records, stats.omitted_tool_results) == (2, 13, 1)
    everything = "\n".join(text for *_, text in retained.records())
    assert "Qx7#mP2q" not in everything and "Portal ready" not in everything


def test_search_ranks_and_pages_with_a_cursor(retained: RetainedStore) -> None:
    first = retained.search("crates Ashford", limit=5)
    assert len(first.hits) == 5 and first.next_cursor == "s5"
    second = retained.search("crates Ashford", limit=5, cursor=first.next_cursor)
    third = retained.search("crates Ashford", limit=5, cursor=second.next_cursor)
    ids = [h.id for h in first.hits + second.hits + third.hits]
    assert len(ids) == len(set(ids)) == 12 and third.next_cursor is None
    owner = retained.search("Larkspur")
    assert owner.hits[0].kind == "owner" and "[Larkspur]" in owner.hits[0].snippet
    assert owner.hits[0].packed_id == "c1"


def test_get_pages_reassemble_a_long_record(retained: RetainedStore) -> None:
    hit = retained.search("booking pack", limit=1).hits[0]
    assert hit.bytes == len(BIG.encode()) > 16 * 1024
    pages, cursor = [], None
    while True:
        page = retained.get(hit.packed_id, cursor=cursor)
        assert len(page.text.encode()) <= GET_PAGE_BYTES
        pages.append(page.text)
        cursor = page.next_cursor
        if cursor is None:
            break
    windows = -(-hit.bytes // GET_PAGE_BYTES)
    assert len(pages) in (windows, windows + 1)  # a page never splits a character
    whole = "".join(pages)
    assert whole == BIG and digest_bytes(whole.encode()) == digest_bytes(BIG.encode())
    assert retained.get(hit.id).text == pages[0]


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda s: s.search("   "), "history_invalid_request"),
        (lambda s: s.search("crates", limit=0), "history_invalid_request"),
        (lambda s: s.search("crates", limit=11), "history_invalid_request"),
        (lambda s: s.search("crates", cursor="g5"), "history_cursor_invalid"),
        (lambda s: s.get("tool-99999"), "history_record_unknown"),
        (lambda s: s.get("c2", cursor="s1"), "history_cursor_invalid"),
        (lambda s: s.get("c4", cursor="g999999999"), "history_cursor_invalid"),
    ],
)
def test_bad_requests_have_codes(retained: RetainedStore, call: object, code: str) -> None:
    assert callable(call)
    with pytest.raises(HistoryError) as err:
        call(retained)
    assert err.value.code == code


def test_a_cursor_inside_a_character_is_refused_not_a_crash(tmp_path: Path) -> None:
    store = RetainedStore(tmp_path / "accents.sqlite3")
    store.retain_tool_result("é" * 100, tool="document_open", tool_kind="document", entry_ref="e1")
    assert store.get("c1", cursor="g2").text == "é" * 99  # a boundary this server issues
    with pytest.raises(HistoryError) as err:
        store.get("c1", cursor="g1")  # the second byte of the first "é"
    assert err.value.code == "history_cursor_invalid" and err.value.location == "cursor"
    store.close()


def test_fts_syntax_in_a_query_is_just_words(retained: RetainedStore) -> None:
    assert retained.search('crates" OR NOT (Ashford*').hits


def test_a_missing_store_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(HistoryError) as err:
        RetainedStore(tmp_path / "none.sqlite3", readonly=True)
    assert err.value.code == "history_unavailable"
