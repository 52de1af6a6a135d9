"""SynCSE's active hard-negative sampling (Eq. 6) over an index of corpus embeddings.

For anchor x_a the negatives are k sentences drawn uniformly from
``{x in C minus {x_a, x_p} : sim(x_a, x) > delta}`` (Eq. 6). ``C`` is the training corpus (or a
fixed random subset of ``pool_size`` rows). The index holds the pool's unit vectors
(the encoder's pooled h, no projection, dropout off) and is re-encoded every ``refresh_every``
steps; a query is one matrix product ``q @ E^T`` (exact inner-product search: a torch matmul,
chosen over faiss by measurement, bench/results/syncse_index.md).

Fallbacks (counted): fewer than k pool sentences above delta -> the k most similar ones
(``syncse_below_delta``, per anchor); a pool with fewer than k+1 distinct sentences -> k is
lowered to what the pool holds (``syncse_pool_too_small``, per anchor). Sentences identical to
the anchor's text are never its negatives.

Sampling draws from a generator seeded by (seed, step, rank): the same negatives whatever the
batch size of the refresh and after a resume. After a resume the index is rebuilt from the
resumed weights (docs/deviations.md).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from hardneg.train import distributed as D
from hardneg.train.fallbacks import FallbackCounts

FALLBACKS = ("syncse_below_delta", "syncse_pool_too_small")


class NegativeIndex:
    """Pool embeddings + sampling of k hard negatives per anchor row."""

    def __init__(self, texts: list[str], k: int, delta: float, refresh_every: int, seed: int,
                 pool_size: int | None = None, template: str | None = None, encode_batch: int = 256,
                 counts: FallbackCounts | None = None) -> None:
        if k < 1:
            raise ValueError(f"train setting 'method_settings.syncse.negatives': must be >= 1 (got {k})")
        self.texts = texts
        n = len(texts)
        if pool_size is None or pool_size >= n:
            self.pool = np.arange(n)
        else:
            self.pool = np.sort(np.random.default_rng([seed, 12]).choice(n, size=pool_size, replace=False))
        _, text_id = np.unique(np.asarray(texts, dtype=object), return_inverse=True)
        self.text_id = torch.as_tensor(text_id, dtype=torch.long)
        distinct = len(np.unique(text_id[self.pool]))
        if distinct < 2:
            raise ValueError(f"SynCSE pool: {len(self.pool)} row(s) but {distinct} distinct sentence(s); "
                             f"raise train setting 'method_settings.syncse.pool_size' (got {pool_size})")
        self.k_asked = k
        self.k = min(k, distinct - 1)  # an anchor in the pool excludes its own text
        self.delta, self.refresh_every, self.seed = delta, refresh_every, seed
        self.template, self.encode_batch = template, encode_batch
        self.counts = counts if counts is not None else FallbackCounts(local_keys=FALLBACKS)
        self.pos = torch.full((n,), -1, dtype=torch.long)
        self.pos[torch.as_tensor(self.pool)] = torch.arange(len(self.pool))
        self.emb: torch.Tensor | None = None
        self.block: int | None = None

    # ------------------------------------------------------------------------------------------
    @torch.no_grad()
    def _encode(self, encoder, texts: list[str]) -> torch.Tensor:
        vecs = [encoder(texts[i : i + self.encode_batch], self.template, use_mlp=False).float()
                for i in range(0, len(texts), self.encode_batch)]
        return F.normalize(torch.cat(vecs), dim=-1)

    def refresh(self, encoder, info: D.DistInfo | None = None) -> None:
        """Re-encode the pool with the current weights (dropout off); DDP ranks share the work."""
        info = info or D.DistInfo()
        was_training = encoder.training
        encoder.eval()
        try:
            chunk = math.ceil(len(self.pool) / info.world_size)
            mine = self.pool[info.rank * chunk : (info.rank + 1) * chunk]
            emb = self._encode(encoder, [self.texts[i] for i in mine]) if len(mine) else None
            if info.enabled:
                dim = int(encoder.backbone.config.hidden_size) if emb is None else emb.shape[1]
                padded = torch.zeros(chunk, dim, device=encoder.device)
                if emb is not None:
                    padded[: emb.shape[0]] = emb
                emb = D.gather_no_grad(padded, info)[: len(self.pool)]
            store = torch.float16 if emb.device.type == "cuda" else torch.float32
            self.emb = emb.to(store)
        finally:
            encoder.train(was_training)

    def query(self, encoder, rows: np.ndarray) -> torch.Tensor:
        """Similarities [B, P] of the anchors (their stored pool vectors, else encoded now) to the
        pool; the anchor's own text (and duplicates of it) at -inf."""
        rows_t = torch.as_tensor(np.asarray(rows), dtype=torch.long)
        where = self.pos[rows_t]
        q = torch.empty(len(rows_t), self.emb.shape[1], dtype=self.emb.dtype, device=self.emb.device)
        have = where >= 0
        if have.any():
            q[have.to(q.device)] = self.emb[where[have].to(self.emb.device)]
        if (~have).any():
            was_training = encoder.training
            encoder.eval()
            try:
                q[(~have).to(q.device)] = self._encode(encoder, [self.texts[int(r)] for r in rows_t[~have]]).to(q.dtype)
            finally:
                encoder.train(was_training)
        sims = (q @ self.emb.T).float()
        pool_ids = self.text_id[torch.as_tensor(self.pool)].to(sims.device)
        same = pool_ids.unsqueeze(0) == self.text_id[rows_t].to(sims.device).unsqueeze(1)
        return sims.masked_fill(same, float("-inf"))

    def sample(self, sims: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """Pool positions [B, k]: uniform among those above delta, else the k most similar."""
        k = self.k
        above = sims > self.delta
        enough = above.sum(dim=1) >= k
        keys = torch.rand(sims.shape, generator=generator, device="cpu").to(sims.device)
        score = torch.where(enough.unsqueeze(1), torch.where(above, keys, torch.full_like(keys, -1.0)), sims)
        self.counts.add("syncse_below_delta", (~enough).sum().cpu())
        if k < self.k_asked:
            self.counts.add("syncse_pool_too_small", sims.shape[0])
        return score.topk(k, dim=1).indices

    def negatives(self, encoder, rows: np.ndarray, step: int, info: D.DistInfo | None = None) -> list[str]:
        """The k negative sentences of each anchor row, row-major ([B * k] texts)."""
        info = info or D.DistInfo()
        block = step // self.refresh_every  # refreshes at steps 0, N, 2N, ... (and on a resume)
        if self.emb is None or block != self.block:
            self.refresh(encoder, info)
            self.block = block
        gen = torch.Generator().manual_seed(int(np.random.default_rng([self.seed, step, info.rank]).integers(2**62)))
        picks = self.sample(self.query(encoder, rows), gen).cpu()
        return [self.texts[int(self.pool[j])] for j in picks.reshape(-1)]
