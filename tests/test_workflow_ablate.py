"""Ablation families: every overlay validates against the schema (catches key drift from the
stage configs), `hardneg ablate` plans every variant in one Snakemake DAG under distinct
experiment names (shared artifacts planned once), and the comparison table puts the variants
side by side."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hardneg.cluster.ablate import (
    compare,
    family_snakefile,
    list_families,
    load_family,
    module_name,
    select,
)
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


def _job_counts(out: str) -> dict[str, int]:
    """rule -> planned jobs, from a dry run's job stats table."""
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\S+)\s+(\d+)$", out, flags=re.MULTILINE)}


@pytest.mark.integration
@pytest.mark.parametrize("family, variants, own, shared", [
    # a training-only knob: every augmentation job planned once, training once per variant
    ("tau2", ["tau0.05", "tau0.10"], {"train", "report_tables"}, {"san", "prepare_corpus", "negate", "lexicon"}),
    # a SAN knob: each variant its own SAN shards, the corpus and lexicon still once
    ("san-iterations", ["iter1", "iter2"], {"san", "train"}, {"prepare_corpus", "lexicon", "negate"}),
])
def test_ablate_plans_every_variant_in_one_dag(tmp_path, family, variants, own, shared):
    wd = link_workflow(REPO, tmp_path / "main")
    proc = subprocess.run(
        ["timeout", "-k", "10", "600", HARDNEG, "ablate", family, "--base", "config.yaml",
         "experiments/tiny.yaml", "--variants", ",".join(variants), "--dry-run",
         "--snakemake", "--quiet rules"], cwd=wd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    for v in variants:
        ov = yaml.safe_load((wd / f"results/ablations/{family}/overlays/{v}.yaml").read_text())
        assert ov["experiment"] == f"tiny-{family}-{v}" and ov["train"]["methods"] == ["simcse_san"]
    # ONE snakemake invocation plans every variant
    assert out.count("Building DAG of jobs") == 1 and f"{len(variants)} variants in one DAG" in out
    counts = _job_counts(out)
    modules = [module_name(v) for v in variants]
    for rule in own:  # planned in every variant's module
        assert all(counts.get(f"{m}__{rule}", 0) >= 1 for m in modules), (rule, counts)
    for rule in shared:  # planned once, by the first variant's module only
        assert counts.get(f"{modules[0]}__{rule}", 0) >= 1, (rule, counts)
        assert not any(f"{m}__{rule}" in counts for m in modules[1:]), (rule, counts)
    assert counts["ablation_table"] == 1  # one report for the family
    if family == "tau2":  # every augmentation job exactly once: as many SAN jobs as corpus shards
        assert counts[f"{modules[0]}__san"] == counts[f"{modules[0]}__negate"]


def test_family_snakefile_loads_each_variant_as_a_module(tmp_path):
    for f in ("config.yaml", "experiments/tiny.yaml"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text((REPO / f).read_text())
    chosen = load_family("tau2", "tiny", REPO)[:2]
    path = family_snakefile("tau2", ["config.yaml", "experiments/tiny.yaml"], chosen, "tiny", tmp_path)
    text = path.read_text()
    assert path == tmp_path / "results/ablations/tau2/tiny.smk"
    for v in chosen:
        m = module_name(v.name)
        assert f"module {m}:" in text and f"use rule * from {m} as {m}__*" in text
        assert yaml.safe_load((tmp_path / f"results/ablations/tau2/overlays/{v.name}.yaml").read_text()) == v.overlay
    assert module_name("tau0.05") == "v_tau0_05"
    compile(text.split("\nmodule ")[0], str(path), "exec")  # the Python head is valid Python
    clash = [load_family("tau2", "tiny", REPO)[0]] * 2
    with pytest.raises(ConfigError, match=r"the same module name\(s\) \['v_tau0_05'\]"):
        family_snakefile("tau2", ["config.yaml"], clash, "tiny", tmp_path)


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
