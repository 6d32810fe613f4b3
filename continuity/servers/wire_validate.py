"""The wire stand-in's request checks: third-party validators, so it refuses what real
servers refuse.

The stand-in agrees with this project's providers by construction; these checks do not.
Each route's request body is validated by the request models of the servers and SDKs
that define the format:

- ``/chat/completions``: llama-cpp-python's server request model
  (`CreateChatCompletionRequest`), the strictest OpenAI-compatible server this project
  was proven against (it refuses ``"content": null`` beside ``tool_calls``), and the
  ``openai`` SDK's `CompletionCreateParams`;
- ``/responses``: the ``openai`` SDK's `ResponseCreateParams`;
- ``/messages``: the ``anthropic`` SDK's `MessageCreateParams`.

llama-cpp-python's model is used itself when the package is installed (``.[local]``);
otherwise its JSON Schema, exported from that model and checked in beside this module
(`LLAMA_CPP_SCHEMA`), is applied with ``jsonschema``. A test run where the package is
installed (CI) checks that the snapshot is still the installed model's schema
(``python3 -m continuity.servers.wire_validate --refresh`` rewrites it). The SDK types
are TypedDicts, validated with pydantic (their iterables drained, so every element is
checked); a missing SDK (they are test dependencies) skips its check, and
`active_validators` says which checks are on. A refused body is answered 400
``invalid_request_error`` with the validators' first messages.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "LLAMA_CPP_SCHEMA",
    "Check",
    "active_validators",
    "checks_for",
    "llama_cpp_schema",
    "refusals",
]

LLAMA_CPP_SCHEMA = Path(__file__).with_name("llama_cpp_chat_request.schema.json")
_MAX_MESSAGES = 5

# A check: (its name, a function returning the body's problems, empty when valid).
Check = tuple[str, Callable[[dict[str, Any]], list[str]]]


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


def _typed_dict_check(module: str, name: str) -> Callable[[dict[str, Any]], list[str]] | None:
    """A pydantic check of a TypedDict `module`.`name`, or None when it is not installed."""
    try:
        target = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    from pydantic import TypeAdapter, ValidationError

    adapter: TypeAdapter[Any] = TypeAdapter(target)

    def check(body: dict[str, Any]) -> list[str]:
        try:
            _drain(adapter.validate_python(body))
        except ValidationError as error:
            return _closest([dict(e) for e in error.errors()])
        return []

    return check


def llama_cpp_schema() -> dict[str, Any]:
    """The JSON Schema of llama-cpp-python's chat request, from the installed package."""
    from llama_cpp.server.types import CreateChatCompletionRequest

    schema: dict[str, Any] = CreateChatCompletionRequest.model_json_schema()
    return schema


def _llama_cpp_check() -> tuple[str, Callable[[dict[str, Any]], list[str]]]:
    """llama-cpp-python's own model when installed, else its checked-in JSON Schema."""
    try:
        from llama_cpp.server.types import CreateChatCompletionRequest
        from pydantic import ValidationError
    except ImportError:
        import jsonschema

        validator = jsonschema.Draft202012Validator(json.loads(LLAMA_CPP_SCHEMA.read_text()))

        def by_schema(body: dict[str, Any]) -> list[str]:
            errors = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
            return [
                f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message[:200]}"
                for e in errors[:_MAX_MESSAGES]
            ]

        return "llama-cpp-python request schema (snapshot)", by_schema

    version = importlib.metadata.version("llama_cpp_python")

    def by_model(body: dict[str, Any]) -> list[str]:
        try:
            CreateChatCompletionRequest.model_validate(body)
        except ValidationError as error:
            return _closest([dict(e) for e in error.errors()])
        return []

    return f"llama-cpp-python {version} request model", by_model


def _sdk(package: str) -> str:
    try:
        return f"{package} {importlib.metadata.version(package)}"
    except importlib.metadata.PackageNotFoundError:
        return package


@functools.cache
def checks_for(route: str) -> tuple[Check, ...]:
    """The checks of a route (``/chat/completions``, ``/responses``, ``/messages``),
    built once per process."""
    found: list[Check] = []
    if route == "/chat/completions":
        found.append(_llama_cpp_check())
        sdk = _typed_dict_check(
            "openai.types.chat.completion_create_params", "CompletionCreateParamsBase"
        )
        if sdk is not None:
            found.append((f"{_sdk('openai')} CompletionCreateParams", sdk))
    elif route == "/responses":
        sdk = _typed_dict_check(
            "openai.types.responses.response_create_params", "ResponseCreateParamsBase"
        )
        if sdk is not None:
            found.append((f"{_sdk('openai')} ResponseCreateParams", sdk))
    elif route == "/messages":
        sdk = _typed_dict_check("anthropic.types.message_create_params", "MessageCreateParamsBase")
        if sdk is not None:
            found.append((f"{_sdk('anthropic')} MessageCreateParams", sdk))
    return tuple(found)


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


def main(argv: list[str] | None = None) -> int:
    """``--refresh``: rewrite the llama-cpp-python schema snapshot from the installed
    package; ``--check``: exit 1 when the snapshot differs from it."""
    args = sys.argv[1:] if argv is None else argv
    if args not in (["--refresh"], ["--check"]):
        print("usage: python3 -m continuity.servers.wire_validate --refresh | --check")
        return 2
    try:
        schema = llama_cpp_schema()
    except ImportError:
        print(
            "error local_model_missing: llama-cpp-python is not installed; install the "
            "local extra: python3 -m pip install -e '.[local]' (at llama_cpp)",
            file=sys.stderr,
        )
        return 2
    current = json.dumps(schema, indent=1, sort_keys=True) + "\n"
    if args == ["--refresh"]:
        LLAMA_CPP_SCHEMA.write_text(current)
        print(f"wrote {LLAMA_CPP_SCHEMA}")
        return 0
    same = LLAMA_CPP_SCHEMA.read_text() == current
    print("snapshot is current" if same else "snapshot differs from the installed model")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
