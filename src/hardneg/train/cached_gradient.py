"""Cached-gradient training step (``train.mini_batch_size``; GradCache, Gao et al. 2021, "Scaling
Deep Contrastive Learning Batch Size under Memory Limited Setup", §3.2).

The step's views are embedded in chunks of ``mini_batch_size`` sentences WITHOUT a graph; the
objective runs on the whole (gathered) batch of those embeddings, which are leaves, and its
backward leaves d loss / d embedding on them; each chunk is then re-run WITH a graph and
back-propagated with its slice of that cached gradient. Peak activation memory is one chunk's,
while the in-batch negatives still span the whole global batch (gradient accumulation cannot
add negatives). Each chunk's CPU and CUDA generator states are recorded before its first pass
and restored for its second, so dropout draws the same masks twice: SimCSE's positive IS the
dropout noise, and a re-run with fresh masks would back-propagate through different embeddings
than the loss saw (sentence-transformers CachedMultipleNegativesRankingLoss replays them too).

A chunk holds sentences ``[i*m, (i+1)*m)`` of every view group (anchor, positive, negation,
paraphrase, SynCSE's k pool negatives, SAN at its own dropout), so ``StepModel.forward`` runs on
it unchanged and its per-view outputs concatenate back into the one-pass layout. Objectives are
unchanged: they see the same embedding dict. Terms of the loss that read parameters directly
(OssCSE's recall loss) get their gradient from the loss backward itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

if TYPE_CHECKING:
    from hardneg.train.settings import TrainSettings


def refusal(s: TrainSettings) -> str | None:
    """Why ``mini_batch_size`` cannot serve this method (None: it can). HiCL encodes its own
    per-segment batch inside the forward (segments per sentence vary) and its local loss needs
    the segment vectors, which a sentence chunk does not delimit."""
    if s.uses("hicl"):
        return (f"method {s.method!r} (HiCL) encodes variable-length segment batches and its local loss reads "
                f"segment vectors, which sentence chunks do not split; unset mini_batch_size (null: one pass)")
    return None


@dataclass(frozen=True)
class RngState:
    """The generator states dropout reads: the CPU generator and, on CUDA, the device's."""

    cpu: torch.Tensor
    cuda: torch.Tensor | None
    device: torch.device

    @classmethod
    def capture(cls, device: torch.device) -> RngState:
        cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
        return cls(torch.get_rng_state(), cuda, device)

    def restore(self) -> None:
        torch.set_rng_state(self.cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state(self.cuda, self.device)


def _rows(n_rows: int, n: int, what: str) -> int:
    if n_rows % n:
        raise ValueError(f"cached gradient: view {what!r} has {n_rows} rows, not a multiple of the {n} sentences")
    return n_rows // n


def _slice_batch(batch: dict[str, torch.Tensor], lo: int, hi: int) -> dict[str, torch.Tensor]:
    return {k: v[lo:hi] for k, v in batch.items()}


def chunk_tokens(tokens: dict[str, Any], n: int, size: int) -> list[tuple[int, int, dict[str, Any]]]:
    """Split ``StepModel.tokenize``'s output for ``n`` sentences into chunks of ``size`` sentences
    (the last one smaller when ``size`` does not divide ``n``): ``(first, stop, tokens)`` per
    chunk, each a tokens dict ``StepModel.forward`` accepts (every view group sliced to the
    chunk's sentences; padding width kept)."""
    if size < 1:
        raise ValueError(f"train setting 'mini_batch_size': must be >= 1 (got {size})")
    chunks = []
    for lo in range(0, n, size):
        hi = min(n, lo + size)
        groups, parts, start = [], [], 0
        for name, n_g in tokens["groups"]:
            r = _rows(n_g, n, name)  # rows per sentence (SynCSE: k pool negatives)
            parts.append((start + lo * r, start + hi * r))
            groups.append((name, (hi - lo) * r))
            start += n_g
        views = {k: torch.cat([v[a:b] for a, b in parts]) for k, v in tokens["views"].items()}
        chunk: dict[str, Any] = {"groups": groups, "views": views}
        if "san" in tokens:
            r = _rows(tokens["san"]["input_ids"].shape[0], n, "san")
            chunk["san"] = _slice_batch(tokens["san"], lo * r, hi * r)
        chunks.append((lo, hi, chunk))
    return chunks


def _slice_lists(texts: list[str], extra: dict[str, list[str]], n: int, lo: int, hi: int):
    sub = {k: v[lo * (len(v) // n) : hi * (len(v) // n)] for k, v in extra.items()}
    return texts[lo:hi], sub


class CachedStep:
    """One step's two passes. ``embed()`` (no graph) returns the embedding dict as leaves that
    require grad; after the loss's backward has filled their ``.grad``, ``backward(model)``
    re-runs each chunk with a graph, its recorded RNG state, and back-propagates the cached
    gradient slice into the parameters."""

    def __init__(self, model: nn.Module, texts: list[str], extra: dict[str, list[str]],
                 tokens: dict[str, Any], mini_batch_size: int, device: torch.device) -> None:
        self.model, self.texts, self.extra, self.device = model, texts, extra, device
        self.n = len(texts)
        self.chunks = chunk_tokens(tokens, self.n, mini_batch_size)
        self.states: list[RngState] = []
        self.emb: dict[str, torch.Tensor] = {}
        self.rows: dict[str, int] = {}

    def embed(self) -> dict[str, torch.Tensor]:
        parts: dict[str, list[torch.Tensor]] = {}
        with torch.no_grad():
            for lo, hi, tok in self.chunks:
                self.states.append(RngState.capture(self.device))
                t, e = _slice_lists(self.texts, self.extra, self.n, lo, hi)
                for name, vec in self.model(t, e, tok).items():
                    # a copy: under train.compile (CUDA graphs) a chunk's output may be a view of
                    # graph memory that the next chunk's replay overwrites
                    parts.setdefault(name, []).append(vec.clone())
        for name, vecs in parts.items():
            self.rows[name] = vecs[0].shape[0] // (self.chunks[0][1] - self.chunks[0][0])
            self.emb[name] = torch.cat(vecs).requires_grad_(True)
        return self.emb

    def backward(self, model: nn.Module | None = None,
                 autocast: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext) -> None:
        """Second pass, after the loss's backward. ``model``: the module to re-run (the DDP
        wrapper under DDP, whose gradient all-reduce then happens once, at the last chunk);
        default the one ``embed`` ran. ``autocast``: the step's autocast context (re-entered
        for each chunk's forward so the re-run computes what the first pass did)."""
        model = model if model is not None else self.model
        grads = {k: v.grad for k, v in self.emb.items() if v.grad is not None}
        if not grads:
            return
        devices = [self.device] if self.device.type == "cuda" else []
        last = len(self.chunks) - 1
        for i, ((lo, hi, tok), state) in enumerate(zip(self.chunks, self.states)):
            sync = model.no_sync() if i < last and hasattr(model, "no_sync") else contextlib.nullcontext()
            t, e = _slice_lists(self.texts, self.extra, self.n, lo, hi)
            # fork_rng: the replay leaves the generators where the loss left them
            with sync, torch.random.fork_rng(devices=devices):
                state.restore()
                with autocast():
                    out = model(t, e, tok)
                outs, gs = [], []
                for name, g in grads.items():
                    r = self.rows[name]
                    outs.append(out[name])
                    gs.append(g[lo * r : hi * r].to(out[name].dtype))
                torch.autograd.backward(outs, gs)
