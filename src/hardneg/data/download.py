"""Mirror-aware, resumable, verified downloads.

A download streams to ``<dest>.part`` (kept between attempts so a re-run resumes with an HTTP
Range request), with a sidecar ``<dest>.part.json`` recording the source URL, total size and the
server's validator (ETag / Last-Modified): a partial file is resumed only when its sidecar
matches, with ``If-Range`` so that a changed file comes back whole, and a 206 is appended only
when its ``Content-Range`` continues our bytes; a 416 whose ``bytes */N`` equals our size means
the partial file is complete. The file is checked against the announced length and, when the config gives one, the
expected sha256, and only then renamed onto ``<dest>``. A manifest beside the file records the
URL actually used and the checksum, so every number downstream traces back to exact bytes.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import http.client
import json
import logging
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from tqdm import tqdm

from hardneg.shards.io import write_json_atomic

log = logging.getLogger(__name__)
CHUNK = 1 << 20


class DownloadError(RuntimeError):
    """A download that failed for good; the message names the URL."""


def resolve_url(url: str, mirror: str | None) -> str:
    """Replace the scheme and host of ``url`` by ``mirror``.

    ``mirror`` may be an http(s) base URL, a ``file://`` URL or a local folder laid out like the
    upstream URL paths; the result is a URL (``file://`` for folders).
    """
    if not mirror:
        return url
    path = urlsplit(url).path
    if mirror.startswith(("http://", "https://", "file://")):
        return mirror.rstrip("/") + path
    folder = Path(os.path.expanduser(mirror)).resolve()
    return (folder / path.lstrip("/")).as_uri()


def _sha256_of(path: Path) -> hashlib._Hash:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    return h


class _Restart(Exception):
    """The partial file cannot be continued; it was discarded and the next request starts over."""


class _Unverifiable(ValueError):
    """The transfer's completeness cannot be checked; retrying would not change that."""


class _ChecksumMismatch(ValueError):
    def __init__(self, message: str, resumed: bool) -> None:
        super().__init__(message)
        self.resumed = resumed


@contextlib.contextmanager
def _dest_lock(dest: Path) -> Iterator[bool]:
    """Hold ``<dest>.lock`` (fcntl.flock, released by the kernel if the holder dies) so that two
    downloads into one destination never write one ``.part`` together; yield whether ``dest``
    was written by another download while this one waited. The holder removes the lock file
    before releasing it, so a waiter that wakes on a removed file locks the new one instead."""
    before = _identity(dest)
    path = dest.with_name(dest.name + ".lock")
    waited = False
    while True:
        lock = open(path, "a")  # noqa: SIM115 (held across the yield)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("%s: another download into it is running; waiting for it", dest)
            fcntl.flock(lock, fcntl.LOCK_EX)
            waited = True
        try:
            current = os.stat(path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(lock.fileno()).st_ino:
            break
        lock.close()  # locked a file its holder had removed: lock the current one
    try:
        after = _identity(dest)
        yield waited and after is not None and after != before
    finally:
        path.unlink(missing_ok=True)
        lock.close()  # closing releases the lock


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _sidecar(part: Path) -> Path:
    return part.with_name(part.name + ".json")


def _load_sidecar(part: Path) -> dict | None:
    try:
        return json.loads(_sidecar(part).read_text())
    except (OSError, ValueError):
        return None


def _discard(part: Path) -> None:
    part.unlink(missing_ok=True)
    _sidecar(part).unlink(missing_ok=True)


def _content_range(value: str | None) -> tuple[int | None, int | None]:
    """(first byte, complete length) of ``bytes S-E/N`` or ``bytes */N`` (RFC 9110 §14.4)."""
    m = re.fullmatch(r"\s*bytes\s+(?:(\d+)-\d+|\*)/(\d+|\*)\s*", value or "")
    if not m:
        return None, None
    return (int(m[1]) if m[1] else None), (int(m[2]) if m[2] != "*" else None)


def _copy(read, part: Path, have: int, total: int | None, name: str, progress: bool) -> hashlib._Hash:
    h = _sha256_of(part) if have else hashlib.sha256()
    with open(part, "ab" if have else "wb") as fout, tqdm(
        total=total, initial=have, unit="B", unit_scale=True, desc=name, disable=not progress
    ) as bar:
        for block in iter(lambda: read(CHUNK), b""):
            fout.write(block)
            h.update(block)
            bar.update(len(block))
    return h


def _fetch_file(source: str, part: Path, progress: bool) -> tuple[hashlib._Hash, bool]:
    src = Path(urllib.request.url2pathname(urlsplit(source).path))
    if not src.is_file():
        raise FileNotFoundError(f"no such file in mirror: {src}")
    st = src.stat()
    meta = {"source": source, "total": st.st_size, "mtime_ns": st.st_mtime_ns}
    have = part.stat().st_size if part.exists() else 0
    if have and (_load_sidecar(part) != meta or have > st.st_size):
        log.warning("%s: not a partial copy of %s (no or other sidecar); starting over", part, source)
        _discard(part)
        have = 0
    if not have:
        write_json_atomic(meta, _sidecar(part))
    with open(src, "rb") as fin:
        fin.seek(have)
        h = _copy(fin.read, part, have, st.st_size, src.name, progress)
    return h, bool(have)


def _validator(meta: dict) -> str | None:
    """The strong ETag, else Last-Modified, the server gave with the partial file's first bytes."""
    etag = meta.get("etag") or ""
    return etag if etag and not etag.startswith("W/") else meta.get("last_modified")


def _request(source: str, have: int = 0, validator: str | None = None) -> urllib.request.Request:
    request = urllib.request.Request(source, headers={"User-Agent": "hardneg"})
    if have:
        request.add_header("Range", f"bytes={have}-")
        if validator:  # a changed file is then sent whole (200), not appended (RFC 9110 §13.1.5)
            request.add_header("If-Range", validator)
    return request


def _confirm_length(source: str, part: Path, meta: dict, timeout_s: float) -> int | None:
    """The complete length of a body the server sent without ``Content-Length`` (ended by closing
    the connection, RFC 9112 §6.3: a cut connection looks the same). Asked with a Range request
    from our last byte: 416 ``bytes */N`` or 206 ``S-E/N`` tell N, a 200 its Content-Length;
    None when the server tells none of these."""
    have = part.stat().st_size
    try:
        resp = urllib.request.urlopen(_request(source, have, _validator(meta)), timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        _, total = _content_range(exc.headers.get("Content-Range"))
        exc.close()
        if exc.code == 416 and total is not None:
            return total
        raise
    with resp:
        status = getattr(resp, "status", 200)
        if status == 206:
            _, total = _content_range(resp.headers.get("Content-Range"))
        else:
            length = resp.headers.get("Content-Length")
            total = int(length) if length is not None else None
    return total


def _fetch_http(source: str, part: Path, timeout_s: float, progress: bool,
                checksum_known: bool = False) -> tuple[hashlib._Hash, bool]:
    have = part.stat().st_size if part.exists() else 0
    meta = _load_sidecar(part) if have else None
    if have and (meta is None or meta.get("source") != source or meta.get("total") is None
                 or have > meta["total"]):
        # Bytes of unknown origin (another mirror, version, or garbage): never append to them.
        log.warning("%s: no matching sidecar (source, size, validator); starting over", part)
        _discard(part)
        have, meta = 0, None
    if have and not _validator(meta) and not checksum_known:
        # Without ETag / Last-Modified, a file changed upstream to one of the same size would be
        # spliced onto our bytes; only an expected sha256 (checked at the end) proves identity.
        log.warning("%s: the server gave no validator (ETag, Last-Modified) and no sha256 is "
                    "expected, so the %d bytes of %s cannot be proved the same file; starting over",
                    part, have, source)
        _discard(part)
        have, meta = 0, None
    request = _request(source, have, _validator(meta) if have else None)
    try:
        resp = urllib.request.urlopen(request, timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        if exc.code != 416 or not have:
            raise
        _, total = _content_range(exc.headers.get("Content-Range"))
        exc.close()
        if total == have == meta["total"]:
            return _sha256_of(part), True  # every byte is already here: verify and finish
        _discard(part)
        raise _Restart(f"416: server has {total} bytes, the partial file {have}") from None
    with resp:
        status = getattr(resp, "status", 200)
        if have and status == 206:
            first, total = _content_range(resp.headers.get("Content-Range"))
            if first != have or total != meta["total"]:
                _discard(part)
                raise _Restart(f"206 with Content-Range {resp.headers.get('Content-Range')!r} does "
                               f"not continue byte {have} of {meta['total']}")
        else:
            if have:  # 200: the server ignored Range or the file changed (If-Range)
                log.warning("%s: server sent the whole file; starting over", source)
                _discard(part)
                have = 0
            length = resp.headers.get("Content-Length")
            total = int(length) if length is not None else None
            meta = {"source": source, "total": total, "etag": resp.headers.get("ETag"),
                    "last_modified": resp.headers.get("Last-Modified")}
            write_json_atomic(meta, _sidecar(part))
        # A chunked body cut short raises http.client.IncompleteRead here (a retry).
        h = _copy(resp.read, part, have, total, Path(urlsplit(source).path).name, progress)
        chunked = resp.headers.get("Transfer-Encoding", "").lower().endswith("chunked")
    if total is None and not chunked:
        total = _confirm_length(source, part, meta, timeout_s)
        if total is None and not checksum_known:
            size = part.stat().st_size
            _discard(part)
            raise _Unverifiable(
                f"the server sent {size} bytes without Content-Length and tells no length on a "
                "Range request: a cut connection cannot be told from the end of the file; give "
                "the file's sha256 (data.sha256 / --sha256) to accept it"
            )
        if total is not None:
            write_json_atomic(dict(meta, total=total), _sidecar(part))  # the next try resumes
    got = part.stat().st_size
    if total is not None and got != total:
        raise ConnectionError(
            f"truncated transfer: got {got} of {total} bytes (will resume)"
        )
    return h, bool(have)


def download(
    url: str,
    dest: str | Path,
    *,
    mirror: str | None = None,
    sha256: str | None = None,
    retries: int = 5,
    backoff_s: float = 2.0,
    timeout_s: float = 60.0,
    progress: bool = True,
    manifest: str | Path | None = None,
) -> dict:
    """Download ``url`` (via ``mirror`` if set) to ``dest``; return and write the manifest."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    source = resolve_url(url, mirror)
    with _dest_lock(dest) as finished_meanwhile:
        if finished_meanwhile:
            got = _sha256_of(dest).hexdigest()
            if not sha256 or got == sha256.lower():
                log.warning("%s: finished by another download while this one waited; reusing it",
                            dest)
                return _record(url, source, dest, got, sha256, manifest)
        return _download_locked(url, source, dest, sha256=sha256, retries=retries,
                                backoff_s=backoff_s, timeout_s=timeout_s, progress=progress,
                                manifest=manifest)


def _download_locked(url: str, source: str, dest: Path, *, sha256: str | None, retries: int,
                     backoff_s: float, timeout_s: float, progress: bool,
                     manifest: str | Path | None) -> dict:
    part = dest.with_name(dest.name + ".part")
    digest: str | None = None
    last_error: Exception | None = None
    attempt = restarts = 0
    mismatch_retried = False
    while True:
        try:
            if source.startswith("file://"):
                h, resumed = _fetch_file(source, part, progress)
            else:
                h, resumed = _fetch_http(source, part, timeout_s, progress, bool(sha256))
            got = h.hexdigest()
            if sha256 and got != sha256.lower():
                _discard(part)  # corrupt: never resume from these bytes
                raise _ChecksumMismatch(f"sha256 mismatch: expected {sha256}, got {got}", resumed)
            os.replace(part, dest)
            _sidecar(part).unlink(missing_ok=True)
            digest = got
            break
        except _Restart as exc:  # not a failed attempt: the next request starts from byte 0
            last_error = exc
            restarts += 1
            log.warning("download %s: %s; starting over", source, exc)
            if restarts <= 2:
                continue
            break
        except _ChecksumMismatch as exc:
            last_error = exc
            # A whole fresh transfer that mismatches is the server's file: retrying the same
            # bytes with backoff only delays the error. One fresh try if we had resumed.
            if exc.resumed and not mismatch_retried:
                mismatch_retried = True
                continue
            break
        except urllib.error.HTTPError as exc:
            last_error = exc
            if 400 <= exc.code < 500 and exc.code not in (408, 429):
                break  # a missing file will not appear by retrying
        except (FileNotFoundError, _Unverifiable) as exc:
            last_error = exc
            break
        except (OSError, ValueError, http.client.HTTPException) as exc:  # URLError, timeouts,
            # truncation (IncompleteRead): retry, resuming from the verified partial file
            last_error = exc
        if attempt >= retries:
            break
        wait = backoff_s * (2**attempt)
        attempt += 1
        log.warning("download %s failed (%s); retry %d/%d in %.1fs",
                    source, last_error, attempt, retries, wait)
        time.sleep(wait)
    if digest is None:
        via = f" via {source}" if source != url else ""
        raise DownloadError(f"could not download {url}{via}: {last_error}")
    return _record(url, source, dest, digest, sha256, manifest)


def _record(url: str, source: str, dest: Path, digest: str, sha256: str | None,
            manifest: str | Path | None) -> dict:
    record = {
        "url": url,
        "source": source,
        "file": dest.name,
        "bytes": dest.stat().st_size,
        "sha256": digest,
        "sha256_verified": bool(sha256),
    }
    if manifest is not None:
        write_json_atomic(record, manifest)
    return record

