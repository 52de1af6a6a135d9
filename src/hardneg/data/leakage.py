"""Training/evaluation leakage: which corpus sentences also occur in the evaluation data.

SentEval's STS text is Moses-tokenised and lower-cased, the corpus is raw; both are reduced to
lower-cased alphanumeric word sequences before comparing, so "Isn't it?" matches "isn 't it ?".
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def match_key(sentence: str) -> str:
    """Lower-cased alphanumeric words joined by single spaces (tokenisation-insensitive)."""
    return " ".join(_WORD.findall(sentence.lower()))


def _sts_year_sentences(folder: Path) -> set[str]:
    keys: set[str] = set()
    for f in sorted(folder.glob("STS.input.*.txt")):
        for line in f.read_text(encoding="utf-8").splitlines():
            for s in line.split("\t")[:2]:
                keys.add(match_key(s))
    return keys


def evaluation_sentences(senteval_dir: str | Path) -> dict[str, set[str]]:
    """Match keys of every sentence in the STS12-16, STS-B (all splits) and SICK files."""
    root = Path(senteval_dir)
    out: dict[str, set[str]] = {}
    for year in range(12, 17):
        folder = root / "STS" / f"STS{year}-en-test"
        if folder.is_dir():
            out[f"STS{year}"] = _sts_year_sentences(folder)
    stsb = root / "STS" / "STSBenchmark"
    if stsb.is_dir():
        keys: set[str] = set()
        for f in sorted(stsb.glob("sts-*.csv")):
            for line in f.read_text(encoding="utf-8").splitlines():
                fields = line.split("\t")
                keys.update(match_key(s) for s in fields[5:7])
        out["STSBenchmark"] = keys
    sick = root / "SICK"
    if sick.is_dir():
        keys = set()
        for f in sorted(sick.glob("SICK_*.txt")):
            with open(f, encoding="utf-8", newline="") as fh:
                for row in csv.DictReader(fh, delimiter="\t"):
                    keys.add(match_key(row["sentence_A"]))
                    keys.add(match_key(row["sentence_B"]))
        out["SICKRelatedness"] = keys
    for keys in out.values():
        keys.discard("")
    return out
