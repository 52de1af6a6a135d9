# Report (issue 7): tables and figures from the run's results, annotated for `snakemake --report`.
#   snakemake --configfile config.yaml experiments/quick.yaml --report report.html


report: "../workflow/report/workflow.rst"


localrules:
    report_tables,


REPORT_DIR = f"results/report/{config['experiment']}"


def _runs():
    """(method, seed) of every evaluated run: baseline (seed 0) + train.methods x train.seeds."""
    runs = [("baseline", 0)] if "eval_targets" in globals() else []
    if "train_settings" in globals():
        tr = config.get("train", {})
        runs += [(m, int(s)) for m in tr.get("methods", []) for s in tr.get("seeds", [config["seed"]])]
    return runs


def _report_inputs(wildcards):
    exp = config["experiment"]
    ins = {"sts": [], "cont_oppn": [], "metrics": [], "augment": [], "after": []}
    for method, seed in _runs():
        run = f"results/eval/{exp}/{method}/seed{seed}"
        if "eval_targets" in globals():
            ins["sts"].append(f"{run}/sts.json")
            ins["cont_oppn"].append(f"{run}/cont_oppn.json")
        if method != "baseline":
            ins["metrics"].append(f"results/train/{exp}/{method}/seed{seed}/metrics.jsonl")
    for helper in ("san_shard", "negation_shard", "paraphrase_shard"):
        if helper in globals():
            ins["augment"] += [globals()[helper](s) for s in SHARDS]
    # Everything else the run makes, so benchmarks/ is complete when the tables are built.
    ins["after"] = [t for f in _TARGET_FUNCS if f is not _report_targets for t in f()]
    return ins


rule report_tables:
    """STS table (mean ± std over seeds), Cont./Oppn., training curves, augmentation examples and
    statistics, rule benchmarks: files for the HTML report."""
    input:
        unpack(_report_inputs),
    output:
        sts=report(f"{REPORT_DIR}/sts.html", caption="../workflow/report/sts_table.rst", category="1. STS", labels={"figure": "table"}),
        sts_png=report(f"{REPORT_DIR}/sts.png", caption="../workflow/report/sts_plot.rst", category="1. STS", labels={"figure": "bars"}),
        cont_oppn=report(f"{REPORT_DIR}/cont_oppn.html", caption="../workflow/report/cont_oppn.rst", category="2. Cont./Oppn.", labels={"figure": "table"}),
        cont_oppn_png=report(f"{REPORT_DIR}/cont_oppn.png", caption="../workflow/report/cont_oppn.rst", category="2. Cont./Oppn.", labels={"figure": "bars"}),
        curves=report(f"{REPORT_DIR}/curves.png", caption="../workflow/report/curves.rst", category="3. Training", labels={"figure": "curves"}),
        augmentation=report(f"{REPORT_DIR}/augmentation.html", caption="../workflow/report/augmentation.rst", category="4. Augmentation", labels={"figure": "statistics and examples"}),
        benchmarks=report(f"{REPORT_DIR}/benchmarks.html", caption="../workflow/report/benchmarks.rst", category="5. Benchmarks", labels={"figure": "table"}),
        benchmarks_png=report(f"{REPORT_DIR}/benchmarks.png", caption="../workflow/report/benchmarks.rst", category="5. Benchmarks", labels={"figure": "bars"}),
        summary=f"{REPORT_DIR}/summary.json",
    params:
        experiment=config["experiment"],
        bench_dir=BENCH,
        examples=config.get("report", {}).get("examples", 5),
        code=code_version("hardneg.report"),
    log:
        f"{LOGS}/report_tables/{config['experiment']}.log",
    conda:
        CONDA_ENV
    script:
        "../workflow/scripts/report_tables.py"


@register_targets
def _report_targets():
    return [f"{REPORT_DIR}/summary.json"]


onerror:
    # Name each failed rule, its cause (time limit, memory, rejected by sbatch) and how to resume.
    from hardneg.cluster.slurm import diagnose_log

    try:
        _lines = diagnose_log(Path(log).read_text(errors="replace"))
    except OSError:
        _lines = []
    if _lines:
        print("\nhardneg: what failed and how to resume:\n  " + "\n  ".join(_lines), file=sys.stderr)
