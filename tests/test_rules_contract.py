"""The rules' contract: settings come from the filled config (no .get(key, default) restating a
default), paths from rules/functions/paths.smk (no globals() probes), scripts read params only;
a config with only what has no default builds the same tiny DAG as config.yaml + tiny.yaml."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hardneg.augment.units import units
from hardneg.config import load_schema, load_yaml

ROOT = Path(__file__).resolve().parents[1]
RULE_FILES = sorted((ROOT / "rules").rglob("*.smk")) + [ROOT / "Snakefile"]


def get_calls_with_default(text: str) -> list[str]:
    """Every ``.get(a, b)`` call (two or more top-level arguments) in ``text``: a fallback value."""
    found = []
    for m in re.finditer(r"\.get\(", text):
        depth, args, i = 1, 1, m.end()
        quote = None
        while i < len(text) and depth:
            c = text[i]
            if quote:
                if c == "\\":
                    i += 1
                elif c == quote:
                    quote = None
            elif c in "\"'":
                quote = c
            elif c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
            elif c == "," and depth == 1:
                args += 1
            i += 1
        if args > 1:
            found.append(text[m.start():i])
    return found


def test_scanner_finds_fallbacks():
    assert get_calls_with_default('x = cfg.get("a", 1) + d.get("k", {}).get("j")') == ['.get("a", 1)', '.get("k", {})']
    assert get_calls_with_default('cfg.get(f(a, b)) or d.get("x,y") or e.get([1, 2])') == []
    assert get_calls_with_default('cfg.get(\n    "batch_size",\n    64,\n)') == ['.get(\n    "batch_size",\n    64,\n)']


def test_rules_restate_no_default_and_probe_no_globals():
    fallbacks, probes, lambdas = {}, [], []
    for path in RULE_FILES:
        text = path.read_text(encoding="utf-8")
        rel = str(path.relative_to(ROOT))
        if found := get_calls_with_default(text):
            fallbacks[rel] = found
        if "globals()" in text:
            probes.append(rel)
        # a module-level lambda bound to a name (to get past the linter) instead of a def
        lambdas += [f"{rel}: {m}" for m in re.findall(r"^\w+ *= *lambda\b.*$", text, flags=re.MULTILINE)]
    assert not fallbacks, f"defaults belong in schemas/config.schema.yaml: {fallbacks}"
    assert not probes, f"path helpers live in rules/functions/paths.smk: {probes}"
    assert not lambdas, lambdas


def test_scripts_read_params_not_snakemake_config():
    readers = [p.name for p in (ROOT / "workflow/scripts").glob("*.py") if "snakemake.config" in p.read_text()]
    assert not readers, f"scripts read their settings from the rule's params: {readers}"


def test_rule_files_are_included_and_named_by_stage():
    snakefile = (ROOT / "Snakefile").read_text()
    included = re.findall(r'^include: "rules/([\w/]+\.smk)"', snakefile, flags=re.MULTILINE)
    assert included[:2] == ["common.smk", "functions/paths.smk"]  # paths before any rule file
    # every augmenter unit's rule file, through the loop over the registry
    assert re.search(r"^for _augmenter in augmenter_units\(\):\n\n    include: _augmenter.rule_file$", snakefile,
                     flags=re.MULTILINE)
    included += [Path(u.rule_file).relative_to("rules").as_posix() for u in units()]
    assert sorted(included[2:]) == sorted(p.name for p in (ROOT / "rules").glob("*.smk") if p.name != "common.smk")
    rules = {r for p in (ROOT / "rules").glob("*.smk") for r in re.findall(r"^rule (\w+):", p.read_text(), flags=re.MULTILINE)}
    assert {"negate", "backtranslate", "select_paraphrase", "osscse_all"} <= rules  # names users and profiles use


def _dry_run_jobs(snakefile: Path, workdir: Path, *configfiles: Path) -> list[str]:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "-d", str(workdir), "-n", "-F", "--cores", "1"]
    if configfiles:
        cmd += ["--configfile", *map(str, configfiles)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout + run.stderr
    lines = sorted(ln.strip() for ln in out.splitlines()
                   if ln.strip().startswith(("rule ", "localrule ", "output:", "log:", "benchmark:", "wildcards:")))
    assert sum(ln.startswith(("rule ", "localrule ")) for ln in lines) > 20, out[-3000:]
    return lines


@pytest.mark.integration
def test_minimal_config_builds_the_tiny_dag(tmp_path, shared_dir):
    """A workflow whose config.yaml holds only what has no default (+ the tiny overlay) plans
    exactly the jobs and paths of config.yaml + experiments/tiny.yaml."""
    from test_config_defaults import minimal_config

    full = load_yaml(ROOT / "config.yaml")
    copy_dir = tmp_path / "wf"
    copy_dir.mkdir()
    for name in ("rules", "workflow", "schemas", "src", "envs"):
        (copy_dir / name).symlink_to(ROOT / name)
    (copy_dir / "Snakefile").write_text((ROOT / "Snakefile").read_text())
    (copy_dir / "config.yaml").write_text(yaml.safe_dump(minimal_config(full, load_schema())))
    assert len((copy_dir / "config.yaml").read_text()) < len((ROOT / "config.yaml").read_text()) / 3
    runs = tmp_path / "runs"
    (runs / "a").mkdir(parents=True)
    (runs / "b").mkdir()
    (runs / "shared").symlink_to(shared_dir)  # the overlay's ../shared paths
    minimal = _dry_run_jobs(copy_dir / "Snakefile", runs / "a", ROOT / "experiments/tiny.yaml")
    shipped = _dry_run_jobs(ROOT / "Snakefile", runs / "b", ROOT / "config.yaml", ROOT / "experiments/tiny.yaml")
    assert minimal == shipped


# --- scheduling settings re-run nothing --------------------------------------------------------
# Each overlay changes every scheduling setting of one stage (batch sizes, processes, timeouts);
# the keys Snakemake's re-run triggers compare (output paths, non-derived params: tests/rerun_keys.py)
# must equal those of the base config for every job of the tiny DAG. On the CPU the encoder's batch
# size changes no stored byte; on CUDA (evaluate.device null) it stays watched (rules/functions/paths.smk).
_CPU = {"evaluate": {"device": "cpu"}}
_SCHEDULING = {
    "negation": ({}, {"negation": {"batch_size": 7, "n_process": 3}}),
    "backtranslation": ({}, {"backtranslation": {"apertium": {"batch_lines": 7, "timeout_s": 9, "retries": 4},
                                                 "transformers": {"batch_size": 3, "device": "cpu"}}}),
    "evaluate": (_CPU, {"evaluate": {"device": "cpu", "batch_size": 7, "threads": 1}}),
    "probe": (_CPU, _CPU | {"probe": {"batch_size": 5}, "negation": {"batch_size": 9},
                            "backtranslation": {"apertium": {"timeout_s": 11}}}),
    "encoder batch size on CUDA": ({}, {"evaluate": {"batch_size": 7}, "probe": {"batch_size": 5}}),
    "probe set content": ({}, {"probe": {"edit_rate": 0.05}}),
}
_NOT_SCHEDULING = ("encoder batch size on CUDA", "probe set content")


@pytest.fixture(scope="module")
def scheduling_keys(tmp_path_factory, shared_dir):
    """Re-run keys of the tiny DAG for every base and changed overlay of _SCHEDULING (one process)."""
    import json

    tmp = tmp_path_factory.mktemp("rerun")
    (tmp / "wd").mkdir()
    (tmp / "shared").symlink_to(shared_dir)  # the tiny overlay's ../shared paths
    overlays = {}
    for name, pair in _SCHEDULING.items():
        for side, overlay in zip(("base", "changed"), pair):
            path = tmp / f"{len(overlays)}.yaml"
            path.write_text(yaml.safe_dump(overlay))
            overlays[(name, side)] = [str(ROOT / "config.yaml"), str(ROOT / "experiments/tiny.yaml"), str(path)]
    run = subprocess.run([sys.executable, str(ROOT / "tests/rerun_keys.py"), str(ROOT / "Snakefile"), str(tmp / "wd"),
                          "all", json.dumps(list(overlays.values()))],
                         capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    return dict(zip(overlays, json.loads(run.stdout)))


@pytest.mark.parametrize("stage", [s for s in _SCHEDULING if s not in _NOT_SCHEDULING])
def test_scheduling_settings_rerun_nothing(scheduling_keys, stage):
    base, changed = scheduling_keys[(stage, "base")], scheduling_keys[(stage, "changed")]
    assert len(base) > 40 and set(base) == set(changed)  # the same jobs and output paths
    differ = sorted(job for job in base if base[job] != changed[job])
    assert not differ, f"{stage}: these jobs would re-run (params changed): {differ[:3]}"


def test_encoder_batch_size_stays_watched_on_cuda(scheduling_keys):
    """evaluate.device null = cuda when present (bf16 autocast): the batch shape can change bytes."""
    base = scheduling_keys[("encoder batch size on CUDA", "base")]
    changed = scheduling_keys[("encoder batch size on CUDA", "changed")]
    differ = {job.split()[0] for job in base if base[job] != changed[job]}
    assert differ == {"evaluate", "probe"}


def test_a_probe_setting_keys_the_probe_set_and_nothing_else(scheduling_keys):
    """The probe set (rule probe_set) is an artifact keyed by what changes it: another edit rate
    makes a new probe-set folder; no other job's outputs or params change (each model's probe job
    then re-runs on its new input, evaluate and train do not)."""
    base = scheduling_keys[("probe set content", "base")]
    changed = scheduling_keys[("probe set content", "changed")]
    moved = sorted(set(base) ^ set(changed))
    assert [job.split()[0] for job in moved] == ["probe_set", "probe_set"], moved
    assert all(base[job] == changed[job] for job in set(base) & set(changed))


def test_lint_covers_the_test_overlays(tmp_path):
    """tools/lint_workflow.py lints every overlay under tests/ as well as the experiments' (each on
    top of what its header names: tests/methods/own_method.yaml extends experiments/tiny.yaml, whose
    short runs it adds a method to, and is linted so)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("lint_workflow", ROOT / "tools/lint_workflow.py")
    lint = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lint)
    combos = lint.combinations(tmp_path)
    overlays = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("*.yaml"))
    assert overlays and "tests/methods/own_method.yaml" in overlays
    for rel in overlays:
        assert any(c[-1] == rel for c in combos), rel
    assert ["config.yaml", "experiments/tiny.yaml", "tests/methods/own_method.yaml"] in combos


@pytest.mark.integration
def test_every_overlay_lints():
    """`snakemake --lint` is clean for config.yaml and every overlay as they are combined
    (tools/lint_workflow.py: one lint per combination, about 10 s CPU each)."""
    run = subprocess.run([sys.executable, str(ROOT / "tools/lint_workflow.py")], cwd=ROOT,
                         capture_output=True, text=True, timeout=1200, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert run.stdout.count("ok   snakemake --lint") >= 14, run.stdout
