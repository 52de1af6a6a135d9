"""Snakemake adapter: the transformation probe of one model (hardneg.evaluate.run.probe_model)."""

import torch

from hardneg.evaluate.run import probe_model
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
    probe_model, sm.log[0], p.model, list(sm.input.corpus), sm.output.summary, p.cfg,
    pairs_out=sm.output.pairs,
    paraphrase_shards=list(getattr(sm.input, "paraphrases", [])),  # probe.paraphrases=shards
    backtranslation=bt, paraphrase=p.paraphrase, negation=neg, mlm=p.mlm,
    max_length=p.max_length, device=p.device, batch_size=p.batch_size,
)  # fmt: skip
