"""The corpus embeddings artifact: every corpus row encoded once, L2-normalised, cached on its own.

The artifact (``embeddings.npy`` float32 [rows, dim] in corpus order, and ``embeddings.json``)
is keyed by the corpus and the encoder settings only, so mining settings that differ share it.
Encoding runs over the distinct texts in exact-token-length groups (no padding) in a fixed order
(length, then first occurrence), so a row's batch mates are the same on every run with the same
``batch_size``. The batch size itself keys the artifact: a float32 matrix product's last bit
depends on the number of rows it holds, so another batch size gives vectors a few ulps apart.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hardneg.shards import atomic_path, read_manifest, write_json_atomic

log = logging.getLogger(__name__)

EMBEDDINGS = "embeddings.npy"
MANIFEST = "embeddings.json"


def texts_digest(ids: np.ndarray, texts: Sequence[str]) -> str:
    """sha256 of the (id, text) rows: ties an embeddings file to the corpus it was made from."""
    h = hashlib.sha256()
    for i, t in zip(ids.tolist(), texts):
        h.update(f"{i}\t{t}\n".encode())
    return h.hexdigest()


def _length_groups(encoder: Any, unique: list[str]) -> list[list[int]]:
    """Indices of ``unique`` grouped by exact token length, groups by length, members by position."""
    tokenize = getattr(encoder, "_tokenize", None)
    if tokenize is None:  # a folder only sentence-transformers computes: one group, its own batching
        return [list(range(len(unique)))]
    by_len: dict[int, list[int]] = {}
    for i, ids in enumerate(tokenize(unique)):
        by_len.setdefault(len(ids), []).append(i)
    return [by_len[n] for n in sorted(by_len)]


def encode_texts(encoder: Any, texts: Sequence[str], batch_size: int) -> np.ndarray:
    """float32 [len(texts), dim], L2-normalised, one encoding per distinct text."""
    unique = list(dict.fromkeys(texts))
    pos = {t: i for i, t in enumerate(unique)}
    out: np.ndarray | None = None
    for group in _length_groups(encoder, unique):
        vecs = np.asarray(encoder.encode([unique[i] for i in group], batch_size=batch_size), dtype=np.float32)
        if out is None:
            out = np.empty((len(unique), vecs.shape[1]), dtype=np.float32)
        out[group] = vecs
    if out is None:
        raise ValueError("nothing to encode: the corpus has no rows")
    norms = np.sqrt(np.square(out, dtype=np.float64).sum(axis=1, keepdims=True))
    if (norms == 0).any():
        raise ValueError(f"{int((norms == 0).sum())} sentence(s) encode to the zero vector: no cosine to rank by")
    unit = (out / norms).astype(np.float32)
    return unit[[pos[t] for t in texts]]


def write_embeddings(vectors: np.ndarray, manifest: dict[str, Any], out_dir: str | Path) -> Path:
    """Write ``embeddings.npy`` and its manifest atomically; return the folder."""
    out_dir = Path(out_dir)
    with atomic_path(out_dir / EMBEDDINGS) as tmp, open(tmp, "wb") as fh:
        np.save(fh, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
    write_json_atomic(manifest, out_dir / MANIFEST)
    return out_dir


def read_embeddings(path: str | Path, ids: np.ndarray, texts: Sequence[str]) -> tuple[np.ndarray, dict[str, Any]]:
    """The embeddings file ``path`` (or its folder) and manifest, checked against the corpus rows."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    npy = folder / EMBEDDINGS
    if not npy.exists():
        raise FileNotFoundError(f"embeddings not found: {npy} (made by the mine_embed rule / hardneg mine)")
    manifest = read_manifest(folder / MANIFEST)
    vectors = np.load(npy, allow_pickle=False)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ValueError(f"{npy}: {vectors.shape[0] if vectors.ndim else 0} rows for a corpus of {len(texts)}: "
                         f"made from another corpus; re-run the mine_embed rule")
    if manifest.get("corpus_sha256") != texts_digest(ids, texts):
        raise ValueError(f"{folder / MANIFEST}: corpus_sha256 differs from the corpus shards given: the embeddings "
                         f"are of another corpus; re-run the mine_embed rule")
    return vectors, manifest
