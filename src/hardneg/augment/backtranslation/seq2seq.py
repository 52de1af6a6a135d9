"""Neural back-translation with transformers seq2seq models (OssCSE §4 Step 2: FSMT
facebook/wmt19-en-de, de-en, en-ru, ru-en; Marian opus-mt models load the same way).

Batched, length-sorted beam search: sentences are sorted by token length (longest first, so a
CUDA out-of-memory shows up on the first batch), translated in batches, and put back in input
order. On GPU the model runs in bf16 (config ``dtype``). A CUDA out-of-memory halves the batch and
retries; a batch that fails for another reason is retried one sentence at a time so only the
sentence(s) that really fail get an error.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

Result = tuple[str | None, str | None]  # (translation, error)


def _is_oom(exc: BaseException) -> bool:
    import torch

    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom is not None and isinstance(exc, oom)) or "out of memory" in str(exc).lower()


@dataclass
class TransformersTranslator:
    """Translate with a seq2seq model named by hub id, local path or ``package:``."""

    num_beams: int = 5
    batch_size: int = 64  # backtranslation.transformers.batch_size (schema default)
    max_new_tokens: int = 256
    max_input_tokens: int = 256
    device: str | None = None
    dtype: str = "auto"  # auto (bf16 on CUDA, fp32 on CPU) | float32 | bfloat16 | float16
    _models: dict[str, tuple[Any, Any]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        from hardneg.models.device import pick_device

        self.device = str(pick_device(self.device, setting="backtranslation.transformers.device"))
        if self.batch_size < 1 or self.num_beams < 1:
            raise ValueError("backtranslation.transformers: batch_size and num_beams must be >= 1")

    def _torch_dtype(self):
        import torch

        from hardneg.models.precision import autocast_dtype, resolve_precision

        if self.dtype == "auto":  # the SAN rule: bf16 on every GPU, fp32 elsewhere
            name = resolve_precision("auto", torch.device(self.device), runs=("fp32", "bf16"),
                                     setting="backtranslation.transformers.dtype")
            return autocast_dtype(name) or torch.float32
        try:
            return getattr(torch, self.dtype)
        except AttributeError:
            raise ValueError(
                f"backtranslation.transformers.dtype: unknown dtype '{self.dtype}'"
            ) from None

    def load(self, name: str) -> tuple[Any, Any]:
        """Tokenizer and model for ``name`` (cached; eval mode, on the device)."""
        if name not in self._models:
            from hardneg.models.load import load_seq2seq

            tok, model = load_seq2seq(name, setting="backtranslation.pivots", dtype=self._torch_dtype())
            model.to(self.device).eval()
            self._models[name] = (tok, model)
        return self._models[name]

    def _generate(self, tok, model, texts: Sequence[str]) -> list[str]:
        import torch

        enc = tok(
            list(texts),
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=self.max_input_tokens,
        )
        enc = {k: v.to(self.device) for k, v in enc.items()}
        with torch.inference_mode():
            out = model.generate(
                **enc,
                num_beams=self.num_beams,
                do_sample=False,
                max_new_tokens=self.max_new_tokens,
                early_stopping=True,
            )
        return [t.strip() for t in tok.batch_decode(out, skip_special_tokens=True)]

    def translate(self, texts: Sequence[str], model_name: str, progress=None) -> list[Result]:
        """Translate ``texts`` with ``model_name``; results in input order."""
        tok, model = self.load(model_name)
        n = len(texts)
        results: list[Result | None] = [None] * n
        if n == 0:
            return []
        lengths = [len(ids) for ids in tok(list(texts))["input_ids"]]
        for k, length in enumerate(lengths):
            # Never translate a silently truncated sentence: record it instead.
            if length > self.max_input_tokens:
                results[k] = (
                    None,
                    f"too long ({length} tokens > max_input_tokens {self.max_input_tokens})",
                )
        todo = [k for k in range(n) if results[k] is None]
        if progress is not None and len(todo) < n:
            progress.update(n - len(todo))
        order = sorted(todo, key=lambda k: (-lengths[k], k))  # longest first; stable
        n = len(order)
        bs = self.batch_size
        pos = 0
        while pos < n:
            idx = order[pos : pos + bs]
            batch = [texts[k] for k in idx]
            try:
                outs = self._generate(tok, model, batch)
            except Exception as exc:  # noqa: BLE001 - every failure is recorded, none propagates
                if _is_oom(exc):
                    self._free_cuda()
                    if bs > 1:
                        bs = max(1, bs // 2)
                        log.warning(
                            "out of memory at batch %d: retrying with batch size %d", len(idx), bs
                        )
                        continue
                    results[idx[0]] = (None, "out of memory at batch size 1")
                    pos += 1
                    if progress is not None:
                        progress.update(1)
                    continue
                if len(idx) > 1:
                    for k in idx:  # isolate the failing sentence(s)
                        try:
                            results[k] = (self._generate(tok, model, [texts[k]])[0], None)
                        except Exception as exc1:  # noqa: BLE001
                            results[k] = (None, f"{type(exc1).__name__}: {str(exc1)[:200]}")
                else:
                    results[idx[0]] = (None, f"{type(exc).__name__}: {str(exc)[:200]}")
                pos += len(idx)
                if progress is not None:
                    progress.update(len(idx))
                continue
            for k, t in zip(idx, outs):
                results[k] = (t, None)
            pos += len(idx)
            if progress is not None:
                progress.update(len(idx))
        return results  # type: ignore[return-value]

    def _free_cuda(self) -> None:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
