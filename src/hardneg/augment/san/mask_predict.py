"""SAN: semantic-importance-aware mask-predict (SAN §3.1, Figure 1).

K iterations per sentence; each draws a Bernoulli mask per token with the lexicon's
``mask_prob`` (POS score / 20), predicts the masked positions with a masked LM and replaces them.
The reference code's defects are explicit options (../shared/notes/reference-implementations.md):
``replace: all`` (it took the argmax at EVERY position) and ``retokenize: true`` (it decoded and
re-tokenized the text between iterations). Defaults: replace only masked positions, carry ids.

Hot path: sentences of one shard are grouped by exact token length, so a batch needs no padding
and its outputs do not depend on which other sentences share it; the MLM head runs only on
masked positions; random draws come from ``rng`` (a function of seed, sentence id,
iteration, position): byte-identical shards for any batch size or shard count.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import itertools
import logging
import math
import string
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import torch
from tqdm.auto import tqdm

from hardneg.augment.quality import (
    QualityConfig,
    apply_negation_postprocess,
    input_reason,
    mostly_unknown,
)
from hardneg.augment.san import fill, tokens
from hardneg.augment.san import rng as san_random
from hardneg.augment.san.key import OPTIONAL_RULES
from hardneg.augment.san.lexicon import load_lexicon, special_ids
from hardneg.augment.san.rows import AUGMENTER, Predicted, finish_columns, rows_frame  # noqa: F401 (AUGMENTER: re-exported)
from hardneg.augment.san.tokens import Ragged
from hardneg.models.load import load_masked_lm
from hardneg.models.precision import resolve_precision
from hardneg.shards import write_shard

log = logging.getLogger(__name__)

DECODING = ("argmax", "sample")
REPLACE = ("masked", "all")
PRECISION = ("auto", "fp32", "bf16")  # the spelling of train.precision
# Attention backends on CUDA, chosen by measurement (H100, bert-base, bf16; docs/benchmarks.md): cuDNN's
# backend builds an execution plan for every new (batch, length) shape, and exact-length groups
# make almost every batch a new shape (7.3 of 9.2 s CPU time for 10.6k sentences); flash and
# memory-efficient attention need no such set-up. None = PyTorch's own choice (cuDNN first).
SDPA_BACKENDS: tuple[str, ...] | None = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH")


@dataclass(frozen=True)
class SanConfig:
    """Mask-predict parameters (defaults: SAN §3.1 with the reference defects switched off)."""

    iterations: int = 4  # SAN: 4 chained mask-predict iterations; training uses the 4th
    decoding: str = "argmax"  # argmax (reference code) or sample
    temperature: float = 1.0
    top_k: int | None = None  # sampling: restrict to the k most likely tokens
    replace: str = "masked"  # "all" reproduces the reference code (argmax at every position)
    # SAN §3.1 and the reference take the plain argmax, which may return the masked token itself;
    # True forbids that (hardneg's earlier default; measured effect: docs/san.md)
    forbid_original: bool = False
    # SAN and its reference fill a masked position with any entry; for a weak MLM these keep a
    # masked word a word (same_kind) and stop it repeating a neighbour (forbid_adjacent): fill.py
    same_kind: bool = False
    forbid_adjacent: bool = False
    retokenize: bool = False  # True: decode + re-tokenize between iterations (reference code)
    max_length: int = 128  # word pieces incl. [CLS]/[SEP]; longer inputs truncated (recorded)
    max_chars: int | None = None  # reference code cut text to 300 characters
    append_period: bool = False  # reference: "." when the last char is no punctuation, every iteration
    batch_size: int = 64
    seed: int = 0
    # auto = bf16 autocast on CUDA (bf16 on GPU), fp32 on CPU; bf16 on a CPU
    # with native bf16 (AVX512-BF16/AMX) is ~1.7x faster and agrees on ~98% of predicted tokens
    precision: str = "auto"
    quality: QualityConfig = field(default_factory=QualityConfig)

    def __post_init__(self) -> None:
        if self.iterations < 1:
            raise ValueError(f"san.iterations must be >= 1, got {self.iterations}")
        if self.decoding not in DECODING:
            raise ValueError(f"san.decoding: '{self.decoding}' not one of {DECODING}")
        if self.replace not in REPLACE:
            raise ValueError(f"san.replace: '{self.replace}' not one of {REPLACE}")
        if self.precision not in PRECISION:
            raise ValueError(f"san.precision: '{self.precision}' not one of {PRECISION}")
        for name in ("temperature",):  # NaN passes every comparison below: refuse it by name
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"san.{name} must be a finite number, got {getattr(self, name)}")
        if self.temperature <= 0:
            raise ValueError(f"san.temperature must be > 0, got {self.temperature}")
        if self.top_k is not None and self.top_k < 1:
            raise ValueError(f"san.top_k must be >= 1, got {self.top_k}")
        if self.batch_size < 1:
            raise ValueError(f"san.batch_size must be >= 1, got {self.batch_size}")
        if self.max_length < 3:
            raise ValueError(f"san.max_length must be >= 3, got {self.max_length}")
        rules = [n for n in ("same_kind", "forbid_adjacent") if getattr(self, n)]
        if rules and self.replace == "all":
            raise ValueError(f"san.{rules[0]} constrains the masked positions: it cannot be combined with san.replace: all")

    @classmethod
    def from_dict(cls, d: dict) -> SanConfig:
        d = dict(d)
        q = d.pop("quality", None) or {}
        return cls(quality=QualityConfig(**q), **d)

    def as_dict(self) -> dict:
        """The settings, those of ``OPTIONAL_RULES`` only where they differ from their default."""
        out = asdict(self)
        for name, default in OPTIONAL_RULES.items():
            if out[name] == default:
                del out[name]
        return out


# ---------------------------------------------------------------- model


def _bf16_linears(model: torch.nn.Module) -> torch.nn.Module:
    """A copy whose Linear weights are stored in bf16: the values autocast would cast them to on
    every call, cast once (embeddings, LayerNorm and softmax keep float32; ties to the input
    embedding are cut in the copy only)."""
    model = copy.deepcopy(model)
    for mod in model.modules():
        if isinstance(mod, torch.nn.Linear):
            mod.weight = torch.nn.Parameter(mod.weight.detach().to(torch.bfloat16), requires_grad=False)
            if mod.bias is not None:
                mod.bias = torch.nn.Parameter(mod.bias.detach().to(torch.bfloat16), requires_grad=False)
    return model


def _split_model(model) -> tuple[torch.nn.Module, Callable[[torch.Tensor], torch.Tensor]]:
    """(encoder, head): so the vocabulary projection runs only where it is needed."""
    base = model.base_model
    for name in ("cls", "lm_head", "predictions", "generator_lm_head"):
        head = getattr(model, name, None)
        if head is not None:
            if name == "generator_lm_head":  # ELECTRA generator: predictions + projection
                return base, lambda h, head=head: head(model.generator_predictions(h))
            return base, head
    return None, None  # unknown architecture: full forward


# ---------------------------------------------------------------- mask-predict


class MaskPredictor:
    """Batched SAN mask-predict over token-id sequences (no per-sentence model calls)."""

    def __init__(self, model, tokenizer, mask_prob: np.ndarray, cfg: SanConfig) -> None:
        self.tok = tokenizer
        self.cfg = cfg
        self.device = next(model.parameters()).device
        self.precision = resolve_precision(cfg.precision, self.device, setting="san.precision",
                                           runs=PRECISION[1:])  # SAN runs fp32 or bf16
        self.amp = self.precision == "bf16"  # autocast: LayerNorm/softmax stay float32
        self.model = _bf16_linears(model) if self.amp else model
        vocab_size = model.get_output_embeddings().weight.shape[0]
        if len(mask_prob) != vocab_size and len(mask_prob) != len(tokenizer):
            raise ValueError(
                f"lexicon has {len(mask_prob)} entries but the MLM's vocabulary has {vocab_size}"
            )
        probs = np.zeros(vocab_size, dtype=np.float64)
        n = min(vocab_size, len(mask_prob))
        probs[:n] = mask_prob[:n]
        specials = [i for i in special_ids(tokenizer) if i < vocab_size]
        probs[specials] = 0.0  # special tokens are never masked
        self.mask_prob = probs
        forbidden = torch.zeros(vocab_size, dtype=torch.bool)
        forbidden[specials] = True  # never predict [CLS]/[SEP]/[PAD]/[MASK]/[UNK]/[unusedN]
        forbidden[len(tokenizer):] = True  # padded embedding rows beyond the tokenizer
        self.forbidden = forbidden.to(self.device)
        self.special = torch.zeros(vocab_size, dtype=torch.bool)
        self.special[specials] = True
        self.kind_ban = None  # same_kind: [kind of the masked entry, vocabulary] -> banned
        if cfg.same_kind:
            kinds = torch.from_numpy(fill.vocab_kinds(tokenizer, vocab_size))
            self.kinds = kinds.to(self.device)
            self.kind_ban = (kinds[None, :] != torch.arange(len(fill.KINDS))[:, None]).to(self.device)
        self.encoder, self.head = _split_model(self.model)
        self.sdpa_backends = SDPA_BACKENDS

    # -- one batch of equal-length sequences
    @torch.inference_mode()
    def _predict(self, ids: torch.Tensor, sent_ids: np.ndarray, iteration: int) -> tuple[torch.Tensor, torch.Tensor]:
        """New ids and the mask for one batch (synchronous; ``iterate`` uses the queued form)."""
        mask, choice = self._launch(ids, sent_ids, iteration)
        return self._apply(ids, mask, None if choice is None else choice.cpu()), mask

    def _launch(self, ids: torch.Tensor, sent_ids: np.ndarray, iteration: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Queue one batch on the device: (mask on the CPU, chosen ids on the device or None when
        nothing is to predict). No host sync: every index is computed on the CPU, so the CPU
        prepares the next batch while the GPU runs this one."""
        cfg = self.cfg
        b, length = ids.shape
        u = torch.from_numpy(san_random.uniform(cfg.seed, sent_ids, iteration, length, san_random.STREAM_MASK))
        mask = u < torch.from_numpy(self.mask_prob[ids.numpy()])
        if cfg.replace == "masked" and not bool(mask.any()):
            return mask, None
        inp = ids.clone()
        inp[mask] = self.tok.mask_token_id
        attn = None  # equal-length batch: no padding, so no attention mask (faster SDPA path)
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.amp), self._attention():
            if cfg.replace == "masked":
                # only sentences with a masked token run, and the head only at masked positions
                rows = mask.any(dim=1)
                sub = (inp if bool(rows.all()) else inp[rows]).to(self.device, non_blocking=True)
                where = torch.nonzero(mask[rows].reshape(-1)).squeeze(1).to(self.device, non_blocking=True)
                if self.encoder is not None:
                    hidden = self.encoder(input_ids=sub, attention_mask=attn).last_hidden_state
                    logits = self.head(hidden.reshape(-1, hidden.shape[-1]).index_select(0, where))
                else:
                    logits = self.model(input_ids=sub, attention_mask=attn).logits
                    logits = logits.reshape(-1, logits.shape[-1]).index_select(0, where)
            else:  # reference behaviour: predict every position
                dev_inp = inp.to(self.device, non_blocking=True)
                logits = self.model(input_ids=dev_inp, attention_mask=attn).logits.reshape(b * length, -1)
        logits = logits.float()
        flat_orig = (ids[mask] if cfg.replace == "masked" else ids.reshape(-1)).to(self.device, non_blocking=True)
        logits.masked_fill_(self.forbidden, float("-inf"))
        if cfg.forbid_original:
            if cfg.replace == "masked":
                masked_rows = torch.arange(logits.shape[0], device=self.device)
            else:
                masked_rows = torch.nonzero(mask.reshape(-1)).squeeze(1).to(self.device, non_blocking=True)
            logits[masked_rows, flat_orig[masked_rows]] = float("-inf")
        if self.kind_ban is not None:
            logits.masked_fill_(self.kind_ban[self.kinds[flat_orig]], float("-inf"))
        draws = None if cfg.decoding == "argmax" else self._uniforms(sent_ids, iteration, mask, length)
        if cfg.forbid_adjacent:
            return mask, self._choose_apart(logits, ids, mask, draws)
        return mask, self._choose(logits, draws)

    def _choose(self, logits: torch.Tensor, draws: torch.Tensor | None) -> torch.Tensor:
        return logits.argmax(dim=-1) if draws is None else self._sample(logits, draws)

    def _choose_apart(self, logits: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor, draws: torch.Tensor | None) -> torch.Tensor:
        """``forbid_adjacent``: each masked position's choice differs from both neighbours; a run
        of adjacent masked positions is decided left to right (``fill.adjacent``). Indices are
        computed on the CPU: no host sync."""
        left, right, run = fill.adjacent(ids.numpy(), mask.numpy())
        dev = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(self.device, non_blocking=True)
        for side in (left, right):  # the unmasked neighbours (-1: masked, decided in the run below)
            at = np.flatnonzero(side >= 0)
            logits[dev(at), dev(side[at])] = float("-inf")
        choice = torch.empty(logits.shape[0], dtype=torch.long, device=self.device)
        for k in range(int(run.max()) + 1 if len(run) else 0):
            at = dev(np.flatnonzero(run == k))
            if k:
                logits[at, choice[at - 1]] = float("-inf")
            choice[at] = self._choose(logits[at], None if draws is None else draws[at])
        return choice

    def _apply(self, ids: torch.Tensor, mask: torch.Tensor, choice: torch.Tensor | None) -> torch.Tensor:
        """The batch's new ids from the chosen ids (CPU tensors)."""
        if choice is None:
            return ids
        out = ids.clone()
        if self.cfg.replace == "masked":
            out[mask] = choice
        else:
            keep = self.special[ids]  # special positions ([CLS], [SEP]) stay
            out = torch.where(keep, ids, choice.reshape(ids.shape))
        return out

    def _attention(self):
        """The scaled-dot-product-attention backends allowed on CUDA (``SDPA_BACKENDS``)."""
        if self.device.type != "cuda" or self.sdpa_backends is None:
            return contextlib.nullcontext()
        from torch.nn.attention import SDPBackend, sdpa_kernel

        return sdpa_kernel([getattr(SDPBackend, name) for name in self.sdpa_backends])

    def _uniforms(self, sent_ids, iteration, mask, length) -> torch.Tensor:
        """A counter-based uniform per (sentence, iteration, position) predicted, in logits order."""
        cfg = self.cfg
        u_all = torch.from_numpy(
            san_random.uniform(cfg.seed, sent_ids, iteration, length, san_random.STREAM_SAMPLE)
        )
        return (u_all[mask] if cfg.replace == "masked" else u_all.reshape(-1)).to(self.device)

    def _sample(self, logits: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """Inverse-CDF sampling, one uniform ``u`` per row of ``logits``."""
        cfg = self.cfg
        scaled = logits / cfg.temperature
        k = min(cfg.top_k or scaled.shape[-1], scaled.shape[-1])
        top, idx = torch.topk(scaled, k, dim=-1, sorted=True)
        p = torch.softmax(top.double(), dim=-1)
        cdf = torch.cumsum(p, dim=-1)
        pick = torch.searchsorted(cdf, (u.double() * cdf[:, -1]).unsqueeze(-1)).clamp_(max=k - 1)
        return idx.gather(-1, pick).squeeze(-1)

    def iterate(self, seqs, sent_ids: np.ndarray, iteration: int, progress: bool = False) -> tuple[list[np.ndarray], list[list[int]]]:
        """One mask-predict iteration over all sequences; returns new sequences and, per
        sequence, the masked positions ([CLS] = 0). (List form of ``iterate_ragged``.)"""
        new, masked = self.iterate_ragged(Ragged.from_rows(seqs), sent_ids, iteration, progress=progress)
        return new.rows(), [m.tolist() for m in masked.rows()]

    def iterate_ragged(self, seqs: Ragged, sent_ids: np.ndarray, iteration: int, progress: bool = False) -> tuple[Ragged, Ragged]:
        """One mask-predict iteration over all rows of ``seqs``: the new rows and each row's
        masked positions (ascending). Bookkeeping is numpy over the chunk: a batch is gathered
        from and scattered back to the flat id array, the masked positions of all batches are
        ordered by row in one sort."""
        lengths = seqs.lengths
        order = np.argsort(lengths, kind="stable")
        bounds = np.flatnonzero(np.diff(lengths[order])) + 1
        groups = np.split(order, bounds) if len(order) else []
        batches = [g[i : i + self.cfg.batch_size] for g in groups for i in range(0, len(g), self.cfg.batch_size)]
        sent_ids = np.asarray(sent_ids)
        queued = []
        with torch.inference_mode():
            for idx in tqdm(batches, desc=f"san iter {iteration}", disable=not progress, mininterval=5):
                pos = seqs.offsets[idx][:, None] + np.arange(lengths[idx[0]])  # (batch, length) into values
                ids = torch.from_numpy(seqs.values[pos])
                mask, choice = self._launch(ids, sent_ids[idx], iteration)
                queued.append((idx, pos, ids, mask, choice))
            # one device -> host copy per iteration instead of one sync per batch
            chosen = [c for *_, c in queued if c is not None]
            flat = torch.cat(chosen).cpu() if chosen else torch.empty(0, dtype=torch.long)
        values = seqs.values.copy()
        rows, cols = [np.empty(0, dtype=np.int64)], [np.empty(0, dtype=np.int64)]
        start = 0
        for idx, pos, ids, mask, choice in queued:
            if choice is not None:
                part, start = flat[start : start + len(choice)], start + len(choice)
                values[pos] = self._apply(ids, mask, part).numpy()
            r, c = np.nonzero(mask.numpy())  # row-major: positions ascending within a row
            rows.append(idx[r])
            cols.append(c)
        row, col = np.concatenate(rows), np.concatenate(cols)
        by_row = np.argsort(row, kind="stable")  # a row is in one batch: its positions stay ascending
        masked = Ragged.from_lengths(col[by_row].astype(np.int64), np.bincount(row, minlength=len(seqs)))
        return Ragged(values, seqs.offsets), masked


# ---------------------------------------------------------------- sentences -> rows


def _with_period(text: str) -> str:
    """The reference's clean-up (bcai01/SAN corpus-handle/handle.py, replace_with_mask): "." after
    text whose last character is not in string.punctuation; applied to every iteration's input."""
    text = text.rstrip()
    return text + "." if text and text[-1] not in string.punctuation else text


def _prepare_text(text: str, cfg: SanConfig) -> str:
    if cfg.max_chars is not None:
        text = text[: cfg.max_chars]
    return _with_period(text) if cfg.append_period else text


def _encode(tokenizer, texts: list[str], max_length: int) -> tuple[Ragged, np.ndarray, np.ndarray]:
    """Token ids with specials, cut to ``max_length`` (keeping the final [SEP]); truncation flags;
    [UNK] counts (``hardneg.augment.san.tokens.encode``)."""
    return tokens.encode(tokenizer, texts, max_length)


def _decode(tokenizer, seqs) -> list[str]:
    """``batch_decode(skip_special_tokens=True, clean_up_tokenization_spaces=True)`` of the rows."""
    return tokens.decode(tokenizer, seqs)


def augment_frame(
    frame: pl.DataFrame,
    predictor: MaskPredictor,
    negation: pl.DataFrame | None = None,
    progress: bool = False,
) -> pl.DataFrame:
    """SAN rows for a frame with columns ``id``, ``text`` (row order and ids preserved)."""
    return finish_frame(predict_frame(frame, predictor, progress=progress), predictor, negation)


def predict_frame(frame: pl.DataFrame, predictor: MaskPredictor, progress: bool = False) -> Predicted:
    """Input checks, tokenization and the K mask-predict iterations (the device part)."""
    cfg = predictor.cfg
    tok = predictor.tok
    k = cfg.iterations
    ids_all = frame.get_column("id").cast(pl.Int64).to_numpy()
    texts = frame.get_column("text").to_list()
    n = len(texts)
    reason: list[str | None] = [None] * n
    todo: list[int] = []
    for i, t in enumerate(texts):
        r = input_reason(t, cfg.quality)
        if r:
            reason[i] = f"input:{r}"
        else:
            todo.append(i)
    todo_rows = np.asarray(todo, dtype=np.int64)
    if cfg.max_chars is None and not cfg.append_period:
        prepared = [texts[i] for i in todo]
    else:
        prepared = [_prepare_text(texts[i], cfg) for i in todo]
    seqs, trunc, unk = _encode(tok, prepared, cfg.max_length) if todo else (Ragged.from_rows([]), np.zeros(0, bool), np.zeros(0, np.int64))
    truncated = np.zeros(n, dtype=bool)
    truncated[todo_rows] = trunc
    unknown = mostly_unknown(unk, seqs.lengths - 2, cfg.quality)
    for i in todo_rows[unknown].tolist():
        reason[i] = "input:mostly_unknown_tokens"
    keep = todo_rows[~unknown]
    if unknown.any():
        seqs = seqs.take(np.flatnonzero(~unknown))
    sids = ids_all[keep]
    iter_seqs: list[Ragged] = [seqs]
    iter_mask: list[Ragged] = []
    decoded: dict[int, list[str]] = {}
    cur = seqs
    for it in range(1, k + 1):
        cur, masked = predictor.iterate_ragged(cur, sids, it, progress=progress)
        iter_mask.append(masked)
        iter_seqs.append(cur)
        if cfg.retokenize and it < k:  # reference behaviour: decode, then re-tokenize
            decoded[it] = _decode(tok, cur)
            # the reference appends "." before every re-tokenized iteration (handle.py)
            again = [_with_period(t) for t in decoded[it]] if cfg.append_period else decoded[it]
            cur, _, _ = _encode(tok, again, cfg.max_length)
    return Predicted(ids_all, texts, reason, truncated, keep, iter_seqs, iter_mask, decoded)


def finish_frame(p: Predicted, predictor: MaskPredictor, negation: pl.DataFrame | None = None) -> pl.DataFrame:
    """Decode, quality filter and build the rows (CPU only: runs beside the next chunk's
    ``predict_frame``)."""
    cfg = predictor.cfg
    cols = finish_columns(p, cfg.iterations, cfg.quality, functools.partial(_decode, predictor.tok))
    return _postprocess(rows_frame(p, cols, cfg.iterations), cfg, negation)


def _postprocess(out: pl.DataFrame, cfg: SanConfig, negation: pl.DataFrame | None) -> pl.DataFrame:
    if cfg.quality.postprocess == "negation":
        out = apply_negation_postprocess(out, negation)
    return out


# Worker processes of ``augment_chunks(finish_workers=N)``: forked, so they inherit the decoder and
# settings (no pickling, no re-import of the caller's script); they run ``finish_columns`` only
# (numpy and str: no torch, no polars, no tokenizer thread pool in the child).
_WORKER: dict = {}


def _finish_in_worker(p: Predicted) -> dict:
    w = _WORKER
    return finish_columns(p, w["iterations"], w["quality"], w["decode"])


def _finish_pool(workers: int, predictor: MaskPredictor):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    decoder = tokens.table_decoder(predictor.tok)
    _WORKER.update(iterations=predictor.cfg.iterations, quality=predictor.cfg.quality,
                   decode=decoder or functools.partial(_decode, predictor.tok))  # fmt: skip
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))


def augment_chunks(chunks, predictor: MaskPredictor, negation: pl.DataFrame | None = None,
                   progress: bool = False, overlap: bool | None = None, finish_workers: int = 0) -> list[pl.DataFrame]:
    """``augment_frame`` over chunks, in order. ``finish_workers`` = 0: decoding, filtering and rows
    run in this process, with ``overlap`` (default: on a GPU) in a worker thread beside the next
    chunk's device work; N > 0: each chunk's rows are split into N slices finished by N forked
    worker processes while the next chunk runs on the device. Same rows in every case."""
    if finish_workers < 0:
        raise ValueError(f"san.finish_workers must be >= 0, got {finish_workers}")
    cfg = predictor.cfg
    if finish_workers:
        if "fork" not in __import__("multiprocessing").get_all_start_methods():
            log.warning("san.finish_workers=%d: no fork on this platform; finishing in this process", finish_workers)
            return augment_chunks(chunks, predictor, negation, progress, overlap, 0)
        with _finish_pool(finish_workers, predictor) as pool:
            pending = []
            for c in chunks:
                p = predict_frame(c, predictor, progress=progress)
                cuts = np.linspace(0, len(p), finish_workers + 1).round().astype(int)
                parts = [p.slice(lo, hi) for lo, hi in itertools.pairwise(cuts.tolist()) if hi > lo] or [p]
                pending.append([(part, pool.submit(_finish_in_worker, part)) for part in parts])
            out = []
            for parts in pending:
                # one chunk per column, as finishing in-process gives (Parquet pages follow the chunks)
                frame = pl.concat([rows_frame(part, fut.result(), cfg.iterations) for part, fut in parts], rechunk=True)
                out.append(_postprocess(frame, cfg, negation))
            return out
    if overlap is None:
        overlap = predictor.device.type == "cuda"
    if not overlap:
        return [augment_frame(c, predictor, negation=negation, progress=progress) for c in chunks]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="san-finish") as pool:
        futures = [pool.submit(finish_frame, predict_frame(c, predictor, progress=progress), predictor, negation)
                   for c in chunks]
        return [f.result() for f in futures]


def _iter_input(path: Path, chunk_rows: int) -> Iterator[pl.DataFrame]:
    try:
        pf = pq.ParquetFile(path)
    except FileNotFoundError:
        raise
    except Exception as exc:
        raise ValueError(f"{path}: cannot read Parquet: {exc}") from exc
    names = set(pf.schema_arrow.names)
    missing = {"id", "text"} - names
    if missing:
        raise ValueError(f"{path}: input needs columns id, text; missing {', '.join(sorted(missing))}")
    for batch in pf.iter_batches(batch_size=chunk_rows, columns=["id", "text"]):
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        if not frame.schema["id"].is_integer():
            raise ValueError(f"{path}: column id must be integer, got {frame.schema['id']}")
        if frame.schema["text"] not in (pl.String, pl.Null):
            raise ValueError(f"{path}: column text must be string, got {frame.schema['text']}")
        yield frame.with_columns(pl.col("id").cast(pl.Int64), pl.col("text").cast(pl.String))


def _check_ids(path: Path) -> None:
    """Ids must be non-null and fit Int64 (the corpus contract); checked before any model loads."""
    try:
        ids = pl.from_arrow(pq.read_table(path, columns=["id"]).column("id"))
    except Exception as exc:  # missing column, unreadable file: named below by _iter_input
        if isinstance(exc, KeyError) or "id" in str(exc):
            raise ValueError(f"{path}: input needs columns id, text; missing id") from None
        raise ValueError(f"{path}: cannot read Parquet: {exc}") from exc
    assert isinstance(ids, pl.Series)
    if not (ids.dtype.is_integer() or ids.dtype == pl.Null):
        raise ValueError(f"{path}: column id must be integer, got {ids.dtype}")
    if ids.null_count():
        row = int(ids.is_null().arg_max())
        raise ValueError(f"{path}: column id is null at row {row} ({ids.null_count()} null id(s))")
    if ids.dtype == pl.UInt64 and len(ids) and int(ids.max()) > 2**63 - 1:
        row = int((ids > 2**63 - 1).arg_max())
        raise ValueError(f"{path}: id {ids[row]} at row {row} does not fit Int64 (corpus ids are line numbers)")


def augment_shard(
    in_path: str | Path,
    out_path: str | Path,
    mlm: str,
    lexicon_path: str | Path,
    cfg: SanConfig,
    negation_path: str | Path | None = None,
    device: str | None = None,
    chunk_rows: int = 8192,
    progress: bool = True,
    finish_workers: int = 0,
) -> dict:
    """Augment one corpus shard (streamed in chunks) and write the SAN shard; returns stats.
    ``finish_workers``: processes that decode, filter and build the rows (``augment_chunks``)."""
    in_path = Path(in_path)
    if not in_path.exists():
        raise FileNotFoundError(f"input shard not found: {in_path}")
    _check_ids(in_path)
    tokenizer, model = load_masked_lm(mlm, setting="san.mlm", device=device)
    lexicon = load_lexicon(lexicon_path, tokenizer=tokenizer, mlm_name=f"san.mlm '{mlm}'")
    predictor = MaskPredictor(model, tokenizer, lexicon.get_column("mask_prob").to_numpy(), cfg)
    del model  # the predictor holds what it runs (a bf16 copy when precision is bf16)
    negation = None
    if cfg.quality.postprocess == "negation":
        if negation_path is None:
            raise ValueError("san.quality.postprocess=negation needs a negation shard")
        from hardneg.shards import read_shard

        negation = read_shard(negation_path, columns=["id", "negation"])
    parts = augment_chunks(_iter_input(in_path, chunk_rows), predictor, negation=negation, progress=progress,
                           finish_workers=finish_workers)  # fmt: skip
    out = pl.concat(parts) if parts else augment_frame(pl.DataFrame({"id": pl.Series([], dtype=pl.Int64), "text": pl.Series([], dtype=pl.String)}), predictor)
    write_shard(out, out_path)
    stats = {**shard_stats(out), "device": str(predictor.device), "precision": predictor.precision,
             **device_record(predictor.device)}
    log.info("SAN %s -> %s on %s (%s): %s", in_path, out_path, predictor.device, predictor.precision, stats["status"])
    return stats


def device_record(device: torch.device) -> dict:
    """What the bf16 determinism promise depends on beyond the shard key (``hardneg.augment.san.key``)."""
    rec = {"torch": torch.__version__}
    if device.type == "cuda":
        rec |= {"device_name": torch.cuda.get_device_name(device), "cuda": torch.version.cuda}
    return rec


def shard_stats(frame: pl.DataFrame) -> dict:
    """Row counts per status and reason (they add up to the number of input rows)."""
    status = dict(frame.group_by("status").len().sort("status").iter_rows())
    reasons = dict(frame.filter(pl.col("reason").is_not_null()).group_by("reason").len().sort("reason").iter_rows())
    return {
        "rows": frame.height,
        "status": status,
        "reasons": reasons,
        "truncated": int(frame.get_column("truncated").sum()) if frame.height else 0,
    }
