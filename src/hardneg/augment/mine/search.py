"""Exact nearest-neighbour search by blocked matrix products (torch), memory bounded at any size.

Every query block is scored against every corpus block (``QUERY_BLOCK x CORPUS_BLOCK`` floats at a
time, 32 MiB), keeping a running top-k. The block shapes are constants, not settings: a float32
product's value depends on the shape of the product it is computed in, so fixed shapes make the
scores, hence the neighbours, the same bytes on every run. Neighbours come ordered by score,
ties by corpus position (which is id order); where ties reach past the kept window the block is
scored again and the tied row resolved exactly.
"""

from __future__ import annotations

import numpy as np
import torch

QUERY_BLOCK = 256
CORPUS_BLOCK = 32_768
SLACK = 8  # extra neighbours kept past k, so a tie at the k-th score is seen whole


def _order(scores: torch.Tensor, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row sorted by score descending, ties by index ascending (two stable sorts)."""
    o = torch.argsort(index, dim=1, stable=True)
    scores, index = scores.gather(1, o), index.gather(1, o)
    o = torch.argsort(-scores, dim=1, stable=True)
    return scores.gather(1, o), index.gather(1, o)


def _block_top(q: torch.Tensor, corpus: torch.Tensor, keep: int) -> tuple[torch.Tensor, torch.Tensor]:
    best_s = best_i = None
    for start in range(0, corpus.shape[0], CORPUS_BLOCK):
        sims = q @ corpus[start : start + CORPUS_BLOCK].T
        s, i = torch.topk(sims, min(keep, sims.shape[1]), dim=1)
        i = i + start
        if best_s is not None:
            s, i = torch.cat([best_s, s], 1), torch.cat([best_i, i], 1)
            s, j = torch.topk(s, min(keep, s.shape[1]), dim=1)
            i = i.gather(1, j)
        best_s, best_i = s, i
    return _order(best_s, best_i)


def _resolve_ties(q: torch.Tensor, corpus: torch.Tensor, rows: list[int], floor: torch.Tensor,
                  k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """For ``rows`` of the block: every neighbour scoring >= its ``floor``, ordered, first k
    (scored in the same block shapes as the first pass, so the scores are the same numbers)."""
    found_s: list[list[torch.Tensor]] = [[] for _ in rows]
    found_i: list[list[torch.Tensor]] = [[] for _ in rows]
    for start in range(0, corpus.shape[0], CORPUS_BLOCK):
        sims = q @ corpus[start : start + CORPUS_BLOCK].T
        for n, r in enumerate(rows):
            hit = torch.nonzero(sims[r] >= floor[n]).flatten()
            found_s[n].append(sims[r, hit])
            found_i[n].append(hit + start)
    out_s, out_i = [], []
    for n in range(len(rows)):
        s, i = _order(torch.cat(found_s[n]).unsqueeze(0), torch.cat(found_i[n]).unsqueeze(0))
        out_s.append(s[0, :k])
        out_i.append(i[0, :k])
    return torch.stack(out_s), torch.stack(out_i)


@torch.inference_mode()
def top_neighbours(queries: np.ndarray, corpus: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` highest inner products of each query row with the corpus rows: (scores float32
    [Q, k'], corpus positions int64 [Q, k']), ``k' = min(k, len(corpus))``, ordered by score
    descending then position ascending."""
    q_all = torch.from_numpy(np.ascontiguousarray(queries, dtype=np.float32))
    c = torch.from_numpy(np.ascontiguousarray(corpus, dtype=np.float32))
    n = c.shape[0]
    k = min(k, n)
    keep = min(k + SLACK, n)
    out_s, out_i = [], []
    for start in range(0, q_all.shape[0], QUERY_BLOCK):
        q = q_all[start : start + QUERY_BLOCK]
        s, i = _block_top(q, c, keep)
        if keep > k:  # a tie from the k-th to the last kept score may continue past the window
            tied = torch.nonzero(s[:, k - 1] == s[:, keep - 1]).flatten().tolist()
            s, i = s[:, :k].clone(), i[:, :k].clone()
            if tied:
                ts, ti = _resolve_ties(q, c, tied, s[tied, k - 1], k)
                s[tied], i[tied] = ts, ti
        out_s.append(s)
        out_i.append(i)
    if not out_s:
        return np.zeros((0, k), np.float32), np.zeros((0, k), np.int64)
    return torch.cat(out_s).numpy(), torch.cat(out_i).numpy().astype(np.int64)
