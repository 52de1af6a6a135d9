"""Snakemake adapter: rule extract_senteval -> hardneg.data.archive.extract_senteval."""

from hardneg.data.archive import extract_senteval
from hardneg.runlog import run_rule

run_rule(extract_senteval, snakemake.log[0], snakemake.input[0], snakemake.output[0])  # noqa: F821
