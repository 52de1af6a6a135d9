"""Snakemake adapter: rule report_tables -> hardneg.report.build.build_report."""

from pathlib import Path

from hardneg.report.build import build_report
from hardneg.runlog import run_rule

sm = snakemake  # noqa: F821 (snakemake injects this object)
run_rule(
    build_report, sm.log[0], Path(sm.output.summary).parent,
    sts=sm.input.sts, cont_oppn=sm.input.cont_oppn, metrics=sm.input.metrics, summaries=sm.input.summaries,
    augment=sm.input.augment, bench_dir=sm.params.bench_dir, experiment=sm.params.experiment,
    examples=sm.params.examples, predictions=sm.input.predictions, bootstrap=dict(sm.params.bootstrap),
)  # fmt: skip
