"""Atomic, byte-reproducible Parquet and JSON outputs.

Every output is written to a temporary sibling and renamed into place, so an interrupted job
never leaves a file a later run could take for complete. Parquet files are written with fixed
settings (zstd, no wall-clock metadata, fixed row-group size) so the same rows give the same bytes.
"""

from __future__ import annotations

import contextlib
import fnmatch
import glob
import json
import os
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

# Fault injection (tests, docs/reliability.md): "PATTERN" or "PATTERN#N" SIGKILLs this process
# when the Nth output matching the fnmatch PATTERN is fully written but not yet renamed into place.
FAULT_ENV = "HARDNEG_FAULT_KILL"
_fault_hits = [0]

ROW_GROUP_SIZE = 65_536
COMPRESSION = "zstd"
COMPRESSION_LEVEL = 3


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temp path beside ``path``; rename it onto ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Temp files of a killed earlier write of this same output (one job writes one output):
    # remove them, or they pile up beside the shards.
    for stale in path.parent.glob(f".{glob.escape(path.name)}.*.part"):
        stale.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp_path, 0o666 & ~umask)  # mkstemp makes 0600; outputs are ordinary files
    try:
        yield tmp_path
        _fault_point(path)
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _fault_point(path: Path) -> None:
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    pattern, _, nth = spec.partition("#")
    if fnmatch.fnmatch(str(path), pattern):
        _fault_hits[0] += 1
        if _fault_hits[0] == int(nth or 1):
            os.kill(os.getpid(), signal.SIGKILL)


def write_shard(frame: pl.DataFrame | pa.Table, path: str | Path) -> Path:
    """Write a Parquet shard atomically and deterministically (zstd)."""
    table = frame.to_arrow() if isinstance(frame, pl.DataFrame) else frame
    # Drop schema metadata that could carry run-specific bytes (e.g. pandas index info).
    table = table.replace_schema_metadata(None)
    with atomic_path(path) as tmp:
        pq.write_table(
            table,
            tmp,
            compression=COMPRESSION,
            compression_level=COMPRESSION_LEVEL,
            row_group_size=ROW_GROUP_SIZE,
            write_statistics=True,
            use_dictionary=True,
            store_schema=True,
        )
    return Path(path)


def read_shard(path: str | Path, columns: list[str] | None = None) -> pl.DataFrame:
    """Read a shard with polars, naming the file in any error."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"shard not found: {path}")
    try:
        return pl.read_parquet(path, columns=columns)
    except Exception as exc:  # polars raises several types; re-raise with the file named
        raise ValueError(f"{path}: cannot read Parquet shard: {exc}") from exc


def write_json_atomic(obj: Any, path: str | Path) -> Path:
    """Write pretty, key-sorted JSON atomically (stable bytes for stable content)."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    return Path(path)


def write_manifest(manifest: dict, path: str | Path) -> Path:
    """Write a JSON manifest (counts, parameters, checksums) beside an artifact."""
    return write_json_atomic(manifest, path)


def read_manifest(path: str | Path) -> dict:
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"manifest not found: {path}") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: invalid JSON manifest: {exc}") from exc
