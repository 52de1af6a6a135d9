"""Snakemake adapter: rule backtranslate -> hardneg.augment.backtranslation.run.run_backtranslate."""

from hardneg.cluster.gpus import lease_gpu

if snakemake.resources.get("gpu", 0):  # noqa: F821  (transformers backend: one device per job)
    lease_gpu()

from hardneg.augment.backtranslation.run import run_backtranslate
from hardneg.runlog import run_rule

sm = snakemake  # noqa: F821 (snakemake injects this object)
cfg = dict(sm.params.cfg)
backend = cfg.get("backend")
if backend:  # the backend's scheduling settings arrive as a derived param (a change re-runs nothing)
    cfg[backend] = {**cfg.get(backend, {}), **dict(sm.params.scheduling)}
run_rule(run_backtranslate, sm.log[0], sm.input[0], sm.output[0], cfg, threads=sm.threads)
