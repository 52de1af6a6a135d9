"""The SAN bootstrap MLM (``hardneg.augment.san.bootstrap_mlm``): held-out masked-token top-1/top-5
against training steps and CPU time, one row per setting, to pick the quick experiment's default.

Every setting is scored on the same held-out sentences (every 20th line of the mirror's wiki1m
excerpt by line number, first 500, never trained on, none in the STS/SICK evaluation sets) with the
same fixed masks (15% of tokens, all [MASK]). Time is ``time.process_time`` of this process (CPU
seconds, one thread: the machine is shared, wall time is not comparable), training steps
only (evaluations excluded).

    .venv/bin/python bench/mlm_bootstrap.py [--only NAME ...] [--out bench/results/mlm-bootstrap.md]

Where the default saturates (one longer run, an evaluation every 100 steps, 300 training
sentences scored beside the held-out ones with the same masking: a gap between them is
over-fitting, none is under-fitting):

    .venv/bin/python bench/mlm_bootstrap.py --saturation l4_long --evals 4 --train-eval 300
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
sys.path.insert(0, str(ROOT / "src"))
from hardneg.augment.san.bootstrap_mlm import BootstrapConfig

MIRROR = ROOT.parent / "shared" / "mirror"
WIKI = "datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt"
SENTEVAL = "datasets/princeton-nlp/datasets-for-simcse/resolve/main/senteval.tar"

# name -> (what it tests, settings over BASE); steps are chosen so that every row spends about the
# same CPU time (~200-250 CPU-s on one thread), so rows compare at a fixed budget
SETTINGS: dict[str, tuple[str, dict]] = {
    "tie": ("the tied decoder + BERT's new transform head before training, bias as HF creates it", {"steps": 0, "unigram_bias": False}),
    "quick_corpus_l2": ("quick corpus (3.8k sentences), 2 top layers, lr 5e-4, no unigram bias (the first bootstrap)",
                        {"text": "corpus", "train_layers": 2, "lr": 5e-4, "unigram_bias": False}),
    "l2": ("2 top layers", {"train_layers": 2}),
    "l4": ("4 top layers (the default)", {}),
    "l6": ("all 6 layers", {"train_layers": 6, "steps": 220}),
    "l0": ("head only", {"train_layers": 0, "lr": 2e-3, "steps": 520}),
    "l0_cache": ("head only, frozen encoder's outputs cached (static masks)", {"train_layers": 0, "lr": 2e-3, "cache_frozen": True, "steps": 1250}),
    "l2_cache": ("2 top layers, the 4 frozen layers' outputs cached (static masks)", {"train_layers": 2, "cache_frozen": True, "steps": 420}),
    "l4_wwm": ("4 top layers, whole-word masking", {"whole_word": True}),
    "l4_linear": ("4 top layers, linear decay", {"schedule": "linear"}),
    "l4_constant": ("4 top layers, constant lr after warm-up", {"schedule": "constant"}),
    "l4_b64": ("4 top layers, batch 64", {"batch_size": 64, "steps": 150}),
    "l4_b16": ("4 top layers, batch 16", {"batch_size": 16, "steps": 600}),
    # not at the fixed budget: where the default's curve flattens (--saturation)
    "l4_long": ("the default (4 top layers, lr 1e-3, cosine) run 5/3 as long", {"steps": 500}),
    "l4_1500": ("the default (4 top layers, lr 1e-3, cosine) run 5 times as long", {"steps": 1500}),
}
# the quick experiment's bootstrap (experiments/quick.yaml over the schema defaults), one thread
BASE = {"steps": 300, "warmup_steps": 20, "text": "source_file", "threads": 1}


def eval_keys(tmp: Path) -> set[str]:
    """Match keys of the STS/SICK sentences (the corpus stage's leakage check), from the mirror's tar."""
    from hardneg.data.archive import extract_senteval
    from hardneg.data.leakage import evaluation_sentences

    out = tmp / "senteval"
    if not out.is_dir():
        extract_senteval(MIRROR / SENTEVAL, out)
    return set().union(*evaluation_sentences(out).values())


def main(argv: list[str]) -> int:
    from hardneg.augment.san.bootstrap_mlm import load_for_bootstrap, read_sentences

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help=f"settings to run (default all): {', '.join(SETTINGS)}")
    ap.add_argument("--evals", type=int, default=3, help="held-out evaluations during each run (besides step 0 and the end)")
    ap.add_argument("--tmp", default="/tmp/mlm-bench")
    ap.add_argument("--save", default=None, help="folder: save each setting's trained MLM under it (for SAN runs)")
    ap.add_argument("--out", default=str(ROOT / "bench/results/mlm-bootstrap.md"))
    ap.add_argument("--plot", default=str(ROOT / "docs/img/mlm-bootstrap-top1.svg"), help="SVG of top-1 against CPU s ('' for none)")
    ap.add_argument("--from-curves", default=None, help="a curves.jsonl: only write the table and plot from it (last run of each setting)")
    ap.add_argument("--train-eval", type=int, default=0, help="also score this many training sentences at every evaluation")
    ap.add_argument("--saturation", default=None, metavar="NAME",
                    help="run one setting and write its every evaluation (held-out and training) to "
                         "bench/results/mlm-saturation.md and docs/img/mlm-saturation.svg")
    args = ap.parse_args(argv)
    if args.saturation:
        args.only = [args.saturation]
        args.out = str(ROOT / "bench/results/mlm-saturation.md") if args.out == ap.get_default("out") else args.out
        args.plot = str(ROOT / "docs/img/mlm-saturation.svg") if args.plot == ap.get_default("plot") else args.plot
    writer = write_saturation if args.saturation else write_outputs
    if args.from_curves:
        records = [r for r in latest(Path(args.from_curves)) if r["name"] in (args.only or SETTINGS)]
        writer(records, Path(args.out), Path(args.plot) if args.plot else None)
        return 0
    tmp = Path(args.tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    base = BootstrapConfig(**BASE)
    keys = eval_keys(tmp)
    mirror_ids, mirror_texts = read_sentences([], replace(base, text="source_file"), MIRROR / WIKI, keys)
    held = {k for k in mirror_ids if k % base.heldout_every == 0}
    held = set(sorted(held)[: base.heldout_max])
    # the quick corpus: its first 4,000 distinct lines (experiments/quick.yaml: corpus.max_sentences)
    seen: set[str] = set()
    quick = [(k, t) for k, t in zip(mirror_ids, mirror_texts, strict=True) if not (t in seen or seen.add(t))][:4000]
    quick += [(k, t) for k, t in zip(mirror_ids, mirror_texts, strict=True) if k in held and k > quick[-1][0]]

    records = []
    results = tmp / "curves.jsonl"
    for name in args.only or list(SETTINGS):
        what, over = SETTINGS[name]
        cfg = replace(base, **over)
        ids, texts = (mirror_ids, mirror_texts) if cfg.text == "source_file" else ([k for k, _ in quick], [t for _, t in quick])
        tok, model = load_for_bootstrap(cfg, "cpu")
        trained = [t for k, t in zip(ids, texts, strict=True) if k not in held][: args.train_eval]
        curve = run_timed(name, cfg, model, tok, ids, texts, held, args.evals, trained)
        record = {"name": name, "what": what, "steps": cfg.steps, "batch": cfg.batch_size, "lr": cfg.lr,
                  "train": len(ids) - len(held & set(ids)), "heldout": len(held & set(ids)), "masked": curve[-1]["masked"],
                  "unigram_top1": curve[-1]["unigram_top1"], "unigram_top5": curve[-1]["unigram_top5"],
                  "train_scored": len(trained), "curve": curve}
        with results.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        records.append(record)
        if args.save:
            model.save_pretrained(Path(args.save) / name)
            tok.save_pretrained(Path(args.save) / name)
    writer(records, Path(args.out), Path(args.plot) if args.plot else None)
    return 0


def run_timed(name: str, cfg, model, tok, ids: list[int], texts: list[str], held: set[int], evals: int,
              trained: list[str] = ()) -> list[dict]:
    """Fit with ``evals`` held-out evaluations between step 0 and the end; CPU seconds count the
    training steps only (the evaluations' CPU time is measured and left out). With ``trained``
    (training sentences), each evaluation scores them too, with the same fixed masks."""
    import hardneg.augment.san.bootstrap_mlm as boot

    clock = {"start": None, "eval": 0.0}
    plain = boot.evaluate_mlm
    train_seqs = tok(list(trained), truncation=True, max_length=cfg.max_length)["input_ids"] if trained else []
    on_train: dict = {}

    def timed_eval(model, tok, seqs, special, unigram_top, cfg):  # fit_mlm calls it through the module
        t = time.process_time()
        try:
            if train_seqs:
                on_train.update(plain(model, tok, train_seqs, special, unigram_top, cfg))
            return plain(model, tok, seqs, special, unigram_top, cfg)
        finally:
            clock["eval"] += time.process_time() - t

    curve: list[dict] = []

    def on_eval(step: int, m: dict) -> None:
        if clock["start"] is None:  # step 0: tokenizing and the first evaluation are not training
            clock["start"], clock["eval"] = time.process_time(), 0.0
        cpu = time.process_time() - clock["start"] - clock["eval"]
        curve.append({"step": step, "cpu_s": round(cpu, 1), "top1": m["top1"], "top5": m["top5"],
                      "masked": m["masked_tokens"], "unigram_top1": m["unigram_top1"], "unigram_top5": m["unigram_top5"]})
        if on_train:
            curve[-1] |= {"train_top1": on_train["top1"], "train_top5": on_train["top5"]}
        print(name, curve[-1], flush=True)

    boot.evaluate_mlm = timed_eval
    try:
        metrics = boot.fit_mlm(model, tok, ids, texts, cfg, eval_every=max(cfg.steps // (evals + 1), 1), on_eval=on_eval, heldout_ids=held)
    finally:
        boot.evaluate_mlm = plain
    if cfg.steps == 0:
        curve = curve[:1]
    curve[-1]["train_loss_last_20"] = metrics["final_loss_mean_last_20"]  # nats per masked token, 80/10/10 inputs
    return curve


def latest(path: Path) -> list[dict]:
    """The last record of each setting in a curves.jsonl, in SETTINGS order."""
    by_name = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        by_name[rec["name"]] = rec
    return [by_name[n] for n in SETTINGS if n in by_name]


def write_outputs(records: list[dict], out: Path, plot: Path | None) -> None:
    """The Markdown table (``out``) and, with ``plot``, the top-1 against CPU-seconds curves (SVG)."""
    first = records[0]
    lines = [
        (f"SAN bootstrap MLM (`{BootstrapConfig().base}`, 15% masking, warm-up 20 steps): held-out masked-token "
         f"accuracy on {first['heldout']} mirror sentences ({first['masked']} masked tokens; unigram baseline top-1 "
         f"{first['unigram_top1']}%). CPU s = `time.process_time` of the training steps (1 thread; a shared, busy machine)."),
        "",
        "| setting | what | steps x batch, lr | CPU s/step | last top-1 / top-5 % | step: top-1 / top-5 % (CPU s) |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        c = r["curve"]
        per = f"{c[-1]['cpu_s'] / c[-1]['step']:.2f}" if c[-1]["step"] else "-"
        cells = ", ".join(f"{e['step']}: {e['top1']:.1f} / {e['top5']:.1f} ({e['cpu_s']:.0f})" for e in c)
        lines.append(f"| {r['name']} | {r['what']} | {r['steps']} x {r['batch']}, {r['lr']:g} | {per} | "
                     f"**{c[-1]['top1']:.1f}** / {c[-1]['top5']:.1f} | {cells} |")
    text = "\n".join(lines) + "\n"
    print(text)
    out.write_text(text)
    if plot is None:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "mlm-bootstrap"  # stable element ids: the same curves, the same file
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for r in records:
        if r["steps"]:
            ax.plot([e["cpu_s"] for e in r["curve"]], [e["top1"] for e in r["curve"]], marker="o", ms=3, label=r["name"])
    ax.axhline(first["unigram_top1"], color="grey", ls=":", label="unigram baseline")
    ax.set_xlabel("CPU seconds of training (1 thread, time.process_time)")
    ax.set_ylabel("held-out masked-token top-1 %")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(plot, metadata={"Date": None})


def write_saturation(records: list[dict], out: Path, plot: Path | None) -> None:
    """One setting's every evaluation (held-out and, when scored, training sentences) as a Markdown
    table (``out``) and, with ``plot``, top-1/top-5 against steps and against CPU seconds (SVG)."""
    r = records[-1]
    c = r["curve"]
    has_train = "train_top1" in c[-1]
    lines = [
        (f"SAN bootstrap MLM, setting `{r['name']}` ({r['what']}): {r['steps']} steps x batch {r['batch']}, lr {r['lr']:g}, "
         f"{r['train']} training sentences ({r['steps'] * r['batch'] / r['train']:.1f} passes), held-out masked-token "
         f"accuracy on {r['heldout']} mirror sentences ({r['masked']} masked tokens; unigram baseline top-1 / top-5 "
         f"{r['unigram_top1']} / {r['unigram_top5']}%)"
         + (f", and on {r['train_scored']} training sentences with the same masking" if has_train else "")
         + ". CPU s = `time.process_time` of the training steps (1 thread; a shared, busy machine)."),
        "",
        "| step | CPU s | held-out top-1 % | held-out top-5 % |" + (" training top-1 % | training top-5 % |" if has_train else ""),
        "|---|---|---|---|" + ("---|---|" if has_train else ""),
    ]
    for e in c:
        row = f"| {e['step']} | {e['cpu_s']:.0f} | {e['top1']:.1f} | {e['top5']:.1f} |"
        lines.append(row + (f" {e['train_top1']:.1f} | {e['train_top5']:.1f} |" if has_train else ""))
    if c[-1].get("train_loss_last_20") is not None:
        lines += ["", f"Training loss, mean of the last 20 steps: {c[-1]['train_loss_last_20']} nats per masked token."]
    text = "\n".join(lines) + "\n"
    print(text)
    out.write_text(text)
    if plot is None:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "mlm-saturation"  # stable element ids: the same curves, the same file
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), sharey=True)
    for ax, x, label in ((axes[0], "step", "training steps (batch 32)"), (axes[1], "cpu_s", "CPU seconds of training (1 thread)")):
        for key, name, style in (("top1", "held-out top-1", "-"), ("top5", "held-out top-5", "-"),
                                 ("train_top1", "training top-1", "--"), ("train_top5", "training top-5", "--")):
            if key in c[-1]:
                ax.plot([e[x] for e in c], [e[key] for e in c], style, marker="o", ms=3, label=name)
        ax.axhline(r["unigram_top1"], color="grey", ls=":", label="unigram top-1")
        ax.axhline(r["unigram_top5"], color="grey", ls="-.", label="unigram top-5")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("masked-token accuracy %")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(plot, metadata={"Date": None})


if __name__ == "__main__":
    torch.set_num_threads(1)
    sys.exit(main(sys.argv[1:]))
