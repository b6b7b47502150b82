"""The one file-system seam of the tablet store: every byte of a table (log, checkpoints,
tablets, deletion vectors) and of the warehouse registry is read and written here.

A location is a local path or a URI: ``s3://bucket/key``, ``gs://bucket/key``,
``abfss://container@account.dfs.core.windows.net/key`` (also ``az://``, ``azure://``),
``file:///path``. ``io_for(location, storage_options)`` gives the ``FileIO`` for it.

Why obstore for object stores: it is Python over the Rust ``object_store`` crate (the one
delta-rs uses), and it has the one operation a commit log needs, a conditional create
(``put(..., mode="create")``: S3 ``If-None-Match: *``, GCS generation match 0, Azure
``If-None-Match: *``), which ``pyarrow.fs`` lacks. Parquet stays pyarrow's: it reads through
``open_input`` (ranged GETs, so a scan fetches the footer and the columns it needs) and writes
into a buffer that one PUT stores.

Local paths keep native file calls: a version is created by hard-linking a fsynced temp file
(``link`` fails if the name exists), data files by an atomic rename.

Credentials and endpoints: ``storage_options`` (delta-rs' names: ``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ALLOW_HTTP``, ...; any
case), over the same variables read from the environment when the FileIO is made. The FileIO
pickles with them, so Spark executors that lack the driver's environment reach the same store.

Pure Python + obstore: no pyspark, no dbt.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

import obstore
import pyarrow as pa
from obstore.exceptions import AlreadyExistsError, PreconditionError
from obstore.store import from_url

from tablets.exceptions import TabletsError

_CONFLICT_RETRIES = 6
READ_AHEAD = 16  # object-store reads in flight during a log replay (delta-rs buffers alike)
OBJECT_SCHEMES = ("s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss", "adl")

# client options that obstore takes apart from the store's config (with or without a prefix)
_CLIENT_KEYS = ("allow_http", "allow_invalid_certificates", "timeout", "connect_timeout", "proxy_url")
# what is read from the environment per store kind, so that pickled FileIOs carry it to executors
_ENV_KEYS = {
    "s3": (
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ALLOW_HTTP",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST",
        "AWS_S3_EXPRESS",
    ),
    "gs": ("GOOGLE_SERVICE_ACCOUNT", "GOOGLE_SERVICE_ACCOUNT_KEY", "GOOGLE_APPLICATION_CREDENTIALS"),
    "az": (
        "AZURE_STORAGE_ACCOUNT_NAME",
        "AZURE_STORAGE_ACCOUNT_KEY",
        "AZURE_STORAGE_CLIENT_ID",
        "AZURE_STORAGE_CLIENT_SECRET",
        "AZURE_STORAGE_TENANT_ID",
        "AZURE_STORAGE_SAS_KEY",
        "AZURE_STORAGE_USE_EMULATOR",
        "AZURE_ALLOW_HTTP",
    ),
}


def _kind(scheme: str) -> str:
    if scheme in ("s3", "s3a"):
        return "s3"
    if scheme in ("gs", "gcs"):
        return "gs"
    return "az"


def scheme_of(location: str) -> str:
    """``s3`` for ``s3://b/k``; ``file`` for a local path or ``file:`` URI."""
    if "://" not in location:
        return "file"
    return location.split("://", 1)[0].lower()


def is_local(location: str) -> bool:
    return scheme_of(location) == "file"


def normalize(location: str) -> str:
    """A canonical form: local paths absolute (``file:`` URIs become paths), URIs without a
    trailing slash."""
    if location.startswith("file:"):
        return os.path.abspath(unquote(urlparse(location).path))
    if "://" not in location:
        return os.path.abspath(os.path.expanduser(location))
    scheme, rest = location.split("://", 1)
    return f"{scheme.lower()}://{rest.rstrip('/')}"


def join(base: str, *parts: str) -> str:
    # a part that is itself absolute stands alone: a clone's actions name its source's files by
    # their full location (tablets.storage.clone)
    for i in range(len(parts) - 1, -1, -1):
        if "://" in parts[i]:  # (a local absolute path: os.path.join does the same)
            base, parts = parts[i], parts[i + 1 :]
            break
    if is_local(base):
        return os.path.join(base, *parts)
    return "/".join([base.rstrip("/"), *(p.strip("/") for p in parts)])


def is_absolute(path: str) -> bool:
    """A full location (``/x/y``, ``s3://b/k``), not a path relative to a table root."""
    return "://" in path or path.startswith("/")


def parent(location: str) -> str:
    if is_local(location):
        return os.path.dirname(location.rstrip(os.sep)) or os.sep
    return location.rstrip("/").rsplit("/", 1)[0]


def basename(location: str) -> str:
    return location.rstrip("/").rsplit("/", 1)[-1]


class SizeMismatch(OSError):
    """A file's size is not the one its reader was told (``open_input(path, size)``): it was
    replaced, truncated or appended to."""

    def __init__(self, path: str, expected: int, actual: int) -> None:
        super().__init__(f"{path}: {actual} bytes, expected {expected}")
        self.path, self.expected, self.actual = path, expected, actual


@dataclass(frozen=True)
class FileInfo:
    path: str  # the full location
    name: str  # relative to the listed directory
    size: int
    mtime_ms: float


class FileIO:
    """Operations on full locations. Subclasses: ``LocalFileIO``, ``ObjectStoreFileIO``."""

    local: bool = True

    def read(self, path: str) -> bytes:
        """The whole file; ``FileNotFoundError`` if it does not exist."""
        raise NotImplementedError

    def read_many(self, paths: Iterable[str]) -> Iterator[bytes]:
        """Each file whole, in the order given (``FileNotFoundError`` at the first missing one).
        Local files are read one after the other; an object store reads up to ``READ_AHEAD``
        ahead in threads, since a log replay there waits on one round trip per file."""
        for path in paths:
            yield self.read(path)

    def open_input(self, path: str, size: int | None = None) -> Any:
        """An open file pyarrow reads with random access (close it after use). With ``size``,
        a file of any other size raises ``SizeMismatch`` (on open, or on an object store's
        first read: the size comes with the first ranged GET, no extra request)."""
        raise NotImplementedError

    def size(self, path: str) -> int:
        """The file's size in bytes; ``FileNotFoundError`` if it does not exist."""
        raise NotImplementedError

    def write(self, path: str, data: bytes | Any, *, sync: bool = False) -> None:
        """Store ``data`` at ``path`` whole (readers never see a part), replacing any file there."""
        raise NotImplementedError

    def create(self, path: str, data: bytes, *, sync: bool = True) -> bool:
        """Store ``data`` at ``path`` whole only if nothing is there: False if a file exists.
        Of two concurrent creators of one path exactly one gets True. ``sync``: durable (with
        its name) when this returns; else the caller makes it so with ``sync`` before it relies on it."""
        raise NotImplementedError

    def sync(self, paths: Iterable[str]) -> None:
        """Make the files at ``paths`` (written or created without ``sync``) and their names
        durable. A no-op on an object store, where a PUT is durable when it returns."""

    def list(self, directory: str, *, start_after: str | None = None) -> list[FileInfo]:
        """Files directly in ``directory`` (names above ``start_after`` only, if given), sorted by
        name; empty if the directory does not exist."""
        raise NotImplementedError

    def exists(self, path: str) -> bool:
        raise NotImplementedError

    def delete(self, path: str) -> None:
        """Remove a file; a missing file is not an error."""
        raise NotImplementedError

    def delete_tree(self, directory: str) -> None:
        """Remove a directory and everything under it."""
        raise NotImplementedError


class LocalFileIO(FileIO):
    local = True

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def open_input(self, path: str, size: int | None = None) -> Any:

        f = pa.OSFile(path, "r")
        if size is not None and f.size() != size:  # the size of what was opened: no race
            actual = f.size()
            f.close()
            raise SizeMismatch(path, size, actual)
        return f

    def size(self, path: str) -> int:
        return os.stat(path).st_size

    def _temp(self, path: str, data: bytes | Any, sync: bool) -> str:
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f".tmp-{uuid.uuid4().hex}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data).cast("B")
            while view:
                view = view[os.write(fd, view) :]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        return tmp

    def write(self, path: str, data: bytes | Any, *, sync: bool = False) -> None:
        for attempt in range(3):
            tmp = self._temp(path, data, sync)
            try:
                os.replace(tmp, path)
            except FileNotFoundError:  # a VACUUM with a short retention took the temp file
                if attempt == 2:
                    raise
                continue
            break
        if sync:
            _fsync_directory(os.path.dirname(path))

    def create(self, path: str, data: bytes, *, sync: bool = True) -> bool:
        for attempt in range(3):
            tmp = self._temp(path, data, sync)
            try:
                os.link(tmp, path)  # fails if the name exists: exclusive creation
            except FileExistsError:
                return False
            except FileNotFoundError:  # a VACUUM with a short retention took the temp file
                if attempt == 2:
                    raise
                continue
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
            if sync:
                _fsync_directory(os.path.dirname(path))
            return True
        return False  # not reached

    def sync(self, paths: Iterable[str]) -> None:
        # every file first, then each directory once: one journal commit covers files written
        # together, where a sync per file waits for one each (and for other writers' data)
        directories: dict[str, None] = {}
        for path in paths:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            directories[os.path.dirname(path)] = None
        for directory in directories:
            _fsync_directory(directory)

    def list(self, directory: str, *, start_after: str | None = None) -> list[FileInfo]:
        out = []
        try:
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            return []
        for e in entries:
            if start_after is not None and e.name <= start_after:
                continue
            try:
                st = e.stat()
            except FileNotFoundError:  # removed while listing
                continue
            if e.is_file():
                out.append(FileInfo(e.path, e.name, st.st_size, st.st_mtime * 1000))
        return sorted(out, key=lambda f: f.name)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)

    def delete_tree(self, directory: str) -> None:
        shutil.rmtree(directory, ignore_errors=True)

    def __reduce__(self) -> tuple:
        return (_local, ())


def _fsync_directory(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # platforms where a directory cannot be opened
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


LOCAL = LocalFileIO()


def _local() -> LocalFileIO:
    return LOCAL


class _RangeReader(io.RawIOBase):
    """A read-only, seekable file over ranged GETs (pyarrow coalesces its reads). With
    ``check``, the first GET's object size must be ``size`` (else ``SizeMismatch``)."""

    def __init__(self, store: Any, key: str, size: int, check: str | None = None) -> None:
        self._store, self._key, self._size, self._pos = store, key, size, 0
        self._check = check  # the path to name in a SizeMismatch; None once checked

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def size(self) -> int:
        return self._size

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, n: int = -1) -> bytes:

        end = self._size if n is None or n < 0 else min(self._size, self._pos + n)
        if end <= self._pos:
            return b""
        if self._check is not None:
            data = self._first_read(end)
        else:
            data = bytes(obstore.get_range(self._store, self._key, start=self._pos, end=end))
        self._pos += len(data)
        return data

    def _first_read(self, end: int) -> bytes:
        """A ranged GET that also checks the object's size (it comes in the response)."""

        path, self._check = self._check, None
        assert path is not None
        try:
            got = obstore.get(self._store, self._key, options={"range": (self._pos, end)})
            actual = int(got.meta["size"])
        except FileNotFoundError:
            raise
        except Exception:  # e.g. a range past the end of a shorter object
            actual = int(obstore.head(self._store, self._key)["size"])
            if actual == self._size:
                raise
            raise SizeMismatch(path, self._size, actual) from None
        if actual != self._size:
            raise SizeMismatch(path, self._size, actual)
        return bytes(got.bytes())

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)


def _store_options(kind: str, options: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """(config, client_options) for obstore, from environment-style or obstore-style keys."""
    config: dict[str, str] = {}
    client: dict[str, str] = {}
    prefixes = {"s3": "aws_", "gs": "google_", "az": "azure_"}
    for key, value in options.items():
        k = str(key).lower()
        bare = k.removeprefix(prefixes[kind])
        if bare in _CLIENT_KEYS:
            client[bare] = str(value).lower() if isinstance(value, bool) else str(value)
        else:
            config[k] = str(value).lower() if isinstance(value, bool) else str(value)
    return config, client


class ObjectStoreFileIO(FileIO):
    """One bucket (container) of an object store, through obstore."""

    local = False

    def __init__(self, base: str, options: Mapping[str, Any]) -> None:
        self.base = base  # scheme://bucket (Azure: scheme://container@account...)
        self.kind = _kind(scheme_of(base))
        self.options = dict(options)
        self._store: Any = None
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple:
        return (ObjectStoreFileIO, (self.base, self.options))

    def __repr__(self) -> str:
        return f"ObjectStoreFileIO({self.base!r})"

    @property
    def store(self) -> Any:
        with self._lock:
            if self._store is None:
                config, client = _store_options(self.kind, self.options)
                url = self.base.replace("s3a://", "s3://", 1)
                self._store = from_url(url, config=config or None, client_options=client or None)  # type: ignore[arg-type]
            return self._store

    def key(self, path: str) -> str:
        if not path.startswith(self.base):
            raise ValueError(f"{path} is not in {self.base}")
        return path[len(self.base) :].lstrip("/")

    def read(self, path: str) -> bytes:

        return bytes(obstore.get(self.store, self.key(path)).bytes())

    def read_many(self, paths: Iterable[str]) -> Iterator[bytes]:
        pending: deque[Future[bytes]] = deque()
        with ThreadPoolExecutor(READ_AHEAD, thread_name_prefix="tablets-read") as pool:
            try:
                for path in paths:
                    pending.append(pool.submit(self.read, path))
                    if len(pending) >= READ_AHEAD:
                        yield pending.popleft().result()
                while pending:
                    yield pending.popleft().result()
            finally:  # a consumer that stops early (or an error) leaves no reads behind
                for f in pending:
                    f.cancel()

    def open_input(self, path: str, size: int | None = None) -> Any:

        if size is None:
            return pa.PythonFile(_RangeReader(self.store, self.key(path), self.size(path)), mode="r")
        return pa.PythonFile(_RangeReader(self.store, self.key(path), size, check=path), mode="r")

    def size(self, path: str) -> int:

        return int(obstore.head(self.store, self.key(path))["size"])

    def write(self, path: str, data: bytes | Any, *, sync: bool = False) -> None:

        obstore.put(self.store, self.key(path), bytes(data))  # one PUT is atomic

    def create(self, path: str, data: bytes, *, sync: bool = True) -> bool:

        for attempt in range(_CONFLICT_RETRIES + 1):
            try:
                obstore.put(self.store, self.key(path), bytes(data), mode="create", use_multipart=False)
            except (AlreadyExistsError, PreconditionError):
                return False
            except Exception as e:  # S3's 409 while another create is in flight
                if "ConditionalRequestConflict" not in str(e) or attempt == _CONFLICT_RETRIES:
                    raise
                time.sleep(0.05 * 2**attempt)  # that PUT decides: it succeeds (we lose) or fails
            else:
                return True
        return False

    def list(self, directory: str, *, start_after: str | None = None) -> list[FileInfo]:

        prefix = self.key(directory).rstrip("/") + "/"
        offset = prefix + start_after if start_after is not None else None
        out = []
        for chunk in obstore.list(self.store, prefix, offset=offset):
            for meta in chunk:
                name = meta["path"][len(prefix) :]
                if "/" in name or not name:
                    continue
                mtime = meta["last_modified"].timestamp() * 1000
                out.append(FileInfo(join(directory, name), name, int(meta["size"]), mtime))
        return sorted(out, key=lambda f: f.name)

    def exists(self, path: str) -> bool:

        try:
            obstore.head(self.store, self.key(path))
        except FileNotFoundError:
            return False
        return True

    def delete(self, path: str) -> None:

        with contextlib.suppress(FileNotFoundError):
            obstore.delete(self.store, self.key(path))

    def delete_tree(self, directory: str) -> None:

        prefix = self.key(directory).rstrip("/") + "/"
        for chunk in obstore.list(self.store, prefix):
            keys = [m["path"] for m in chunk]
            if keys:
                obstore.delete(self.store, keys)


def _bucket_base(location: str) -> str:
    scheme, rest = location.split("://", 1)
    return f"{scheme.lower()}://{rest.split('/', 1)[0]}"


def environment_options(location: str) -> dict[str, str]:
    """The storage settings of ``location``'s store kind found in the environment."""
    if is_local(location):
        return {}
    return {k: os.environ[k] for k in _ENV_KEYS[_kind(scheme_of(location))] if os.environ.get(k)}


_cache: dict[tuple[str, tuple[tuple[str, str], ...]], ObjectStoreFileIO] = {}
_cache_lock = threading.Lock()


def io_for(location: str, storage_options: Mapping[str, Any] | None = None) -> FileIO:
    """The FileIO of ``location``: local disk, or the object store bucket it names, configured
    by the environment and ``storage_options`` (which win)."""
    if is_local(location):
        return LOCAL
    scheme = scheme_of(location)
    if scheme not in OBJECT_SCHEMES:
        raise TabletsError(
            f"unsupported storage location {location!r} (scheme {scheme})",
            help="Use a local path or an s3://, gs:// or abfss:// URI.",
        )
    options = {**environment_options(location), **{str(k): str(v) for k, v in (storage_options or {}).items()}}
    key = (_bucket_base(location), tuple(sorted(options.items())))
    with _cache_lock:
        found = _cache.get(key)
        if found is None:
            found = _cache[key] = ObjectStoreFileIO(key[0], options)
        return found
