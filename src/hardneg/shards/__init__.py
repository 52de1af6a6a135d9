"""Parquet shard I/O: atomic writes, deterministic encoding, JSON manifests."""

from hardneg.shards.io import (
    atomic_path,
    read_manifest,
    read_shard,
    write_json_atomic,
    write_manifest,
    write_shard,
)

__all__ = [
    "atomic_path",
    "read_manifest",
    "read_shard",
    "write_json_atomic",
    "write_manifest",
    "write_shard",
]
