"""Why SAN rows are dropped: the reasons in SAN shards, split by what caused them.

For each quality reason it counts the rows whose *input* (``iter0``, as the MLM saw it) already
fails the same check (the drop is the input's, whatever the MLM), and for ``repeated_word`` (a
hardneg rule; SAN's paper names short inputs turning into punctuation, not repeats) whether the
repeated word is a symbol run (`" " "`) or a word (`was was was`), and how many rows fail
nothing else. Prints a Markdown table and a few examples per reason.

    .venv/bin/python bench/san_drops.py results/augment/san/<corpus>/k4-<key>/shard-*.parquet

``--compare`` runs SAN itself on corpus shards with the plain argmax and with the optional decoding
rules (``san.same_kind``, ``san.forbid_adjacent``: hardneg.augment.san.fill), then prints kept
share and drops per reason for each, and the same rows' outputs side by side (CPU time per run):

    .venv/bin/python bench/san_drops.py --compare results/corpus/<quick>/shard-*.parquet \
        --mlm results/mlm/<quick>/boot-<key> --lexicon results/lexicon/<key>/lexicon.parquet --seed 42
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from hardneg.augment.inspect import mark_changes
from hardneg.augment.quality import QualityConfig, output_reason

_ALNUM = re.compile(r"[^\W_]")


def longest_run_word(text: str) -> str:
    """The word of the longest back-to-back run (case-insensitive)."""
    words = text.lower().split()
    best, best_word, run = 1, words[0] if words else "", 1
    for i in range(1, len(words)):
        run = run + 1 if words[i] == words[i - 1] else 1
        if run > best:
            best, best_word = run, words[i]
    return best_word


# --compare: the settings over SanConfig's defaults (SAN's plain argmax first)
VARIANTS: dict[str, dict] = {
    "argmax": {},
    "same_kind": {"same_kind": True},
    "forbid_adjacent": {"forbid_adjacent": True},
    "same_kind + forbid_adjacent": {"same_kind": True, "forbid_adjacent": True},
}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shards", nargs="+", help="SAN shards (or, with --compare, corpus shards)")
    ap.add_argument("--examples", type=int, default=3)
    ap.add_argument("--compare", action="store_true", help="run SAN on the corpus shards given, once per variant")
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS), help=f"--compare: which of {list(VARIANTS)}")
    ap.add_argument("--mlm", help="--compare: the MLM folder (san.mlm)")
    ap.add_argument("--lexicon", help="--compare: the lexicon Parquet")
    ap.add_argument("--seed", type=int, default=42, help="--compare: SAN seed (the quick experiment's: 42)")
    ap.add_argument("--tmp", default="/tmp/san-drops", help="--compare: where the SAN shards go")
    ap.add_argument("--out", default=None, help="--compare: also write the Markdown here")
    ap.add_argument("--reuse", action="store_true", help="--compare: read a variant's shards from --tmp where they exist (CPU s then counts the rest)")
    ap.add_argument("--argmax-shards", nargs="*", default=None,
                    help="--compare: SAN shards already made with the plain argmax (same MLM, lexicon, seed): read, not run")
    args = ap.parse_args(argv)
    if args.compare:
        return compare(args)
    return report(args.shards, args.examples)


def read_outputs(shards: list[str]) -> pl.DataFrame:
    """id, status, reason, iter0 and the last iteration (``out``) of SAN shards."""
    last = max((c for c in pl.read_parquet_schema(shards[0]) if c.startswith("iter")), key=lambda c: int(c[4:]))
    # the last iteration is the output the filter judged (``san`` is empty for dropped rows)
    return pl.concat([pl.read_parquet(p, columns=["id", "status", "reason", "iter0", last]) for p in shards]).rename({last: "out"})


def compare(args) -> int:
    """SAN on the corpus shards once per variant; kept share, reasons, and examples side by side."""
    import time

    import torch

    from hardneg.augment.san.mask_predict import SanConfig, augment_shard

    torch.set_num_threads(1)
    tmp = Path(args.tmp)
    outs: dict[str, pl.DataFrame] = {}
    lines = [(f"SAN on {len(args.shards)} corpus shard(s), MLM `{args.mlm}`, seed {args.seed}, fp32, 4 iterations, "
             "quality filter at its defaults; CPU s = `time.process_time` of SAN (1 thread; a shared, busy machine)."), "",
             "| decoding | rows | kept | kept % | dropped by reason | CPU s |", "|---|---|---|---|---|---|"]
    for name in args.variants:
        cfg = SanConfig(seed=args.seed, precision="fp32", **VARIANTS[name])
        paths = []
        t = time.process_time()
        given = name == "argmax" and args.argmax_shards
        for i, shard in enumerate(args.shards):
            if given:
                break
            out = tmp / name.replace(" + ", "+") / f"shard-{i:03d}.parquet"
            out.parent.mkdir(parents=True, exist_ok=True)
            if not (args.reuse and out.exists()):
                augment_shard(shard, out, args.mlm, args.lexicon, cfg, device="cpu", progress=False)
            paths.append(str(out))
        cpu = time.process_time() - t
        frame = read_outputs(args.argmax_shards if given else paths)
        outs[name] = frame
        kept = frame.filter(pl.col("status") == "ok").height
        reasons = frame.filter(pl.col("status") != "ok").group_by("reason").len().sort(["len", "reason"], descending=[True, False])
        why = ", ".join(f"{r} {n}" for r, n in reasons.iter_rows())
        lines.append(f"| {name} | {frame.height} | {kept} | {100 * kept / frame.height:.1f} | {why} | "
                     f"{'(given)' if given else f'{cpu:.0f}'} |")
        print(lines[-1], flush=True)
    first, *rest = list(outs)
    if rest:
        lines += ["", (f"The first {args.examples} rows of at least 8 words, each variant's 4th iteration "
                       "(status in brackets, words that differ from the input [marked]):"), ""]
        base = outs[first]
        picked = base.filter(pl.col("iter0").str.split(" ").list.len() >= 8).head(args.examples)["id"].to_list()
        for rid in picked:
            row = base.filter(pl.col("id") == rid).row(0, named=True)
            lines.append(f"- input: {row['iter0']}")
            for name, frame in outs.items():
                r = frame.filter(pl.col("id") == rid).row(0, named=True)
                lines.append(f"  - {name} [{r['status']}{': ' + r['reason'] if r['reason'] else ''}]: "
                             f"{mark_changes(row['iter0'], r['out'])}")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


def report(shards: list[str], n_examples: int) -> int:
    frame = read_outputs(shards)
    cfg = QualityConfig()
    no_identical = replace(cfg, reject_identical=False)
    no_repeat = replace(cfg, max_repeat_run=0)
    n = frame.height
    kept = frame.filter(pl.col("status") == "ok").height
    print(f"{n} rows, {kept} kept ({100 * kept / n:.1f}%)\n")
    print("| reason | rows | % of rows | input fails the same check | notes |")
    print("|---|---|---|---|---|")
    examples: dict[str, list[tuple[str, str]]] = {}
    for (reason,), group in sorted(frame.filter(pl.col("status") != "ok").group_by(["reason"]), key=lambda g: -g[1].height):
        rows = group.iter_rows(named=True)
        own = notes = ""
        if reason.startswith("quality:"):
            check = reason.split(":", 1)[1]
            rows = list(rows)
            own_n = sum(output_reason(r["iter0"], r["iter0"], no_identical) == check for r in rows)
            own = str(own_n)
            if check == "repeated_word":
                sym = sum(not _ALNUM.search(longest_run_word(r["out"])) for r in rows)
                alone = sum(output_reason(r["iter0"], r["out"], no_repeat) is None for r in rows)
                notes = f"repeated symbol {sym}, repeated word {len(rows) - sym}; {alone} fail no other check"
            examples[reason] = [(r["iter0"], r["out"]) for r in rows[:n_examples]]
        print(f"| `{reason}` | {group.height} | {100 * group.height / n:.1f} | {own} | {notes} |")
    for reason, pairs in examples.items():
        print(f"\n{reason}:")
        for src, out in pairs:
            print(f"  {src[:120]!r}\n    -> {out[:120]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
