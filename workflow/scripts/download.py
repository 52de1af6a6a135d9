"""Snakemake adapter: rule download -> hardneg.data.run.run_download."""

from hardneg.data.run import run_download
from hardneg.runlog import run_rule

sm = snakemake  # noqa: F821 (snakemake injects this object)
p = sm.params
run_rule(
    run_download, sm.log[0], p.url, sm.output.file, sm.output.manifest,
    {"retries": p.retries, "backoff_s": p.backoff_s, "timeout_s": p.timeout_s},
    mirror=p.mirror, sha256=p.sha256,
)  # fmt: skip
