"""Snakemake adapter: plots of one evaluation (hardneg.evaluate.plots)."""

import json
import logging

from hardneg.evaluate.plots import plot_cont_oppn, plot_hard_pairs
from hardneg.shards import read_shard

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO)  # noqa: F821
wc = snakemake.wildcards  # noqa: F821
label = f"{wc.experiment}/{wc.method}/seed{wc.seed}"
with open(snakemake.input.cont_oppn) as fh:  # noqa: F821
    plot_cont_oppn(json.load(fh), snakemake.output.cont_oppn, title=f"Cont./Oppn.: {label}")  # noqa: F821
plot_hard_pairs({label: read_shard(snakemake.input.predictions)}, snakemake.output.hard_pairs)  # noqa: F821
