"""The adapter manifest, ``agent.toml``: how continuity starts an outside agent.

```toml
name     = "toy-agent"
version  = "0.1.0"
protocol = "cap/0"
command  = ["python3", "agent.py"]     # relative paths resolve against the manifest's folder
env      = ["HOME", "PATH"]            # the allowlist: only these variables pass through
api      = ["openai-chat"]
```

The agent never receives credentials: its environment is the allowlist's variables
only (a name that looks like a credential, ``*KEY*``, ``*TOKEN*``, ``*SECRET*``,
``*PASSWORD*``, ``*CREDENTIAL*``, is refused), and its model endpoint is continuity's
proxy with a dummy key. The manifest's `digest` (blake3 of its canonical form, with the
command as written) identifies the adapter's configuration; its code is identified by
the name and version it reports in ``initialize``, so bump ``version`` when it changes.

A manifest that is missing, not TOML, or does not fit the schema is
``agent_manifest_invalid``, located at the file and the field.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from continuity.digest import value_digest
from continuity.errors import AdapterError

__all__ = ["Manifest", "load_manifest"]

# variable names that carry credentials never pass the allowlist
_SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)


def _chat_only() -> list[Literal["openai-chat"]]:
    return ["openai-chat"]


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    version: str = Field(min_length=1, max_length=40)
    protocol: Literal["cap/0"] = "cap/0"
    command: list[str] = Field(min_length=1)
    env: list[str] = Field(default_factory=list)
    api: list[Literal["openai-chat"]] = Field(default_factory=_chat_only)
    folder: str = Field(default="", exclude=True)  # where it was read from

    @property
    def digest(self) -> str:
        return value_digest(("cap-manifest", self.model_dump(mode="json")))


def load_manifest(path: Path) -> Manifest:
    """The manifest at `path`, its folder recorded for relative command paths.

    Raises:
        AdapterError: ``agent_manifest_invalid`` at ``path`` or ``path:field``.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
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
