"""Which reading a run trained: the paper's, or the reference code behind a paper's table.

The presets follow the papers. The code that produced a table sometimes computes something else
(a clamped ``log m`` in the JS term, ``1e-7`` inside ListMLE's log, float16 teacher scores, ...)
or its run script fixes a knob the paper does not state; ``REFERENCE_CODE`` lists, per method,
the settings that reproduce that code (the overlays under ``experiments/reference/`` set them,
docs/deviations.md cites each). ``reading`` derives the label ``summary.json`` records.
"""

from __future__ import annotations

from typing import Any

from hardneg.train.presets import REFERENCE_TEACHERS

PAPER = "paper"
REFERENCE = "reference code"

# method -> {setting (dotted for a method's own: method_settings.hncse.mix_alpha): the reference
# code's value}; sources in docs/deviations.md ("Reference code")
REFERENCE_CODE: dict[str, dict[str, Any]] = {
    # bcai01/SAN models/SimCSE/run_scripts/1105.custom-model-scd-bert-base.sh: --dropout 0.15 --fp16
    "simcse_san": {"dropout": 0.15, "precision": "fp16"},
    # models/sncse/run_scripts/3111.custom-model-bert-base.sh: --dropout_for_last_column 0.3
    "sncse_san": {"san_dropout": 0.3},
    # models/rankcse/rankcse/models.py Divergence + ListMLE (clamped log m, log(cumsum + 1e-7));
    # models/rankcse/rankcse/trainers.py: teacher embeddings cast to float16 under --fp16, ties
    # shuffled; run_scripts/4184.ps-distill-scd-bert-base.sh: --num_train_epochs 4 --fp16, second
    # teacher SAN's own SimCSE+SAN BERT-large run (preset simcse_san_large)
    "rankcse_san": {"method_settings.ranking.consistency_form": "reference_clamped", "listmle_eps": 1e-7,
                    "teacher_precision": "fp16",
                    "epochs": 4, "precision": "fp16", "teachers": REFERENCE_TEACHERS},
    # models/SimCSE/run_scripts/1604.custom-model-scd-bert-large.sh: no --fp16 (commented out)
    "simcse_san_large": {"precision": "fp32"},
    # Rcrossmeister/HNCSE model/method2_models.py: a constant mixing alpha 0.5
    "hncse_hnm": {"method_settings.hncse.mix_alpha": 0.5},
    # the same community RankCSE code without the SAN column (SAN Table 3 baseline)
    "rankcse": {"method_settings.ranking.consistency_form": "reference_clamped", "listmle_eps": 1e-7},
    # models/rlrd/rankcse/trainers_rl_5.py ListMLE (1e-7) and the teachers fed the student's
    # prompt-wrapped input_ids (its float16 cast of teacher embeddings is commented out);
    # run_scripts/20101.*: --fp16
    "rlrd_san": {"listmle_eps": 1e-7, "teacher_inputs": "student", "precision": "fp16"},
    # Sense-GVT/SNCSE SNCSE/train_SNCSE.py l. 514 looks the negation up with the period-appended
    # sentence: those rows train on "Not " + sentence + " ." (HiCL re-trains SNCSE with that code)
    "sncse": {"negation_period_fallback": True},
    "hicl_sncse": {"negation_period_fallback": True},
}


def reading(settings: dict[str, Any]) -> str:
    """``paper`` when none of the method's reference-code settings is at the reference value (or
    the method has none), ``reference code`` when all are, else ``mixed (k of n reference-code
    settings: names)``."""
    ref = REFERENCE_CODE.get(str(settings.get("method")), {})
    hits = sorted(k for k, v in ref.items() if _comparable(k, dotted(settings, k)) == v)
    if not hits:
        return PAPER
    if len(hits) == len(ref):
        return REFERENCE
    return f"mixed ({len(hits)} of {len(ref)} reference-code settings: {', '.join(hits)})"


def dotted(settings: dict[str, Any], key: str) -> Any:
    """A setting of a settings dict by its dotted name (``method_settings.hncse.mix_alpha``); None: unset."""
    value: Any = settings
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _comparable(key: str, value: Any) -> Any:
    """A setting as the overlay states it: a method teacher without the exported ``model`` path the
    workflow adds to it (rules/functions/train.smk)."""
    if key == "teachers" and isinstance(value, list):
        return [{k: v for k, v in t.items() if not (k == "model" and "method" in t)} if isinstance(t, dict) else t
                for t in value]
    return value
