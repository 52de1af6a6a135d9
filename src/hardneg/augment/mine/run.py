"""Mine stage runners: the corpus embeddings (``run_embed``) and one mined shard per corpus shard
(``run_mine``).

Shared by the workflow's ``mine_embed`` / ``mine`` rules (workflow/scripts/mine*.py, thin
adapters) and the ``hardneg mine`` command (``mine_corpus``: both steps over a list of shards).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hardneg.augment.mine import encode, search, select, shard
from hardneg.augment.mine.settings import MineConfig
from hardneg.shards import read_shard, write_json_atomic, write_shard

log = logging.getLogger("hardneg.mine")


def _config(settings: Mapping | None) -> MineConfig:
    from hardneg.config import with_defaults

    return MineConfig.from_dict(with_defaults("mine", dict(settings or {})))


def read_corpus(corpus_shards: Sequence[str | Path]) -> tuple[np.ndarray, list[str]]:
    """(ids, texts) of every corpus row, shards in the given order."""
    if not corpus_shards:
        raise ValueError("mine: no corpus shards given")
    ids: list[int] = []
    texts: list[str] = []
    for path in corpus_shards:
        frame = read_shard(path, columns=["id", "text"])
        if frame["text"].null_count():
            raise ValueError(f"{path}: {frame['text'].null_count()} row(s) without text")
        ids += frame["id"].to_list()
        texts += frame["text"].to_list()
    arr = np.asarray(ids, dtype=np.int64)
    if len(np.unique(arr)) != len(arr):
        raise ValueError(f"mine: ids repeat across the corpus shards ({', '.join(map(str, corpus_shards))})")
    return arr, texts


def run_embed(corpus_shards: Sequence[str | Path], out_dir: str | Path, settings: Mapping | None = None,
              *, threads: int | None = None, show_progress: bool = False) -> dict[str, Any]:
    """Encode every corpus row with the ``mine`` section's encoder; write the embeddings artifact."""
    import torch

    from hardneg.encoders import load_encoder
    from hardneg.models.device import pick_device

    cfg = _config(settings)
    if threads:
        torch.set_num_threads(max(1, threads))
    ids, texts = read_corpus(corpus_shards)
    enc = load_encoder(cfg.encoder, pooler=cfg.pooler, max_length=cfg.max_length, device=cfg.device)
    t0, c0 = time.perf_counter(), time.process_time()
    vectors = encode.encode_texts(enc, texts, cfg.batch_size)
    log.info("encoded %d rows (%d distinct) in %.1f s wall, %.1f s CPU", len(texts), len(set(texts)),
             time.perf_counter() - t0, time.process_time() - c0)
    manifest = {
        "rows": len(texts), "distinct_texts": len(set(texts)), "dim": int(vectors.shape[1]),
        "corpus_sha256": encode.texts_digest(ids, texts), "corpus_shards": [Path(p).name for p in corpus_shards],
        "encoder": cfg.encoder, "pooler": getattr(enc, "pooler", cfg.pooler),
        "max_length": int(getattr(enc, "max_length", cfg.max_length)), "normalized": True,
        "device": str(pick_device(cfg.device)), "torch": torch.__version__,
    }  # fmt: skip
    encode.write_embeddings(vectors, manifest, out_dir)
    return manifest


def run_mine(embeddings: str | Path, corpus_shards: Sequence[str | Path], query_shard: str | Path,
             out_shard: str | Path, summary_out: str | Path, settings: Mapping | None = None, *, seed: int = 0,
             threads: int | None = None) -> dict[str, Any]:
    """Mine negatives for the rows of ``query_shard`` (one of ``corpus_shards``) among the whole
    corpus; write the shard and its summary (counts and provenance); return the summary."""
    import torch

    cfg = _config(settings)
    if threads:
        torch.set_num_threads(max(1, threads))
    ids, texts = read_corpus(corpus_shards)
    vectors, emb_manifest = encode.read_embeddings(embeddings, ids, texts)
    if emb_manifest.get("encoder") != cfg.encoder:
        raise ValueError(f"{embeddings}: embeddings of encoder {emb_manifest.get('encoder')!r}, but mine setting "
                         f"'encoder' is {cfg.encoder!r}: give the embeddings of that encoder")
    q = read_shard(query_shard, columns=["id", "text"])
    row_of = {int(i): n for n, i in enumerate(ids.tolist())}
    q_ids = q["id"].to_numpy().astype(np.int64)
    missing = [int(i) for i in q_ids if int(i) not in row_of]
    if missing:
        raise ValueError(f"{query_shard}: id {missing[0]} is not in the corpus shards the embeddings are of "
                         f"({len(missing)} such id(s))")
    q_rows = np.asarray([row_of[int(i)] for i in q_ids], dtype=np.int64)
    t0, c0 = time.perf_counter(), time.process_time()
    frame, sel = mine_rows(vectors, ids, texts, q_rows, cfg, seed)
    log.info("mined %d queries among %d rows in %.1f s wall, %.1f s CPU", len(q_rows), len(texts),
             time.perf_counter() - t0, time.process_time() - c0)
    summary = shard.summarize(frame, sel, cfg.num_negatives) | {
        "settings": cfg.provenance() | ({"seed": seed} if cfg.sampling_strategy == "random" else {}),
        "embeddings": {k: emb_manifest.get(k) for k in ("encoder", "pooler", "max_length", "dim", "corpus_sha256")},
        "candidates": len(set(texts)),
    }
    log.info("%s: %s", query_shard, {k: summary[k] for k in ("rows_in", "rows_out", "reasons")})
    write_shard(frame, out_shard)
    write_json_atomic(summary, summary_out)
    return summary


def mine_rows(vectors: np.ndarray, ids: np.ndarray, texts: list[str], q_rows: np.ndarray, cfg: MineConfig,
              seed: int) -> tuple[Any, select.Selection]:
    """The mined shard frame (and the selection) of corpus rows ``q_rows`` among all rows."""
    # the distinct texts are the candidates (first occurrence in corpus order): the sentence's own
    # text and its exact duplicates are one candidate, excluded as the positive
    first: dict[str, int] = {}
    for n, t in enumerate(texts):
        first.setdefault(t, n)
    unique_rows = np.fromiter(first.values(), dtype=np.int64, count=len(first))
    unique_pos = {t: p for p, t in enumerate(first)}
    q_texts = [texts[r] for r in q_rows]
    self_pos = np.asarray([unique_pos[t] for t in q_texts], dtype=np.int64)
    q_ids = ids[q_rows]
    scores, positions = search.top_neighbours(vectors[q_rows], vectors[unique_rows], cfg.window() + 1)
    sel = select.select(scores, positions, self_pos, q_ids, cfg, seed)
    frame = shard.build_frame(q_ids, q_texts, sel, scores, positions, ids[unique_rows],
                              [texts[r] for r in unique_rows])
    return frame, sel


def mine_corpus(corpus_shards: Sequence[str | Path], out_dir: str | Path, settings: Mapping | None = None, *,
                seed: int = 0, embeddings: str | Path | None = None, threads: int | None = None) -> dict[str, Any]:
    """Both steps over ``corpus_shards``: embeddings into ``embeddings`` (default
    ``out_dir/embeddings``; reused when its manifest matches the corpus), then ``out_dir/<shard
    name>`` and its ``.json`` per shard. Returns {shard name: summary}."""
    out_dir = Path(out_dir)
    emb = Path(embeddings) if embeddings else out_dir / "embeddings"
    if not (emb / encode.EMBEDDINGS).exists():
        run_embed(corpus_shards, emb, settings, threads=threads)
    out = {}
    for path in corpus_shards:
        name = Path(path).name
        out[name] = run_mine(emb, corpus_shards, path, out_dir / name, (out_dir / name).with_suffix(".json"),
                             settings, seed=seed, threads=threads)
    return out
