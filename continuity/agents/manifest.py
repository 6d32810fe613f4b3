"""The adapter manifest, ``agent.toml``: how continuity starts an outside agent.

```toml
name     = "toy-agent"
version  = "0.1.0"
protocol = "cap/0"
command  = ["python3", "agent.py"]     # relative paths resolve against the manifest's folder
env      = ["HOME", "PATH"]            # the allowlist: only these variables pass through
api      = ["openai-chat"]
sources  = ["lib/**/*.py"]             # optional: more files whose content is the agent's code
volatile = ['Now: \\d+']                # optional: regexes blanked before replay signatures

[capabilities]                         # optional: checked at plan time and at initialize
steer = "injected"
resume_after_restart = true
new_session = true
```

Declared ``capabilities`` let a plan refuse an arm the agent cannot serve before anything
runs (``adapter_capability_missing:<cap>``), and the adapter's ``initialize`` must then
report the same (else ``adapter_protocol_error``). ``volatile`` patterns (text that
changes between otherwise identical replays, such as a wall clock in the system prompt)
are blanked before the replay signature and the prefix checks; a pattern that does not
compile is ``agent_manifest_invalid``.

The agent never receives credentials: its environment is the allowlist's variables
only (a name that looks like a credential, ``*KEY*``, ``*TOKEN*``, ``*SECRET*``,
``*PASSWORD*``, ``*CREDENTIAL*``, is refused), and its model endpoint is continuity's
proxy with a dummy key. The manifest's `digest` (blake3 of its canonical form, with the
command as written) identifies the adapter's configuration; its code is identified by
its files: the command's arguments that are files in the manifest's folder and the
``sources`` globs (relative to that folder). `fingerprint` binds the manifest's digest,
the digest of those files' contents and the digest of the allowlisted variables'
values, so a unit is never reused after the agent's code or environment changed.

A manifest that is missing, not TOML, or does not fit the schema is
``agent_manifest_invalid``, located at the file and the field.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from continuity.digest import digest_bytes, value_digest
from continuity.errors import AdapterError
from continuity.inputs import read_user_bytes

# An agent.toml is a few hundred bytes; anything near this is not one.
MANIFEST_MAX_BYTES = 1024 * 1024

__all__ = ["MANIFEST_MAX_BYTES", "DeclaredCapabilities", "Manifest", "load_manifest"]

# variable names that carry credentials never pass the allowlist
_SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)


def _chat_only() -> list[Literal["openai-chat", "openai-responses", "anthropic"]]:
    return ["openai-chat"]


class DeclaredCapabilities(BaseModel):
    """The capabilities a manifest declares (`continuity.agents.protocol.Capabilities`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: Literal["mcp-http", "mcp-stdio", "harness-executed", "none"] = "mcp-http"
    steer: Literal["injected", "queued", "none"] = "none"
    parallel_tool_calls: bool = False
    resume_after_restart: bool = False
    new_session: bool = False
    compaction: Literal["manual", "auto", "none"] = "none"
    model_switch: bool = False
    context_inject: bool = False
    session_tools: bool = False


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    version: str = Field(min_length=1, max_length=40)
    protocol: Literal["cap/0"] = "cap/0"
    command: list[str] = Field(min_length=1)
    env: list[str] = Field(default_factory=list)
    # the wire formats the agent speaks, its first the one `initialize` names
    api: list[Literal["openai-chat", "openai-responses", "anthropic"]] = Field(
        default_factory=_chat_only, min_length=1
    )
    sources: list[str] = Field(default_factory=list)
    volatile: list[str] = Field(default_factory=list)
    capabilities: DeclaredCapabilities | None = None
    # The adapter changes the model's final text before replying (a format, a footer):
    # declared, its answers are still labelled answer_not_from_model and excluded, and
    # the banner says the adapter declared it.
    post_processes: bool = False
    folder: str = Field(default="", exclude=True)  # where it was read from

    @property
    def digest(self) -> str:
        return value_digest(("cap-manifest", self.model_dump(mode="json")))

    def source_files(self) -> list[Path]:
        """The agent's own files: command arguments that name a file in the manifest's
        folder, then every file the ``sources`` globs match there (sorted, once each)."""
        root = Path(self.folder or ".")
        named = [root / a for a in self.command if "{" not in a and (root / a).is_file()]
        globbed = sorted(p for g in self.sources for p in root.glob(g) if p.is_file())
        return list(dict.fromkeys([*named, *globbed]))

    def fingerprint(self, environ: dict[str, str] | None = None) -> dict[str, str]:
        """What a unit key binds of the agent: the manifest's digest, its files' contents
        (by path relative to the folder) and its allowlisted variables' values."""
        env = os.environ if environ is None else environ
        root = Path(self.folder or ".")
        files = [
            (str(p.relative_to(root)), digest_bytes(p.read_bytes())) for p in self.source_files()
        ]
        passed = [(name, env[name]) for name in sorted(self.env) if name in env]
        return {
            "manifest": self.digest,
            "sources": value_digest(("cap-sources", files)),
            "env": value_digest(("cap-env", passed)),
        }


def load_manifest(path: Path) -> Manifest:
    """The manifest at `path`, its folder recorded for relative command paths.

    Raises:
        AdapterError: ``agent_manifest_invalid`` at ``path`` or ``path:field``.
        InputError: ``input_not_a_file`` (a device, a FIFO, a directory),
            ``input_too_large`` (over `MANIFEST_MAX_BYTES`).
    """
    try:
        raw = read_user_bytes(path, limit=MANIFEST_MAX_BYTES, what="the agent manifest")
        data = tomllib.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise AdapterError(
            f"cannot read the manifest: {exc.strerror}",
            code="agent_manifest_invalid",
            location=str(path),
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise AdapterError(
            f"not TOML: {exc}", code="agent_manifest_invalid", location=str(path)
        ) from None
    try:
        manifest = Manifest.model_validate({**data, "folder": str(path.parent.absolute())})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "manifest"
        raise AdapterError(
            f"{first['msg']}", code="agent_manifest_invalid", location=f"{path}:{field}"
        ) from None
    bad = next(
        (g for g in manifest.sources if not g or Path(g).is_absolute() or ".." in Path(g).parts),
        None,
    )
    if bad is not None:
        raise AdapterError(
            f"source glob {bad!r} must be relative to the manifest's folder",
            code="agent_manifest_invalid",
            location=f"{path}:sources",
        )
    for pattern in manifest.volatile:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise AdapterError(
                f"volatile pattern {pattern!r} does not compile: {exc}",
                code="agent_manifest_invalid",
                location=f"{path}:volatile",
            ) from None
    if any(not name or "=" in name for name in manifest.env):
        raise AdapterError(
            "env lists variable names only", code="agent_manifest_invalid", location=f"{path}:env"
        )
    secret = next((n for n in manifest.env if _SECRET.search(n)), None)
    if secret is not None:
        raise AdapterError(
            f"{secret} looks like a credential: the agent only ever gets the proxy's dummy key",
            code="agent_manifest_invalid",
            location=f"{path}:env",
        )
    return manifest
