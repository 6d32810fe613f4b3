"""LoCoMo into the trace schema: one `imported` trace per conversation.

LoCoMo (Maharana et al., ACL 2024) is ten long conversations between two people, each
over 19-32 dated sessions, with 1,986 human-written questions whose evidence names
dialogue ids (``D3:12``: session 3, turn 12). The mapping, chosen to keep every word and
id while replaying through the real harness as an owner's assistant would see it:

- **Speaker A is the owner.** Each of A's turns is an owner message, ``A: text``.
- **Speaker B arrives through the chat tool.** After an owner message, the assistant
  calls ``chat_history`` on B's channel, and each of B's following turns is one real
  MCP tool result, ``B: text``; the assistant then closes the turn with a fixed line
  (``B replied.``, or ``Sent to B.`` when B did not answer). A session that B opens
  starts with a fixed owner line, ``Open my chat with B.``.
- **Sessions stay sessions**: session N is session ``S{N}`` on its calendar date, and its
  first owner message starts with LoCoMo's own date and time line
  (``(1:56 pm on 8 May, 2023)``), since relative dates ("yesterday") resolve against it.
- **Shared photos** keep LoCoMo's caption: `` [shares a photo: caption]``.
- **Turn ids are the dialogue ids**, so evidence maps one to one; the assistant's turns
  are ``D3:12.call`` and ``D3:12.reply``.
- **Questions become probes** ``q000``... (their index in LoCoMo's list, so a dropped
  question leaves a gap): categories 1-4 are `free_recall` with the gold answer
  verbatim (a number as LoCoMo writes it), category 5 (adversarial) is `abstention`
  with LoCoMo's adversarial answer as the decoy.

Questions are dropped, never repaired, with a reason (`DROP_REASONS`): evidence that
names no dialogue id of the conversation (a compound string such as ``D8:6; D9:17`` is
split first), no evidence, no answer, or a question whose text states its own answer.

Both of LoCoMo's file layouts are read: ``locomo10.json`` (a list of samples) and the
``locomo10_v2`` directory of one file per conversation. Codes: ``locomo_zip_unreadable``,
``locomo_format_invalid`` (with the member and the JSON path).
"""

from __future__ import annotations

import datetime as dt
import io
import re
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import msgspec

from continuity.errors import HoldoutError
from continuity.inputs import ARCHIVE_MAX_BYTES, read_user_bytes
from continuity.traces.schema import (
    SCHEMA_VERSION,
    AbstentionExpectation,
    AssistantMessage,
    FreeRecallExpectation,
    OwnerMessage,
    Probe,
    Session,
    ToolCall,
    ToolResult,
    Trace,
    Turn,
)

__all__ = [
    "ARCHIVE_MAX_MEMBERS",
    "CATEGORY_NAMES",
    "DROP_REASONS",
    "MEMBER_MAX_BYTES",
    "Conversation",
    "Dropped",
    "Imported",
    "convert",
    "read_zip",
]

CATEGORY_NAMES: Final[Mapping[int, str]] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
DROP_REASONS: Final[Mapping[str, str]] = {
    "evidence_unresolved": "an evidence id names no dialogue turn of the conversation",
    "evidence_missing": "the question lists no evidence",
    "answer_missing": "a category 1-4 question has no answer (or a category 5 no decoy)",
    "answer_in_question": "the question's text states its own answer",
}
# Bounds on what is read from the archive: LoCoMo's largest file is under 300 KB.
MEMBER_MAX_BYTES = 32 * 1024 * 1024
ARCHIVE_MAX_MEMBERS = 1024
_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_WORD = re.compile(r"\w+")
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"


class Conversation(msgspec.Struct, frozen=True):
    """One LoCoMo sample as read: its id, its conversation and its questions."""

    sample_id: str
    member: str
    conversation: dict[str, Any]
    qa: list[dict[str, Any]]


class Dropped(msgspec.Struct, frozen=True):
    probe_index: int
    category: int
    reason: str


class Imported(msgspec.Struct, frozen=True):
    trace: Trace
    dropped: tuple[Dropped, ...]
    questions: int
    categories: tuple[int, ...]  # every question's LoCoMo category as read (0: none)


def _invalid(message: str, member: str, path: str) -> HoldoutError:
    return HoldoutError(message, code="locomo_format_invalid", location=f"{member}:{path}")


def read_zip(path: Path, data: bytes | None = None) -> list[Conversation]:
    """Every conversation in a LoCoMo archive, ordered by sample id (`data`: the
    archive's bytes when the caller has read them already; else they are read, at most
    `ARCHIVE_MAX_BYTES`).

    Raises:
        HoldoutError: ``locomo_zip_unreadable``, ``locomo_format_invalid``.
        InputError: ``input_not_a_file``, ``input_too_large`` (`continuity.inputs`).
    """
    try:
        if data is None:
            data = read_user_bytes(path, limit=ARCHIVE_MAX_BYTES, what="the LoCoMo archive")
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = [i for i in archive.infolist() if not i.is_dir()]
            if len(infos) > ARCHIVE_MAX_MEMBERS:
                raise _invalid(f"{len(infos)} members", str(path), "$")
            conversations = [c for info in infos for c in _read_member(archive, info)]
    except (OSError, zipfile.BadZipFile) as exc:
        raise HoldoutError(
            f"cannot read the LoCoMo archive: {exc}",
            code="locomo_zip_unreadable",
            location=str(path),
        ) from None
    if not conversations:
        raise _invalid("no LoCoMo conversation in the archive", str(path), "$")
    ids = [c.sample_id for c in conversations]
    if len(set(ids)) != len(ids):
        raise _invalid("two conversations share a sample id", str(path), "$")
    return sorted(conversations, key=lambda c: (len(c.sample_id), c.sample_id))


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Iterator[Conversation]:
    name = info.filename
    if not name.endswith(".json") or "/." in f"/{name}":
        return
    if info.file_size > MEMBER_MAX_BYTES:
        raise _invalid(f"member of {info.file_size:,} bytes", name, "$")
    try:
        data = msgspec.json.decode(archive.read(info))
    except msgspec.DecodeError as exc:
        raise _invalid(f"not JSON: {exc}", name, "$") from None
    if isinstance(data, list):  # locomo10.json: [{"sample_id", "conversation", "qa"}]
        for index, sample in enumerate(data):
            where = f"$[{index}]"
            if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
                raise _invalid("a sample needs a conversation object", name, where)
            sample_id = str(sample.get("sample_id", "")).removeprefix("conv-")
            yield _conversation(sample_id, name, sample["conversation"], sample.get("qa"), where)
    elif isinstance(data, dict):  # locomo10_v2/<id>.json: the conversation and its qa
        yield _conversation(Path(name).stem, name, data, data.get("qa"), "$")
    else:
        raise _invalid("neither a sample list nor a conversation", name, "$")


def _conversation(
    sample_id: str, member: str, conversation: dict[str, Any], qa: object, where: str
) -> Conversation:
    if not re.fullmatch(r"[0-9a-z][0-9a-z-]{0,40}", sample_id):
        raise _invalid(f"sample id {sample_id[:40]!r} is not a short id", member, where)
    if not isinstance(qa, list) or not all(isinstance(q, dict) for q in qa):
        raise _invalid("qa must be a list of questions", member, f"{where}.qa")
    for speaker in ("speaker_a", "speaker_b"):
        if not isinstance(conversation.get(speaker), str) or not conversation[speaker].strip():
            raise _invalid(f"{speaker} must be a name", member, f"{where}.{speaker}")
    return Conversation(sample_id, member, conversation, qa)


def _photo(turn: Mapping[str, Any]) -> str:
    caption = turn.get("blip_caption")
    return f" [shares a photo: {caption}]" if isinstance(caption, str) and caption else ""


def _sessions(conv: Conversation) -> list[tuple[int, str, list[dict[str, Any]]]]:
    found = []
    for key, value in conv.conversation.items():
        match = _SESSION.fullmatch(key)
        if match and value:  # LoCoMo lists date lines for sessions it never filled
            if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
                raise _invalid("a session must be a list of turns", conv.member, f"$.{key}")
            when = conv.conversation.get(f"{key}_date_time")
            if not isinstance(when, str):
                raise _invalid("the session has no date line", conv.member, f"$.{key}_date_time")
            found.append((int(match.group(1)), when, value))
    if not found:
        raise _invalid("the conversation has no sessions", conv.member, "$")
    return sorted(found)


def _iso(when: str, member: str, key: str) -> str:
    try:
        return dt.datetime.strptime(when.strip(), _DATE_FORMAT).date().isoformat()
    except ValueError:
        raise _invalid(f"cannot read the date {when[:40]!r}", member, f"$.{key}") from None


class _Session:
    """Builds one session's turns in the owner / chat-tool mapping."""

    def __init__(self, number: int, when: str, owner: str, other: str) -> None:
        self.number, self.when, self.owner, self.other = number, when, owner, other
        self.turns: list[Turn] = []
        self.open: str | None = None  # the owner turn id whose reply is pending
        self.results: list[tuple[str, str]] = []  # B's (dia id, text) since then

    def owner_says(self, dia: str, text: str) -> None:
        self.close()
        prefix = f"({self.when})\n" if not self.turns else ""
        self.turns.append(OwnerMessage(turn_id=dia, text=f"{prefix}{self.owner}: {text}"))
        self.open = dia

    def other_says(self, dia: str, text: str) -> None:
        if self.open is None:
            opener = f"S{self.number}.open"
            prefix = f"({self.when})\n" if not self.turns else ""
            line = f"{prefix}Open my chat with {self.other}."
            self.turns.append(OwnerMessage(turn_id=opener, text=line))
            self.open = opener
        self.results.append((dia, f"{self.other}: {text}"))

    def close(self) -> None:
        if self.open is None:
            return
        head = self.open
        if self.results:
            calls = tuple(
                ToolCall(
                    call_id=f"{dia}.c",
                    tool="chat_history",
                    arguments={"channel": self.other, "days": 1},
                )
                for dia, _ in self.results
            )
            self.turns.append(AssistantMessage(turn_id=f"{head}.call", tool_calls=calls))
            self.turns += [
                ToolResult(
                    turn_id=dia,
                    call_id=f"{dia}.c",
                    tool="chat_history",
                    tool_kind="chat",
                    output=text,
                )
                for dia, text in self.results
            ]
            reply = f"{self.other} replied."
        else:
            reply = f"Sent to {self.other}."
        self.turns.append(AssistantMessage(turn_id=f"{head}.reply", text=reply))
        self.open, self.results = None, []


def _build_sessions(conv: Conversation) -> list[Session]:
    owner, other = conv.conversation["speaker_a"], conv.conversation["speaker_b"]
    sessions = []
    for number, when, turns in _sessions(conv):
        builder = _Session(number, when, owner, other)
        for index, turn in enumerate(turns):
            where = f"$.session_{number}[{index}]"
            speaker, dia, text = turn.get("speaker"), turn.get("dia_id"), turn.get("text")
            if not isinstance(dia, str) or not isinstance(text, str):
                raise _invalid("a turn needs a dia_id and text", conv.member, where)
            said = text + _photo(turn)
            if speaker == owner:
                builder.owner_says(dia, said)
            elif speaker == other:
                builder.other_says(dia, said)
            else:
                raise _invalid(f"speaker {str(speaker)[:40]!r} is neither", conv.member, where)
        builder.close()
        iso = _iso(when, conv.member, f"session_{number}_date_time")
        sessions.append(Session(session_id=f"S{number}", date=iso, turns=tuple(builder.turns)))
    return sessions


def _answer_in(answer: str, question: str) -> bool:
    words = _WORD.findall(answer.lower())
    pattern = r"\b" + r"\W+".join(re.escape(w) for w in words) + r"\b"
    return bool(words) and re.search(pattern, question.lower()) is not None


def _probe(
    index: int, q: Mapping[str, Any], turn_ids: set[str]
) -> tuple[Probe | None, Dropped | None]:
    category = q.get("category")
    category = category if isinstance(category, int) and category in CATEGORY_NAMES else 0
    question = q.get("question")
    if not category or not isinstance(question, str) or not question.strip():
        return None, Dropped(index, category, "answer_missing")
    raw = q.get("evidence")
    evidence = [e for item in raw or () for e in _EVIDENCE_SPLIT.split(str(item)) if e]
    if not evidence:
        return None, Dropped(index, category, "evidence_missing")
    if any(e not in turn_ids for e in evidence):
        return None, Dropped(index, category, "evidence_unresolved")
    ids = tuple(dict.fromkeys(evidence))
    if category == 5:
        decoy = q.get("adversarial_answer")
        if not isinstance(decoy, str | int | float) or not str(decoy).strip():
            return None, Dropped(index, category, "answer_missing")
        exp: AbstentionExpectation | FreeRecallExpectation = AbstentionExpectation(
            never_mentioned=(), decoys=(str(decoy),)
        )
    else:
        answer = q.get("answer")
        if not isinstance(answer, str | int | float) or not str(answer).strip():
            return None, Dropped(index, category, "answer_missing")
        if _answer_in(str(answer), question):
            return None, Dropped(index, category, "answer_in_question")
        exp = FreeRecallExpectation(answer=str(answer), evidence=ids, source_category=category)
    return Probe(probe_id=f"q{index:03d}", text=question, expectation=exp), None


def convert(conv: Conversation) -> Imported:
    """The trace of one conversation, and the questions it dropped.

    Raises:
        HoldoutError: ``locomo_format_invalid``.
    """
    sessions = _build_sessions(conv)
    turn_ids = {t.turn_id for s in sessions for t in s.turns}
    probes, dropped = [], []
    for index, q in enumerate(conv.qa):
        probe, drop = _probe(index, q, turn_ids)
        if probe is not None:
            probes.append(probe)
        if drop is not None:
            dropped.append(drop)
    a, b = conv.conversation["speaker_a"], conv.conversation["speaker_b"]
    trace = Trace(
        schema_version=SCHEMA_VERSION,
        trace_id=f"locomo-{conv.sample_id}",
        fictional=True,
        family="imported",
        scenario="locomo",
        title=f"LoCoMo conversation {conv.sample_id}: {a} and {b}"[:256],
        sessions=tuple(sessions),
        probes=tuple(probes),
    )
    categories = tuple(q["category"] if isinstance(q.get("category"), int) else 0 for q in conv.qa)
    return Imported(trace, tuple(dropped), len(conv.qa), categories)
