"""Teachers for RankCSE-style ranking distillation (SAN Eq. 5-7).

A teacher is a configured model (the SAN paper: DiffCSE-base and SimCSE-large, weights 0.33/0.67)
or the exported model of another method trained in the same workflow (``{method: simcse}``; the
workflow resolves it to ``results/train/<experiment>/<method>/seed<seed>/model`` and adds it as an
input of the student's train job). Each teacher encodes with its own pooler and template (the
folder's sentence-transformers modules (hardneg.encoders.st_folder, any format), else ``cls_before_pooler`` as RankCSE's code
picks for SimCSE/DiffCSE teachers); similarities are computed under no_grad and summed with the
teachers' weights. Teachers must share the student's vocabulary: the reference feeds the
student's token ids to the teachers (docs/deviations.md).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

from hardneg.encoders.st_folder import UnsupportedFolder, folder_pooler, is_st_folder, read_folder
from hardneg.models.resolve import resolve_model
from hardneg.train import distributed as D
from hardneg.train import views
from hardneg.train.model import ContrastiveEncoder
from hardneg.train.objectives._common import _upcast, cosine_matrix
from hardneg.train.settings import TrainSettings

log = logging.getLogger(__name__)

class TeacherError(ValueError):
    """A teacher that cannot be used; the message names the setting."""


@dataclass
class TeacherSpec:
    """One resolved teacher: what to load and how it pools."""

    setting: str  # e.g. "train setting 'teachers[0]' (method simcse)"
    model: str
    weight: float
    pooler: str
    template: str | None  # a fixed template for every view; None: the student's per view (mask pooler)


def _export_pooling(path: str) -> tuple[str | None, str | None, str]:
    """(pooler, template, Hugging Face model folder) of a sentence-transformers folder
    (hardneg.encoders.st_folder: current and legacy formats); (None, None, path) for a plain model."""
    if not is_st_folder(path):
        return None, None, path
    try:
        spec = read_folder(path)
    except UnsupportedFolder as exc:
        raise TeacherError(f"teacher {path}: {exc}; a teacher must be a Transformer with a cls/mean or "
                           f"hardneg pooling (its token ids are the student's)") from None
    pooler = folder_pooler(spec)
    if pooler is None:
        raise TeacherError(f"teacher {path}: pooling {'+'.join(spec.st_modes)} with {len(spec.dense)} Dense "
                           f"module(s) is not a hardneg pooler (cls, cls_before_pooler, avg, ...)")
    return pooler, spec.template, str(spec.transformer)


def resolve_specs(s: TrainSettings) -> list[TeacherSpec]:
    """The run's teachers, checked against the untrained-teacher rule; [] when none is needed."""
    if not s.needs_teacher():
        return []
    if not s.teachers:  # validate() allowed this only with allow_untrained_teacher
        log.warning("teacher = the untrained initial model %s (allow_untrained_teacher: true)", s.init_model)
        return [TeacherSpec("train setting 'allow_untrained_teacher'", s.init_model, 1.0, s.export_pooler, None)]
    init = resolve_model(s.init_model, setting="train.init_model")
    specs = []
    for i, t in enumerate(s.teachers):
        setting = f"train setting 'teachers[{i}]'" + (f" (method {t['method']})" if "method" in t else "")
        if "model" not in t:
            raise TeacherError(f"{setting}: a method teacher is resolved to its exported model by the workflow "
                               f"(rules/functions/train.smk); outside the workflow give model: <path>/model")
        try:
            path = resolve_model(t["model"], setting=setting)
        except FileNotFoundError as exc:
            raise TeacherError(f"{exc}") from None
        if path == init and not s.allow_untrained_teacher:
            raise TeacherError(f"{setting}: teacher {t['model']!r} is the untrained initial model (init_model); "
                               f"set allow_untrained_teacher: true to rank with it anyway")
        pooler, template, path = _export_pooling(path)
        pooler = t.get("pooler") or pooler or "cls_before_pooler"
        if t.get("template"):
            template = t["template"]  # explicit: every view
        elif pooler == "mask" and s.templates:
            template = None  # the student's template per view (the reference feeds the student's ids)
        specs.append(TeacherSpec(setting, path, float(t.get("weight", 1.0)), pooler, template))
    return specs


def load_teachers(specs: list[TeacherSpec], student: ContrastiveEncoder, max_length: int,
                  device: torch.device) -> list[ContrastiveEncoder]:
    """Load every teacher (eval mode, frozen) or raise TeacherError naming its setting."""
    out = []
    vocab = student.tokenizer.get_vocab()
    for spec in specs:
        try:
            enc = ContrastiveEncoder.from_pretrained(spec.model, spec.pooler, max_length, False, setting=spec.setting)
        except (OSError, ValueError) as exc:
            raise TeacherError(f"{spec.setting}: cannot load teacher model {spec.model!r}: {exc}") from None
        if enc.tokenizer.get_vocab() != vocab:
            raise TeacherError(f"{spec.setting}: teacher {spec.model!r} has a different tokenizer vocabulary from "
                               f"the student's; RankCSE feeds the student's token ids to its teachers, so they "
                               f"must share the tokenizer")
        if spec.pooler == "mask" and enc.tokenizer.mask_token is None:
            raise TeacherError(f"{spec.setting}: pooler 'mask' needs a tokenizer with a mask token")
        out.append(enc.to(device).eval().requires_grad_(False))
    return out


class Teachers:
    """Weighted teacher similarities for one batch (global batch under DDP)."""

    def __init__(self, specs: list[TeacherSpec], encoders: list[ContrastiveEncoder], s: TrainSettings) -> None:
        self.specs, self.encoders, self.s = specs, encoders, s

    def _template(self, spec: TeacherSpec, view: str) -> str | None:
        if spec.template is not None:
            return spec.template
        # a [MASK] teacher needs a prompt; teacher_inputs "student": every teacher reads the
        # student's per-view prompt-wrapped ids, as RankCSE's trainer feeds them (reference reading)
        return views.view_template(self.s, view) if spec.pooler == "mask" or self.s.teacher_inputs == "student" else None

    def _encode(self, enc: ContrastiveEncoder, texts: list[str], template: str | None,
                info: D.DistInfo) -> torch.Tensor:
        v = _upcast(enc(texts, template, use_mlp=False))  # float32 (float64 stays: reference tests)
        # teacher_precision fp16: the references cast teacher embeddings to float16 under --fp16
        v = v.half().to(v.dtype) if self.s.teacher_precision == "fp16" else v
        return D.gather_no_grad(v, info)

    def _score(self, spec: TeacherSpec, x: torch.Tensor, y: torch.Tensor, tau: float) -> torch.Tensor:
        d = spec.weight * cosine_matrix(x, y) / tau
        return d.half().to(d.dtype) if self.s.teacher_precision == "fp16" else d

    @torch.no_grad()
    def similarities(self, texts: list[str], san: list[str] | None,
                     info: D.DistInfo) -> dict[str, torch.Tensor]:
        """{"distill": sum_k w_k cos(a, p)/distill_tau, "san": sum_k w_k cos(a, san)/tau} (the
        own settings of methods ranking and listmle_san)."""
        out: dict[str, torch.Tensor] = {}
        ranking, listmle = self.s.own("ranking"), self.s.own("listmle_san")
        # the reference feeds its teachers the student's ids: the same view text (SNCSE's " .")
        texts = views.view_texts(self.s, "anchor", texts)
        for spec, enc in zip(self.specs, self.encoders):
            a = self._encode(enc, texts, self._template(spec, "anchor"), info)
            if ranking.distill_weight > 0:
                p = self._encode(enc, texts, self._template(spec, "positive"), info)
                d = self._score(spec, a, p, ranking.distill_tau)
                out["distill"] = d if "distill" not in out else out["distill"] + d
            if listmle.weight > 0 and san is not None:
                n = self._encode(enc, san, self._template(spec, "san"), info)
                d = self._score(spec, a, n, listmle.tau)
                out["san"] = d if "san" not in out else out["san"] + d
        if self.s.teacher_precision == "fp16":  # the weighted sum rounded to float16 as well
            out = {k: v.half().to(v.dtype) for k, v in out.items()}
        return out
