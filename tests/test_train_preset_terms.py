"""Training side of the presets: per-view templates, the terms of each preset (SAN Eq. 4-7), RankCSE's
JS consistency and ListNet, teachers and their bad input, failed-augmentation rows, the OssCSE
recall form, the report's method table. Tiny tensors and fakes; values computed by hand."""

from __future__ import annotations

import json
import math
import shutil

import polars as pl
import pytest
import torch
from torch import nn

from hardneg.shards import write_shard
from hardneg.train import distributed as D
from hardneg.train import methods as registry
from hardneg.train.data import load_training_data
from hardneg.train.methods.objective import Objective
from hardneg.train.objectives import RankingConsistency, js_divergence, listnet
from hardneg.train.objectives.osscse import RecallLoss
from hardneg.train.objectives.rankcse import reference_clamped_js
from hardneg.train.presets import build_settings
from hardneg.train.settings import TrainSettings
from hardneg.train.step_model import StepModel
from hardneg.train.teachers import TeacherError, load_teachers, resolve_specs

EPS32 = torch.finfo(torch.float32).eps


def tol(magnitude: float, ops: int) -> float:
    """float32 eps x magnitude x number of operations (the project's tolerance rule)."""
    return EPS32 * magnitude * ops


def preset(method: str, **kw) -> TrainSettings:
    return build_settings(method, "bert-base-uncased", 1, overrides=kw)


# ----- 1. which template each view gets ---------------------------------------------------------
class _FakePrompt:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None]] = []

    def ids(self, sentences, template=None):
        self.calls.extend((s, template) for s in sentences)
        return [[1, 2]] * len(sentences)

    def pad(self, rows):
        return {"input_ids": torch.ones(len(rows), 2, dtype=torch.long),
                "attention_mask": torch.ones(len(rows), 2, dtype=torch.long)}


class _FakeEncoder:
    """Records the template of every sentence the step model encodes."""

    device = torch.device("cpu")
    pooler = "avg"

    def __init__(self) -> None:
        self.prompt = _FakePrompt()

    def modules(self):
        return []

    def embed(self, batch, use_mlp=True):
        return torch.zeros(batch["input_ids"].shape[0], 3)

    def tokenize(self, sentences, template=None):
        return self.prompt.pad(self.prompt.ids(sentences, template))


def _templates_seen(s: TrainSettings) -> dict[str, str | None]:
    enc = _FakeEncoder()
    enc.pooler = s.pooler
    extra = {c: [f"{c}."] for c in ("negation", "paraphrase", "san")}  # end punctuation: no " ." added
    # the step model as the trainer builds it: forward tokenizes (its CPU half) then encodes
    StepModel.forward(type("M", (), {"encoder": enc, "s": s, "t1": s.view_template("anchor"),
                                     "t2": s.view_template("positive"), "tokenize": StepModel.tokenize,
                                     "prompt": None, "static_width": False})(), ["x."], extra)
    seen = {text.rstrip("."): t for text, t in enc.prompt.calls[2:]}  # after anchor and positive
    seen["anchor"], seen["positive"] = enc.prompt.calls[0][1], enc.prompt.calls[1][1]
    return seen


def test_views_use_the_positives_template_as_sncse_and_san_references():
    # train_SNCSE.py and SAN's SNCSE+SAN script: negation and SAN negative in "This sentence of ..."
    seen = _templates_seen(preset("sncse_san"))
    assert seen == {"anchor": "sncse1", "positive": "sncse2", "negation": "sncse2", "paraphrase": "sncse2",
                    "san": "sncse2"}
    seen = _templates_seen(preset("sncse_san", view_templates={"san": "anchor", "negation": "anchor"}))
    assert (seen["san"], seen["negation"], seen["paraphrase"]) == ("sncse1", "sncse1", "sncse2")
    assert _templates_seen(preset("simcse_san"))["san"] is None  # no prompts: no template


def test_prompt_presets_train_an_mlp_over_mask_and_evaluate_without_it():
    # SNCSE train_SNCSE.sh, PromptBERT run.sh and OssCSE Appendix A (SimCSE's settings): --mlp_only_train
    for m in ("sncse", "sncse_san", "rlrd_san", "osscse", "hicl_sncse"):
        s = preset(m)
        assert (s.pooler, s.mlp_only_train, s.export_pooler) == ("mask", True, "mask")


def test_view_templates_and_templates_bad_input_names_the_setting():
    with pytest.raises(ValueError, match="train setting 'view_templates'.*unknown view 'anchor2'"):
        preset("sncse", view_templates={"anchor2": "positive"})
    with pytest.raises(ValueError, match="train setting 'view_templates'.*must be one of anchor, positive"):
        preset("sncse", view_templates={"san": "negative"})
    with pytest.raises(ValueError, match=r"train setting 'templates'.*\[MASK\] slot"):
        preset("sncse", templates=['This sentence : "{sentence}" means .', "sncse2"])


# ----- 2. which terms each preset has -----------------------------------------------------------
TERMS = {
    "simcse": {"infonce"},
    "simcse_san": {"hince"},
    "simcse_mined": {"infonce_hard_negative"},
    "sncse": {"infonce", "bml"},
    "sncse_san": {"hince", "bml"},
    "osscse": {"infonce", "margin", "recall"},
    "rankcse": {"infonce", "consistency", "distill_listmle"},
    "rankcse_san": {"hince", "consistency", "distill_listmle", "listmle_san"},
    "rlrd_san": {"hince", "bml", "distill_listmle", "listmle_san"},
}


class _Backbone(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Linear(2, 2)


@pytest.mark.parametrize("method", sorted(TERMS))
def test_each_preset_has_exactly_its_papers_terms(method):
    assert set(TERMS) <= set(registry.preset_names()) and registry.preset(method).source
    s = preset(method)
    g = torch.Generator().manual_seed(0)
    emb = {k: torch.randn(4, 3, generator=g) for k in ("anchor", "positive", "san", "negation", "paraphrase", "mined")}
    sims = {"distill": torch.randn(4, 4, generator=g), "san": torch.randn(4, 4, generator=g)}
    _, parts = Objective(s, _Backbone())(emb, D.DistInfo(), sims)
    assert set(parts) - {"loss"} == TERMS[method]
    ranking = s.own("ranking")
    weights = {"infonce": 1, "hince": 1, "infonce_hard_negative": 1, "bml": s.own("bml").weight,
               "margin": s.own("margin").weight, "recall": 1, "consistency": ranking.consistency_weight,
               "distill_listmle": ranking.distill_weight, "listmle_san": s.own("listmle_san").weight}
    total = sum(weights[k] * v for k, v in parts.items() if k != "loss")
    assert abs(parts["loss"] - total) <= tol(abs(total) + 1, 16)


def test_san_table6_and_eq6_eq7_hyperparameters():
    r = preset("rankcse_san")
    assert (r.tau2, r.san_dropout, r.own("listmle_san").weight, r.post_process) == (0.05, 0.2, 0.4, True)
    assert [(t["model"], t["weight"]) for t in r.teachers] == [
        ("voidism/diffcse-bert-base-uncased-sts", 0.33), ("princeton-nlp/unsup-simcse-bert-large-uncased", 0.67)]
    d = preset("rlrd_san")
    assert (d.tau2, d.san_dropout, d.post_process, d.own("bml").weight) == (0.1, 0.2, True, 1e-3)
    # SAN's RLRD code: loss_o + t_lmb (1e-3) x (ListMLE + 0.2 x ListMLE+SAN at scd_temp 0.1)
    listmle = d.own("listmle_san")
    assert (d.own("ranking").distill_weight, listmle.weight, listmle.tau) == (1e-3, 2e-4, 0.1)
    assert d.own("ranking").consistency_weight == 0  # Eq. 7 has no consistency term
    assert preset("rankcse").negatives == "none" and not preset("rankcse").uses("listmle_san")


# ----- RankCSE terms by hand --------------------------------------------------------------------
def test_js_divergence_by_hand():
    # p = softmax([0, ln 3]) = [1/4, 3/4], q = [3/4, 1/4], m = [1/2, 1/2]
    lp = torch.tensor([[0.0, math.log(3.0)]])
    lq = torch.tensor([[math.log(3.0), 0.0]])
    want = 0.25 * math.log(0.5) + 0.75 * math.log(1.5)  # KL(p||m) = KL(q||m)
    assert abs(float(js_divergence(lp, lq)) - want) <= tol(1.0, 20)
    assert abs(float(js_divergence(lp, lp))) <= tol(1.0, 20)
    # the community code's clamped form: -(H(p) + H(q))/2 - 1e-7
    h = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert abs(float(reference_clamped_js(lp, lq)) - (-h - 1e-7)) <= tol(1.0, 20)


def test_consistency_is_zero_for_symmetric_similarities_and_positive_otherwise():
    a = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    assert float(RankingConsistency(0.05)(a, a)) == 0.0
    p = torch.tensor([[1.0, 1.0], [0.0, 1.0]])
    assert float(RankingConsistency(0.05)(a, p)) > 0


def test_listnet_by_hand():
    # row 0: student off-diagonal [0, ln 2] -> p = [1/3, 2/3]; teacher [ln 3, 0] -> q = [3/4, 1/4]
    s = torch.tensor([[9.0, 0.0, math.log(2.0)], [0.0, 9.0, 0.0], [0.0, 0.0, 9.0]])
    t = torch.tensor([[-9.0, math.log(3.0), 0.0], [0.0, -9.0, 0.0], [0.0, 0.0, -9.0]])
    rows = [-(0.75 * math.log(1 / 3) + 0.25 * math.log(2 / 3)), -math.log(0.5), -math.log(0.5)]
    assert abs(float(listnet(s, t)) - sum(rows) / 3) <= tol(1.0, 30)


def test_rlrd_san_eq7_total_by_hand():
    """SAN Eq. 7 on 2 orthonormal sentences: mu*BML + lambda*ListMLE + HiNCE + beta*ListMLE+SAN."""
    e1, e2 = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    emb = {"anchor": torch.stack([e1, e2]), "positive": torch.stack([e1, e2]),
           "san": torch.stack([e2, e1]), "negation": torch.stack([e1, e1])}
    s = preset("rlrd_san")
    sims = {"distill": torch.tensor([[0.0, 1.0], [1.0, 0.0]]), "san": torch.tensor([[1.0, 0.0], [0.0, 1.0]])}
    _, parts = Objective(s, _Backbone())(emb, D.DistInfo(), sims)
    # BML: d = cos(a,n) - cos(a,p) = [0, -1]; relu(d+.1) + relu(-d-.3) = [.1, .7]
    bml = (0.1 + 0.7) / 2
    # HiNCE row i: [cos(a,p)/0.05 | cos(a,san)/0.1] = [20, 0 | 0, 10] with target 20
    hince = math.log(math.exp(20) + 1 + 1 + math.exp(10)) - 20
    # ListMLE, teacher order puts the 0-score first: log(e^0 + e^20) - 0 + (20 - 20), both rows;
    # ListMLE+SAN scores at tau3 0.1: log(e^0 + e^10)
    lml = math.log1p(math.exp(20))
    want = {"bml": bml, "hince": hince, "distill_listmle": lml, "listmle_san": math.log1p(math.exp(10))}
    for k, v in want.items():
        assert abs(parts[k] - v) <= tol(abs(v) + 1, 30), (k, parts[k], v)
    total = 1e-3 * bml + 1e-3 * lml + hince + 2e-4 * want["listmle_san"]
    assert abs(parts["loss"] - total) <= tol(total + 1, 60)


# ----- 6. OssCSE recall forms -------------------------------------------------------------------
def test_recall_coupled_is_a_loss_term_and_decoupled_a_step():
    p = nn.Parameter(torch.tensor([1.0, -2.0]))
    r = RecallLoss([("w", p)], gamma=2.0)
    with torch.no_grad():
        p.copy_(torch.tensor([1.5, -2.0]))
    assert float(r([p]).detach()) == pytest.approx(0.5 * 2.0 * 0.25)  # gamma/2 * sum (theta - theta*)^2
    r.decoupled_step([p], lr=0.1)  # theta - lr*gamma*(theta - theta*) = 1.5 - 0.1
    assert p.tolist() == pytest.approx([1.4, -2.0])
    s = preset("osscse", method_settings={"recall": {"form": "decoupled"}})
    emb = {k: torch.randn(4, 3) for k in ("anchor", "positive", "negation", "paraphrase")}
    _, parts = Objective(s, _Backbone())(emb, D.DistInfo())
    assert "recall" not in parts and preset("osscse").own("recall").form == "coupled"


# ----- teachers: refusal and bad input ----------------------------------------------------------
def test_untrained_teacher_is_refused_unless_asked_for(tiny_mlm_dir):
    with pytest.raises(ValueError, match="train setting 'teachers'.*allow_untrained_teacher: true"):
        preset("rankcse_san", teachers=None)
    s = build_settings("rankcse_san", str(tiny_mlm_dir), 1, overrides={"teachers": [{"model": str(tiny_mlm_dir)}]})
    with pytest.raises(TeacherError, match=r"'teachers\[0\]'.*untrained initial model"):
        resolve_specs(s)
    s = build_settings("rankcse_san", str(tiny_mlm_dir), 1, overrides={"teachers": None,
                                                                       "allow_untrained_teacher": True})
    assert [t.model for t in resolve_specs(s)] == [s.init_model]


def test_teacher_bad_input_names_the_setting(tiny_mlm_dir, tmp_path):
    from hardneg.train.model import ContrastiveEncoder

    student = ContrastiveEncoder.from_pretrained(str(tiny_mlm_dir), "avg", 32, False)

    def specs(model, **t):
        return resolve_specs(build_settings("rankcse_san", "bert-base-uncased", 1,
                                            overrides={"teachers": [{"model": str(model), **t}]}))

    with pytest.raises(TeacherError, match=r"teachers\[0\].*does not exist"):
        specs(tmp_path / "absent" / "model")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TeacherError, match=r"teachers\[0\].*cannot load teacher model"):
        load_teachers(specs(tmp_path / "empty"), student, 32, torch.device("cpu"))
    other = tmp_path / "other-vocab"
    shutil.copytree(tiny_mlm_dir, other)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(other)
    tok.add_tokens(["zzqxhardneg"])
    tok.save_pretrained(other)
    # a tokenizer larger than the embedding table is refused by the loader itself
    with pytest.raises(TeacherError, match=r"teachers\[0\].*30523 tokens but the model's embedding table only 30522"):
        load_teachers(specs(other), student, 32, torch.device("cpu"))
    from transformers import AutoModel

    model = AutoModel.from_pretrained(other)
    model.resize_token_embeddings(len(tok))  # a whole model, with another vocabulary than the student's
    model.save_pretrained(other)
    with pytest.raises(TeacherError, match=r"teachers\[0\].*different tokenizer"):
        load_teachers(specs(other), student, 32, torch.device("cpu"))
    with pytest.raises(ValueError, match=r"train setting 'teachers'.*'model'.*'method'"):
        preset("rankcse_san", teachers=[{"weight": 1.0}])
    with pytest.raises(ValueError, match=r"train setting 'teachers'.*teachers\[0\]: template"):
        preset("rankcse_san", teachers=[{"model": "x", "pooler": "mask", "template": "{sentence} means ."}])


def test_teacher_pooler_comes_from_its_export(tmp_path, tiny_mlm_dir):
    exp = tmp_path / "exported"
    shutil.copytree(tiny_mlm_dir, exp)
    (exp / "1_Pooling").mkdir()
    (exp / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    (exp / "modules.json").write_text(json.dumps([  # the legacy sentence-transformers layout
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    s = build_settings("rankcse_san", "bert-base-uncased", 1, overrides={"teachers": [{"model": str(exp)}]})
    assert resolve_specs(s)[0].pooler == "avg"
    (exp / "hardneg_pooling.json").write_text(json.dumps({"pooler": "mask", "template": "sncse1"}))
    spec = resolve_specs(s)[0]
    assert (spec.pooler, spec.template) == ("mask", "sncse1")  # student without prompts: the export's
    s = build_settings("rlrd_san", "bert-base-uncased", 1, overrides={"teachers": [{"model": str(exp)}]})
    assert resolve_specs(s)[0].template is None  # prompt student: the student's template per view


# ----- 5. rows whose augmentation failed; negation rules ----------------------------------------
@pytest.fixture()
def failed_shards(tmp_path):
    texts = ["a b c", "d e f", "g h i", "j k l", "m n o"]
    corpus = pl.DataFrame({"id": pl.Series([0, 1, 2, 3, 4], dtype=pl.Int64), "text": texts})
    c = write_shard(corpus, tmp_path / "corpus.parquet")
    # id 1: SAN quality-dropped (its final iteration kept in iter2); id 2: rejected before masking
    san = corpus.with_columns(san=pl.Series(["c b a", None, None, "l k j", "o n m"], dtype=pl.String),
                              iter1=pl.Series(["x", "y", None, "z", "w"], dtype=pl.String),
                              iter2=pl.Series(["c b a", "d e f", None, "l k j", "o n m"], dtype=pl.String))
    neg = corpus.with_columns(negation=pl.Series(["a not b c", "d not e f", "g not h i", None, "m not n o"],
                                                 dtype=pl.String))
    return {"corpus": [str(c)], "san": [str(write_shard(san, tmp_path / "san.parquet"))],
            "negation": [str(write_shard(neg, tmp_path / "neg.parquet"))]}


def test_failed_rows_keep_as_the_references_or_drop(failed_shards):
    aug = {k: failed_shards[k] for k in ("san", "negation")}
    keep = load_training_data(failed_shards["corpus"], aug, ["san", "negation"], failed="keep")
    f = {r["id"]: r for r in keep.frame.iter_rows(named=True)}
    assert f[1]["san"] == "d e f" and f[3]["negation"] == "Not j k l" and 2 not in f
    c = keep.counts
    assert (c["failed_san"], c["failed_negation"], c["kept_failed_san"], c["kept_failed_negation"]) == (2, 1, 1, 1)
    assert (c["rows_used"], c["dropped_no_san"], c["rows_if_failed_dropped"]) == (4, 1, 2)
    drop = load_training_data(failed_shards["corpus"], aug, ["san", "negation"], failed="drop")
    assert drop.frame["id"].to_list() == [0, 4] and drop.counts["rows_used"] == c["rows_if_failed_dropped"]
    assert drop.counts["dropped_no_san"] + drop.counts["dropped_no_negation"] == 3
    # post-processing (SAN Eq. 6) replaces every failed SAN negative by the negation first
    pp = load_training_data(failed_shards["corpus"], aug, ["san", "negation"], post_process=True, failed="keep")
    assert pp.counts["san_replaced_by_negation"] == 2 and pp.counts["rows_used"] == 5
    assert all(preset(m).failed_augmentation == "keep" for m in TERMS)


def test_negation_shard_made_with_other_rules_is_refused(failed_shards):
    from pathlib import Path

    manifest = Path(failed_shards["negation"][0]).with_suffix(".json")
    manifest.write_text(json.dumps({"rules": "root", "rows": 5}))
    aug = {"negation": failed_shards["negation"]}
    with pytest.raises(ValueError, match=r"rules 'root'.*train setting 'negation_rules' expects 'sncse'"):
        load_training_data(failed_shards["corpus"], aug, ["negation"], negation_rules="sncse")
    assert load_training_data(failed_shards["corpus"], aug, ["negation"], negation_rules="root").counts["rows_in"] == 5


# ----- report: method table ---------------------------------------------------------------------
def test_method_table_lists_source_and_non_default_settings(tmp_path):
    from hardneg.report.methods import method_table

    paths = []
    for method, seed, extra in (("sncse", 1, {"lr": 2e-5}), ("sncse", 2, {"lr": 2e-5}), ("simcse", 1, {}),
                                ("hicl_simcse", 1, {"method_settings": {"hicl": {"segment_length": 8}}})):
        s = build_settings(method, "bert-base-uncased", seed, overrides={"show_progress": False, **extra})
        p = tmp_path / method / f"seed{seed}" / "summary.json"
        p.parent.mkdir(parents=True)
        p.write_text(json.dumps({"method": method, "seed": seed, "settings": s.to_dict()}))
        paths.append(p)
    t = {r["method"]: r for r in method_table(paths).iter_rows(named=True)}
    assert t["sncse"]["non-default settings"] == "lr: 1e-05 -> 2e-05" and t["sncse"]["seeds"] == "1, 2"
    assert t["simcse"]["non-default settings"] == "none"
    # a method's own setting by its dotted name, only the one that changed
    assert t["hicl_simcse"]["non-default settings"] == "method_settings.hicl.segment_length: 32 -> 8"
    assert t["sncse"]["paper source"] == registry.preset("sncse").source
