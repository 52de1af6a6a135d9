"""Effect of ``san.forbid_original``: SAN §3.1 and its reference take the plain argmax,
which may give back the masked token itself; ``forbid_original: true`` forbids that.

Per mask-predict iteration, for both settings on the same sentences, masks and model:
MER of the iteration's text to the input (``hardneg.text.mer``), the share of masked positions
whose token changed, the share of sentences whose text equals the input; and, through
``augment_frame`` with the default quality filter, how many rows are dropped and why; and the
same sentences through ``experiments/reference/san.yaml`` (MER per iteration).

    .venv/bin/python bench/san_forbid.py --mlm results/mlm/<corpus>/boot-<hash> \\
        --lexicon results/lexicon/<...>.parquet --n 300 --out bench/results/san-forbid.md

Sentences: wiki1m mirror lines from ``--first`` (1-based; default 11001, outside the quick
experiment's 4,000 corpus lines the bootstrap MLM was fitted on).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl
import torch

from hardneg.augment.san.lexicon import load_lexicon
from hardneg.augment.san.mask_predict import (
    MaskPredictor,
    SanConfig,
    _decode,
    _encode,
    augment_frame,
)
from hardneg.models.load import load_masked_lm
from hardneg.text.mer import mer

ROOT = Path(__file__).resolve().parents[1]
WIKI = ROOT.parent / "shared/mirror/datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt"


def measure(tok, model, mask_prob, texts: list[str], forbid: bool, seed: int) -> dict:
    cfg = SanConfig(forbid_original=forbid, seed=seed)
    pred = MaskPredictor(model, tok, mask_prob, cfg)
    sids = np.arange(len(texts))
    cur, _, _ = _encode(tok, texts, cfg.max_length)
    ref = _decode(tok, cur)
    rows = []
    for it in range(1, cfg.iterations + 1):
        new, masked = pred.iterate(cur, sids, it)
        n_masked = sum(len(m) for m in masked)
        n_changed = sum(int((old[m] != nw[m]).sum()) for old, nw, m in zip(cur, new, masked) if m)
        out = _decode(tok, new)
        rows.append(
            {
                "iteration": it,
                "masked": n_masked,
                "changed_share": n_changed / max(n_masked, 1),
                "mer_to_input": float(np.mean([mer(a, b) for a, b in zip(ref, out)])),
                "identical_share": float(np.mean([a == b for a, b in zip(ref, out)])),
            }
        )
        cur = new
    frame = pl.DataFrame({"id": list(range(len(texts))), "text": texts})
    shard = augment_frame(frame, pred)
    reasons = shard.filter(pl.col("status") == "dropped").group_by("reason").len().sort("reason")
    return {"forbid": forbid, "iterations": rows, "dropped": dict(reasons.iter_rows())}


def measure_reference(tok, model, mask_prob, texts: list[str], seed: int) -> list[str]:
    """The same sentences through experiments/reference/san.yaml's settings (replace all,
    retokenize, 300 characters, final period, no forbid, no quality filter)."""
    from hardneg.config import load_config

    raw = load_config([ROOT / "config.yaml", ROOT / "experiments/reference/san.yaml"])["san"]
    run = {k: v for k, v in raw.items() if k not in ("mlm", "chunk_rows", "threads", "gpus", "finish_workers")}
    cfg = SanConfig.from_dict({**run, "seed": seed})
    frame = pl.DataFrame({"id": list(range(len(texts))), "text": texts})
    shard = augment_frame(frame, MaskPredictor(model, tok, mask_prob, cfg))
    ok = shard.filter(pl.col("status") == "ok")
    out = []
    for it in range(1, cfg.iterations + 1):
        m = float(np.mean([mer(a, b) for a, b in zip(ok["iter0"], ok[f"iter{it}"])]))
        same = float(np.mean([a == b for a, b in zip(ok["iter0"], ok[f"iter{it}"])]))
        out.append(f"| reference overlay | {it} | – | – | {m:.3f} | {same:.1%} |")
    out.append(f"| reference overlay | rows kept | {ok.height}/{shard.height} | | | |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mlm", required=True, help="masked LM (folder, hub id or package:NAME)")
    ap.add_argument("--lexicon", required=True, help="lexicon Parquet built for that MLM's tokenizer")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--first", type=int, default=11001, help="first wiki1m mirror line (1-based)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="also write the markdown table here")
    args = ap.parse_args()
    torch.set_num_threads(1)
    lines = WIKI.read_text(encoding="utf-8").splitlines()[args.first - 1 : args.first - 1 + args.n]
    texts = [x.strip() for x in lines if x.strip()]
    tok, model = load_masked_lm(args.mlm, setting="--mlm", device="cpu")
    mask_prob = load_lexicon(args.lexicon, tokenizer=tok).get_column("mask_prob").to_numpy()
    out = [
        f"SAN forbid_original, MLM {args.mlm}, {len(texts)} wiki1m lines from {args.first}, seed {args.seed}",
        "",
        "| forbid_original | iteration | masked tokens | masked tokens changed | mean MER to input | text = input |",
        "|---|---|---|---|---|---|",
    ]
    drops = []
    for forbid in (False, True):
        res = measure(tok, model, mask_prob, texts, forbid, args.seed)
        for r in res["iterations"]:
            out.append(
                f"| {str(forbid).lower()} | {r['iteration']} | {r['masked']} | {r['changed_share']:.1%} "
                f"| {r['mer_to_input']:.3f} | {r['identical_share']:.1%} |"
            )
        drops.append(f"forbid_original {str(forbid).lower()}: dropped by the default quality filter {res['dropped'] or 'none'}")
    out += measure_reference(tok, model, mask_prob, texts, args.seed)
    text = "\n".join(out + [""] + drops) + "\n"
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
