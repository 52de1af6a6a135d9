"""Training settings: one validated record per run (a preset plus overrides). The settings every
method may read are fields here; each method's own settings (``hardneg.train.methods``, built in
or a researcher's own) are one mapping under its name in ``method_settings`` (``{hicl: {alpha:
0.15}}``), declared, defaulted and validated by the method's module (``Method.own_defaults``,
``Method.validate``) and read through ``Method.options``."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from hardneg.encoders.pooling import POOLERS
from hardneg.train import views
from hardneg.train.views import VIEW_TEMPLATE_CHOICES, extra_views

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
NEGATIVES = ("none", "san", "mined")  # mined: supervised SimCSE with the mined hard negative
FAILED_AUGMENTATION = ("keep", "drop")
TEACHER_PRECISIONS = ("fp32", "fp16")
TEACHER_INPUTS = ("own", "student")
TEACHER_KEYS = {"model", "method", "weight", "pooler", "template", "seed"}
# Settings left out of to_dict (so of the fingerprint, settings.json, summary.json and the rule
# params) while unset: a run without them is keyed and written exactly as before they existed.
OMITTED_WHEN_NONE = frozenset({"mini_batch_size", "method_settings", "method_modules", "negative_views"})
# the order of the augmentation columns in needed_columns (the trainer reads them in this order)
COLUMN_ORDER = ("san", "negation", "paraphrase")
# Settings that do not change what is computed: a checkpoint stays resumable across them.
# compile: how, not what, is computed (like the GPU model): a run may resume with it toggled
NON_STRUCTURAL = frozenset({"eval_every", "checkpoint_every", "log_every", "show_progress", "compile"})


def _is_int_field(f: dataclasses.Field) -> bool:
    """An ``int`` or ``int | None`` field (annotations are strings here: ``from __future__``)."""
    return str(f.type).split(" | ")[0] == "int"


@dataclass
class TrainSettings:
    """Every knob of one training run. Defaults are unsupervised SimCSE's (notes: SimCSE)."""

    method: str = "simcse"
    init_model: str = "bert-base-uncased"
    # representation: SimCSE trains [CLS] + an MLP and evaluates [CLS] before the MLP
    pooler: str = "cls_before_pooler"
    mlp_only_train: bool = True
    templates: list[str] | None = None  # [anchor view, positive view] for pooler "mask"
    # which of the two templates each other view gets (None: views.default_view_templates(), the reference)
    view_templates: dict[str, str] | None = None
    # SNCSE's train_SNCSE.py: " ." after the anchor/positive sentence and the negation when the text
    # does not end in ASCII punctuation (hardneg.train.views.with_period); SNCSE-family presets: on
    append_period: bool = False
    # SNCSE's lookup quirk: rows whose sentence got " ." train on "Not " + sentence + " ." (views.view_texts)
    negation_period_fallback: bool = False
    max_length: int = 32  # training inputs: tokens incl. special and prompt tokens (SimCSE: 32)
    # evaluation/export inputs: SimCSE evaluates untruncated sentences, so not the training 32
    eval_max_length: int = 128
    dropout: float | None = None  # None: the model's own hidden/attention dropout (0.1 for BERT)
    # optimisation
    batch_size: int = 64  # per device; global batch = batch_size x world size
    lr: float = 3e-5
    # learning rate of the head trained from scratch (SimCSE's MLP, SynCSE's projection); None: lr
    # (SynCSE "Training optimizations": lower rate for the encoder layers, higher for the projection)
    head_lr: float | None = None
    epochs: int = 1
    max_steps: int | None = None
    warmup_ratio: float = 0.0
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    precision: str = "auto"
    seed: int = 42
    # shared by every contrast term (InfoNCE, HiNCE, HNCSE, HiCL, SynCSE) and RankCSE's consistency
    temperature: float = 0.05
    # the contrast's negative source: none, san (HiNCE, whose negatives ListMLE+SAN also ranks) or
    # mined (supervised SimCSE's hard negative); it switches two methods, so it is top-level, and so
    # are the SAN negatives' knobs: tau2 (their temperature in HiNCE) and san_dropout (the dropout p2
    # of the SAN view's pass, which ListMLE+SAN reads as well)
    negatives: str = "none"
    tau2: float = 0.08
    san_dropout: float = 0.2
    # which column supplies a negative view: {san: mined} (HiNCE), {negation: mined} (BML); None: their own
    negative_views: dict[str, str] | None = None
    # the teachers and how they score: shared by ListMLE+SAN and RankCSE's distillation (both rank
    # with the same teachers), so top-level rather than one method's own
    # teachers: [{model: <name or path>} | {method: <preset trained in the same workflow>},
    #            weight, pooler (null: the model's own export / cls_before_pooler), template, seed]
    teachers: list[dict[str, Any]] | None = None
    # reference-code readings (docs/deviations.md; experiments/reference/ sets them): ListMLE's
    # log(cumsum + eps) (RankCSE/SAN code: 1e-7; the paper's ListMLE: 0); teacher scores rounded to
    # float16 with ties broken at random (the references under --fp16; fp32: exact scores); what a
    # teacher without a template of its own reads: "own" (plain sentences, its own model's input) or
    # "student" (the student's per-view prompt-wrapped ids, as RankCSE's trainer feeds them)
    listmle_eps: float = 0.0
    teacher_precision: str = "fp32"
    teacher_inputs: str = "own"
    allow_untrained_teacher: bool = False  # the untrained init_model as teacher: refused unless true
    post_process: bool = False  # replace dropped SAN negatives by the SNCSE negation
    # rows whose augmentation failed: "keep" (references train on every row) or "drop" (counted)
    failed_augmentation: str = "keep"
    # the negation rules the run expects (the negation shard manifest's "rules" must match)
    negation_rules: str = "sncse"
    # model selection on STS-B dev (null: all 1500 pairs; an integer subsamples: CI only)
    dev_max_pairs: int | None = None
    # bookkeeping
    eval_every: int = 125
    checkpoint_every: int = 125
    log_every: int = 10
    show_progress: bool = True
    compile: bool = False  # torch.compile the backbone (CUDA graphs on CUDA), batches padded to max_length
    # cached-gradient training (hardneg.train.cached_gradient): embed the per-device batch in chunks
    # of this many sentences, loss on the whole batch, re-run each chunk with its dropout replayed.
    # None: one pass (omitted from to_dict then, so unset runs keep their settings and keys)
    mini_batch_size: int | None = None
    # each method's own settings under its name ({bml: {weight: 1e-3}, hicl: {alpha: 0.15}}), the
    # built-in methods' (schema: train.overrides.method_settings) as a researcher's own. A built-in
    # method is on by a value of its entry (weight/gamma > 0, hncse.mode not none, hicl/syncse
    # enabled), never by the entry's presence: a layer (train.overrides) may set a knob for every
    # preset without switching a method on. Entries are completed with the method's defaults.
    method_settings: dict[str, dict[str, Any]] | None = None
    # the external modules that define the run's preset (registered before validation, so a job
    # process given only the settings knows the method). None for built-in methods.
    method_modules: list[str] | None = None

    def __post_init__(self) -> None:
        if self.method_modules:
            from hardneg.train.methods import load_modules

            load_modules(self.method_modules)
        self.validate()

    def setting(self, name: str) -> Any:
        """A setting by its dotted name (``method_settings.hicl.alpha``); None where it is unset."""
        head, *rest = name.split(".")
        value: Any = getattr(self, head, None)
        for part in rest:
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def own(self, method: str) -> SimpleNamespace:
        """Method ``method``'s own settings, defaults filled in (``s.own("hicl").alpha``)."""
        from hardneg.train.methods import methods

        return methods()[method].options(self)

    def uses(self, method: str) -> bool:
        """True when ``method`` contributes a term to this run's loss."""
        from hardneg.train.methods.objective import active

        return any(m.name == method for m in active(self))

    def _complete_method_settings(self) -> None:
        """Check ``method_settings``' shape and own settings, drop null entries, and complete each
        entry with its method's defaults (so one run is keyed and written one way whatever the
        config spelled out)."""
        def bad(why: str) -> None:
            raise ValueError(f"train setting 'method_settings': {why}")

        ms = self.method_settings
        if ms is None:
            return
        if not isinstance(ms, dict):
            bad(f"must be a mapping method -> its settings (got {ms!r})")
        from hardneg.train import methods

        known = methods.methods()
        out: dict[str, dict[str, Any]] = {}
        for name, own in ms.items():
            if own is None:  # a layer may remove a preset's entry (its method back to its defaults)
                continue
            unit = known.get(name)
            if unit is None or not unit.own_defaults:
                nested = [n for n, m in known.items() if m.own_defaults]
                bad(f"{name!r} is not a method with nested settings (registered: {', '.join(nested) or 'none'}; "
                    f"a method of your own: train.method_modules)")
            if not isinstance(own, dict):
                bad(f"{name}: must be a mapping setting -> value (got {own!r})")
            unknown = sorted(set(own) - set(unit.own_defaults))
            if unknown:
                bad(f"{name}: unknown setting(s) {', '.join(unknown)} (known: {', '.join(sorted(unit.own_defaults))})")
            for key, value in own.items():
                if (why := _type_error(unit.own_defaults[key], unit.nullable.get(key), value)) is not None:
                    raise ValueError(f"train setting 'method_settings.{name}.{key}': {why} (got {value!r})")
            out[name] = {**unit.own_defaults, **own}
        self.method_settings = out or None

    def validate(self) -> None:
        """Raise ValueError naming the offending setting (``method_settings``' entries are
        completed with their methods' defaults first)."""
        self._complete_method_settings()

        def bad(name: str, why: str) -> None:  # name: a field or a dotted method_settings.<method>.<key>
            raise ValueError(f"train setting '{name}': {why} (got {self.setting(name)!r})")

        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(f.default, bool):
                if not isinstance(value, bool):
                    bad(f.name, "must be true or false")
            elif str(f.type).split(" | ")[0] in ("int", "float"):
                if value is None and str(f.type).endswith("| None"):
                    continue
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    bad(f.name, "must be a number")
                # every entry point (config, --set, --settings JSON) comes here: NaN passes every
                # comparison below and inf makes a loss without gradient, so both are refused
                if not math.isfinite(value):
                    bad(f.name, "must be a finite number")
                if _is_int_field(f) and not isinstance(value, int):  # 8.0 too: numpy/torch want ints
                    bad(f.name, "must be an integer (written without a decimal point)")
        if self.pooler not in POOLERS:
            bad("pooler", f"must be one of {', '.join(POOLERS)}")
        if self.pooler == "mask" and (not self.templates or len(self.templates) != 2):
            bad("templates", "pooler 'mask' needs two prompt template names [anchor, positive]")
        if self.precision not in PRECISIONS:
            bad("precision", f"must be one of {', '.join(PRECISIONS)}")
        if self.negatives not in NEGATIVES:
            bad("negatives", f"must be one of {', '.join(NEGATIVES)}")
        for name in ("batch_size", "max_length", "eval_max_length", "epochs", "eval_every", "checkpoint_every", "log_every"):
            if getattr(self, name) < 1:
                bad(name, "must be >= 1")
        if self.batch_size < 2:
            bad("batch_size", "in-batch negatives need at least 2 sentences per device")
        if self.dev_max_pairs is not None and self.dev_max_pairs < 3:
            bad("dev_max_pairs", "must be >= 3 or null")
        if self.mini_batch_size is not None:
            from hardneg.train.cached_gradient import refusal

            if self.mini_batch_size < 1:
                bad("mini_batch_size", "must be >= 1 or null (one pass)")
            if (why := refusal(self)) is not None:
                bad("mini_batch_size", why)
        if self.max_steps is not None and self.max_steps < 1:
            bad("max_steps", "must be >= 1 or null")
        for name in ("lr", "temperature", "tau2"):
            if getattr(self, name) <= 0:
                bad(name, "must be > 0")
        if self.head_lr is not None and self.head_lr <= 0:
            bad("head_lr", "must be > 0 or null")
        for name in ("san_dropout", "warmup_ratio"):
            if not 0 <= getattr(self, name) < 1:
                bad(name, "must be in [0, 1)")
        if self.dropout is not None and not 0 <= self.dropout < 1:
            bad("dropout", "must be in [0, 1) or null")
        for name in ("weight_decay", "grad_clip"):
            if getattr(self, name) < 0:
                bad(name, "must be >= 0")
        if self.templates is not None:
            from hardneg.encoders.templates import get_template

            for t in self.templates:
                try:
                    get_template(t)
                except ValueError as exc:
                    bad("templates", f"{exc}; a prompt template needs a [MASK] slot and {{sentence}}")
        if self.view_templates is not None:
            if not isinstance(self.view_templates, dict):
                bad("view_templates", "must be a mapping view -> anchor|positive")
            for view, which in self.view_templates.items():
                if view not in extra_views():
                    bad("view_templates", f"unknown view {view!r} (known: {', '.join(extra_views())})")
                if which not in VIEW_TEMPLATE_CHOICES:
                    bad("view_templates", f"view {view!r}: must be one of {', '.join(VIEW_TEMPLATE_CHOICES)}")
        if self.negation_period_fallback and not self.append_period:
            bad("negation_period_fallback", "reproduces a quirk of SNCSE's period appending: needs append_period: true")
        for name, choices in (("teacher_precision", TEACHER_PRECISIONS), ("teacher_inputs", TEACHER_INPUTS),
                              ("failed_augmentation", FAILED_AUGMENTATION)):
            if getattr(self, name) not in choices:
                bad(name, f"must be one of {', '.join(choices)}")
        if not isinstance(self.negation_rules, str) or not self.negation_rules:
            bad("negation_rules", "must be a rule-set name (sncse, root)")
        if not 0 <= self.listmle_eps < 1:
            bad("listmle_eps", "must be in [0, 1) (the reference code's 1e-7, or 0)")
        self._validate_method_modules(bad)
        from hardneg.train.methods import objective

        objective.validate(self, bad)  # each method's own settings, one contrast term per run
        self._validate_teachers(bad)

    def _validate_method_modules(self, bad) -> None:
        if self.method_modules is not None and (not isinstance(self.method_modules, list)
                                                or not all(isinstance(m, str) for m in self.method_modules)):
            bad("method_modules", "must be a list of module files or names")

    def _validate_teachers(self, bad) -> None:
        if self.teachers is not None:
            if not isinstance(self.teachers, list) or not self.teachers:
                bad("teachers", "must be a non-empty list of {model|method, weight, ...} or null")
            for i, t in enumerate(self.teachers):
                where = f"teachers[{i}]"
                if not isinstance(t, dict):
                    bad("teachers", f"{where} must be a mapping")
                unknown = sorted(set(t) - TEACHER_KEYS)
                if unknown:
                    bad("teachers", f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(TEACHER_KEYS))})")
                if "model" not in t and "method" not in t:
                    bad("teachers", f"{where}: give 'model' (a model name/path) or 'method' (a preset trained "
                                    f"in the same workflow, which resolves it to that run's exported model)")
                w = t.get("weight", 1.0)
                if isinstance(w, bool) or not isinstance(w, (int, float)) or w <= 0:
                    bad("teachers", f"{where}: weight must be a number > 0")
                if t.get("pooler") is not None and t["pooler"] not in POOLERS:
                    bad("teachers", f"{where}: pooler must be one of {', '.join(POOLERS)}")
                if t.get("template") is not None:
                    from hardneg.encoders.templates import get_template

                    try:
                        get_template(t["template"])
                    except ValueError as exc:
                        bad("teachers", f"{where}: template: {exc}")
                if t.get("method") == self.method:
                    bad("teachers", f"{where}: a method cannot be its own teacher")
        if self.needs_teacher() and not self.teachers and not self.allow_untrained_teacher:
            bad("teachers", f"method {self.method!r} ranks with a teacher (method_settings.ranking.distill_weight or "
                            f"method_settings.listmle_san.weight > 0) but "
                            f"none is configured; set e.g. teachers: [{{method: simcse}}] or [{{model: ...}}] "
                            f"(the untrained init_model is used only with allow_untrained_teacher: true)")

    def needs_teacher(self) -> bool:
        """True when one of the run's methods ranks by teacher similarities (RankCSE / SAN Eq. 5-7)."""
        from hardneg.train.methods.objective import needs_teacher

        return needs_teacher(self)

    def view_template(self, view: str) -> str | None:
        """The template the ``view`` is encoded with (``hardneg.train.views.view_template``)."""
        return views.view_template(self, view)

    # ----- which augmentation columns the objectives read -----
    def needed_columns(self) -> list[str]:
        """Augmentation columns the configured objectives need, besides the corpus text."""
        return list(dict.fromkeys(self.data_views().values()))

    def data_views(self) -> dict[str, str]:
        """view -> the augmentation column its text comes from (``negative_views`` may give HiNCE's
        san or BML's negation view another column, e.g. the mined neighbour)."""
        from hardneg.train.methods.objective import data_views

        # post_process: dropped SAN negatives take the row's negation (SAN Appendix C)
        return data_views(self, COLUMN_ORDER, ("negation",) if self.post_process else ())

    @property
    def export_pooler(self) -> str:
        """The pooler evaluation uses: never SimCSE's training-only MLP."""
        return self.pooler

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        return {k: v for k, v in d.items() if not (k in OMITTED_WHEN_NONE and v is None)}

    def fingerprint(self, world_size: int = 1) -> str:
        """Hash of everything that changes what training computes (for resume compatibility)."""
        d = {k: v for k, v in self.to_dict().items() if k not in NON_STRUCTURAL}
        d["world_size"] = world_size
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if d.get("method_modules"):  # a researcher's own method's settings can be suggested too
            from hardneg.train.methods import load_modules

            load_modules(d["method_modules"])
        from hardneg.train.methods import suggest_setting

        for key in unknown:
            if (where := suggest_setting(key)) is not None:
                raise ValueError(f"unknown setting {key!r} (did you mean {where}?)")
        if unknown:
            raise ValueError(f"unknown train setting(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        return cls(**d)


def dotted_items(d: dict[str, Any]) -> dict[str, Any]:
    """A settings dict (``to_dict``) with each method's own settings as dotted keys
    (``method_settings.hicl.alpha``): what the report and model cards compare setting by setting."""
    out = {k: v for k, v in d.items() if k != "method_settings"}
    for name, own in (d.get("method_settings") or {}).items():
        for key, value in (own.items() if isinstance(own, dict) else [("", own)]):
            out[f"method_settings.{name}.{key}".rstrip(".")] = value
    return out


def _type_error(default: Any, nullable: type | None, value: Any) -> str | None:
    """Why ``value`` cannot stand for a method's own setting whose default is ``default`` (a
    setting whose default is None takes ``nullable``'s type or None), or None when it can. Every
    entry point (config, --set, --settings JSON) comes here: NaN and inf are refused as in
    ``TrainSettings.validate``."""
    kind = type(default) if default is not None else nullable
    if kind is None or (value is None and default is None):
        return None
    if kind is bool:
        return None if isinstance(value, bool) else "must be true or false"
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "must be a number"
        if not math.isfinite(value):
            return "must be a finite number"
        if kind is int and not isinstance(value, int):
            return "must be an integer (written without a decimal point)"
        return None
    if kind is str:
        return None if isinstance(value, str) else "must be a string"
    return None
