"""Snakemake adapter: the transformation probe of one model (hardneg.evaluate.probe.run_probe)."""

import logging

import torch

from hardneg.evaluate.probe import run_probe

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO,  # noqa: F821
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")
torch.set_num_threads(max(1, snakemake.threads))  # noqa: F821
p = snakemake.params  # noqa: F821
cfg, m = p.cfg, p.model
para = cfg.get("paraphrases", "shards")
neg = {k: v for k, v in p.negation.items() if k != "n_process"}
try:
    run_probe(
        m["model"], list(snakemake.input.corpus), snakemake.output.summary,  # noqa: F821
        pairs_out=snakemake.output.pairs, pooler=m["pooler"], template=m["template"],  # noqa: F821
        max_length=p.max_length, device=p.device, batch_size=p.batch_size,
        max_sentences=cfg.get("max_sentences"), seed=cfg.get("seed", 42), edit_rate=cfg.get("edit_rate", 0.1),
        paraphrase_shards=list(snakemake.input.paraphrases) if para == "shards" else None,  # noqa: F821
        backtranslation=p.backtranslation if para == "backtranslate" else False,
        paraphrase_cfg=p.paraphrase, negation_cfg=neg, mlm=p.mlm,
    )
except Exception:
    logging.exception("probe failed")
    raise
