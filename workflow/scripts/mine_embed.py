"""Snakemake adapter: rule mine_embed -> hardneg.augment.mine.run.run_embed (corpus -> embeddings)."""

from pathlib import Path

from hardneg.augment.mine.run import run_embed
from hardneg.runlog import run_rule

sm = snakemake  # noqa: F821 (snakemake injects this object)
run_rule(run_embed, sm.log[0], list(sm.input), Path(sm.output.embeddings).parent,
         dict(sm.params.cfg) | {"device": sm.params.device},
         threads=sm.threads)  # fmt: skip
