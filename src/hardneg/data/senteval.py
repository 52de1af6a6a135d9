"""Readers for the SentEval STS data (STS12-16, STS Benchmark, SICK-R) in SentEval's folder layout.

The layout is the one inside ``senteval.tar`` (SimCSE's copy of SentEval ``data/downstream``)::

    STS/STS12-en-test/STS.input.<subset>.txt  STS.gs.<subset>.txt   (s1<TAB>s2 / one score a line)
    STS/STSBenchmark/sts-{train,dev,test}.csv                       (genre, file, year, id, score, s1, s2)
    SICK/SICK_{train,trial,test_annotated}.txt                      (header; id, s1, s2, score, label)

Conventions follow SentEval (see notes/reference-implementations.md): sentences are split on
whitespace and re-joined with one space; STS pairs whose gold line is empty are unscored and are
not part of the test set (STS15/16 release more input lines than scored ones).
"""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl

log = logging.getLogger(__name__)

STS_YEARS = ("STS12", "STS13", "STS14", "STS15", "STS16")
STS_DATASETS = (*STS_YEARS, "STSBenchmark", "SICKRelatedness")

# SentEval's fixed subset lists (STS13 has no SMT subset: licence).
STS_SUBSETS: dict[str, tuple[str, ...]] = {
    "STS12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "STS13": ("FNWN", "headlines", "OnWN"),
    "STS14": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    "STS15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "STS16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}

# Gold-score scales: STS 0-5, SICK relatedness 1-5 (Marelli et al., 2014).
SCORE_RANGE: dict[str, tuple[float, float]] = {
    **{name: (0.0, 5.0) for name in STS_YEARS},
    "STSBenchmark": (0.0, 5.0),
    "SICKRelatedness": (1.0, 5.0),
}

_STSB_FILES = {"train": "sts-train.csv", "dev": "sts-dev.csv", "test": "sts-test.csv"}
# SentEval uses SICK_trial as the dev set.
_SICK_FILES = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}

SCHEMA = {
    "dataset": pl.String,
    "subset": pl.String,
    "pair_index": pl.Int64,
    "sentence1": pl.String,
    "sentence2": pl.String,
    "score": pl.Float64,
}
SOURCE_SCHEMA = {"file": pl.String, "line": pl.Int64}


def required_files() -> list[str]:
    """Every file the readers below open, relative to the SentEval folder (for the extractor)."""
    files = [f"STS/{year}-en-test/STS.{kind}.{subset}.txt"
             for year, subsets in STS_SUBSETS.items() for subset in subsets for kind in ("input", "gs")]
    files += [f"STS/STSBenchmark/{name}" for name in _STSB_FILES.values()]
    files += [f"SICK/{name}" for name in _SICK_FILES.values()]
    return files


def check_senteval_dir(senteval_dir: str | Path) -> Path:
    """Raise a clear error unless ``senteval_dir`` holds every file the readers use."""
    root = Path(senteval_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"SentEval folder not found: {root}")
    missing = [f for f in required_files() if not (root / f).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{root}: not an extracted senteval.tar (missing {', '.join(missing[:3])}"
            + (f" and {len(missing) - 3} more)" if len(missing) > 3 else ")")
        )
    return root


def _norm(text: str) -> str:
    # SentEval: s.split() then ' '.join(...) in the batcher.
    return " ".join(text.split())


def _read_lines(path: Path) -> list[str]:
    if not path.is_file():
        raise FileNotFoundError(f"SentEval file not found: {path}")
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not valid UTF-8 ({exc})") from exc


def _parse_score(raw: str, path: Path, lineno: int, dataset: str) -> float:
    try:
        score = float(raw)
    except ValueError:
        raise ValueError(f"{path}:{lineno}: gold score {raw!r} is not a number") from None
    lo, hi = SCORE_RANGE[dataset]
    if not (lo <= score <= hi):  # also rejects NaN
        raise ValueError(
            f"{path}:{lineno}: gold score {score} outside the {dataset} scale [{lo}, {hi}]"
        )
    return score


def _sentence(raw: str, path: Path, lineno: int, field: str) -> str:
    text = _norm(raw)
    if not text:
        raise ValueError(f"{path}:{lineno}: {field} is empty")
    return text


def _read_sts_year(root: Path, dataset: str) -> list[tuple]:
    folder = root / "STS" / f"{dataset}-en-test"
    if not folder.is_dir():
        raise FileNotFoundError(f"{dataset}: folder not found: {folder}")
    rows: list[tuple] = []
    for subset in STS_SUBSETS[dataset]:
        inp = folder / f"STS.input.{subset}.txt"
        gs = folder / f"STS.gs.{subset}.txt"
        in_lines, gs_lines = _read_lines(inp), _read_lines(gs)
        if len(in_lines) != len(gs_lines):
            raise ValueError(
                f"{gs}: {len(gs_lines)} gold lines but {inp.name} has {len(in_lines)} pairs"
            )
        unscored = 0
        for lineno, (pair, gold) in enumerate(zip(in_lines, gs_lines), start=1):
            if not gold.strip():
                unscored += 1  # SentEval: not part of the test set
                continue
            fields = pair.split("\t")
            if len(fields) < 2:
                raise ValueError(f"{inp}:{lineno}: expected 2 tab-separated sentences, got {len(fields)} field(s)")
            score = _parse_score(gold.strip(), gs, lineno, dataset)
            s1 = _sentence(fields[0], inp, lineno, "sentence 1")
            s2 = _sentence(fields[1], inp, lineno, "sentence 2")
            rows.append((subset, s1, s2, score, str(inp), lineno))
        if unscored:
            log.debug("%s/%s: %d unscored pairs (empty gold line) are not in the test set", dataset, subset, unscored)
    return rows


def _read_stsb(root: Path, split: str) -> list[tuple]:
    path = root / "STS" / "STSBenchmark" / _STSB_FILES[split]
    rows = []
    for lineno, line in enumerate(_read_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 7:
            raise ValueError(f"{path}:{lineno}: expected at least 7 tab-separated fields, got {len(fields)}")
        score = _parse_score(fields[4].strip(), path, lineno, "STSBenchmark")
        s1 = _sentence(fields[5], path, lineno, "sentence 1 (field 6)")
        s2 = _sentence(fields[6], path, lineno, "sentence 2 (field 7)")
        rows.append((fields[0].strip(), s1, s2, score, str(path), lineno))
    return rows


def _read_sick(root: Path, split: str) -> list[tuple]:
    path = root / "SICK" / _SICK_FILES[split]
    lines = _read_lines(path)
    if not lines or not lines[0].startswith("pair_ID"):
        raise ValueError(f"{path}:1: expected the SICK header line starting with 'pair_ID'")
    rows = []
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 4:
            raise ValueError(f"{path}:{lineno}: expected at least 4 tab-separated fields, got {len(fields)}")
        score = _parse_score(fields[3].strip(), path, lineno, "SICKRelatedness")
        s1 = _sentence(fields[1], path, lineno, "sentence_A")
        s2 = _sentence(fields[2], path, lineno, "sentence_B")
        rows.append(("SICK", s1, s2, score, str(path), lineno))
    return rows


def load_pairs(
    senteval_dir: str | Path,
    dataset: str,
    split: str = "test",
    *,
    with_source: bool = False,
) -> pl.DataFrame:
    """Scored pairs of one dataset/split as a DataFrame.

    Columns: dataset, subset, pair_index (0-based within dataset+split), sentence1, sentence2,
    score (float64); with ``with_source`` also ``file`` and ``line`` (1-based) for tracing a pair
    back to its source line. STS12-16 have only a test split; STS-B and SICK-R have train/dev/test.
    """
    root = Path(senteval_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"SentEval folder not found: {root}")
    if dataset not in STS_DATASETS:
        raise ValueError(f"unknown STS dataset {dataset!r} (known: {', '.join(STS_DATASETS)})")
    if dataset in STS_YEARS:
        if split != "test":
            raise ValueError(f"{dataset} has only a 'test' split (got split={split!r})")
        rows = _read_sts_year(root, dataset)
    else:
        if split not in _STSB_FILES:
            raise ValueError(f"{dataset}: split must be train, dev or test (got {split!r})")
        rows = _read_stsb(root, split) if dataset == "STSBenchmark" else _read_sick(root, split)
    if not rows:
        raise ValueError(f"{dataset} {split}: no scored pairs found under {root}")
    subset, s1, s2, score, files, lines = (list(c) for c in zip(*rows))
    data = {
        "dataset": [dataset] * len(rows),
        "subset": subset,
        "pair_index": list(range(len(rows))),
        "sentence1": s1,
        "sentence2": s2,
        "score": score,
    }
    schema = dict(SCHEMA)
    if with_source:
        data.update(file=files, line=lines)
        schema.update(SOURCE_SCHEMA)
    return pl.DataFrame(data, schema=schema)
