"""STS-B dev during training: the score of the initial model and of every ``eval_every`` step;
the best-scoring weights are kept in ``best.pt`` and exported (SimCSE's convention)."""

from __future__ import annotations

import logging
from pathlib import Path

from hardneg.train import distributed as D
from hardneg.train.checkpoint import save_atomic
from hardneg.train.set_up import Progress, Run

log = logging.getLogger(__name__)


def dev_score(run: Run, senteval_dir: str | Path | None) -> float | None:
    """STS-B dev Spearman x100 of the encoder as it would be exported (None without SentEval data);
    leaves the encoder in training mode."""
    if senteval_dir is None:
        return None
    from hardneg.encoders import Encoder
    from hardneg.evaluate.sts import stsb_dev_spearman

    s = run.s
    enc = Encoder(model=run.encoder.backbone, tokenizer=run.encoder.tokenizer, pooler=s.export_pooler,
                  max_length=run.eval_len, device=str(run.device),
                  template=s.templates[0] if s.templates else None, name=s.method)
    score = float(stsb_dev_spearman(enc.encode, senteval_dir, max_pairs=s.dev_max_pairs))
    run.encoder.train()
    return score


def score_initial_model(run: Run, senteval_dir: str | Path | None) -> None:
    """Step 0's metric line: the dev score before any update (main rank)."""
    score = dev_score(run, senteval_dir)
    if score is not None:
        run.write_metric({"kind": "eval", "step": 0, "stsb_dev": score})
        log.info("step 0 (initial model): STS-B dev %.2f", score)


def evaluate_and_keep_best(run: Run, progress: Progress, senteval_dir: str | Path | None) -> None:
    """Score the current step on the main rank; a better score saves the weights to ``best.pt``.
    Every rank waits for it."""
    if run.info.is_main:
        score = dev_score(run, senteval_dir)
        if score is not None:
            if score > progress.best_score:
                progress.best_score, progress.best_step = score, progress.step
                save_atomic({k: v.detach().cpu() for k, v in run.encoder.state_dict().items()},
                            run.work / "best.pt")
            run.write_metric({"kind": "eval", "step": progress.step, "stsb_dev": score,
                              "best": progress.best_score})
            log.info("step %d: STS-B dev %.2f (best %.2f at step %s)", progress.step, score,
                     progress.best_score, progress.best_step)
    D.barrier(run.info)
