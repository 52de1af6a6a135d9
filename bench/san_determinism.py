"""SAN determinism on a GPU: how many rows change with the batch size.

    python bench/san_determinism.py --tokenizer DIR --mask-prob FILE.npy --corpus wiki1m_for_simcse.txt

bert-base-sized MLM (random weights); the first N sentences, K chained iterations at batch 1
(the reference) and at batch 8/64/1024, in fp32 and bf16; prints the rows whose final ids differ.
The promise this checks is written in hardneg.augment.san_key.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch


def rows_differing(make_predictor, enc, sids, iterations: int, batches=(1, 8, 64, 1024)) -> list[int]:
    """For each batch size after the first: rows whose final ids differ from the first batch size's
    run (same seed, so same masks). ``make_predictor(batch)`` builds the MaskPredictor."""
    ref, cells = None, []
    for batch in batches:
        p = make_predictor(batch)
        cur = enc
        for it in range(1, iterations + 1):
            cur, _ = p.iterate(cur, sids, it)
        if ref is None:
            ref = cur
        else:
            cells.append(sum(not np.array_equal(a, b) for a, b in zip(ref, cur)))
    return cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--mask-prob", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--sentences", type=int, default=512)
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--out", default=None)
    ap.add_argument("--rerun-check", type=int, default=0,
                    help="N: also run augment_chunks on N sentences 3 times (overlap off, on, on again) "
                         "and print whether the rows are identical")
    args = ap.parse_args()
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from hardneg.augment.san.mask_predict import MaskPredictor, SanConfig

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    tok = AutoTokenizer.from_pretrained(args.tokenizer)
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=tok.vocab_size)).eval().to(device)
    probs = np.load(args.mask_prob)
    lines = [t.strip() for t in Path(args.corpus).read_text(encoding="utf-8").splitlines() if t.strip()]
    enc = [np.asarray(s[:127] + s[-1:] if len(s) > 128 else s) for s in tok(lines[: args.sentences])["input_ids"]]
    sids = np.arange(len(enc))
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    out = [(f"SAN determinism on {name} (torch {torch.__version__}, CUDA {torch.version.cuda}), bert-base-sized "
           f"MLM (random weights): of {len(enc)} wiki1m sentences, rows whose iteration-{args.iterations} ids "
           "differ from the batch-1 run (same seed, same masks)."), "",
           "| precision | batch 8 | batch 64 | batch 1024 |", "|---|---|---|---|"]
    for precision in ("fp32", "bf16"):
        cells = rows_differing(
            lambda batch, precision=precision: MaskPredictor(
                model, tok, probs, SanConfig(batch_size=batch, iterations=args.iterations, seed=0,
                                             precision=precision)),
            enc, sids, args.iterations)
        out.append(f"| {precision} | " + " | ".join(str(c) for c in cells) + " |")
        print(out[-1], flush=True)
    if args.rerun_check:
        import polars as pl

        from hardneg.augment.san.mask_predict import augment_chunks

        texts = (lines * (args.rerun_check // len(lines) + 1))[: args.rerun_check]
        frame = pl.DataFrame({"id": pl.Series(range(len(texts)), dtype=pl.Int64), "text": texts})
        p = MaskPredictor(model, tok, probs, SanConfig(batch_size=1024, iterations=args.iterations, seed=0))
        runs = [pl.concat(augment_chunks((frame[i : i + 32768] for i in range(0, frame.height, 32768)), p,
                                         overlap=ov)) for ov in (False, True, True)]
        same = [runs[0].equals(r) for r in runs[1:]]
        out += ["", (f"augment_chunks on {len(texts):,} sentences ({p.precision}, batch 1024, chunk_rows 32768): "
                f"overlap off vs on identical: {same[0]}; a second run with overlap on identical: {same[1]}.")]
        print(out[-1], flush=True)
    text = "\n".join(out) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
