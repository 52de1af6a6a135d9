"""One step's inputs: the rows of the global batch that fall to this rank, their texts and view
columns, tokenized (``StepBatches.prepare`` runs ahead of the loop in ``speed.Prefetch``'s worker)."""

from __future__ import annotations

from typing import Any

from hardneg.augment import units as augmenters
from hardneg.train import distributed as D
from hardneg.train.data import TrainingData, batch_rows
from hardneg.train.settings import TrainSettings
from hardneg.train.step_model import StepModel

StepInputs = tuple[list[int], list[str], dict[str, list[str]], "dict[str, Any] | None"]


class StepBatches:
    """Step -> (rows, texts, view columns, tokens). The order is a function of (seed, epoch, batch
    index, rank) alone (``data.batch_rows``), so a resumed run reads the same batches."""

    def __init__(self, data: TrainingData, s: TrainSettings, global_batch: int, n_batches: int,
                 info: D.DistInfo, model: StepModel) -> None:
        self.n_rows, self.seed, self.global_batch, self.n_batches = len(data), s.seed, global_batch, n_batches
        self.info, self.model = info, model
        frame = data.frame
        self.texts: list[str] = frame["text"].to_list()
        # view -> its column's texts (negative_views may give a view another augmenter's column)
        self.extra = {v: frame[c].to_list() for v, c in s.data_views().items() if c in augmenters.columns()}
        self.tokenize_ahead = True  # False: tokens are made at the step (SynCSE adds pool negatives there)

    def prepare(self, at: int) -> StepInputs:
        """The inputs of step ``at`` (tokens None unless ``tokenize_ahead``)."""
        epoch, index = divmod(at, self.n_batches)
        rows = batch_rows(self.n_rows, self.seed, epoch, index, self.global_batch, self.info.rank,
                          self.info.world_size)
        texts = [self.texts[i] for i in rows]
        extra = {c: [v[i] for i in rows] for c, v in self.extra.items()}
        return rows, texts, extra, self.model.tokenize(texts, extra) if self.tokenize_ahead else None
