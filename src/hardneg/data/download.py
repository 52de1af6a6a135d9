"""Mirror-aware, resumable, verified downloads.

A download streams to ``<dest>.part`` (kept between attempts so a re-run resumes with an HTTP
Range request), is checked against the announced length and, when the config gives one, the
expected sha256, and only then renamed onto ``<dest>``. A manifest beside the file records the
URL actually used and the checksum, so every number downstream traces back to exact bytes.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import time
import urllib.error
import urllib.request
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


def _sha256_of(path: Path) -> "hashlib._Hash":
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    return h


def _fetch_once(source: str, part: Path, timeout_s: float, progress: bool) -> "hashlib._Hash":
    """One attempt: append to ``part`` from where it stopped; return the running sha256."""
    if source.startswith("file://"):
        src = Path(urllib.request.url2pathname(urlsplit(source).path))
        if not src.is_file():
            raise FileNotFoundError(f"no such file in mirror: {src}")
        total = src.stat().st_size
        have = part.stat().st_size if part.exists() else 0
        if have > total:
            part.unlink()
            have = 0
        h = _sha256_of(part) if have else hashlib.sha256()
        with open(src, "rb") as fin, open(part, "ab") as fout, tqdm(
            total=total, initial=have, unit="B", unit_scale=True, desc=src.name, disable=not progress
        ) as bar:
            fin.seek(have)
            for block in iter(lambda: fin.read(CHUNK), b""):
                fout.write(block)
                h.update(block)
                bar.update(len(block))
        return h

    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(source, headers={"User-Agent": "hardneg"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    with urllib.request.urlopen(request, timeout=timeout_s) as resp:
        status = getattr(resp, "status", 200)
        if have and status != 206:  # server ignored the Range header: start over
            have = 0
        length = resp.headers.get("Content-Length")
        total = have + int(length) if length is not None else None
        mode = "ab" if have else "wb"
        h = _sha256_of(part) if have else hashlib.sha256()
        with open(part, mode) as fout, tqdm(
            total=total, initial=have, unit="B", unit_scale=True,
            desc=Path(urlsplit(source).path).name, disable=not progress,
        ) as bar:
            while True:
                block = resp.read(CHUNK)
                if not block:
                    break
                fout.write(block)
                h.update(block)
                bar.update(len(block))
    if total is not None and part.stat().st_size != total:
        raise ConnectionError(
            f"truncated transfer: got {part.stat().st_size} of {total} bytes (will resume)"
        )
    return h


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
    part = dest.with_name(dest.name + ".part")
    digest: str | None = None
    last_error: Exception | None = None
    for attempt in range(retries + 1):
        try:
            got = _fetch_once(source, part, timeout_s, progress).hexdigest()
            if sha256 and got != sha256.lower():
                part.unlink(missing_ok=True)  # corrupt: never resume from these bytes
                raise ValueError(f"sha256 mismatch: expected {sha256}, got {got}")
            os.replace(part, dest)
            digest = got
            break
        except urllib.error.HTTPError as exc:
            last_error = exc
            if 400 <= exc.code < 500 and exc.code not in (408, 429):
                break  # a missing file will not appear by retrying
        except FileNotFoundError as exc:
            last_error = exc
            break
        except (OSError, ValueError, http.client.HTTPException) as exc:  # URLError, timeouts,
            # truncation (IncompleteRead), checksum mismatch: retry, resuming where sensible
            last_error = exc
        if attempt < retries:
            wait = backoff_s * (2**attempt)
            log.warning("download %s failed (%s); retry %d/%d in %.1fs",
                        source, last_error, attempt + 1, retries, wait)
            time.sleep(wait)
    if digest is None:
        via = f" via {source}" if source != url else ""
        raise DownloadError(f"could not download {url}{via}: {last_error}")
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

