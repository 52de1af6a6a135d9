"""Snakemake adapter: the probe set and its transformations (hardneg.evaluate.run.build_probe_set)."""

import torch

from hardneg.evaluate.run import build_probe_set
from hardneg.runlog import run_rule

sm = snakemake  # noqa: F821 (snakemake injects this object)
torch.set_num_threads(max(1, sm.threads))
p = sm.params
sched = dict(p.scheduling)  # scheduling settings arrive as a derived param (a change re-runs nothing)
neg = {**dict(p.negation), **sched.get("negation", {})}
bt = dict(p.backtranslation)
if bt.get("backend"):
    bt[bt["backend"]] = {**bt.get(bt["backend"], {}), **sched.get("backtranslation", {})}
run_rule(
    build_probe_set, sm.log[0], list(sm.input.corpus), sm.output.rows, sm.output.meta, p.cfg,
    paraphrase_shards=list(getattr(sm.input, "paraphrases", [])),  # probe.paraphrases=shards
    backtranslation=bt, paraphrase=p.paraphrase, negation=neg, mlm=p.mlm, device=p.device,
)  # fmt: skip
