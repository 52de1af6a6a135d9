"""SentEval readers: real counts, the SentEval conventions, and clear errors on bad input."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest

from hardneg.data.senteval import STS_SUBSETS, load_pairs

WORDS = ["a", "the", "man", "woman", "dog", "cat", "plays", "runs", "eats", "guitar", "ball", "park", "red", "blue", "big", "small", "quickly"]


def _sent(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))


def make_toy_senteval(root: Path, n: int = 8, seed: int = 0) -> Path:
    """A tiny SentEval-layout folder (all seven datasets, every STS subset) for fast tests."""
    rng = random.Random(seed)
    for year, subsets in STS_SUBSETS.items():
        folder = root / "STS" / f"{year}-en-test"
        folder.mkdir(parents=True, exist_ok=True)
        for sub in subsets:
            inputs, golds = [], []
            for i in range(n):
                inputs.append(f"{_sent(rng)}\t{_sent(rng)}")
                # STS16-style unscored lines (empty gold) every 4th line.
                golds.append("" if (year == "STS16" and i % 4 == 3) else f"{rng.uniform(0, 5):.3f}")
            (folder / f"STS.input.{sub}.txt").write_text("\n".join(inputs) + "\n")
            (folder / f"STS.gs.{sub}.txt").write_text("\n".join(golds) + "\n")
    stsb = root / "STS" / "STSBenchmark"
    stsb.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "test"):
        lines = [
            f"main-news\tnews\t2012\t{i:04d}\t{rng.uniform(0, 5):.3f}\t{_sent(rng)}\t{_sent(rng)}"
            for i in range(3 * n)
        ]
        (stsb / f"sts-{split}.csv").write_text("\n".join(lines) + "\n")
    sick = root / "SICK"
    sick.mkdir(parents=True, exist_ok=True)
    for fname in ("SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt"):
        lines = ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"]
        lines += [f"{i}\t{_sent(rng)}\t{_sent(rng)}\t{rng.uniform(1, 5):.1f}\tNEUTRAL" for i in range(3 * n)]
        (sick / fname).write_text("\n".join(lines) + "\n")
    return root


def test_real_counts_match_senteval(senteval_dir):
    expected = {"STS12": 3108, "STS13": 1500, "STS14": 3750, "STS15": 3000, "STS16": 1186,
                "STSBenchmark": 1379, "SICKRelatedness": 4927}
    for name, count in expected.items():
        df = load_pairs(senteval_dir, name)
        assert df.height == count, name
        assert df["pair_index"].to_list() == list(range(count))
        assert df.schema["score"] == pl.Float64 and df.schema["pair_index"] == pl.Int64
    assert load_pairs(senteval_dir, "STSBenchmark", "dev").height == 1500
    assert load_pairs(senteval_dir, "SICKRelatedness", "dev").height == 500
    sts16 = load_pairs(senteval_dir, "STS16")
    assert sts16.group_by("subset").len().sort("subset")["len"].to_list() == [254, 249, 230, 244, 209]


def test_toy_layout_conventions(tmp_path):
    root = make_toy_senteval(tmp_path, n=8)
    sts16 = load_pairs(root, "STS16", with_source=True)
    assert sts16.height == 5 * 6  # 2 of 8 lines per subset unscored
    assert set(sts16["line"].to_list()) <= {1, 2, 3, 5, 6, 7}
    assert list(sts16.columns[:6]) == ["dataset", "subset", "pair_index", "sentence1", "sentence2", "score"]


def test_whitespace_normalised_like_senteval(tmp_path):
    root = make_toy_senteval(tmp_path, n=2)
    f = root / "STS" / "STS13-en-test" / "STS.input.FNWN.txt"
    f.write_text("  a   man\tthe  dog  \nx y\tz w\n")
    df = load_pairs(root, "STS13")
    assert df["sentence1"][0] == "a man" and df["sentence2"][0] == "the dog"


def test_score_outside_scale_names_file_and_line(tmp_path):
    root = make_toy_senteval(tmp_path, n=4)
    gs = root / "STS" / "STS12-en-test" / "STS.gs.MSRvid.txt"
    lines = gs.read_text().splitlines()
    lines[2] = "5.5"
    gs.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"STS\.gs\.MSRvid\.txt:3: gold score 5\.5 outside"):
        load_pairs(root, "STS12")
    sick = root / "SICK" / "SICK_test_annotated.txt"
    rows = sick.read_text().splitlines()
    rows[4] = "9\ta b\tc d\t0.5\tNEUTRAL"  # SICK scale is 1-5
    sick.write_text("\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=r"SICK_test_annotated\.txt:5: gold score 0\.5 outside"):
        load_pairs(root, "SICKRelatedness")


def test_malformed_lines(tmp_path):
    root = make_toy_senteval(tmp_path, n=4)
    inp = root / "STS" / "STS14-en-test" / "STS.input.images.txt"
    lines = inp.read_text().splitlines()
    lines[1] = "no tab here"
    inp.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"STS\.input\.images\.txt:2: expected 2 tab-separated"):
        load_pairs(root, "STS14")
    gs = root / "STS" / "STS15-en-test" / "STS.gs.belief.txt"
    gs.write_text("1.0\nabc\n2.0\n3.0\n")
    with pytest.raises(ValueError, match=r"STS\.gs\.belief\.txt:2: gold score 'abc' is not a number"):
        load_pairs(root, "STS15")
    gs.write_text("1.0\n2.0\n")
    with pytest.raises(ValueError, match=r"STS\.gs\.belief\.txt: 2 gold lines but"):
        load_pairs(root, "STS15")
    stsb = root / "STS" / "STSBenchmark" / "sts-test.csv"
    stsb.write_text("main-news\tnews\t2012\t0001\t3.0\tonly one sentence\n")
    with pytest.raises(ValueError, match=r"sts-test\.csv:1: expected at least 7"):
        load_pairs(root, "STSBenchmark")
    (root / "SICK" / "SICK_trial.txt").write_text("wrong header\n")
    with pytest.raises(ValueError, match=r"SICK_trial\.txt:1: expected the SICK header"):
        load_pairs(root, "SICKRelatedness", "dev")


def test_missing_and_bad_arguments(tmp_path):
    with pytest.raises(FileNotFoundError, match="SentEval folder not found"):
        load_pairs(tmp_path / "nope", "STS12")
    root = make_toy_senteval(tmp_path, n=2)
    (root / "STS" / "STS13-en-test" / "STS.gs.OnWN.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"STS13-en-test/STS\.gs\.OnWN\.txt"):
        load_pairs(root, "STS13")
    with pytest.raises(ValueError, match="only a 'test' split"):
        load_pairs(root, "STS12", "dev")
    with pytest.raises(ValueError, match="unknown STS dataset 'STS17'"):
        load_pairs(root, "STS17")
