"""Snakemake adapter: rule download -> hardneg.data.download.download."""

from hardneg.data.download import download
from hardneg.runlog import run_rule

p = snakemake.params  # noqa: F821 (snakemake injects this object)
run_rule(
    download,
    snakemake.log[0],  # noqa: F821
    p.url,
    snakemake.output.file,  # noqa: F821
    mirror=p.mirror,
    sha256=p.sha256,
    retries=p.retries,
    backoff_s=p.backoff_s,
    timeout_s=p.timeout_s,
    manifest=snakemake.output.manifest,  # noqa: F821
)
