"""SAN's host side (everything but the model) and the quick experiment's SAN step, old code vs
new code side by side in one run (``python bench/san.py --host``; see bench/san.py).

The host side is timed with a stand-in predictor: ``_launch`` does the real host-side work of a
batch (counter-based mask draws, masked input, the row and position indices the device would get)
and returns predetermined token choices (a fixed random id -> word-piece table) instead of running
a model. What is timed is what a GPU node's CPU does per row: input checks, tokenization, the
per-iteration bookkeeping, decoding, the quality filter, the rows and the Parquet write.

"Old" is the SAN code of a git revision (default e0abc96, before the host-side work), loaded from
git into its own modules; "new" is this checkout.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]


def load_old(rev: str) -> types.ModuleType:
    """``hardneg.augment.san.mask_predict`` (and the ``quality`` module it uses) as of ``rev``."""
    def source(path: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], check=True, capture_output=True, text=True).stdout

    def module(name: str, text: str) -> types.ModuleType:
        spec = importlib.util.spec_from_loader(name, loader=None)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # dataclasses look their module up
        exec(compile(text, f"{rev}:{name}", "exec"), mod.__dict__)  # noqa: S102 (our own code at rev)
        return mod

    module("hardneg_old_quality", source("src/hardneg/augment/quality.py"))
    text = source("src/hardneg/augment/san/mask_predict.py").replace("from hardneg.augment.quality import", "from hardneg_old_quality import")
    return module("hardneg_old_mask_predict", text)


def stand_in(cls: type, vocab_size: int, seed: int = 0) -> type:
    """A ``cls`` whose ``_launch`` does the host-side work of the real one and picks each masked
    token from a fixed table (70% of ids -> a random word piece among ids 1996..7995, else the id
    itself), with no model: the chosen ids of a batch come back at once, as if from the device."""
    rng = np.random.default_rng(seed)
    table = np.arange(vocab_size)
    moved = rng.random(vocab_size) < 0.7
    table[moved] = rng.integers(1996, 7996, int(moved.sum()))
    table_t = torch.from_numpy(table)

    from hardneg.augment.san import rng as san_random

    class StandIn(cls):
        def _launch(self, ids, sent_ids, iteration):
            cfg = self.cfg
            _, length = ids.shape
            u = torch.from_numpy(san_random.uniform(cfg.seed, sent_ids, iteration, length, san_random.STREAM_MASK))
            mask = u < torch.from_numpy(self.mask_prob[ids.numpy()])
            if not bool(mask.any()):
                return mask, None
            inp = ids.clone()
            inp[mask] = self.tok.mask_token_id  # what the model would get
            rows = mask.any(dim=1)
            _sub = inp if bool(rows.all()) else inp[rows]
            _where = torch.nonzero(mask[rows].reshape(-1)).squeeze(1)
            return mask, table_t[ids[mask]]

    StandIn.__name__ = f"StandIn{cls.__name__}"
    return StandIn


def _tiny_model(vocab_size: int):
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)  # never run: the stand-in replaces it (MaskPredictor reads its vocabulary size)
    return BertForMaskedLM(BertConfig(vocab_size=vocab_size, hidden_size=8, num_hidden_layers=1,
                                      num_attention_heads=1, intermediate_size=8)).eval()  # fmt: skip


def host_rows(args, tok, probs, texts: list[str]) -> list[str]:
    """Host side alone, old vs new: rows/s per iteration per phase and end to end."""
    import polars as pl

    from hardneg.augment.san import mask_predict as new
    from hardneg.shards import write_shard

    old = load_old(args.old_rev)
    k = args.iterations
    model = _tiny_model(len(tok))
    frame = pl.DataFrame({"id": pl.Series(np.arange(len(texts)), dtype=pl.Int64), "text": texts})
    chunk = args.chunk_rows
    out = [
        (f"SAN host side alone (stand-in predictor, no model; see bench/san_host.py), {len(texts):,} wiki1m "
         f"sentences (the excerpt x{args.copies}), batch {args.host_batch}, chunk_rows {chunk}, {k} iterations, "
         f"{torch.get_num_threads()} torch threads, RAYON_NUM_THREADS={os.environ.get('RAYON_NUM_THREADS', 'unset')} "
         "(the Rust tokenizer's threads; 1 = its work counted once in CPU time) on this CPU. Unit: rows/s per iteration = rows x iterations / "
         "seconds (the GPU target's unit); CPU s = this process's CPU time (all its threads: the Rust tokenizer "
         "runs on several), less sensitive than wall time to other jobs on the machine. predict = input checks, tokenization, the K iterations' bookkeeping; "
         "finish = decode K+1 texts, quality filter, rows; end to end = `augment_chunks` + Parquet write. "
         f"Old = git {args.old_rev}; new = this checkout."),
        "",
        ("| code | finish_workers | predict s (CPU s) | finish s (CPU s) | end to end s | predict rows/s/it (per CPU s) | "
         "finish rows/s/it (per CPU s) | end to end rows/s/it | shard sha256 |"),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    digests = {}
    runs = [("old", old, 0), ("new", new, 0)] + [("new", new, w) for w in args.host_workers]
    for _, mod, _ in runs[:2]:  # warm-up (first calls of the tokenizer and numpy paths), untimed
        pred = stand_in(mod.MaskPredictor, len(tok))(model, tok, probs, mod.SanConfig(batch_size=args.host_batch, iterations=k))
        mod.augment_chunks([frame[:2000]], pred, overlap=False)
    for label, mod, workers in runs:
        pred = stand_in(mod.MaskPredictor, len(tok))(model, tok, probs, mod.SanConfig(batch_size=args.host_batch, iterations=k, seed=0))
        chunks = [frame[i : i + chunk] for i in range(0, frame.height, chunk)]
        t_pred = t_fin = c_pred = c_fin = float("nan")
        if workers == 0:  # the two halves one after the other
            t0, c0 = time.perf_counter(), time.process_time()
            preds = [mod.predict_frame(c, pred) for c in chunks]
            t_pred, c_pred = time.perf_counter() - t0, time.process_time() - c0
            t0, c0 = time.perf_counter(), time.process_time()
            for p in preds:
                mod.finish_frame(p, pred)
            t_fin, c_fin = time.perf_counter() - t0, time.process_time() - c0
            del preds
        path = Path(args.workdir) / f"san-host-{label}-{workers}.parquet"
        t0 = time.perf_counter()
        kw = {"finish_workers": workers} if workers else {}
        parts = mod.augment_chunks(iter(chunks), pred, overlap=False, **kw)
        write_shard(pl.concat(parts), path)
        t_e2e = time.perf_counter() - t0
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        digests[(label, workers)] = digest
        n = frame.height * k

        def rate(t, n=n):
            return "-" if np.isnan(t) else f"{n / t:,.0f}"

        def secs(t):
            return "-" if np.isnan(t) else f"{t:.2f}"

        def both(f, t, c):
            return "-" if np.isnan(t) else f"{f(t)} ({f(c)})"

        out.append(f"| {label} | {workers if label == 'new' else '- (in-thread)'} | {both(secs, t_pred, c_pred)} | "
                   f"{both(secs, t_fin, c_fin)} | {t_e2e:.2f} | {both(rate, t_pred, c_pred)} | {both(rate, t_fin, c_fin)} | "
                   f"{rate(t_e2e)} | {digest} |")
        print(out[-1], flush=True)
    out += ["", f"All shards byte-identical (old, new, every finish_workers): {len(set(digests.values())) == 1}."]
    return out


def quick_rows(args, texts: list[str]) -> list[str]:
    """The quick experiment's SAN step (a 2,000-row corpus shard, its bootstrap MLM, fp32, batch 64,
    4 iterations, ``augment_shard``) with the old and the new code, alternated."""
    import polars as pl

    from hardneg.augment.san import mask_predict as new
    from hardneg.shards import write_shard

    old = load_old(args.old_rev)
    work = Path(args.workdir)
    shard = work / "quick-shard.parquet"
    write_shard(pl.DataFrame({"id": pl.Series(np.arange(len(texts)), dtype=pl.Int64), "text": texts}), shard)
    out = [
        (f"The quick experiment's SAN step: `augment_shard` on {len(texts):,} wiki1m lines (a quick-experiment "
         f"shard has 2,000), MLM `{args.quick_mlm}`, its lexicon, fp32, batch 64, chunk_rows 8192, 4 iterations, "
         f"{torch.get_num_threads()} torch threads, RAYON_NUM_THREADS={os.environ.get('RAYON_NUM_THREADS', 'unset')}; old = git {args.old_rev}, new = this checkout, alternated "
         f"{args.quick_repeats} times (which runs first alternates)."),
        "",
        "| code | run | seconds | rows/s | shard sha256 |",
        "|---|---|---|---|---|",
    ]
    for r in range(args.quick_repeats):
        pair = (("old", old), ("new", new))
        for label, mod in pair if r % 2 == 0 else pair[::-1]:  # alternate which runs first
            path = work / f"quick-{label}.parquet"
            cfg = mod.SanConfig(seed=42)
            t0 = time.perf_counter()
            mod.augment_shard(shard, path, args.quick_mlm, args.quick_lexicon, cfg, device="cpu", progress=False)
            t = time.perf_counter() - t0
            out.append(f"| {label} | {r + 1} | {t:.2f} | {len(texts) / t:,.0f} | {hashlib.sha256(path.read_bytes()).hexdigest()[:16]} |")
            print(out[-1], flush=True)
    return out
