"""What a training job reads, as content digests: a resume continues only on the same inputs.

The resume state's folder is keyed by the settings' fingerprint, which names files but not their
content; a corpus or augmentation shard rebuilt between a kill and its re-run (a changed
``max_sentences``, a re-run augmenter) would otherwise be trained on from the old weights,
optimizer and step. Every file is digested by size + SHA-256, streamed (a shard or model is never
read into memory whole); a model folder by the sorted list of its files' digests. Parquet footers
are not used instead: their statistics are optional and do not bind the bytes of every value.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

CHUNK = 1 << 20  # bytes per read while hashing


def file_digest(path: str | Path) -> str:
    """``"<size>:<sha256 hex>"`` of one file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
            size += len(chunk)
    return f"{size}:{h.hexdigest()}"


def folder_digest(path: str | Path) -> str:
    """``"<total size>:<sha256>"`` over every regular file under ``path`` (relative path + digest,
    sorted), so a file added, removed, renamed or changed changes it."""
    root = Path(path)
    h = hashlib.sha256()
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            f = Path(dirpath) / name
            if not f.is_file():
                continue
            d = file_digest(f)
            total += int(d.partition(":")[0])
            h.update(f"{f.relative_to(root).as_posix()}\0{d}\n".encode())
    return f"{total}:{h.hexdigest()}"


def input_digests(corpus: Sequence[str | Path], augment: Mapping[str, Sequence[str | Path]],
                  models: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Label (``corpus[0]``, ``san[1]``, ``teachers[0]``) -> {"path", "digest"} of every input the
    job reads: the corpus shards, the augmentation shards of the columns it trains on, and each model
    given by a local folder (a hub id is named by the settings already, so it is left out)."""
    out: dict[str, dict[str, str]] = {}
    for i, p in enumerate(corpus):
        out[f"corpus[{i}]"] = {"path": str(p), "digest": file_digest(p)}
    for col in sorted(augment):
        for i, p in enumerate(augment[col]):
            out[f"{col}[{i}]"] = {"path": str(p), "digest": file_digest(p)}
    for label, model in models.items():
        if Path(model).is_dir():
            out[label] = {"path": str(model), "digest": folder_digest(model)}
    return out


def changed_inputs(old: Mapping[str, Mapping[str, str]] | None, new: Mapping[str, Mapping[str, str]]) -> list[str]:
    """What differs between two ``input_digests`` results, one phrase per input ([] when equal);
    a resume state that recorded no digests (``old`` None) differs as a whole."""
    if old is None:
        return ["it records no digest of its inputs, so they cannot be checked"]
    out = []
    for label in sorted(set(old) | set(new)):
        a, b = old.get(label), new.get(label)
        if a is None:
            out.append(f"input {label} {b['path']} was not read by the saved run")  # type: ignore[index]
        elif b is None:
            out.append(f"input {label} {a['path']} of the saved run is not read now")
        elif a["digest"] != b["digest"]:
            (sa, ha), (sb, hb) = a["digest"].split(":"), b["digest"].split(":")
            out.append(f"input {label} {b['path']} changed since it was saved ({sa} bytes, sha256 {ha[:12]} "
                       f"-> {sb} bytes, sha256 {hb[:12]})")
    return out
