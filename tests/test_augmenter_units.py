"""The augmenter registry: every place that names an augmenter reads its unit, and an augmenter
defined outside the package (tests/augmenters/word_reversal.py) registers a column that reaches
the training rows, the views, ``hardneg inspect``, the train CLI and the workflow's rules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from hardneg.augment import units as augmenters
from hardneg.augment.inspect import inspect_frame
from hardneg.train import views
from hardneg.train.data import load_training_data

ROOT = Path(__file__).resolve().parents[1]
EXTERNAL = ROOT / "tests/augmenters/word_reversal.py"


@pytest.fixture
def word_reversal():
    """The external unit, registered for one test and removed after it."""
    (unit,) = augmenters.load_augmenters([str(EXTERNAL)])
    yield unit
    augmenters.unregister(unit.name)


def _corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.parquet"
    pl.DataFrame({"id": [0, 1, 2, 3], "text": ["a cat sat", "dogs bark loudly", "hello", "it rains"]}).write_parquet(path)
    return path


def test_builtin_units_name_their_rule_file_helper_and_renderer():
    units = {u.column: u for u in augmenters.units()}
    assert list(units) == ["san", "negation", "paraphrase", "mined"]
    paths_smk = (ROOT / "rules/functions/paths.smk").read_text()
    for unit in units.values():
        rule_text = (ROOT / unit.rule_file).read_text()
        assert f"def {unit.shard_helper}(" in paths_smk, unit
        assert f"{unit.shard_helper}(" in rule_text, unit  # the rule writes the path the train rule reads
        assert callable(augmenters.renderer(unit)), unit


def test_views_come_from_the_units():
    assert views.default_view_templates() == {"san": "positive", "negation": "positive",
                                              "paraphrase": "positive", "mined": "positive", "syncse": "positive"}
    assert views.period_views() == ("anchor", "positive", "negation", "mined")
    assert views.views_pass_order() == ("anchor", "positive", "negation", "paraphrase", "mined", "syncse")


def test_a_taken_or_reserved_column_is_refused(word_reversal):
    with pytest.raises(ValueError, match="already taken by augmenter 'san'"):
        augmenters.register(augmenters.AugmenterUnit(**{**word_reversal.__dict__, "name": "other", "column": "san"}))
    with pytest.raises(ValueError, match="column 'anchor' is reserved"):
        augmenters.register(augmenters.AugmenterUnit(**{**word_reversal.__dict__, "name": "x", "column": "anchor"}))


def test_unregistered_column_is_one_line_naming_the_known_ones(tmp_path):
    corpus = _corpus(tmp_path)
    with pytest.raises(ValueError, match=r"unknown augmentation column 'reversed' \(known: san, negation, paraphrase"):
        load_training_data([corpus], {"reversed": [corpus]}, needed=["reversed"])


def test_external_column_reaches_training_rows_views_and_inspect(tmp_path, word_reversal):
    from hardneg.train.settings import TrainSettings

    corpus = _corpus(tmp_path)
    shard = tmp_path / "reversed.parquet"
    module = sys.modules[word_reversal.module]
    module.reverse_shard(corpus, shard)
    data = load_training_data([corpus], {"reversed": [shard]}, needed=["reversed"])
    # "hello" has nothing to reverse and no fallback: left out, counted
    assert data.frame.to_dict(as_series=False) == {
        "id": [0, 1, 3], "text": ["a cat sat", "dogs bark loudly", "it rains"],
        "reversed": ["sat cat a", "loudly bark dogs", "rains it"]}
    assert data.counts["dropped_no_reversed"] == 1
    assert Path(word_reversal.rule_file) == EXTERNAL.with_suffix(".smk")
    assert "reversed" in views.extra_views() and views.views_pass_order()[-2:] == ("reversed", "syncse")
    s = TrainSettings(method="simcse", init_model="x", templates=["sncse1", "sncse2"])
    assert views.view_template(s, "reversed") == "sncse1"  # the unit's default: the anchor's
    flipped = TrainSettings(method="simcse", init_model="x", templates=["sncse1", "sncse2"],
                            view_templates={"reversed": "positive"})  # a view name the settings accept
    assert views.view_template(flipped, "reversed") == "sncse2"
    assert "dogs bark loudly\n  -> [loudly bark] dogs [-bark loudly]" in inspect_frame(pl.read_parquet(shard), sample=5)


def test_train_cli_takes_an_external_column_by_its_shards(tmp_path):
    from hardneg.cli import train as cli

    corpus = _corpus(tmp_path)
    parser = __import__("argparse").ArgumentParser()
    cli.register(parser.add_subparsers())
    args = parser.parse_args(["train", "--augmenter", str(EXTERNAL), "--negation", "n.parquet",
                              "--shards", "reversed", str(corpus)])
    try:
        cli._load_augmenters(args.augmenter)
        assert cli._augment_shards(args) == {"negation": ["n.parquet"], "reversed": [str(corpus)]}
    finally:
        augmenters.unregister("word_reversal")


def test_the_snakefile_includes_an_external_rule_file(tmp_path):
    overlay = tmp_path / "augmenters.yaml"
    overlay.write_text(f"augmenters: [{EXTERNAL}]\n")
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path / "run"),
           "--configfile", str(ROOT / "config.yaml"), str(overlay), "--list-rules"]
    listed = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "word_reversal" in listed.stdout.split()


def test_a_bad_augmenters_entry_is_one_line_naming_the_setting(tmp_path):
    with pytest.raises(ValueError, match=r"^config setting 'augmenters': file not found: nosuch\.py$"):
        augmenters.load_augmenters(["nosuch.py"])
    empty = tmp_path / "no_unit.py"
    empty.write_text("X = 1\n")
    with pytest.raises(ValueError, match=r"^--augmenter: .*no_unit\.py defines neither UNIT nor UNITS$"):
        augmenters.load_augmenters([str(empty)], "--augmenter")
