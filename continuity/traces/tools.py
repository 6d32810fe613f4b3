"""The fixture tool catalog: every tool a trace may call, its kind and input schema.

The MCP fixture server serves exactly these tools, with these JSON input schemas, and
returns each trace's frozen output; the validator checks scripted calls against them.
Arguments describe *what* is looked up in words (a subject, a channel, a title), never an
identifier: identifiers are tool-only and must first appear in a tool result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

__all__ = [
    "TOOLS",
    "ArgType",
    "ArgumentSpec",
    "ToolSpec",
    "argument_problems",
    "input_schema",
    "tool_for_kind",
]

ArgType = Literal["string", "integer", "boolean"]


class ArgumentSpec(msgspec.Struct, frozen=True):
    type: ArgType
    description: str
    required: bool = True


class ToolSpec(msgspec.Struct, frozen=True):
    name: str
    kind: str
    description: str
    arguments: Mapping[str, ArgumentSpec]


TOOLS: Mapping[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            "email_search",
            "email",
            "Search the owner's mailbox and return the matching thread in full.",
            {
                "query": ArgumentSpec("string", "Words to match in subject, sender or body."),
                "mailbox": ArgumentSpec("string", "Mailbox folder, e.g. inbox or sent.", False),
                "limit": ArgumentSpec("integer", "Maximum number of threads.", False),
            },
        ),
        ToolSpec(
            "chat_history",
            "chat",
            "Read recent messages from a team or vendor chat channel.",
            {
                "channel": ArgumentSpec("string", "Channel or conversation name."),
                "days": ArgumentSpec("integer", "How many days back to read.", False),
            },
        ),
        ToolSpec(
            "web_fetch",
            "web",
            "Fetch a web page and return its readable text.",
            {
                "url": ArgumentSpec("string", "Absolute http(s) URL of the page."),
            },
        ),
        ToolSpec(
            "document_open",
            "document",
            "Open a document from the owner's drive by title and return its text.",
            {
                "title": ArgumentSpec("string", "Document title or a distinctive part of it."),
                "include_comments": ArgumentSpec("boolean", "Include margin comments.", False),
            },
        ),
        ToolSpec(
            "calendar_events",
            "calendar",
            "List calendar events in a date range.",
            {
                "start": ArgumentSpec("string", "First day, YYYY-MM-DD."),
                "end": ArgumentSpec("string", "Last day, YYYY-MM-DD."),
                "query": ArgumentSpec("string", "Optional words to filter events.", False),
            },
        ),
        ToolSpec(
            "parcel_track",
            "parcel",
            "Look up the tracking history of a shipment described in words.",
            {
                "shipment": ArgumentSpec("string", "What was shipped and by whom."),
                "carrier": ArgumentSpec("string", "Carrier name, if known.", False),
            },
        ),
    )
}

_JSON_TYPES: Mapping[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "boolean": bool,
}


def tool_for_kind(kind: str) -> ToolSpec:
    """The catalog tool serving results of `kind`."""
    for spec in TOOLS.values():
        if spec.kind == kind:
            return spec
    raise KeyError(kind)


def input_schema(spec: ToolSpec) -> dict[str, Any]:
    """The JSON Schema of a tool's input, as an MCP server lists it."""
    return {
        "type": "object",
        "properties": {
            name: {"type": arg.type, "description": arg.description}
            for name, arg in spec.arguments.items()
        },
        "required": [name for name, arg in spec.arguments.items() if arg.required],
        "additionalProperties": False,
    }


def argument_problems(spec: ToolSpec, arguments: Mapping[str, object]) -> list[str]:
    """Human-readable problems with `arguments` for `spec` (empty when valid)."""
    problems = []
    for name, arg in spec.arguments.items():
        if arg.required and name not in arguments:
            problems.append(f"missing required argument {name!r}")
    for name, value in arguments.items():
        arg_spec = spec.arguments.get(name)
        if arg_spec is None:
            problems.append(f"unknown argument {name!r}")
            continue
        expected = _JSON_TYPES[arg_spec.type]
        # bool is an int in Python; an integer argument must not accept True.
        wrong_bool = arg_spec.type == "integer" and isinstance(value, bool)
        if wrong_bool or not isinstance(value, expected):
            problems.append(f"argument {name!r} must be {arg_spec.type}")
    return problems
