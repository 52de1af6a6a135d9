"""Ablation families: every overlay validates against the schema (catches key drift from the
stage configs), `hardneg ablate` runs Snakemake per variant under distinct experiment names,
and the comparison table puts the variants side by side."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hardneg.cluster.ablate import compare, list_families, load_family, select
from hardneg.cluster.workdir import link_workflow
from hardneg.config import ConfigError, load_config

REPO = Path(__file__).resolve().parents[1]
HARDNEG = str(Path(sys.executable).with_name("hardneg"))


@pytest.mark.parametrize("base", [["config.yaml"], ["config.yaml", "experiments/quick.yaml"],
                                  ["config.yaml", "experiments/tiny.yaml"]])
def test_every_family_variant_is_a_valid_overlay(base):
    families = list_families(REPO)
    assert {"san-iterations", "mask-scale", "tau2", "mer-window"} <= set(families)
    exp = load_config([REPO / b for b in base])["experiment"]
    for family in families:
        variants = load_family(family, exp, REPO)
        names = [v.experiment for v in variants]
        assert len(set(names)) == len(names)
        for v in variants:
            cfg = load_config([REPO / b for b in base], overrides=v.overlay)
            assert cfg["experiment"] == f"{exp}-{family}-{v.name}"
    # The ablated knobs really reach the config.
    tiny = [REPO / "config.yaml", REPO / "experiments/tiny.yaml"]
    get = {v.name: load_config(tiny, v.overlay) for v in load_family("san-iterations", "t", REPO)}
    assert [get[f"iter{i}"]["san"]["iterations"] for i in range(1, 5)] == [1, 2, 3, 4]
    get = {v.name: load_config(tiny, v.overlay) for v in load_family("mask-scale", "t", REPO)}
    assert sorted(c["lexicon"]["scale"] for c in get.values()) == [10, 20, 30, 40]
    get = [load_config(tiny, v.overlay) for v in load_family("tau2", "t", REPO)]
    assert sorted(c["train"]["presets"]["simcse_san"]["tau2"] for c in get) == [0.05, 0.06, 0.07, 0.08, 0.09, 0.1]
    get = {v.name: load_config(tiny, v.overlay) for v in load_family("mer-window", "t", REPO)}
    assert (get["paper"]["paraphrase"]["mer_min"], get["paper"]["paraphrase"]["mer_max"]) == (0.15, 0.6)


def test_bad_family_and_variant_names(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such ablation family .*known: .*tau2"):
        load_family("nope", "x", REPO)
    with pytest.raises(ValueError, match=r"unknown variant\(s\) \['tau9'\]"):
        select(load_family("tau2", "x", REPO), ["tau9"], "tau2")
    (tmp_path / "experiments/ablations").mkdir(parents=True)
    (tmp_path / "experiments/ablations/bad.yaml").write_text("variants: {a: {san: {iterationz: 2}}}\n")
    for f in ("config.yaml",):
        (tmp_path / f).write_text((REPO / f).read_text())
    from hardneg.cluster.ablate import run_family

    with pytest.raises(ConfigError, match=r"(?s)variant a: .*unknown key 'san.iterationz'"):
        run_family("bad", base=["config.yaml"], root=tmp_path, dry_run=True)


@pytest.mark.integration
def test_ablate_command_runs_each_variant(tmp_path):
    wd = link_workflow(REPO, tmp_path / "main")
    proc = subprocess.run(
        ["timeout", "-k", "10", "600", HARDNEG, "ablate", "tau2", "--base", "config.yaml",
         "experiments/tiny.yaml", "--variants", "tau0.05,tau0.10", "--dry-run",
         "--snakemake", "--quiet rules"], cwd=wd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    for v in ("tau0.05", "tau0.10"):
        ov = yaml.safe_load((wd / f"results/ablations/tau2/overlays/{v}.yaml").read_text())
        assert ov["experiment"] == f"tiny-tau2-{v}" and ov["train"]["methods"] == ["simcse_san"]
        assert f"results/ablations/tau2/overlays/{v}.yaml" in out  # one snakemake call each
    # Each variant's dry run plans its own training job (the augmentation is shared).
    assert len(re.findall(r"^train\s+1$", out, flags=re.MULTILINE)) >= 2, out[-3000:]


def test_compare_puts_variants_side_by_side(tmp_path):
    variants = load_family("tau2", "tiny", REPO)[:2]
    for i, v in enumerate(variants):
        for seed, score in ((1, 70.0 + i), (2, 72.0 + i)):
            p = tmp_path / "results/eval" / v.experiment / "simcse_san" / f"seed{seed}" / "sts.json"
            p.parent.mkdir(parents=True)
            p.write_text(json.dumps({"STS12": {"spearman": score}, "avg": {"spearman": score}}))
        b = tmp_path / "results/eval" / v.experiment / "baseline/seed0/sts.json"
        b.parent.mkdir(parents=True)
        b.write_text(json.dumps({"STS12": {"spearman": 1.0}}))
    md = compare("tau2", "tiny", variants, tmp_path)
    text = md.read_text()
    assert "| tau0.05 | simcse_san | 71.00 ± 1.41 | 71.00 ± 1.41 |" in text
    assert "| tau0.06 | simcse_san | 72.00 ± 1.41 |" in text
    assert "baseline" not in text
    data = json.loads(md.with_suffix(".json").read_text())
    assert {r["variant"] for r in data["rows"]} == {"tau0.05", "tau0.06"}
    with pytest.raises(FileNotFoundError, match="no results under results/eval/tiny-tau2-tau0.07"):
        compare("tau2", "tiny", load_family("tau2", "tiny", REPO)[2:3], tmp_path)


def test_compare_one_seed_shows_a_dash_and_null_std(tmp_path):
    v = load_family("tau2", "tiny", REPO)[0]
    p = tmp_path / "results/eval" / v.experiment / "simcse_san" / "seed1" / "sts.json"
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps({"STS12": {"spearman": 70.5}, "SICKRelatedness": {"spearman": 69.0},
                             "avg": {"spearman": 69.75}}))
    md = compare("tau2", "tiny", [v], tmp_path)
    text = md.read_text()
    # the report's column order (SICK-R after STS-B) and its one-seed cell: "± —", never "± 0.00"
    assert "| variant | method | STS12 | SICKRelatedness | avg |" in text
    assert f"| {v.name} | simcse_san | 70.50 ± — | 69.00 ± — | 69.75 ± — |" in text
    rows = json.loads(md.with_suffix(".json").read_text())["rows"]
    assert {r["s"] for r in rows} == {None} and {r["seeds"] for r in rows} == {1}
