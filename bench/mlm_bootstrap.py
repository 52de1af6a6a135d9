"""The SAN bootstrap MLM (``hardneg.augment.san.bootstrap_mlm``): held-out masked-token top-1/top-5
against training steps and CPU time, one row per setting, to pick the quick experiment's default.

Every setting is scored on the same held-out sentences (every 20th line of the mirror's wiki1m
excerpt by line number, first 500, never trained on, none in the STS/SICK evaluation sets) with the
same fixed masks (15% of tokens, all [MASK]). Time is ``time.process_time`` of this process (CPU
seconds, one thread: the machine is shared, wall time is not comparable), training steps
only (evaluations excluded).

    .venv/bin/python bench/mlm_bootstrap.py [--only NAME ...] [--out bench/results/mlm-bootstrap.md]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
MIRROR = ROOT.parent / "shared" / "mirror"
WIKI = "datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt"
SENTEVAL = "datasets/princeton-nlp/datasets-for-simcse/resolve/main/senteval.tar"

# name -> (what it tests, settings over the base); base = the quick experiment's old default
SETTINGS: dict[str, tuple[str, dict]] = {
    "old": ("quick corpus (3.8k train sentences), 2 top layers, lr 5e-4", {}),
    "mirror": ("every mirror line (11.3k train sentences)", {"text": "source_file"}),
    "mirror_lr1e-3_ub": ("mirror, lr 1e-3, unigram-initialised bias", {"text": "source_file", "lr": 1e-3, "unigram_bias": True}),
    "mirror_lr1e-3_ub_wwm": ("+ whole-word masking", {"text": "source_file", "lr": 1e-3, "unigram_bias": True, "whole_word": True}),
    "mirror_lr1e-3_ub_l4": ("mirror, lr 1e-3, unigram bias, 4 top layers", {"text": "source_file", "lr": 1e-3, "unigram_bias": True, "train_layers": 4}),
    "mirror_lr2e-3_ub_l0": ("mirror, lr 2e-3, unigram bias, head only", {"text": "source_file", "lr": 2e-3, "unigram_bias": True, "train_layers": 0}),
}


def eval_keys(tmp: Path) -> set[str]:
    """Match keys of the STS/SICK sentences (the corpus stage's leakage check), from the mirror's tar."""
    from hardneg.data.archive import extract_senteval
    from hardneg.data.leakage import evaluation_sentences

    out = tmp / "senteval"
    if not out.is_dir():
        extract_senteval(MIRROR / SENTEVAL, out)
    return set().union(*evaluation_sentences(out).values())


def main(argv: list[str]) -> int:
    from hardneg.augment.san.bootstrap_mlm import (
        BootstrapConfig,
        fit_mlm,
        load_for_bootstrap,
        read_sentences,
    )

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help=f"settings to run (default all): {', '.join(SETTINGS)}")
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--tmp", default="/tmp/mlm-bench")
    ap.add_argument("--save", default=None, help="folder: save each setting's trained MLM under it (for SAN runs)")
    ap.add_argument("--out", default=str(ROOT / "bench/results/mlm-bootstrap.md"))
    args = ap.parse_args(argv)
    tmp = Path(args.tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    # the quick experiment's bootstrap before this bench (settings name what they change)
    base = BootstrapConfig(steps=300, warmup_steps=20, lr=5e-4, train_layers=2, unigram_bias=False, text="corpus", threads=1)
    keys = eval_keys(tmp)
    mirror_ids, mirror_texts = read_sentences([], replace(base, text="source_file"), MIRROR / WIKI, keys)
    held = {k for k in mirror_ids if k % base.heldout_every == 0}
    held = set(sorted(held)[: base.heldout_max])
    # the quick corpus: its first 4,000 distinct lines (experiments/quick.yaml: corpus.max_sentences)
    seen: set[str] = set()
    quick = [(k, t) for k, t in zip(mirror_ids, mirror_texts, strict=True) if not (t in seen or seen.add(t))][:4000]
    quick += [(k, t) for k, t in zip(mirror_ids, mirror_texts, strict=True) if k in held and k > quick[-1][0]]

    rows = []
    results = tmp / "curves.jsonl"
    for name in args.only or list(SETTINGS):
        what, over = SETTINGS[name]
        cfg = replace(base, **over)
        ids, texts = (mirror_ids, mirror_texts) if cfg.text == "source_file" else ([k for k, _ in quick], [t for _, t in quick])
        tok, model = load_for_bootstrap(cfg, "cpu")
        curve: list[dict] = []
        clock = {"cpu": 0.0, "since": time.process_time()}

        def on_eval(step: int, m: dict, curve=curve, clock=clock, name=name) -> None:
            clock["cpu"] += time.process_time() - clock["since"]
            curve.append({"step": step, "cpu_s": round(clock["cpu"], 1), "top1": m["top1"], "top5": m["top5"]})
            print(name, curve[-1], flush=True)
            clock["since"] = time.process_time()

        clock["since"] = time.process_time()
        metrics = fit_mlm(model, tok, ids, texts, cfg, eval_every=args.eval_every, on_eval=on_eval, heldout_ids=held)
        curve[0]["cpu_s"] = 0.0  # before training: tokenizing and the first evaluation are not steps
        with results.open("a") as fh:
            fh.write(json.dumps({"name": name, "what": what, "train": metrics["train_sentences"], "heldout": metrics["heldout_sentences"],
                                 "masked": metrics["after"]["masked_tokens"], "unigram_top1": metrics["after"]["unigram_top1"], "curve": curve}) + "\n")
        rows.append((name, what, metrics, curve))
        if args.save:
            model.save_pretrained(Path(args.save) / name)
            tok.save_pretrained(Path(args.save) / name)

    lines = [
        (f"SAN bootstrap MLM (`{base.base}`, batch {base.batch_size}, 15% masking, warm-up 20 then cosine): held-out "
        f"masked-token accuracy on {rows[0][2]['heldout_sentences']} mirror sentences ({rows[0][2]['after']['masked_tokens']} masked tokens; "
        f"unigram baseline top-1 {rows[0][2]['after']['unigram_top1']}%, top-5 {rows[0][2]['after']['unigram_top5']}%). "
        "CPU s = `time.process_time` of the training steps (1 thread; a shared, busy machine)."),
        "",
        "| setting | what | step: top-1 / top-5 % (CPU s) |",
        "|---|---|---|",
    ]
    for name, what, _m, curve in rows:
        cells = ", ".join(f"{c['step']}: {c['top1']:.1f} / {c['top5']:.1f} ({c['cpu_s']:.0f})" for c in curve)
        lines.append(f"| {name} | {what} | {cells} |")
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    torch.set_num_threads(1)
    sys.exit(main(sys.argv[1:]))
