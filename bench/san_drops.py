"""Why SAN rows are dropped: the reasons in SAN shards, split by what caused them.

For each quality reason it counts the rows whose *input* (``iter0``, as the MLM saw it) already
fails the same check (the drop is the input's, whatever the MLM), and for ``repeated_word`` (a
hardneg rule; SAN's paper names short inputs turning into punctuation, not repeats) whether the
repeated word is a symbol run (`" " "`) or a word (`was was was`), and how many rows fail
nothing else. Prints a Markdown table and a few examples per reason.

    .venv/bin/python bench/san_drops.py results/augment/san/<corpus>/k4-<key>/shard-*.parquet
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
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


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shards", nargs="+")
    ap.add_argument("--examples", type=int, default=3)
    args = ap.parse_args(argv)
    last = max((c for c in pl.read_parquet_schema(args.shards[0]) if c.startswith("iter")), key=lambda c: int(c[4:]))
    # the last iteration is the output the filter judged (``san`` is empty for dropped rows)
    frame = pl.concat([pl.read_parquet(p, columns=["id", "status", "reason", "iter0", last]) for p in args.shards]).rename({last: "out"})
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
            examples[reason] = [(r["iter0"], r["out"]) for r in rows[: args.examples]]
        print(f"| `{reason}` | {group.height} | {100 * group.height / n:.1f} | {own} | {notes} |")
    for reason, pairs in examples.items():
        print(f"\n{reason}:")
        for src, out in pairs:
            print(f"  {src[:120]!r}\n    -> {out[:120]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
