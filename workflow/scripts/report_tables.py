"""Snakemake adapter: rule report_tables -> hardneg.report.build.build_report."""

from pathlib import Path

from hardneg.report.build import build_report
from hardneg.runlog import log_to

log_to(snakemake.log[0])  # noqa: F821
build_report(
    Path(snakemake.output.summary).parent,  # noqa: F821
    sts=snakemake.input.sts,  # noqa: F821
    cont_oppn=snakemake.input.cont_oppn,  # noqa: F821
    metrics=snakemake.input.metrics,  # noqa: F821
    summaries=snakemake.input.summaries,  # noqa: F821
    augment=snakemake.input.augment,  # noqa: F821
    bench_dir=snakemake.params.bench_dir,  # noqa: F821
    experiment=snakemake.params.experiment,  # noqa: F821
    examples=snakemake.params.examples,  # noqa: F821
)
