"""The report's answers to "did I reproduce the paper?" (our figures beside the papers') and "is
this difference real?" (each method against its base method, with a confidence interval): the
HTML tables for ``sts.html`` and their entries in ``summary.json``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from hardneg.report import render
from hardneg.report.collect import STS_HEADERS, parse_run_path
from hardneg.report.differences import differences_table
from hardneg.report.paper_figures import paper_table, run_init_models


def comparison_parts(sts_rows: pl.DataFrame, summaries: Sequence[str | Path],
                     predictions: Sequence[str | Path], bootstrap: Mapping[str, Any],
                     links: Mapping[str, str]) -> tuple[list[str], dict[str, list[dict]]]:
    """(HTML tables, summary entries): the paper-figures table and the differences table.

    ``bootstrap``: ``report.bootstrap`` (resamples, seed, confidence)."""
    papers = paper_table(sts_rows, run_init_models(summaries))
    preds = {parse_run_path(p)[1:]: p for p in predictions}
    diffs = differences_table(sts_rows, preds, resamples=int(bootstrap["resamples"]),
                              seed=int(bootstrap["seed"]), confidence=float(bootstrap["confidence"]))
    level = f"{round(100 * float(bootstrap['confidence']))}%"
    parts = [
        render.table_html(
            papers.rename({k: v for k, v in STS_HEADERS.items() if k in papers.columns}),
            "Did we reproduce the paper? Our avg (mean over seeds) beside each paper's published "
            "figures (STS12 to avg) for the same method and backbone, with the table they come from",
            "paper-figures", links),
        render.table_html(
            diffs.drop("low", "high"),
            f"Is the difference real? Each method minus its base method on avg, {level} interval: "
            "Welch t over seeds with >= 2 seeds each (seed noise), else a paired bootstrap over the "
            "STS test pairs of one seed (test-set noise only)", "differences"),
    ]
    return parts, {"paper_figures": papers.to_dicts(), "differences": diffs.to_dicts()}
