# Report: tables and figures from the run's results, annotated for `snakemake --report`.
#   snakemake --configfile config.yaml experiments/quick.yaml --report report.html


include: "functions/report.smk"


localrules:
    report_tables,


rule report_tables:
    """STS table (mean ± std over seeds), Cont./Oppn., training curves, augmentation examples and
    statistics, rule benchmarks: files for the HTML report."""
    input:
        unpack(_report_inputs),
    output:
        sts=report(
            f"{REPORT_DIR}/sts.html",
            caption="../workflow/report/sts_table.rst",
            category="1. STS",
            labels={"figure": "table"},
        ),
        sts_png=report(
            f"{REPORT_DIR}/sts.png",
            caption="../workflow/report/sts_plot.rst",
            category="1. STS",
            labels={"figure": "bars"},
        ),
        cont_oppn=report(
            f"{REPORT_DIR}/cont_oppn.html",
            caption="../workflow/report/cont_oppn.rst",
            category="2. Cont./Oppn.",
            labels={"figure": "table"},
        ),
        cont_oppn_png=report(
            f"{REPORT_DIR}/cont_oppn.png",
            caption="../workflow/report/cont_oppn.rst",
            category="2. Cont./Oppn.",
            labels={"figure": "bars"},
        ),
        curves=report(
            f"{REPORT_DIR}/curves.png",
            caption="../workflow/report/curves.rst",
            category="3. Training",
            labels={"figure": "curves"},
        ),
        augmentation=report(
            f"{REPORT_DIR}/augmentation.html",
            caption="../workflow/report/augmentation.rst",
            category="4. Augmentation",
            labels={"figure": "statistics and examples"},
        ),
        benchmarks=report(
            f"{REPORT_DIR}/benchmarks.html",
            caption="../workflow/report/benchmarks.rst",
            category="5. Benchmarks",
            labels={"figure": "table"},
        ),
        benchmarks_png=report(
            f"{REPORT_DIR}/benchmarks.png",
            caption="../workflow/report/benchmarks.rst",
            category="5. Benchmarks",
            labels={"figure": "bars"},
        ),
        summary=f"{REPORT_DIR}/summary.json",
    log:
        f"{LOGS}/report_tables/{config['experiment']}.log",
    conda:
        CONDA_ENV
    params:
        experiment=config["experiment"],
        bench_dir=BENCH,
        examples=config["report"]["examples"],
        bootstrap=config["report"]["bootstrap"],
        code=code_version("hardneg.report", "hardneg.plotting"),
        # the papers' figures are data, not code: their content re-runs the report when edited
        paper_figures=file_sha256(REPO_DIR / "src/hardneg/report/paper_figures.yaml"),
    script:
        "../workflow/scripts/report_tables.py"


onerror:
    # Name each failed rule, its cause (time limit, memory, rejected by sbatch) and how to resume.
    from hardneg.cluster.slurm import diagnose_log

    try:
        _log = log[0] if isinstance(log, (list, tuple)) else log  # Snakemake 9 passes a list
        _lines = diagnose_log(Path(_log).read_text(errors="replace"))
    except OSError:
        _lines = []
    if _lines:
        print(
            "\nhardneg: what failed and how to resume:\n  " + "\n  ".join(_lines),
            file=sys.stderr,
        )
