"""Build the report's tables and figures from a run's result files (rule ``report_tables``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from hardneg.augment import units as augmenters
from hardneg.config import with_defaults
from hardneg.report import collect, render
from hardneg.shards import write_json_atomic

log = logging.getLogger(__name__)

# File names in the output folder (rules/report.smk names the same ones).
OUTPUTS = ("sts.html", "sts.png", "cont_oppn.html", "cont_oppn.png", "curves.png",
           "augmentation.html", "benchmarks.html", "benchmarks.png", "summary.json")


def _headers(frame: pl.DataFrame) -> pl.DataFrame:
    """Dataset columns under the papers' names (STS-B, SICK-R) for display."""
    return frame.rename({k: v for k, v in collect.STS_HEADERS.items() if k in frame.columns})


def augmenter_sections(augment: Sequence[str | Path], examples: int) -> list[str]:
    """Each augmenter unit's own section of the augmentation page (``report_section``), in
    registry order (SAN: its notes and marked examples; none without its shards)."""
    parts: list[str] = []
    for unit in augmenters.units():
        section = augmenters.report_section(unit)
        if section is not None:
            parts += section(augment, examples)
    return parts


def build_report(
    out_dir: str | Path,
    *,
    sts: Sequence[str | Path] = (),
    cont_oppn: Sequence[str | Path] = (),
    metrics: Sequence[str | Path] = (),
    summaries: Sequence[str | Path] | None = None,
    augment: Sequence[str | Path] = (),
    bench_dir: str | Path | None = None,
    experiment: str = "",
    examples: int = 5,
    predictions: Sequence[str | Path] = (),
    bootstrap: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    """Write every file of ``OUTPUTS`` into ``out_dir``; return name -> path.

    ``summaries``: the runs' training ``summary.json`` files for the method table (default: beside
    each ``metrics.jsonl``). ``predictions``: the runs' ``predictions.parquet`` (the one-seed
    paired bootstrap); ``bootstrap``: ``report.bootstrap`` (missing keys: the schema's defaults).
    ``summary.json`` holds only result-derived numbers (STS mean/std, augmentation counts, paper
    figures, differences with their seeded intervals), so it is byte-identical for identical
    results; benchmark timings live in the HTML/PNG only.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in OUTPUTS}

    sts_rows = collect.sts_long(sts)
    table = collect.sts_summary(sts_rows) if sts_rows.height else pl.DataFrame({"method": []})
    per_seed = collect.sts_per_seed(sts_rows)
    from hardneg.report.methods import method_table, paper_links  # imports train's presets

    if summaries is None:  # beside each metrics.jsonl (the train rule writes both)
        summaries = [p for p in (Path(m).with_name("summary.json") for m in metrics) if p.exists()]
    methods = method_table(summaries)
    links = paper_links({*table["method"].to_list(), *methods["method"].to_list()})
    from hardneg.report.comparison import comparison_parts

    compare_html, compare_summary = comparison_parts(
        sts_rows, summaries, predictions, with_defaults("report.bootstrap", bootstrap), links)
    render.plot_sts(sts_rows, paths["sts.png"])
    render.write_page(paths["sts.html"], f"STS test, experiment {experiment}", [
        render.beside(
            render.table_html(_headers(table), "Spearman ×100, mean ± std over seeds (SentEval 'all' "
                              f"for STS12-16; {collect.NO_STD}: one seed)", "sts-summary", links),
            render.figure_html(paths["sts.png"], "Mean over seeds; error bars: std over seeds")),
        render.table_html(_headers(per_seed), "Per seed", "sts-per-seed", links),
        render.table_html(methods, "Methods (linked to their papers): paper source and settings that "
                          "differ from the paper's preset (docs/deviations.md)", "methods", links),
        *compare_html,
    ])

    co = collect.cont_oppn_long(cont_oppn)
    co_table = (co.group_by("method", "group", "part").agg(pl.col("spearman").mean().round(2))
                .pivot(on="part", index=["method", "group"], values="spearman", sort_columns=True)
                .sort("method", "group")
                if co.height else pl.DataFrame({"method": []}))
    render.plot_cont_oppn(co, paths["cont_oppn.png"])
    render.write_page(paths["cont_oppn.html"], "Cont./Oppn. splits (OssCSE §3.3)", [
        render.beside(
            render.table_html(co_table, "Spearman ×100 on the Cont. and Oppn. parts (mean over seeds)",
                              "cont-oppn", paper_links(co_table["method"].to_list())),
            render.figure_html(paths["cont_oppn.png"], "Weighted average over datasets; error bars: "
                               "std over seeds"))])

    render.plot_curves(collect.training_curves(metrics), paths["curves.png"])

    stats, ex = collect.augmentation_summary(augment, examples=examples)
    render.write_page(paths["augmentation.html"], "Augmentation", [
        render.table_html(stats, "Rows per augmenter, status and reason (kept + dropped = corpus)",
                          "aug-stats"),
        render.table_html(ex, "Examples (first rows kept per augmenter)", "aug-examples"),
        *augmenter_sections(augment, examples),
    ])

    bench = collect.benchmarks_table(bench_dir) if bench_dir and Path(bench_dir).exists() \
        else pl.DataFrame(schema={"rule": pl.String, "job": pl.String, "seconds": pl.Float64,
                                  "max_rss_mb": pl.Float64, "cpu_time_s": pl.Float64})
    per_rule = (bench.group_by("rule").agg(pl.len().alias("jobs"), pl.col("seconds").sum(),
                                           pl.col("max_rss_mb").max(), pl.col("cpu_time_s").sum())
                .sort("rule"))
    render.plot_benchmarks(bench, paths["benchmarks.png"])
    render.write_page(paths["benchmarks.html"], "Rule benchmarks (Snakemake benchmark: files)", [
        render.beside(
            render.table_html(per_rule, "Per rule: jobs, summed wall s, max peak RSS MB, summed CPU s",
                              "bench-rules"),
            render.figure_html(paths["benchmarks.png"], "Wall time and peak memory per rule")),
        render.table_html(bench, "Per job", "bench-jobs"),
    ])

    summary = {
        "experiment": experiment,
        "sts": [{k: v for k, v in r.items()} for r in table.iter_rows(named=True)],
        "augmentation": [r for r in stats.iter_rows(named=True)],
        **compare_summary,
        "runs": sorted({f"{m}/seed{s}" for m, s in sts_rows.select("method", "seed").iter_rows()}),
    }
    write_json_atomic(summary, paths["summary.json"])
    log.info("report tables for %s: %d runs, %d benchmark files", experiment,
             len(summary["runs"]), bench.height)
    return paths
