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

from hardneg.augment.san import rng as san_random
from hardneg.augment.san.lexicon import load_lexicon, special_ids
from hardneg.augment.quality import (
    QualityConfig,
    apply_negation_postprocess,
    input_reason,
    output_reason,
    unk_reason,
)
from hardneg.models.load import load_masked_lm
from hardneg.models.precision import resolve_precision
from hardneg.shards import write_shard

log = logging.getLogger(__name__)

AUGMENTER = "san"
DECODING = ("argmax", "sample")
REPLACE = ("masked", "all")
PRECISION = ("auto", "fp32", "bf16")  # the spelling of train.precision
# Attention backends on CUDA, chosen by measurement (issue 15, H100, bert-base, bf16): cuDNN's
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
    retokenize: bool = False  # True: decode + re-tokenize between iterations (reference code)
    max_length: int = 128  # word pieces incl. [CLS]/[SEP]; longer inputs truncated (recorded)
    max_chars: int | None = None  # reference code cut text to 300 characters
    append_period: bool = False  # reference: "." when the last char is no punctuation, every iteration
    batch_size: int = 64
    seed: int = 0
    # auto = bf16 autocast on CUDA (issue 4: "bf16 on GPU"), fp32 on CPU; bf16 on a CPU
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

    @classmethod
    def from_dict(cls, d: dict) -> SanConfig:
        d = dict(d)
        q = d.pop("quality", None) or {}
        return cls(quality=QualityConfig(**q), **d)

    def as_dict(self) -> dict:
        return asdict(self)


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
        prepares the next batch while the GPU runs this one (issue 15)."""
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
        if cfg.decoding == "argmax":
            choice = logits.argmax(dim=-1)
        else:
            choice = self._sample(logits, sent_ids, iteration, mask, length)
        return mask, choice

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

    def _sample(self, logits, sent_ids, iteration, mask, length) -> torch.Tensor:
        """Inverse-CDF sampling with a counter-based uniform per (sentence, iteration, position)."""
        cfg = self.cfg
        u_all = torch.from_numpy(
            san_random.uniform(cfg.seed, sent_ids, iteration, length, san_random.STREAM_SAMPLE)
        )
        u = (u_all[mask] if cfg.replace == "masked" else u_all.reshape(-1)).to(self.device)
        scaled = logits / cfg.temperature
        k = min(cfg.top_k or scaled.shape[-1], scaled.shape[-1])
        top, idx = torch.topk(scaled, k, dim=-1, sorted=True)
        p = torch.softmax(top.double(), dim=-1)
        cdf = torch.cumsum(p, dim=-1)
        pick = torch.searchsorted(cdf, (u.double() * cdf[:, -1]).unsqueeze(-1)).clamp_(max=k - 1)
        return idx.gather(-1, pick).squeeze(-1)

    def iterate(self, seqs: list[np.ndarray], sent_ids: np.ndarray, iteration: int, progress: bool = False) -> tuple[list[np.ndarray], list[list[int]]]:
        """One mask-predict iteration over all sequences; returns new sequences and, per
        sequence, the masked positions ([CLS] = 0)."""
        lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
        order = np.argsort(lengths, kind="stable")
        new: list[np.ndarray | None] = [None] * len(seqs)
        masked: list[list[int] | None] = [None] * len(seqs)
        bounds = np.flatnonzero(np.diff(lengths[order])) + 1
        groups = np.split(order, bounds) if len(order) else []
        batches = [g[i : i + self.cfg.batch_size] for g in groups for i in range(0, len(g), self.cfg.batch_size)]
        queued = []
        with torch.inference_mode():
            for idx in tqdm(batches, desc=f"san iter {iteration}", disable=not progress, mininterval=5):
                ids = torch.from_numpy(np.stack([seqs[i] for i in idx]))
                mask, choice = self._launch(ids, sent_ids[idx], iteration)
                queued.append((idx, ids, mask, choice))
            # one device -> host copy per iteration instead of one sync per batch
            chosen = [c for *_, c in queued if c is not None]
            flat = torch.cat(chosen).cpu() if chosen else torch.empty(0, dtype=torch.long)
        start = 0
        for idx, ids, mask, choice in queued:
            if choice is not None:
                part, start = flat[start : start + len(choice)], start + len(choice)
                ids = self._apply(ids, mask, part)
            out_np = ids.numpy()
            rows, cols = np.nonzero(mask.numpy())  # masked positions of the whole batch at once
            ends = np.searchsorted(rows, np.arange(1, len(idx) + 1)).tolist()
            cols = cols.tolist()
            lo = 0
            for j, i in enumerate(idx.tolist()):
                new[i] = out_np[j]
                masked[i], lo = cols[lo : ends[j]], ends[j]
        return new, masked  # type: ignore[return-value]


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


def _encode(tokenizer, texts: list[str], max_length: int) -> tuple[list[np.ndarray], list[bool], list[int]]:
    """Token ids with specials, cut to ``max_length`` (keeping the final [SEP]); truncation flags;
    [UNK] counts."""
    fast = _rust_tokenizer(tokenizer)
    if fast is not None and fast.truncation is None and fast.padding is None:
        # the same ids as tokenizer(texts) without the per-text Python wrapping; the Rust batch
        # call runs on all cores with the GIL released (so it overlaps the GPU; issue 15)
        enc = [e.ids for e in fast.encode_batch(texts, add_special_tokens=True)]
    else:
        enc = tokenizer(texts, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
    out, trunc, unk = [], [], []
    unk_id = tokenizer.unk_token_id  # a property that converts a token each time: read it once
    for ids in enc:
        cut = len(ids) > max_length
        if cut:
            ids = ids[: max_length - 1] + ids[-1:]
        out.append(np.asarray(ids, dtype=np.int64))
        trunc.append(cut)
        unk.append(ids.count(unk_id) if unk_id is not None else 0)
    return out, trunc, unk


def _rust_tokenizer(tokenizer):
    """The ``tokenizers`` object behind a transformers fast tokenizer, else None."""
    fast = getattr(tokenizer, "_tokenizer", None)
    return fast if fast is not None and hasattr(fast, "decode_batch") else None


def _decode(tokenizer, seqs: list[np.ndarray]) -> list[str]:
    fast = _rust_tokenizer(tokenizer)
    if fast is not None and type(fast.model).__name__ == "WordPiece":
        # what batch_decode(skip_special_tokens=True, clean_up_tokenization_spaces=True) returns
        # for WordPiece (BERT) tokenizers, decoded in one parallel Rust call without the GIL
        texts = fast.decode_batch([s.tolist() for s in seqs], skip_special_tokens=True)
        return [tokenizer.clean_up_tokenization(t) for t in texts]
    return tokenizer.batch_decode([s.tolist() for s in seqs], skip_special_tokens=True, clean_up_tokenization_spaces=True)


def augment_frame(
    frame: pl.DataFrame,
    predictor: MaskPredictor,
    negation: pl.DataFrame | None = None,
    progress: bool = False,
) -> pl.DataFrame:
    """SAN rows for a frame with columns ``id``, ``text`` (row order and ids preserved)."""
    return finish_frame(predict_frame(frame, predictor, progress=progress), predictor, negation)


@dataclass
class _Predicted:
    """What ``predict_frame`` hands to ``finish_frame`` (the CPU-only second half)."""

    ids: np.ndarray
    texts: list
    reason: list
    truncated: list
    keep: list
    seqs: list  # token ids per iteration, 0 = the input
    masks: list  # masked positions per iteration 1..K
    decoded: dict  # iteration -> texts already decoded (retokenize needs them on the way)


def predict_frame(frame: pl.DataFrame, predictor: MaskPredictor, progress: bool = False) -> _Predicted:
    """Input checks, tokenization and the K mask-predict iterations (the device part)."""
    cfg = predictor.cfg
    tok = predictor.tok
    k = cfg.iterations
    ids_all = frame.get_column("id").cast(pl.Int64).to_numpy()
    texts = frame.get_column("text").to_list()
    n = len(texts)
    reason: list[str | None] = [None] * n
    for i, t in enumerate(texts):
        r = input_reason(t, cfg.quality)
        reason[i] = f"input:{r}" if r else None
    todo = [i for i in range(n) if reason[i] is None]
    prepared = [_prepare_text(texts[i], cfg) for i in todo]
    seqs, trunc, unk = _encode(tok, prepared, cfg.max_length) if todo else ([], [], [])
    truncated = [False] * n
    keep: list[int] = []
    keep_seqs: list[np.ndarray] = []
    for j, i in enumerate(todo):
        truncated[i] = trunc[j]
        r = unk_reason(unk[j], len(seqs[j]) - 2, cfg.quality)
        if r:
            reason[i] = f"input:{r}"
        else:
            keep.append(i)
            keep_seqs.append(seqs[j])
    sids = ids_all[keep]
    iter_seqs: list[list[np.ndarray]] = [keep_seqs]
    iter_mask: list[list[list[int]]] = []
    decoded: dict[int, list[str]] = {}
    cur = keep_seqs
    for it in range(1, k + 1):
        cur, masked = predictor.iterate(cur, sids, it, progress=progress)
        iter_mask.append(masked)
        iter_seqs.append(cur)
        if cfg.retokenize and it < k:  # reference behaviour: decode, then re-tokenize
            decoded[it] = _decode(tok, cur)
            # the reference appends "." before every re-tokenized iteration (handle.py)
            again = [_with_period(t) for t in decoded[it]] if cfg.append_period else decoded[it]
            cur, _, _ = _encode(tok, again, cfg.max_length)
    return _Predicted(ids_all, texts, reason, truncated, keep, iter_seqs, iter_mask, decoded)


def finish_frame(p: _Predicted, predictor: MaskPredictor, negation: pl.DataFrame | None = None) -> pl.DataFrame:
    """Decode, quality filter and build the rows (CPU only: runs beside the next chunk's
    ``predict_frame``)."""
    cfg = predictor.cfg
    tok = predictor.tok
    k = cfg.iterations
    ids_all, texts, reason, truncated, keep = p.ids, p.texts, list(p.reason), p.truncated, p.keep
    n = len(texts)
    iter_text = [p.decoded[it] if it in p.decoded else _decode(tok, p.seqs[it]) for it in range(k + 1)]
    iter_mask = p.masks

    def spread(values: list, fill=None) -> list:
        out = [fill] * n
        for j, i in enumerate(keep):
            out[i] = values[j]
        return out

    status = ["dropped" if reason[i] else "ok" for i in range(n)]
    san: list[str | None] = [None] * n
    final = spread(iter_text[k]) if keep else [None] * n
    ref = spread(iter_text[0]) if keep else [None] * n
    for i in keep:
        r = output_reason(ref[i], final[i], cfg.quality)
        if r:
            status[i], reason[i] = "dropped", f"quality:{r}"
        else:
            san[i] = final[i]
    cols: dict = {
        "id": pl.Series("id", ids_all, dtype=pl.Int64),
        "text": pl.Series("text", texts, dtype=pl.String),
        "status": pl.Series("status", status, dtype=pl.String),
        "reason": pl.Series("reason", reason, dtype=pl.String),
        "augmenter": pl.Series("augmenter", [AUGMENTER] * n, dtype=pl.String),
        "san": pl.Series("san", san, dtype=pl.String),
        "truncated": pl.Series("truncated", truncated, dtype=pl.Boolean),
        "iter0": pl.Series("iter0", ref, dtype=pl.String),
    }
    for it in range(1, k + 1):
        cols[f"iter{it}"] = pl.Series(f"iter{it}", spread(iter_text[it]) if keep else [None] * n, dtype=pl.String)
    for it in range(1, k + 1):
        cols[f"masked{it}"] = pl.Series(
            f"masked{it}", spread(iter_mask[it - 1]) if keep else [None] * n, dtype=pl.List(pl.Int64)
        )
    out = pl.DataFrame(cols)
    if cfg.quality.postprocess == "negation":
        out = apply_negation_postprocess(out, negation)
    return out


def augment_chunks(chunks, predictor: MaskPredictor, negation: pl.DataFrame | None = None,
                   progress: bool = False, overlap: bool | None = None) -> list[pl.DataFrame]:
    """``augment_frame`` over chunks, in order; with ``overlap`` (default: on a GPU) a worker
    thread decodes and filters chunk i while chunk i+1 runs on the device (same rows either way)."""
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
) -> dict:
    """Augment one corpus shard (streamed in chunks) and write the SAN shard; returns stats."""
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
    parts = augment_chunks(_iter_input(in_path, chunk_rows), predictor, negation=negation, progress=progress)
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
