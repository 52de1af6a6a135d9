"""Report tables from synthetic result files: mean ± std over seeds, Cont./Oppn., curves,
augmentation counts that add up, benchmarks; deterministic summary bytes; clear errors; one
column order, "—" for one seed, method -> paper links, plots embedded (and seen in Chromium)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hardneg.report import collect
from hardneg.report.build import OUTPUTS, build_report
from hardneg.shards import write_shard
from hardneg.train.methods import papers, preset, preset_names, presets

CHROMIUM = Path("/usr/bin/chromium")
# SentEval names in the order the report shows them (headers STS-B, SICK-R).
PAPER_ORDER = ["STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R", "avg"]


def _sts(root: Path, method: str, seed: int, values: dict) -> Path:
    p = root / "results/eval/exp" / method / f"seed{seed}" / "sts.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    data = {k: {"spearman": v, "n": 10} for k, v in values.items()}
    data["avg"] = {"spearman": sum(values.values()) / len(values), "datasets": list(values)}
    p.write_text(json.dumps(data))
    return p


@pytest.fixture
def results(tmp_path):
    sts = [
        _sts(tmp_path, "simcse", 1, {"STS12": 60.0, "STSBenchmark": 70.0}),
        _sts(tmp_path, "simcse", 2, {"STS12": 62.0, "STSBenchmark": 74.0}),
        _sts(tmp_path, "baseline", 0, {"STS12": 50.0, "STSBenchmark": 55.0}),
    ]
    co = []
    for method, seed in (("simcse", 1), ("baseline", 0)):
        p = sts[0].parents[2] / method / f"seed{seed}" / "cont_oppn.json"
        p.write_text(json.dumps({"groups": {"STS13-headlines": {
            "cont": {"spearman": 80.0, "n": 5}, "oppn": {"spearman": 40.0, "n": 5}}},
            "weighted_average": {"cont": 80.0, "oppn": 40.0}}))
        co.append(p)
    m = tmp_path / "results/train/exp/simcse/seed1/metrics.jsonl"
    m.parent.mkdir(parents=True)
    m.write_text("\n".join(json.dumps(r) for r in [
        {"kind": "eval", "step": 0, "stsb_dev": 50.0}, {"kind": "train", "step": 1, "loss": 2.0},
        {"kind": "train", "step": 2, "loss": 1.5}, {"kind": "eval", "step": 2, "stsb_dev": 60.0}]) + "\n")
    aug = tmp_path / "results/augment/negation/c/k/shard-000.parquet"
    write_shard(pl.DataFrame({
        "id": [0, 1, 2], "text": ["a b c", "it is", "x"], "status": ["ok", "ok", "dropped"],
        "reason": [None, None, "too short"], "augmenter": ["negation"] * 3,
        "negation": ["a b not c", "it is not", None], "rule": ["aux", "aux", None]}), aug)
    empty = tmp_path / "results/augment/negation/c/k/shard-001.parquet"
    write_shard(pl.DataFrame(schema={"id": pl.Int64, "text": pl.String, "status": pl.String,
                                     "reason": pl.String, "augmenter": pl.String,
                                     "negation": pl.String}), empty)
    bench = tmp_path / "benchmarks/train/exp/simcse/seed1.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
                     "12.5\t0:00:12\t800.1\t900\t700\t750\t1\t2\t95.0\t11.0\n")
    return {"sts": sts, "cont_oppn": co, "metrics": [m], "augment": [aug, empty],
            "bench_dir": tmp_path / "benchmarks"}


def test_sts_mean_and_std_over_seeds(results):
    long = collect.sts_long(results["sts"])
    assert long.height == 9
    table = collect.sts_summary(long)
    assert table["method"].to_list() == ["baseline", "simcse"]  # baseline first
    row = table.row(1, named=True)
    assert row["STS12"] == "61.00 ± 1.41"  # mean 61, sample std sqrt(2)
    assert row["STSBenchmark"] == "72.00 ± 2.83"
    assert row["seeds"] == 2
    assert table.columns[:4] == ["method", "STS12", "STSBenchmark", "avg"]
    assert table.row(0, named=True)["STS12"] == "50.00 ± —"  # one seed: no std, not "± 0.0"


def test_augmentation_counts_add_up(results):
    stats, ex = collect.augmentation_summary(results["augment"], examples=5)
    assert stats["rows"].sum() == 3
    dropped = stats.filter(pl.col("status") == "dropped").row(0, named=True)
    assert dropped["reason"] == "too short" and dropped["rows"] == 1
    assert ex["augmented"].to_list() == ["a b not c", "it is not"]


def test_build_report_writes_everything_deterministically(results, tmp_path):
    a = build_report(tmp_path / "a", experiment="exp", **results)
    b = build_report(tmp_path / "b", experiment="exp", **results)
    assert set(a) == set(OUTPUTS)
    for name in OUTPUTS:
        assert a[name].stat().st_size > 0, name
    assert a["summary.json"].read_bytes() == b["summary.json"].read_bytes()
    assert a["sts.png"].read_bytes() == b["sts.png"].read_bytes()
    html = a["sts.html"].read_text()
    assert 'id="sts-summary"' in html and "61.00 ± 1.41" in html
    assert "too short" in a["augmentation.html"].read_text()
    bench = a["benchmarks.html"].read_text()
    assert "train" in bench and "12.50" in bench and "800.10" in bench
    summary = json.loads(a["summary.json"].read_text())
    assert summary["runs"] == ["baseline/seed0", "simcse/seed1", "simcse/seed2"]


def test_bad_inputs_name_the_file(tmp_path):
    bad = tmp_path / "x" / "sts.json"
    bad.parent.mkdir()
    bad.write_text("{}")
    with pytest.raises(ValueError, match="seed<N>"):
        collect.sts_long([bad])
    p = tmp_path / "e/m/seed1/sts.json"
    p.parent.mkdir(parents=True)
    p.write_text("{not json")
    with pytest.raises(ValueError, match=r"e/m/seed1/sts.json: invalid JSON"):
        collect.sts_long([p])
    m = tmp_path / "e/m/seed1/metrics.jsonl"
    m.write_text('{"step": 1}\n{oops\n')
    with pytest.raises(ValueError, match=r"metrics.jsonl:2"):
        collect.training_curves([m])


@pytest.fixture
def seven(tmp_path):
    """sts.json files with all seven datasets, keys written SICK-R first: simcse 2 seeds,
    sncse 1 seed, the baseline."""
    names = ["SICKRelatedness", "STSBenchmark", "STS16", "STS15", "STS14", "STS13", "STS12"]
    runs = {("simcse", 1): 60.0, ("simcse", 2): 62.0, ("sncse", 1): 70.0, ("baseline", 0): 50.0}
    return [_sts(tmp_path, m, s, {d: base + i for i, d in enumerate(names)})
            for (m, s), base in runs.items()]


def _headers(html: str, table_id: str) -> list[str]:
    table = html[html.index(f'id="{table_id}"'):]
    head = table[table.index("<thead>"):table.index("</thead>")]
    return re.findall(r"<th[^>]*>([^<]*)</th>", head)


def test_one_column_order_dash_for_one_seed_links_and_embedded_plots(seven, tmp_path):
    long = collect.sts_long(seven)
    assert collect.sts_summary(long).columns[1:-1] == list(collect.STS_ORDER)
    assert collect.sts_per_seed(long).columns[2:] == list(collect.STS_ORDER)
    out = build_report(tmp_path / "r", sts=seven, experiment="exp")
    html = out["sts.html"].read_text()
    assert _headers(html, "sts-summary") == ["method", *PAPER_ORDER, "seeds"]
    assert _headers(html, "sts-per-seed") == ["method", "seed", *PAPER_ORDER]
    # one seed (sncse, baseline): "—", never "± 0.0"; two seeds: mean ± sample std
    assert "± 0.00<" not in html and ">70.00 ± —<" in html and ">61.00 ± 1.41<" in html
    for method, seeds in (("simcse", 2), ("sncse", 1)):
        url = presets()[method].paper.url
        assert html.count(f'<a href="{url}"') == 1 + seeds, method  # summary row + per-seed rows
    assert "<a " not in html[html.index(">baseline<") - 40:html.index(">baseline<")]
    # the plot sits in the page beside its table, byte for byte the PNG written next to it
    imgs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert [base64.b64decode(b) for b in imgs] == [out["sts.png"].read_bytes()]
    for page, png in (("cont_oppn.html", "cont_oppn.png"), ("benchmarks.html", "benchmarks.png")):
        b64 = base64.b64encode(out[png].read_bytes()).decode()
        assert f"data:image/png;base64,{b64}" in out[page].read_text(), page


def test_every_preset_names_its_paper_family():
    known = {p for p in vars(papers).values() if isinstance(p, papers.Paper)}
    assert all(preset(n).paper in known for n in preset_names(builtin_only=True))
    for url in (p.url for p in known if p.url is not None):
        assert re.fullmatch(r"https://(arxiv\.org/abs/\d{4}\.\d{5}|aclanthology\.org/[\w.-]+/)", url), url


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium not installed")
def test_sts_page_screenshot_in_headless_chromium(seven, tmp_path):
    from PIL import Image

    out = build_report(tmp_path / "r", sts=seven, experiment="exp")
    shot = tmp_path / "sts.png"
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
           f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1920,1000",
           f"--screenshot={shot}", out["sts.html"].as_uri()]
    proc = subprocess.run(["timeout", "-k", "5", "60", *cmd], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    img = Image.open(shot).convert("RGB")
    # The embedded plot is drawn: matplotlib's default bar blue (#1f77b4) covers part of the
    # right half (where the figure sits beside the table); a broken <img> would leave none.
    right = np.asarray(img.crop((img.width // 2, 0, img.width, img.height)), dtype=np.int16)
    blue = int((np.abs(right - np.array([31, 119, 180])).max(axis=2) < 12).sum())
    assert blue > 500, blue
    # The table is drawn on the left: dark text pixels.
    left = img.crop((0, 0, img.width // 2, img.height)).convert("L")
    assert sum(left.histogram()[:100]) > 2000


def test_mean_std_text_two_decimals_and_dash_for_one_seed():
    assert collect.mean_std_text(80.6, 0.414, 3) == "80.60 ± 0.41"  # papers' tables: 2 decimals
    assert collect.mean_std_text(-3.0, 1.0, 2) == "-3.00 ± 1.00"
    assert collect.mean_std_text(80.6, None, 1) == "80.60 ± —"
    assert collect.mean_std_text(80.6, 0.0, 1) == "80.60 ± —"  # one seed: undefined, not 0


def test_report_cells_show_control_and_bidi_characters():
    from hardneg.report.render import table_html

    frame = pl.DataFrame({"text\u202e": ["NUL\x00 and <b>\u202eevil\u202c\u200b</b>", "plain"]})
    out = table_html(frame, "c", "t")
    assert "NUL\\u0000 and &lt;b&gt;\\u202Eevil\\u202C\\u200B&lt;/b&gt;" in out
    assert "text\\u202E</th>" in out and "<td class=\"l\">plain</td>" in out
    assert not re.search("[\x00\u202e\u202c\u200b]", out)
