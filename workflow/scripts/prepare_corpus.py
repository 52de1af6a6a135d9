"""Snakemake adapter: rule prepare_corpus -> hardneg.data.corpus.prepare_corpus."""

from hardneg.data.corpus import prepare_corpus
from hardneg.runlog import run_rule

c = snakemake.params.corpus  # noqa: F821
manifest = run_rule(
    prepare_corpus,
    snakemake.log[0],  # noqa: F821
    snakemake.input.corpus,  # noqa: F821
    snakemake.output.shards,  # noqa: F821
    snakemake.output.rejects,  # noqa: F821
    snakemake.output.manifest,  # noqa: F821
    max_sentences=c["max_sentences"],
    shard_size=c["shard_size"],
    min_chars=c.get("min_chars", 1),
    dedupe=c.get("dedupe", True),
    senteval_dir=snakemake.input.senteval,  # noqa: F821
)
