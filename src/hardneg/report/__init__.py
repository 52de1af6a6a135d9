"""The experiment report: STS tables (mean ± std over seeds), Cont./Oppn. figures, training
curves, augmentation examples/statistics and rule benchmarks, gathered from a run's results for
``snakemake --report``."""

from hardneg.report.collect import (
    augmentation_summary,
    benchmarks_table,
    cont_oppn_long,
    parse_run_path,
    sts_long,
    sts_summary,
    training_curves,
)

__all__ = [
    "augmentation_summary",
    "benchmarks_table",
    "cont_oppn_long",
    "parse_run_path",
    "sts_long",
    "sts_summary",
    "training_curves",
]
