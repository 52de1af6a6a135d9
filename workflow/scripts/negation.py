"""Snakemake adapter: rule negate -> hardneg.augment.negation.negate (corpus shard -> negation shard)."""

from hardneg.augment.negation.negate import NegationConfig, negate_frame, summarize
from hardneg.runlog import run_rule
from hardneg.shards import read_shard, write_json_atomic, write_shard

sm = snakemake  # noqa: F821 (snakemake injects this object)


def main() -> None:
    cfg = NegationConfig.from_dict(dict(sm.params.cfg, n_process=sm.threads))
    frame = read_shard(sm.input[0])
    out = negate_frame(frame, cfg, show_progress=True)
    if out.height != frame.height:  # every corpus row is kept, dropped ones with a reason
        raise RuntimeError(f"{sm.input[0]}: {frame.height} rows in, {out.height} out")
    # "rules" etc.: which negation rule made this shard (training checks it against its own)
    summary = cfg.provenance() | summarize(out)
    import logging

    logging.getLogger("hardneg.negation").info("%s: %s", sm.input[0], summary)
    write_shard(out, sm.output.shard)
    write_json_atomic(summary, sm.output.summary)


run_rule(main, sm.log[0])
