"""Where a shared store's files live: a local directory, or an S3-compatible bucket.

A shared store (`continuity.store.shared`) keeps the local store's layout
(``objects/ab/<digest>``, ``actions/ab/<key>.json``, ``refs/<name>.json``) on a
`Backend`, a small contract of six operations every backend keeps the same way:

- `Backend.get` reads a file and its *version* (an opaque token that changes whenever
  the file does), or None.
- `Backend.create` writes a file only if it is absent, in one atomic step, and says
  whether it did. Objects are named by their hash, so two writers of one object write
  the same bytes and the loser loses nothing; an action entry's first writer wins, so
  no unit is ever visible twice or half-written.
- `Backend.replace` is a conditional write (compare and swap): it writes only if the
  file's version is still the one given (None: the file must be absent), and says
  whether it did. Refs move with it, so two writers of one ref never lose an update
  silently: the loser reads again and retries, or gives up.
- `Backend.names` lists the files under a prefix, `Backend.stat` the same files with
  the time each was last written (seconds since the epoch: `doit gc`'s grace period)
  and its size, and `Backend.delete` removes one.

`LocalBackend` is a directory, for a store shared over a network filesystem or between
the processes of one machine: ``create`` links a complete temporary file into place
(``link(2)`` fails when the name exists) and ``replace`` holds an exclusive ``flock``
on a lock file beside the target while it compares and writes. Its version is the
content's blake3. `S3Backend` is a bucket through fsspec's ``s3fs`` (AWS S3 or any
S3-compatible server: MinIO, moto, Ceph): ``create`` is ``PutObject`` with
``If-None-Match: *`` and ``replace`` is ``PutObject`` with ``If-Match: <ETag>``, S3's
conditional writes; its version is the ETag. Credentials are boto's own (environment,
shared config files, instance roles; ``AWS_ENDPOINT_URL`` points at a server other than
AWS): nothing about them enters a plan, a key, a report or a log.

`open_backend` takes a URL: a path or ``file://`` URL, or ``s3://bucket/prefix``.

Errors: ``store_backend_unsupported`` (another URL scheme, or ``s3://`` without
``s3fs``), ``store_backend_failed`` (the backend refused or failed an operation for a
reason other than a lost condition: a missing bucket, denied access, a network error).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, Protocol
from urllib.parse import urlsplit

from continuity.digest import digest_bytes
from continuity.errors import StoreError

__all__ = [
    "SWAP_ATTEMPTS",
    "Backend",
    "FileStat",
    "LocalBackend",
    "S3Backend",
    "open_backend",
    "swap",
]

SWAP_ATTEMPTS = 64  # compare-and-swap rounds before an update gives up


class FileStat(NamedTuple):
    """A shared file's last write (seconds since the epoch) and size in bytes."""

    modified: float
    size: int


class Backend(Protocol):
    """The six operations a shared store needs (module doc); names use ``/``."""

    url: str

    def get(self, name: str) -> tuple[bytes, str] | None: ...

    def create(self, name: str, data: bytes) -> bool: ...

    def replace(self, name: str, data: bytes, version: str | None) -> bool: ...

    def names(self, prefix: str) -> list[str]: ...

    def stat(self, prefix: str) -> dict[str, FileStat]: ...

    def delete(self, name: str) -> None: ...


class LocalBackend:
    """A directory (module doc)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        self.url = self.root.as_uri()
        try:
            (self.root / ".tmp").mkdir(parents=True, exist_ok=True)
            (self.root / ".locks").mkdir(exist_ok=True)
        except OSError as exc:
            raise _failed("cannot use it as a shared store", self.url, exc) from None

    def _path(self, name: str) -> Path:
        parts = name.split("/")
        if not name or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
            raise StoreError(f"invalid name {name!r}", code="store_backend_failed")
        return self.root.joinpath(*parts)

    def get(self, name: str) -> tuple[bytes, str] | None:
        with self._errors(f"reading {name}"):
            try:
                data = self._path(name).read_bytes()
            except FileNotFoundError:
                return None
        return data, digest_bytes(data)

    def create(self, name: str, data: bytes) -> bool:
        path = self._path(name)
        with self._errors(f"writing {name}"):
            path.parent.mkdir(parents=True, exist_ok=True)
            with self._temp(data) as temp:
                try:
                    os.link(temp, path)  # atomic, and refused when the name exists
                except FileExistsError:
                    return False
        return True

    def replace(self, name: str, data: bytes, version: str | None) -> bool:
        path = self._path(name)
        lock = self.root / ".locks" / (digest_bytes(name.encode()) + ".lock")
        with self._errors(f"writing {name}"), open(lock, "a") as held:
            fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes
            current = self.get(name)
            if (current[1] if current is not None else None) != version:
                return False
            path.parent.mkdir(parents=True, exist_ok=True)
            with self._temp(data) as temp:
                os.replace(temp, path)
        return True

    def names(self, prefix: str) -> list[str]:
        folder = self.root.joinpath(*prefix.split("/")[:-1]) if "/" in prefix else self.root
        found = []
        with self._errors("listing"):
            for path in folder.rglob("*") if folder.is_dir() else ():
                name = path.relative_to(self.root).as_posix()
                if path.is_file() and not name.startswith(".") and name.startswith(prefix):
                    found.append(name)
        return sorted(found)

    def stat(self, prefix: str) -> dict[str, FileStat]:
        found = {}
        with self._errors("listing"):
            for name in self.names(prefix):
                with contextlib.suppress(FileNotFoundError):  # removed since listed
                    info = self._path(name).stat()
                    found[name] = FileStat(info.st_mtime, info.st_size)
        return found

    def delete(self, name: str) -> None:
        with self._errors(f"deleting {name}"), contextlib.suppress(FileNotFoundError):
            self._path(name).unlink()

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """An OSError (no space, no permission, no link(2) here) as a typed error."""
        try:
            yield
        except OSError as exc:
            raise _failed(what, self.url, exc) from None

    @contextlib.contextmanager
    def _temp(self, data: bytes) -> Iterator[str]:
        """A complete, fsynced temporary file holding `data` (removed afterwards)."""
        fd, temp = tempfile.mkstemp(dir=self.root / ".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fchmod(handle.fileno(), 0o644)  # readable by the other machines' users
                os.fsync(handle.fileno())
            yield temp
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)


_CONDITIONS_CHECKED: set[str] = set()  # the s3:// stores this process saw honour them


class S3Backend:
    """A bucket and key prefix through s3fs (module doc). Opening one asks S3 for the
    bucket (``HeadBucket``), so a missing bucket, refused credentials or an unreachable
    server is ``store_backend_failed`` before anything else runs. The first opening in
    a process also checks that the server honours conditional writes (`_check_conditions`):
    one that ignored them would let two writers of a ref or an account both win."""

    def __init__(self, url: str, **storage_options: Any) -> None:
        try:
            import s3fs  # the shared extra; imported here: a local run never needs it
        except ImportError:
            raise StoreError(
                "an s3:// store needs s3fs: python3 -m pip install 's3fs>=2024.12'",
                code="store_backend_unsupported",
                location=url,
            ) from None
        self.url = url.rstrip("/")
        self._base = self.url.removeprefix("s3://")
        options = {"skip_instance_cache": True, "use_listings_cache": False, **storage_options}
        self.fs = s3fs.S3FileSystem(**options)
        bucket = self._base.split("/", 1)[0]
        try:
            self._guarded("opening the bucket", self.fs.call_s3, "head_bucket", Bucket=bucket)
        except FileNotFoundError:
            raise StoreError(
                f"no bucket {bucket}", code="store_backend_failed", location=self.url
            ) from None
        if self.url not in _CONDITIONS_CHECKED:
            self._check_conditions()
            _CONDITIONS_CHECKED.add(self.url)

    def _check_conditions(self) -> None:
        """Write a probe file, then try to write it again with ``If-None-Match: *`` and
        with a stale ``If-Match``: both must be refused (then the probe is deleted).

        Raises:
            StoreError: ``store_backend_unsupported`` when either write went through.
        """
        name = f"conditions-probe/{os.getpid()}-{random.getrandbits(64):016x}"
        try:
            created = self.create(name, b"first")
            found = self.get(name)
            honoured = created and not self.create(name, b"again")
            stale = (
                '"' + "0" * 32 + '"' if found is None or found[1] != '"' + "0" * 32 + '"' else '"1"'
            )
            honoured = honoured and not self.replace(name, b"stale", stale)
        finally:
            self.delete(name)
        if not honoured:
            raise StoreError(
                "this S3 server ignores conditional writes (If-None-Match, If-Match): two "
                "writers of one ref or account could both win, so it cannot hold a shared "
                "store",
                code="store_backend_unsupported",
                location=self.url,
            )

    def _path(self, name: str) -> str:
        return f"{self._base}/{name}"

    def _guarded(self, what: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        """`call`, with every failure but a missing key (FileNotFoundError) or an
        existing one (FileExistsError) as ``store_backend_failed``: s3fs raises OSErrors,
        botocore its own (no credentials, no connection)."""
        try:
            return call(*args, **kwargs)
        except (FileNotFoundError, FileExistsError):
            raise
        except Exception as exc:  # the SDKs' errors are open-ended: all typed here
            raise _failed(what, self.url, exc) from None

    def _conditional(self, name: str, data: bytes, **condition: str) -> str:
        """A conditional ``PutObject``: "written"; "lost" when its condition did not
        hold (412 PreconditionFailed, or the name exists or is gone); "retry" when
        another write of the name was in flight (409 ConditionalRequestConflict: it may
        still fail, S3 says retry).

        Raises:
            StoreError: ``store_backend_failed`` for any other failure.
        """
        try:
            self.fs.pipe_file(self._path(name), data, **condition)
        except (FileNotFoundError, FileExistsError):
            return "lost"
        except Exception as exc:  # the SDKs' errors are open-ended: all typed here
            code = _s3_code(exc)
            if code == "ConditionalRequestConflict":
                return "retry"
            if code == "PreconditionFailed" or "pre-condition" in str(exc).lower():
                return "lost"
            raise _failed(f"writing {name}", self.url, exc) from None
        return "written"

    def get(self, name: str) -> tuple[bytes, str] | None:
        """The bytes and their ETag from one ``GetObject``: one response, so they always
        belong together, however often other writers replace the object meanwhile (an
        ETag read on either side of the bytes could disagree with them every time)."""
        from fsspec.asyn import sync

        bucket, _, key = self._path(name).partition("/")

        async def get_object() -> tuple[bytes, str]:
            response = await self.fs._call_s3("get_object", Bucket=bucket, Key=key)
            try:
                data = await response["Body"].read()
            finally:
                response["Body"].close()
            return data, str(response["ETag"])

        try:
            found: tuple[bytes, str] = self._guarded(
                f"reading {name}", sync, self.fs.loop, get_object
            )
        except FileNotFoundError:
            return None
        return found

    def create(self, name: str, data: bytes) -> bool:
        for _ in range(8):
            outcome = self._conditional(name, data, mode="create")
            if outcome != "retry":
                return outcome == "written"
        if self.get(name) is not None:  # every try met another write in flight
            return False
        raise StoreError(f"{name}: every write conflicted", code="store_backend_failed")

    def replace(self, name: str, data: bytes, version: str | None) -> bool:
        if version is None:
            return self.create(name, data)
        # A lost or conflicting condition alike: the caller reads again and retries.
        return self._conditional(name, data, IfMatch=version) == "written"

    def names(self, prefix: str) -> list[str]:
        return sorted(self._listing(prefix))

    def stat(self, prefix: str) -> dict[str, FileStat]:
        return {
            name: FileStat(info["LastModified"].timestamp(), int(info["size"]))
            for name, info in self._listing(prefix).items()
        }

    def _listing(self, prefix: str) -> dict[str, dict[str, Any]]:
        """The files under `prefix` with what ``ListObjectsV2`` says of each."""
        folder = self._path(prefix.rsplit("/", 1)[0]) if "/" in prefix else self._base
        try:
            found = self._guarded("listing", self.fs.find, folder, detail=True)
        except FileNotFoundError:
            return {}
        named = ((path.removeprefix(self._base + "/"), info) for path, info in found.items())
        return {name: info for name, info in named if name.startswith(prefix)}

    def delete(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._guarded(f"deleting {name}", self.fs.rm_file, self._path(name))


def _s3_code(exc: BaseException) -> str:
    """The S3 error code behind `exc` (s3fs keeps botocore's error as the cause)."""
    for error in (exc, exc.__cause__):
        response = getattr(error, "response", None)
        if isinstance(response, dict):
            return str(response.get("Error", {}).get("Code", ""))
    return ""


def _failed(what: str, url: str, exc: BaseException) -> StoreError:
    return StoreError(
        f"{what}: {getattr(exc, 'strerror', None) or exc}",
        code="store_backend_failed",
        location=url,
    )


def swap(
    backend: Backend, name: str, update: Callable[[bytes | None], bytes | None]
) -> bytes | None:
    """Set file `name` to ``update(current bytes, or None if absent)`` by compare and
    swap: written only if nobody wrote it since it was read, else read and computed
    again after a jittered, growing pause (contending writers spread out). `update`
    returning None leaves the file as it is. What was written, or None.

    Raises:
        StoreError: ``store_ref_contended`` after `SWAP_ATTEMPTS` lost rounds.
    """
    for attempt in range(SWAP_ATTEMPTS):
        found = backend.get(name)
        new = update(None if found is None else found[0])
        if new is None:
            return None
        if backend.replace(name, new, found[1] if found is not None else None):
            return new
        # lost the race: back off (exponential, jittered, at most 0.2 s) before the next
        time.sleep(random.uniform(0, min(0.2, 0.002 * 2**attempt)))
    raise StoreError(
        f"{name} kept changing: {SWAP_ATTEMPTS} updates lost the race",
        code="store_ref_contended",
        location=f"{backend.url}/{name}",
    )


def open_backend(url: str, **storage_options: Any) -> Backend:
    """The backend `url` names: a path or ``file://`` URL, or ``s3://bucket[/prefix]``.

    Raises:
        StoreError: ``store_backend_unsupported``; ``store_backend_failed``.
    """
    scheme = urlsplit(url).scheme
    if scheme in ("", "file"):
        return LocalBackend(urlsplit(url).path if scheme else url)
    if scheme == "s3" and urlsplit(url).netloc:
        return S3Backend(url, **storage_options)
    raise StoreError(
        f"a shared store is a directory, a file:// URL or s3://bucket[/prefix], not {url!r}",
        code="store_backend_unsupported",
        location=url,
    )
