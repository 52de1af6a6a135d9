"""Snakemake adapter: rule prepare_corpus -> hardneg.data.run.run_prepare_corpus."""

from hardneg.data.run import run_prepare_corpus
from hardneg.runlog import run_rule

sm = snakemake  # noqa: F821 (snakemake injects this object)
run_rule(
    run_prepare_corpus, sm.log[0], sm.input.corpus, list(sm.output.shards), sm.output.rejects,
    sm.output.manifest, sm.params.corpus, senteval_dir=sm.input.senteval,
)  # fmt: skip
