"""The retained evidence store: owner turns and tool results, in SQLite with FTS5.

What is retained is decided by the host, not guessed from a speaker name: owner turns
(messages and steers the host attributed to the owner) and tool results. A tool result
that contains a textual credential assignment is omitted whole, never partially
salvaged; the omission is counted, content-free.

Records have an id (``owner-00012``, ``tool-00031``) and a short packed id (``c12``,
``c31``) shown in packs. `search` ranks with FTS5 bm25 and pages with an opaque cursor;
`get` returns a record in 8 KiB pages of UTF-8 with a cursor to the next page.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Literal, NamedTuple

import msgspec

from continuity.digest import digest_bytes
from continuity.errors import HistoryError
from continuity.privacy import has_credential_assignment
from continuity.sqlite_open import RETAINED_READER, RETAINED_WRITER, open_db

__all__ = [
    "GET_PAGE_BYTES",
    "SEARCH_LIMIT_MAX",
    "SNIPPET_CHARS",
    "RecordPage",
    "RetainedStats",
    "RetainedStore",
    "SearchHit",
    "SearchPage",
    "SourceRow",
]

GET_PAGE_BYTES = 8 * 1024
SEARCH_LIMIT_MAX = 10
SNIPPET_CHARS = 300
# Words too common to rank by; a query made only of them is searched as given.
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "for",
        "from",
        "give",
        "gave",
        "has",
        "have",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "to",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
        "you",
        "your",
    ]
)
_TOKEN = re.compile(r"[\w][\w'-]*", re.UNICODE)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    seq INTEGER PRIMARY KEY,
    record_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    tool_kind TEXT NOT NULL,
    entry_ref TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    digest TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(
    text, content='records', content_rowid='seq'
);
CREATE TABLE IF NOT EXISTS omissions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    reason TEXT NOT NULL,
    bytes INTEGER NOT NULL
);
"""


_TABLES = frozenset(["records", "records_fts", "omissions"])
_SQLITE_HEADER = b"SQLite format 3\x00"


class SearchHit(msgspec.Struct, frozen=True):
    id: str
    packed_id: str
    kind: str
    source: str
    bytes: int
    snippet: str


class SearchPage(msgspec.Struct, frozen=True):
    hits: list[SearchHit]
    next_cursor: str | None


class RecordPage(msgspec.Struct, frozen=True):
    id: str
    packed_id: str
    kind: str
    source: str
    total_bytes: int
    offset: int
    text: str
    next_cursor: str | None


class SourceRow(NamedTuple):
    """One retained record as ledger upkeep reads it (`RetainedStore.source_rows`)."""

    seq: int
    kind: str
    source: str
    tool_kind: str
    entry_ref: str
    bytes: int
    digest: str
    text: str


class RetainedStats(msgspec.Struct, frozen=True):
    """Content-free statistics of a retained store."""

    records: int
    owner_records: int
    tool_records: int
    omitted_tool_results: int
    retained_bytes: int


class RetainedStore:
    """A retained-evidence database at `path` (created if missing, unless `readonly`).

    Opening checks the file before anything is served: a missing file (read-only), a
    file that is not SQLite, or a SQLite file without the retained tables raises
    `HistoryError` ``history_unavailable`` at the path. `identity` is the opened file's
    (device, inode), so a server can tell when the path stops naming it.
    """

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        if readonly:
            if not path.is_file():
                raise HistoryError(
                    "no retained store", code="history_unavailable", location=str(path)
                )
            _check_header(path)
            self.db = open_db(path, RETAINED_READER)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists():
                _check_header(path)
            self.db = open_db(path, RETAINED_WRITER)
        try:
            if not readonly:
                self.db.executescript(_SCHEMA)
            tables = {
                str(name)
                for (name,) in self.db.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                )
            }
            if not _TABLES.issubset(tables):
                raise HistoryError(
                    "not a retained store (its tables are missing)",
                    code="history_unavailable",
                    location=str(path),
                )
            self.db.execute("SELECT COUNT(*) FROM records_fts WHERE rowid = 0").fetchone()
            self.identity = _identity(path)
        except sqlite3.Error as exc:
            self.db.close()
            raise HistoryError(
                f"unreadable retained store ({exc})", code="history_unavailable", location=str(path)
            ) from None
        except BaseException:  # cleanup only (an interrupt too), re-raised as it was
            self.db.close()
            raise

    def close(self) -> None:
        self.db.close()

    # -- retention ---------------------------------------------------------------------

    def _next_seq(self) -> int:
        row = self.db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM records").fetchone()
        return int(row[0])

    def _insert(self, kind: str, source: str, tool_kind: str, entry_ref: str, text: str) -> str:
        seq = self._next_seq()
        record_id = f"{kind}-{seq:05d}"
        data = text.encode("utf-8")
        with self.db:
            self.db.execute(
                "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    seq,
                    record_id,
                    kind,
                    source,
                    tool_kind,
                    entry_ref,
                    len(data),
                    digest_bytes(data),
                    text,
                ),
            )
            self.db.execute("INSERT INTO records_fts(rowid, text) VALUES (?, ?)", (seq, text))
        return record_id

    def retain_owner(self, text: str, *, source: Literal["owner", "steer"], entry_ref: str) -> str:
        """Retain an owner turn (a message or a steer the host attributed to the owner)."""
        return self._insert("owner", source, "", entry_ref, text)

    def retain_tool_result(
        self, text: str, *, tool: str, tool_kind: str, entry_ref: str
    ) -> str | None:
        """Retain a tool result, or omit it whole if it holds a credential assignment."""
        if has_credential_assignment(text):
            with self.db:
                self.db.execute(
                    "INSERT INTO omissions(kind, reason, bytes) VALUES (?, ?, ?)",
                    ("tool", "credential_assignment", len(text.encode("utf-8"))),
                )
            return None
        return self._insert("tool", tool, tool_kind, entry_ref, text)

    # -- statistics ----------------------------------------------------------------------

    def stats(self) -> RetainedStats:
        owner, tool, size = self.db.execute(
            "SELECT COALESCE(SUM(kind = 'owner'), 0), COALESCE(SUM(kind = 'tool'), 0), "
            "COALESCE(SUM(bytes), 0) FROM records"
        ).fetchone()
        omitted = self.db.execute("SELECT COUNT(*) FROM omissions").fetchone()[0]
        return RetainedStats(int(owner) + int(tool), int(owner), int(tool), int(omitted), int(size))

    def records(self, kind: str | None = None) -> list[tuple[str, str, str, str]]:
        """(record id, kind, source, text) in order; for packs and tests."""
        query = "SELECT record_id, kind, source, text FROM records"
        rows = (
            self.db.execute(query + " WHERE kind = ? ORDER BY seq", (kind,))
            if kind
            else self.db.execute(query + " ORDER BY seq")
        )
        return [(str(a), str(b), str(c), str(d)) for a, b, c, d in rows]

    def source_rows(self) -> list[SourceRow]:
        """Every record with its sequence number, origin, entry, size and digest, in
        order: the sources ledger upkeep admits."""
        return [
            SourceRow(int(a), str(b), str(c), str(d), str(e), int(f), str(g), str(h))
            for a, b, c, d, e, f, g, h in self.db.execute(
                "SELECT seq, kind, source, tool_kind, entry_ref, bytes, digest, text "
                "FROM records ORDER BY seq"
            )
        ]

    def find_by_digest(self, digest: str) -> tuple[str, str] | None:
        """(record id, packed id) of the record whose text has this blake3 digest (the
        evaluator's way to name a source without reading other records)."""
        row = self.db.execute(
            "SELECT record_id, seq FROM records WHERE digest = ? ORDER BY seq LIMIT 1", (digest,)
        ).fetchone()
        return (str(row[0]), f"c{row[1]}") if row else None

    # -- ConversationHistory operations -------------------------------------------------

    def search(self, query: str, *, limit: int = 5, cursor: str | None = None) -> SearchPage:
        """Ranked search. Raises `HistoryError` for an empty query, a bad limit or cursor."""
        terms = _TOKEN.findall(query)
        if not terms:
            raise HistoryError("search needs at least one word", location="query")
        if not 1 <= limit <= SEARCH_LIMIT_MAX:
            raise HistoryError(f"limit must be 1-{SEARCH_LIMIT_MAX}", location="limit")
        offset = _decode_cursor(cursor, "s")
        words = [t for t in terms if t.lower() not in _STOPWORDS] or terms
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in words)
        # Rank first (FTS5 sorts by its built-in bm25 rank without touching text), then
        # build snippets for the page only: a snippet per matching row would read every
        # record on a broad query.
        ranked = self.db.execute(
            "SELECT rowid FROM records_fts WHERE records_fts MATCH ? ORDER BY rank, rowid "
            "LIMIT ? OFFSET ?",
            (match, limit + 1, offset),
        ).fetchall()
        hits = []
        for (seq,) in ranked[:limit]:
            record_id, kind, source, size, snippet = self.db.execute(
                "SELECT r.record_id, r.kind, r.source, r.bytes, "
                "snippet(records_fts, 0, '[', ']', ' ... ', 24) "
                "FROM records_fts JOIN records r ON r.seq = records_fts.rowid "
                "WHERE records_fts MATCH ? AND records_fts.rowid = ?",
                (match, seq),
            ).fetchone()
            hits.append(
                SearchHit(
                    str(record_id),
                    f"c{seq}",
                    str(kind),
                    str(source),
                    int(size),
                    str(snippet)[:SNIPPET_CHARS],
                )
            )
        following = f"s{offset + limit}" if len(ranked) > limit else None
        return SearchPage(hits, following)

    def get(self, record: str, *, cursor: str | None = None) -> RecordPage:
        """One 8 KiB page of a record, by record id or packed id."""
        if re.fullmatch(r"c\d+", record):
            row = self.db.execute("SELECT * FROM records WHERE seq = ?", (int(record[1:]),))
        else:
            row = self.db.execute("SELECT * FROM records WHERE record_id = ?", (record,))
        found = row.fetchone()
        if found is None:
            raise HistoryError(
                f"no record {record!r}", code="history_record_unknown", location="id"
            )
        seq, record_id, kind, source, _, _, size, _, text = found
        data = str(text).encode("utf-8")
        offset = _decode_cursor(cursor, "g")
        if offset > len(data):
            raise HistoryError(
                "cursor beyond the record", code="history_cursor_invalid", location="cursor"
            )
        if offset < len(data) and (data[offset] & 0xC0) == 0x80:
            raise HistoryError(
                "cursor inside a character (not one this server issued)",
                code="history_cursor_invalid",
                location="cursor",
            )
        end = min(offset + GET_PAGE_BYTES, len(data))
        while end < len(data) and (data[end] & 0xC0) == 0x80:  # never split a character
            end -= 1
        return RecordPage(
            str(record_id),
            f"c{seq}",
            str(kind),
            str(source),
            int(size),
            offset,
            data[offset:end].decode("utf-8"),
            f"g{end}" if end < len(data) else None,
        )


def _check_header(path: Path) -> None:
    """Refuse a file that is not SQLite before sqlite3 opens it (sqlite3 would only fail
    at the first query, and an empty file would silently become a new database)."""
    try:
        with path.open("rb") as handle:
            header = handle.read(len(_SQLITE_HEADER))
    except OSError as exc:
        raise HistoryError(
            f"cannot read the retained store ({exc.strerror})",
            code="history_unavailable",
            location=str(path),
        ) from None
    if header != _SQLITE_HEADER:
        raise HistoryError("not a SQLite database", code="history_unavailable", location=str(path))


def _identity(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_dev, info.st_ino


def _decode_cursor(cursor: str | None, prefix: str) -> int:
    if cursor is None or cursor == "":
        return 0
    if not re.fullmatch(prefix + r"\d{1,12}", cursor):
        raise HistoryError(
            f"invalid cursor {cursor[:20]!r}", code="history_cursor_invalid", location="cursor"
        )
    return int(cursor[1:])
