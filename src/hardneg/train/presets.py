"""Method presets with the papers' hyper-parameters (BERT-base rows): data over the methods of
``hardneg.train.methods``, registered there (``PRESETS``).

Sources: SimCSE (notes: unsupervised defaults), SAN paper Table 6 / Appendix C, SNCSE (notes),
OssCSE Appendix A, RankCSE (notes), HNCSE §4.2, HiCL A.3/Table 13, SynCSE (no values given). A
preset's settings are a partial TrainSettings, each method's own settings nested under its name
(``method_settings``, as the config writes them); config overrides win.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from hardneg.train.methods import papers
from hardneg.train.methods.records import Preset

if TYPE_CHECKING:  # imported where used: listing the presets (hardneg train --help) needs no torch
    from hardneg.train.settings import TrainSettings

_SIMCSE: dict[str, Any] = {
    # SimCSE unsup: batch 64, lr 3e-5, max_len 32, tau 0.05, [CLS]+MLP only in training, 1 epoch
    "pooler": "cls_before_pooler",
    "mlp_only_train": True,
    "batch_size": 64,
    "lr": 3e-5,
    "max_length": 32,
    "temperature": 0.05,
    "epochs": 1,
    "eval_every": 125,
}
_PROMPT = {
    # SNCSE / OssCSE: PromptBERT [MASK] representation, the two templates form the positive pair.
    # The [MASK] vector goes through an MLP (dense + tanh) in training only; evaluation takes it
    # without: SNCSE train_SNCSE.sh (--pooler_type cls --mlp_only_train), PromptBERT run.sh
    # unsup-bert (--mlp_only_train), and OssCSE Appendix A ("exactly the same settings with SimCSE")
    "pooler": "mask",
    "templates": ["sncse1", "sncse2"],
    "mlp_only_train": True,
}
# train_SNCSE.py (and SAN's SNCSE+SAN / RLRD+SAN copies) append " ." to anchor, positive and
# negation lacking end punctuation (hardneg.train.views.with_period)
_SNCSE_PROMPT = {**_PROMPT, "append_period": True}
# SAN §3.3 RankCSE+SAN teachers as the paper names them, DiffCSE-base and SimCSE-large, weights
# 0.33 / 0.67 (--alpha_ 0.33), [CLS] before the pooler. SAN's run script (bcai01/SAN
# models/rankcse/run_scripts/4184.ps-distill-scd-bert-base.sh) takes its second teacher from SAN's
# own SimCSE+SAN BERT-large run (1604.custom-model-scd-bert-large), preset simcse_san_large here:
# REFERENCE_TEACHERS, set by experiments/reference/san-table3.yaml (docs/deviations.md)
PAPER_TEACHERS: list[dict[str, Any]] = [
    {"model": "voidism/diffcse-bert-base-uncased-sts", "weight": 0.33, "pooler": "cls_before_pooler"},
    {"model": "princeton-nlp/unsup-simcse-bert-large-uncased", "weight": 0.67, "pooler": "cls_before_pooler"},
]
REFERENCE_TEACHERS: list[dict[str, Any]] = [
    PAPER_TEACHERS[0], {"method": "simcse_san_large", "weight": 0.67, "pooler": "cls_before_pooler"},
]
# RankCSE (community code run by SAN): batch 128, lr 3e-5, InfoNCE + beta*JS + gamma*ListMLE with
# beta = gamma = 1, tau2 0.05; 1 epoch (SAN Table 10)
_RANKING = {"consistency_weight": 1.0, "distill_weight": 1.0, "distill_loss": "listmle", "distill_tau": 0.05}
_RANKCSE: dict[str, Any] = {
    **_SIMCSE, "batch_size": 128, "lr": 3e-5, "method_settings": {"ranking": _RANKING}, "teachers": PAPER_TEACHERS,
}
# SNCSE BERT-base's BML: weight 1e-3, alpha 0.1, beta 0.3
_BML = {"weight": 1e-3, "alpha": 0.1, "beta": 0.3}

_HICL = {"batch_size": 256, "precision": "fp32"}
_HICL_SLICING = {"enabled": True, "segment_length": 32, "max_tokens": 512}

# batch_size is per device (the references' --per_device_train_batch_size). Under DDP hardneg
# all-gathers the views, so W devices train on W x batch_size with global in-batch negatives;
# SNCSE's, SAN's SimCSE/SNCSE/RLRD and HNCSE's code never all-gather (per-device negatives). The
# papers' numbers are one device's batch: on W devices set batch_size / W (docs/training.md).
# ``source``: the report's method table; ``paper``: the link of the report's tables (the *_san
# presets and RLRD+SAN are SAN's, its Table 6); ``also``: further papers a model card cites.
PRESETS: list[Preset] = [
    Preset("simcse", papers.SIMCSE, "SimCSE (Gao et al. 2021) §3, unsupervised; SAN Table 3 baseline",
           {**_SIMCSE}),
    # SAN Table 6 (SimCSE+SAN, BERT-base): tau2 0.08, p2 0.2, HiNCE
    Preset("simcse_san", papers.SAN, "SAN (bcai01/SAN) §3.2 Eq. 2 (HiNCE), Table 6",
           {**_SIMCSE, "negatives": "san", "tau2": 0.08, "san_dropout": 0.2}),
    # SAN's SimCSE+SAN BERT-large run, RankCSE+SAN's second teacher in SAN's code (bcai01/SAN
    # models/SimCSE/run_scripts/1604.custom-model-scd-bert-large.sh): bert-large-uncased, batch 64,
    # lr 1e-5, tau 0.05, scd_temp (tau2) 0.1, p2 0.2, [CLS] + MLP in training, 1 epoch, fp32
    Preset("simcse_san_large", papers.SAN,
           ("SAN's SimCSE+SAN BERT-large run (bcai01/SAN run script 1604), the RankCSE+SAN "
            "reference's second teacher"),
           {**_SIMCSE, "negatives": "san", "tau2": 0.1, "san_dropout": 0.2, "lr": 1e-5},
           init_model="bert-large-uncased"),
    # SimCSE's unsupervised setting + the corpus-mined neighbour (hardneg.augment.mine) as the hard
    # negative of SimCSE §4's supervised loss; hard_negative.weight 0 = SimCSE's run_sup_example.sh
    Preset("simcse_mined", papers.SIMCSE,
           ("SimCSE §4 Eq. 5 (supervised form, one hard negative per sentence) with a corpus-mined "
            "neighbour as the hard negative; SimCSE's unsupervised hyper-parameters"),
           {**_SIMCSE, "negatives": "mined", "method_settings": {"hard_negative": {"weight": 0.0}}}),
    # SNCSE BERT-base: batch 256, lr 1e-5, BML alpha 0.1 beta 0.3 weight 1e-3
    Preset("sncse", papers.SNCSE, "SNCSE (Wang et al. 2022) §3, BML; reference Sense-GVT/SNCSE train_SNCSE.sh", {
        **_SIMCSE, **_SNCSE_PROMPT, "batch_size": 256, "lr": 1e-5, "method_settings": {"bml": _BML},
    }),
    # SAN Eq. 4 + Table 6 (SNCSE+SAN): HiNCE with tau2 0.1, p2 0.2, + lambda*BML
    Preset("sncse_san", papers.SAN, "SAN §3.3 Eq. 4 (HiNCE + lambda*BML), Table 6", {
        **_SIMCSE, **_SNCSE_PROMPT, "batch_size": 256, "lr": 1e-5, "method_settings": {"bml": _BML},
        "negatives": "san", "tau2": 0.1, "san_dropout": 0.2,
    }, also=("SNCSE",)),
    # OssCSE Appendix A: batch 64, lr 1e-5, 2 epochs, alpha .05 beta .2 lambda 1e-3, gamma 2e-3
    Preset("osscse", papers.OSSCSE, "OssCSE (surface-structure bias) §4 Eq. 3-5, Appendix A", {
        **_SIMCSE, **_PROMPT, "batch_size": 64, "lr": 1e-5, "epochs": 2,
        "method_settings": {"margin": {"weight": 1e-3, "alpha": 0.05, "beta": 0.2}, "recall": {"gamma": 2e-3}},
    }),
    # SAN Eq. 6 + Table 6 (RankCSE+SAN): beta*Lcons + gamma*LListMLE + LHiNCE (tau2 0.05, p2 0.2)
    # + lambda*LListMLE+SAN (lambda 0.4, tau3 0.05), post-processing
    Preset("rankcse_san", papers.SAN, "SAN §3.3 Eq. 5-6 (RankCSE+SAN), Table 6", {
        **_RANKCSE, "negatives": "san", "tau2": 0.05, "san_dropout": 0.2, "post_process": True,
        "method_settings": {"ranking": _RANKING, "listmle_san": {"weight": 0.4, "tau": 0.05}},
    }, also=("RankCSE",)),
    # SAN Eq. 7 + Table 6 (RLRD+SAN): zeta*LHiNCE (tau2 0.1, p2 0.2) + mu*LBML (SNCSE's 1e-3, 0.1,
    # 0.3) + lambda*LListMLE + beta*LListMLE+SAN with the weights the reference trains
    # (bcai01/SAN models/rlrd/rankcse/trainers_rl_5.py compute_loss: loss_o + t_lmb * kd_loss,
    # kd_loss = ListMLE(cos/temp) + ps_dist_loss_weight * ListMLE(cos(z1, z4)/scd_temp); run script
    # models/rlrd/run_scripts/20101.*: t_lmb 1e-3, ps_dist_loss_weight 0.2, scd_temp 0.1, gamma_ 1):
    # lambda = 1e-3, beta = 1e-3 x 0.2 = 2e-4, tau3 = 0.1 (SAN §3.3: ListMLE is three orders of
    # magnitude above InfoNCE). Prompts + MLP in training, batch 128, lr 3e-5, 4 epochs (Table 10),
    # post-processing; teachers SNCSE and SimCSE-large at 0.5 / 0.5 (RLRD's RL agent, which
    # switches each teacher on or off per step, is not implemented: both always on)
    Preset("rlrd_san", papers.SAN,
           ("SAN §3.3 Eq. 7 (RLRD+SAN), Table 6; weights lambda 1e-3, beta 2e-4, tau3 0.1 from SAN's RLRD "
            "code (t_lmb x ListMLE terms); RLRD's RL teacher weighting not implemented"), {
        **_SIMCSE, **_SNCSE_PROMPT, "batch_size": 128, "lr": 3e-5, "epochs": 4,
        "negatives": "san", "tau2": 0.1, "san_dropout": 0.2, "post_process": True,
        "method_settings": {"bml": _BML, "ranking": {"distill_weight": 1e-3, "distill_loss": "listmle", "distill_tau": 0.05},
                            "listmle_san": {"weight": 2e-4, "tau": 0.1}},
        "teachers": [{"method": "sncse", "weight": 0.5},
                     {"model": "princeton-nlp/unsup-simcse-bert-large-uncased", "weight": 0.5,
                      "pooler": "cls_before_pooler"}],
    }, also=("RankCSE",)),
    # RankCSE without SAN (SAN Table 3 baseline): InfoNCE + beta*Lcons + gamma*LListMLE
    Preset("rankcse", papers.RANKCSE,
           "RankCSE (Liu et al. 2023): InfoNCE + JS consistency + ListMLE distillation; SAN Table 3 baseline",
           {**_RANKCSE}),
    # --- presets whose contrast term replaces InfoNCE (HNCSE, HiCL, SynCSE) ---
    # HNCSE §4.2 + the authors' run_unsup_example.sh: SimCSE's setting (batch 64, lr 3e-5, len 32,
    # tau 0.05, [CLS] + MLP in training, 1 epoch); K 10 and s 40 from the authors' code
    Preset("hncse_pm", papers.HNCSE, "HNCSE §3.1 Eq. 2-3, §4.2 + authors' run_unsup_example.sh (SimCSE setting)",
           {**_SIMCSE, "method_settings": {"hncse": {"mode": "pm", "pm_margin": 0.1}}}),
    Preset("hncse_hnm", papers.HNCSE, "HNCSE §3.2 Eq. 4, 7-8; K=10, s=40 from the authors' code",
           {**_SIMCSE, "method_settings": {"hncse": {"mode": "hnm", "top_k": 10, "mixes": 40, "mix_alpha": None}}}),
    # HiCL A.3 (base models: batch 256, fp32), Table 13 (BERT-base SimCSE: alpha 0.15, lr 5e-5),
    # §5.3 slicing length 32, A.1 sequence truncation 512
    Preset("hicl_simcse", papers.HICL,
           "HiCL §3.1-3.2 Eq. 1-2, A.3 (batch 256, fp32), Table 13 (SimCSE-BERT-base: alpha 0.15, lr 5e-5)",
           {**_SIMCSE, **_HICL, "lr": 5e-5, "method_settings": {"hicl": {"alpha": 0.15, **_HICL_SLICING}}}),
    # HiCL + SNCSE (prompt around each segment, BML on aggregated negations); Table 13: alpha 0.01, lr 1e-5
    Preset("hicl_sncse", papers.HICL,
           "HiCL §3.1-3.2 Eq. 1-2, A.3 (batch 256, fp32), Table 13 (SNCSE-BERT-base: alpha 0.01, lr 1e-5)", {
        **_SIMCSE, **_SNCSE_PROMPT, **_HICL, "lr": 1e-5,
        "method_settings": {"hicl": {"alpha": 0.01, **_HICL_SLICING}, "bml": _BML},
    }, also=("SNCSE",)),
    # SynCSE Eq. 5-7; the paper gives no batch/lr/k/delta/tau: SimCSE's setting, k 4, delta 0.6,
    # refresh every 1000 steps; its layer-wise rates (lower for the encoder, higher for the
    # projection) without values: encoder 3e-5, projection 10x = 3e-4 (docs/deviations.md)
    Preset("syncse", papers.SYNCSE, "SynCSE Eq. 5-7; k, delta, tau, refresh not given by the paper (ours, docs/deviations.md)", {
        **_SIMCSE, "head_lr": 3e-4, "method_settings": {"syncse": {
            "enabled": True, "negatives": 4, "delta": 0.6, "refresh_every": 1000, "weights": "alignment", "in_batch": True,
            "projection_dropout": 0.1}},
    }),
]


def merge_settings(base: dict[str, Any], layer: dict[str, Any] | None) -> dict[str, Any]:
    """``base`` with ``layer``'s settings on top (copies): a setting replaces the one below, except
    ``method_settings``, whose methods' own settings merge key by key."""
    out = copy.deepcopy(base)
    for key, value in copy.deepcopy(layer or {}).items():
        if key == "method_settings" and isinstance(value, dict) and isinstance(out.get(key), dict):
            merged = out[key]
            for name, own in value.items():
                merged[name] = {**merged[name], **own} if isinstance(own, dict) and isinstance(
                    merged.get(name), dict) else own
        else:
            out[key] = value
    return out


def build_settings(
    method: str,
    init_model: str,
    seed: int,
    overrides: dict[str, Any] | None = None,
    method_overrides: dict[str, Any] | None = None,
) -> TrainSettings:
    """Preset for ``method`` <- global ``overrides`` <- per-method ``method_overrides``; a preset
    with its own backbone (``Preset.init_model``) trains that instead of ``init_model``. A preset
    from an external module carries the module (setting ``method_modules``) so that any process
    reading the settings registers it first."""
    from hardneg.train import methods
    from hardneg.train.settings import TrainSettings

    p = methods.preset(method)
    d = merge_settings(merge_settings(p.settings, overrides), method_overrides)
    d.update(method=method, init_model=p.init_model or init_model, seed=seed)
    if (module := methods.module_of(method)) is not None:
        d["method_modules"] = [module]
    return TrainSettings.from_dict(d)


def settings_from_config(train_cfg: dict[str, Any], method: str, seed: int,
                         extra: dict[str, Any] | None = None) -> TrainSettings:
    """Settings for one method x seed from the config's ``train`` section: the preset, then
    ``train.overrides`` (every method), then ``train.presets.<method>``, then ``extra``; the
    external method modules of ``train.method_modules`` are registered first."""
    from hardneg.train.methods import load_modules

    load_modules(train_cfg.get("method_modules"))
    per_method = merge_settings((train_cfg.get("presets") or {}).get(method) or {}, extra)
    return build_settings(method, train_cfg["init_model"], int(seed),
                          overrides=train_cfg.get("overrides"), method_overrides=per_method)
