"""Method presets with the papers' hyper-parameters (BERT-base rows).

Sources: SimCSE (notes: unsupervised defaults), SAN paper Table 6 / Appendix C, SNCSE (notes),
OssCSE Appendix A, RankCSE (notes), HNCSE §4.2, HiCL A.3/Table 13, SynCSE (no values given). A preset is a partial TrainSettings; config overrides win.
"""

from __future__ import annotations

import copy
from typing import Any

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
_RANKCSE: dict[str, Any] = {
    **_SIMCSE, "batch_size": 128, "lr": 3e-5, "consistency_weight": 1.0, "distill_weight": 1.0,
    "distill_loss": "listmle", "distill_tau": 0.05, "teachers": PAPER_TEACHERS,
}

_HICL = {"hicl": True, "hicl_segment_length": 32, "hicl_max_tokens": 512, "batch_size": 256, "precision": "fp32"}

# batch_size is per device (the references' --per_device_train_batch_size). Under DDP hardneg
# all-gathers the views, so W devices train on W x batch_size with global in-batch negatives;
# SNCSE's, SAN's SimCSE/SNCSE/RLRD and HNCSE's code never all-gather (per-device negatives). The
# papers' numbers are one device's batch: on W devices set batch_size / W (docs/training.md).
PRESETS: dict[str, dict[str, Any]] = {
    "simcse": {**_SIMCSE},
    # SAN Table 6 (SimCSE+SAN, BERT-base): tau2 0.08, p2 0.2, HiNCE
    "simcse_san": {**_SIMCSE, "negatives": "san", "tau2": 0.08, "san_dropout": 0.2},
    # SAN's SimCSE+SAN BERT-large run, RankCSE+SAN's second teacher in SAN's code (bcai01/SAN
    # models/SimCSE/run_scripts/1604.custom-model-scd-bert-large.sh): bert-large-uncased, batch 64,
    # lr 1e-5, tau 0.05, scd_temp (tau2) 0.1, p2 0.2, [CLS] + MLP in training, 1 epoch, fp32
    "simcse_san_large": {**_SIMCSE, "negatives": "san", "tau2": 0.1, "san_dropout": 0.2, "lr": 1e-5},
    # SimCSE's unsupervised setting + the corpus-mined neighbour (hardneg.augment.mine) as the hard
    # negative of SimCSE §4's supervised loss; hard_negative_weight 0 = SimCSE's run_sup_example.sh
    "simcse_mined": {**_SIMCSE, "negatives": "mined", "hard_negative_weight": 0.0},
    # SNCSE BERT-base: batch 256, lr 1e-5, BML alpha 0.1 beta 0.3 weight 1e-3
    "sncse": {
        **_SIMCSE, **_SNCSE_PROMPT, "batch_size": 256, "lr": 1e-5,
        "bml_weight": 1e-3, "bml_alpha": 0.1, "bml_beta": 0.3,
    },
    # SAN Eq. 4 + Table 6 (SNCSE+SAN): HiNCE with tau2 0.1, p2 0.2, + lambda*BML
    "sncse_san": {
        **_SIMCSE, **_SNCSE_PROMPT, "batch_size": 256, "lr": 1e-5,
        "bml_weight": 1e-3, "bml_alpha": 0.1, "bml_beta": 0.3,
        "negatives": "san", "tau2": 0.1, "san_dropout": 0.2,
    },
    # OssCSE Appendix A: batch 64, lr 1e-5, 2 epochs, alpha .05 beta .2 lambda 1e-3, gamma 2e-3
    "osscse": {
        **_SIMCSE, **_PROMPT, "batch_size": 64, "lr": 1e-5, "epochs": 2,
        "margin_weight": 1e-3, "margin_alpha": 0.05, "margin_beta": 0.2, "recall_gamma": 2e-3,
    },
    # SAN Eq. 6 + Table 6 (RankCSE+SAN): beta*Lcons + gamma*LListMLE + LHiNCE (tau2 0.05, p2 0.2)
    # + lambda*LListMLE+SAN (lambda 0.4, tau3 0.05), post-processing
    "rankcse_san": {
        **_RANKCSE, "negatives": "san", "tau2": 0.05, "san_dropout": 0.2,
        "listmle_weight": 0.4, "listmle_tau": 0.05, "post_process": True,
    },
    # SAN Eq. 7 + Table 6 (RLRD+SAN): zeta*LHiNCE (tau2 0.1, p2 0.2) + mu*LBML (SNCSE's 1e-3, 0.1,
    # 0.3) + lambda*LListMLE + beta*LListMLE+SAN with the weights the reference trains
    # (bcai01/SAN models/rlrd/rankcse/trainers_rl_5.py compute_loss: loss_o + t_lmb * kd_loss,
    # kd_loss = ListMLE(cos/temp) + ps_dist_loss_weight * ListMLE(cos(z1, z4)/scd_temp); run script
    # models/rlrd/run_scripts/20101.*: t_lmb 1e-3, ps_dist_loss_weight 0.2, scd_temp 0.1, gamma_ 1):
    # lambda = 1e-3, beta = 1e-3 x 0.2 = 2e-4, tau3 = 0.1 (SAN §3.3: ListMLE is three orders of
    # magnitude above InfoNCE). Prompts + MLP in training, batch 128, lr 3e-5, 4 epochs (Table 10),
    # post-processing; teachers SNCSE and SimCSE-large at 0.5 / 0.5 (RLRD's RL agent, which
    # switches each teacher on or off per step, is not implemented: both always on)
    "rlrd_san": {
        **_SIMCSE, **_SNCSE_PROMPT, "batch_size": 128, "lr": 3e-5, "epochs": 4,
        "bml_weight": 1e-3, "bml_alpha": 0.1, "bml_beta": 0.3,
        "distill_weight": 1e-3, "distill_loss": "listmle", "distill_tau": 0.05,
        "negatives": "san", "tau2": 0.1, "san_dropout": 0.2,
        "listmle_weight": 2e-4, "listmle_tau": 0.1, "post_process": True,
        "teachers": [{"method": "sncse", "weight": 0.5},
                     {"model": "princeton-nlp/unsup-simcse-bert-large-uncased", "weight": 0.5,
                      "pooler": "cls_before_pooler"}],
    },
    # RankCSE without SAN (SAN Table 3 baseline): InfoNCE + beta*Lcons + gamma*LListMLE
    "rankcse": {**_RANKCSE},
    # --- methods whose term replaces InfoNCE (hardneg.train.replacement_terms) ---
    # HNCSE §4.2 + the authors' run_unsup_example.sh: SimCSE's setting (batch 64, lr 3e-5, len 32,
    # tau 0.05, [CLS] + MLP in training, 1 epoch); K 10 and s 40 from the authors' code
    "hncse_pm": {**_SIMCSE, "hncse": "pm", "hncse_pm_margin": 0.1},
    "hncse_hnm": {**_SIMCSE, "hncse": "hnm", "hncse_top_k": 10, "hncse_mixes": 40, "hncse_mix_alpha": None},
    # HiCL A.3 (base models: batch 256, fp32), Table 13 (BERT-base SimCSE: alpha 0.15, lr 5e-5),
    # §5.3 slicing length 32, A.1 sequence truncation 512
    "hicl_simcse": {**_SIMCSE, **_HICL, "hicl_alpha": 0.15, "lr": 5e-5},
    # HiCL + SNCSE (prompt around each segment, BML on aggregated negations); Table 13: alpha 0.01, lr 1e-5
    "hicl_sncse": {
        **_SIMCSE, **_SNCSE_PROMPT, **_HICL, "bml_weight": 1e-3, "bml_alpha": 0.1, "bml_beta": 0.3,
        "hicl_alpha": 0.01, "lr": 1e-5,
    },
    # SynCSE Eq. 5-7; the paper gives no batch/lr/k/delta/tau: SimCSE's setting, k 4, delta 0.6,
    # refresh every 1000 steps; its layer-wise rates (lower for the encoder, higher for the
    # projection) without values: encoder 3e-5, projection 10x = 3e-4 (docs/deviations.md)
    "syncse": {
        **_SIMCSE, "syncse": True, "head_lr": 3e-4, "syncse_negatives": 4, "syncse_delta": 0.6, "syncse_refresh_every": 1000,
        "syncse_weights": "alignment", "syncse_in_batch": True, "syncse_projection_dropout": 0.1,
    },
}
# presets that fix their own backbone (a reference run on another model size): it replaces
# train.init_model for that method only
PRESET_INIT_MODELS: dict[str, str] = {"simcse_san_large": "bert-large-uncased"}
# method -> its paper source (report's method table)
METHOD_SOURCES: dict[str, str] = {
    "simcse": "SimCSE (Gao et al. 2021) §3, unsupervised; SAN Table 3 baseline",
    "simcse_san": "SAN (bcai01/SAN) §3.2 Eq. 2 (HiNCE), Table 6",
    "simcse_mined": ("SimCSE §4 Eq. 5 (supervised form, one hard negative per sentence) with a corpus-mined "
                     "neighbour as the hard negative; SimCSE's unsupervised hyper-parameters"),
    "simcse_san_large": ("SAN's SimCSE+SAN BERT-large run (bcai01/SAN run script 1604), the RankCSE+SAN "
                         "reference's second teacher"),
    "sncse": "SNCSE (Wang et al. 2022) §3, BML; reference Sense-GVT/SNCSE train_SNCSE.sh",
    "sncse_san": "SAN §3.3 Eq. 4 (HiNCE + lambda*BML), Table 6",
    "osscse": "OssCSE (surface-structure bias) §4 Eq. 3-5, Appendix A",
    "rankcse_san": "SAN §3.3 Eq. 5-6 (RankCSE+SAN), Table 6",
    "rlrd_san": ("SAN §3.3 Eq. 7 (RLRD+SAN), Table 6; weights lambda 1e-3, beta 2e-4, tau3 0.1 from SAN's RLRD "
                 "code (t_lmb x ListMLE terms); RLRD's RL teacher weighting not implemented"),
    "rankcse": "RankCSE (Liu et al. 2023): InfoNCE + JS consistency + ListMLE distillation; SAN Table 3 baseline",
    "hncse_pm": "HNCSE §3.1 Eq. 2-3, §4.2 + authors' run_unsup_example.sh (SimCSE setting)",
    "hncse_hnm": "HNCSE §3.2 Eq. 4, 7-8; K=10, s=40 from the authors' code",
    "hicl_simcse": "HiCL §3.1-3.2 Eq. 1-2, A.3 (batch 256, fp32), Table 13 (SimCSE-BERT-base: alpha 0.15, lr 5e-5)",
    "hicl_sncse": "HiCL §3.1-3.2 Eq. 1-2, A.3 (batch 256, fp32), Table 13 (SNCSE-BERT-base: alpha 0.01, lr 1e-5)",
    "syncse": "SynCSE Eq. 5-7; k, delta, tau, refresh not given by the paper (ours, docs/deviations.md)",
}
# Each method's paper (arXiv abstract or ACL Anthology page), linked from the report's tables;
# RLRD+SAN and the *_san variants are SAN's (its Table 6). SynCSE: no stable link confirmed.
PAPER_URLS: dict[str, str] = {
    "SimCSE": "https://arxiv.org/abs/2104.08821",
    "SNCSE": "https://arxiv.org/abs/2201.05979",
    "RankCSE": "https://arxiv.org/abs/2305.16726",
    "SAN": "https://aclanthology.org/2025.findings-naacl.461/",
    "OssCSE": "https://aclanthology.org/2023.emnlp-main.448/",
    "HNCSE": "https://arxiv.org/abs/2411.12156",
    "HiCL": "https://arxiv.org/abs/2310.09720",
}
METHOD_PAPER: dict[str, str | None] = {
    "simcse": "SimCSE", "simcse_mined": "SimCSE", "simcse_san": "SAN", "simcse_san_large": "SAN", "sncse": "SNCSE", "sncse_san": "SAN",
    "osscse": "OssCSE", "rankcse_san": "SAN", "rlrd_san": "SAN", "rankcse": "RankCSE",
    "hncse_pm": "HNCSE", "hncse_hnm": "HNCSE", "hicl_simcse": "HiCL", "hicl_sncse": "HiCL",
    "syncse": None,
}
METHODS = tuple(PRESETS)


def build_settings(
    method: str,
    init_model: str,
    seed: int,
    overrides: dict[str, Any] | None = None,
    method_overrides: dict[str, Any] | None = None,
) -> TrainSettings:
    """Preset for ``method`` <- global ``overrides`` <- per-method ``method_overrides``; a preset
    with its own backbone (``PRESET_INIT_MODELS``) trains that instead of ``init_model``."""
    if method not in PRESETS:
        raise ValueError(f"train method {method!r} is not a preset (known: {', '.join(METHODS)})")
    d = copy.deepcopy(PRESETS[method])
    d.update(copy.deepcopy(overrides or {}))
    d.update(copy.deepcopy(method_overrides or {}))
    d.update(method=method, init_model=PRESET_INIT_MODELS.get(method, init_model), seed=seed)
    return TrainSettings.from_dict(d)


def settings_from_config(train_cfg: dict[str, Any], method: str, seed: int,
                         extra: dict[str, Any] | None = None) -> TrainSettings:
    """Settings for one method x seed from the config's ``train`` section: the preset, then
    ``train.overrides`` (every method), then ``train.presets.<method>``, then ``extra``."""
    per_method = dict((train_cfg.get("presets") or {}).get(method) or {})
    per_method.update(extra or {})
    return build_settings(method, train_cfg["init_model"], int(seed),
                          overrides=train_cfg.get("overrides"), method_overrides=per_method)
