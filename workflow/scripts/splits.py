"""Snakemake adapter: build the Cont./Oppn. splits artifact (hardneg.evaluate.splits)."""

import logging

from hardneg.evaluate.splits import DEFAULT_MEDIAN_RANGE, DEFAULT_SOURCES, build_splits
from hardneg.shards import write_json_atomic, write_shard

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO,  # noqa: F821
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")
cfg = snakemake.params.cfg  # noqa: F821
table, summary = build_splits(
    snakemake.input[0],  # noqa: F821
    cfg.get("sources") or DEFAULT_SOURCES,
    tuple(cfg.get("median_range") or DEFAULT_MEDIAN_RANGE),
)
write_shard(table, snakemake.output.splits)  # noqa: F821
write_json_atomic(summary, snakemake.output.stats)  # noqa: F821
logging.info("splits: %s", summary["totals"])
