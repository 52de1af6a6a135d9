"""The model card (README.md) of an exported model, in the form the Hugging Face hub reads.

YAML front matter: ``library_name: sentence-transformers``, ``pipeline_tag``, ``tags``,
``base_model`` (when the start model is a hub id), ``datasets`` (when known), and a
``model-index`` with each STS Spearman (x100, cosine) the run has: the STS-B dev figure of the
selected checkpoint at export, the STS test figures once the evaluation ran (the workflow's
``model_card`` rule). The body: how the representation is computed, the settings that differ
from the method's preset, framework versions, and the method's papers as BibTeX.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from hardneg.encoders.templates import get_template

# SentEval's STS test sets -> the hub dataset of the same pairs (MTEB's STS12-16/STS-B test sets
# are SentEval's "all" sets, docs/evaluation.md; SentEval's SICK-R is SICK's test split)
HUB_STS_DATASETS: dict[str, tuple[str, str]] = {
    "STS12": ("mteb/sts12-sts", "test"), "STS13": ("mteb/sts13-sts", "test"),
    "STS14": ("mteb/sts14-sts", "test"), "STS15": ("mteb/sts15-sts", "test"),
    "STS16": ("mteb/sts16-sts", "test"), "STSBenchmark": ("mteb/stsbenchmark-sts", "test"),
    "SICKRelatedness": ("sick", "test"),
}
STSB_DEV = ("mteb/stsbenchmark-sts", "validation")
FRAMEWORKS = ("hardneg", "sentence-transformers", "transformers", "torch", "tokenizers")

# The papers behind each preset (hardneg.train.methods.papers); SimCSE is the base of all.
BIBTEX: dict[str, str] = {
    "SimCSE": """@inproceedings{gao2021simcse,
  title = {{SimCSE}: Simple Contrastive Learning of Sentence Embeddings},
  author = {Gao, Tianyu and Yao, Xingcheng and Chen, Danqi},
  booktitle = {Proceedings of the 2021 Conference on Empirical Methods in Natural Language Processing},
  year = {2021},
  url = {https://arxiv.org/abs/2104.08821}
}""",
    "SNCSE": """@misc{wang2022sncse,
  title = {{SNCSE}: Contrastive Learning for Unsupervised Sentence Embedding with Soft Negative Samples},
  author = {Wang, Hao and Li, Yangguang and Huang, Zhen and Dou, Yong and Kong, Lingpeng and Shao, Jing},
  year = {2022},
  eprint = {2201.05979},
  archivePrefix = {arXiv},
  url = {https://arxiv.org/abs/2201.05979}
}""",
    "RankCSE": """@inproceedings{liu2023rankcse,
  title = {{RankCSE}: Unsupervised Sentence Representations Learning via Learning to Rank},
  author = {Liu, Jiduan and Liu, Jiahao and Wang, Qifan and Wang, Jingang and Wu, Wei and Xian, Yunsen and Zhao, Dongyan and Chen, Kai and Yan, Rui},
  booktitle = {Proceedings of the 61st Annual Meeting of the Association for Computational Linguistics},
  year = {2023},
  url = {https://arxiv.org/abs/2305.16726}
}""",
    "SAN": """@inproceedings{wang2025san,
  title = {Unsupervised Sentence Representation Learning with Syntactically Aligned Negative Samples},
  author = {Wang, Zhilan and Zhi, Zekai and Jin, Rize and Song, Kehui and Wang, He and Cho, Da-Jung},
  booktitle = {Findings of the Association for Computational Linguistics: NAACL 2025},
  pages = {8247--8259},
  year = {2025},
  url = {https://aclanthology.org/2025.findings-naacl.461/}
}""",
    "OssCSE": """@inproceedings{shi2023osscse,
  title = {{OssCSE}: Overcoming Surface Structure Bias in Contrastive Learning for Unsupervised Sentence Embedding},
  author = {Shi, Zhan and Wang, Guoyin and Bai, Ke and Li, Jiwei and Li, Xiang and Cui, Qingjun and Zeng, Belinda and Chilimbi, Trishul and Zhu, Xiaodan},
  booktitle = {Proceedings of the 2023 Conference on Empirical Methods in Natural Language Processing},
  year = {2023},
  url = {https://aclanthology.org/2023.emnlp-main.448/}
}""",
    "HNCSE": """@misc{liu2024hncse,
  title = {{HNCSE}: Advancing Sentence Embeddings via Hybrid Contrastive Learning with Hard Negatives},
  author = {Liu, Wenxiao and Yang, Zihong and Li, Chaozhuo and Hong, Zijin and Ma, Jianfeng and Liu, Zhiquan and Zhang, Litian and Huang, Feiran},
  year = {2024},
  eprint = {2411.12156},
  archivePrefix = {arXiv},
  url = {https://arxiv.org/abs/2411.12156}
}""",
    "HiCL": """@inproceedings{wu2023hicl,
  title = {{HiCL}: Hierarchical Contrastive Learning of Unsupervised Sentence Embeddings},
  author = {Wu, Zhuofeng and Xiao, Chaowei and Vydiswaran, V. G. Vinod},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2023},
  year = {2023},
  url = {https://arxiv.org/abs/2310.09720}
}""",
}
# the papers a method builds on besides its own (SAN's SNCSE+SAN and RankCSE+SAN recipes)
def citations(method: str) -> list[str]:
    """BibTeX entries of ``method``'s paper(s), SimCSE first (every method extends it)."""
    from hardneg.train.methods import presets

    p = presets().get(method)
    names = ["SimCSE"]
    for name in ((p.paper.name if p.paper else None, *p.also) if p is not None else ()):
        if name and name not in names:
            names.append(name)
    return [BIBTEX[n] for n in names if n in BIBTEX]


def framework_versions() -> dict[str, str]:
    """Installed versions of the packages that wrote and read the folder."""
    out = {}
    for name in FRAMEWORKS:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def changed_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings that differ from the method's preset (the preset alone for a non-preset method);
    a method's own setting by its dotted name (``method_settings.hicl.alpha``)."""
    from hardneg.train.methods import load_modules, presets
    from hardneg.train.presets import build_settings
    from hardneg.train.settings import dotted_items

    method = settings.get("method")
    load_modules(settings.get("method_modules"))  # a researcher's own method's preset
    if method not in presets():
        return dict(settings)
    preset = dotted_items(build_settings(method, settings["init_model"], int(settings["seed"])).to_dict())
    run = dotted_items(dict(settings))
    keys = sorted(set(run) | {k for k in preset if k.startswith("method_settings.")})
    return {k: run.get(k) for k in keys if preset.get(k) != run.get(k)}


def _is_hub_id(name: str) -> bool:
    """An ``owner/name`` or bare hub id: not a path, not a ``package:`` model."""
    return bool(name) and ":" not in name and not name.startswith((".", "/", "~")) and name.count("/") <= 1


def _result(label: str, hub: tuple[str, str], value: float) -> dict[str, Any]:
    return {"task": {"type": "semantic-similarity", "name": "Semantic Similarity"},
            "dataset": {"name": label, "type": hub[0], "split": hub[1]},
            "metrics": [{"type": "spearman_cosine", "value": round(float(value), 2),
                         "name": "Spearman correlation of cosine similarities (x100)"}]}


def model_index(name: str, dev: float | None, sts: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The hub's ``model-index``: STS-B dev (selected checkpoint) and each STS test Spearman."""
    results = []
    if dev is not None:
        results.append(_result("STS Benchmark (dev)", STSB_DEV, dev))
    for label, hub in HUB_STS_DATASETS.items():
        value = (sts or {}).get(label, {}).get("spearman") if isinstance((sts or {}).get(label), Mapping) else None
        if value is not None:
            results.append(_result(label, hub, value))
    return [{"name": name, "results": results}] if results else []


def model_card(pooler: str, template: str | None, max_length: int, native: bool,
               summary: Mapping[str, Any] | None = None, sts: Mapping[str, Any] | None = None,
               datasets: list[str] | None = None) -> str:
    """README.md text: hub metadata + what the folder computes, for a run's ``summary`` (the
    trainer's summary.json: method, seed, settings, stsb_dev, best_step, data) and its STS
    test figures ``sts`` (evaluate's sts.json) when there are some."""
    summary = dict(summary or {})
    settings = dict(summary.get("settings") or {})
    method = str(summary.get("method") or settings.get("method") or "")
    seed = summary.get("seed", settings.get("seed"))
    name = f"hardneg-{method}-seed{seed}" if method else "hardneg-encoder"
    meta: dict[str, Any] = {"library_name": "sentence-transformers", "pipeline_tag": "sentence-similarity",
                            "tags": ["sentence-transformers", "sentence-similarity", "feature-extraction", "hardneg"]
                            + ([method] if method else [])}
    base = str(settings.get("init_model") or "")
    if _is_hub_id(base):
        meta["base_model"] = base
    if datasets:
        meta["datasets"] = list(datasets)
    index = model_index(name, summary.get("stsb_dev"), sts)
    if index:
        meta["model-index"] = index
    lines = ["---", yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).rstrip(), "---",
             f"# {name}", "",
             f"A sentence encoder trained with the hardneg pipeline: method `{method or 'unknown'}`"
             + (f", seed {seed}" if seed is not None else "") + (f", from `{base}`" if base else "") + ".", "",
             "## Usage", "", "```python", "from sentence_transformers import SentenceTransformer", "",
             ("model = SentenceTransformer(\"path/to/this/folder\")" if native else
              "# hardneg's module classes: sentence-transformers >= 6 imports them only when trusted\n"
              "model = SentenceTransformer(\"path/to/this/folder\", trust_remote_code=True)"),
             "embeddings = model.encode([\"A man is playing a guitar.\", \"Someone plays an instrument.\"])",
             "```", "", "## Representation", "",
             f"- pooler: `{pooler}`; max_seq_length: {max_length} tokens (template included)"]
    if template:
        lines.append(f"- prompt template `{template}`: `{get_template(template)}`; the vector is the last "
                     f"hidden state at the [MASK] position" if pooler == "mask" else
                     f"- prompt template `{template}`: `{get_template(template)}`")
    if native:
        lines.append("- sentence-transformers' own modules (Transformer, Pooling"
                     + (", Dense" if pooler == "cls" else "") + "): loads without hardneg installed.")
    else:
        lines.append("- hardneg's sentence-transformers modules (`hardneg.encoders.st_modules.PromptTransformer`, "
                     "`HardnegPooling`): `SentenceTransformer(folder, trust_remote_code=True)` imports them from an "
                     "installed hardneg (`pip install hardneg`).")
    lines.append("- SimCSE's training-only MLP is not part of this model.")
    lines += _scores(summary, sts)
    changed = changed_settings(settings) if settings else {}
    if changed:
        lines += ["", "## Settings that differ from the preset", "", "```json",
                  json.dumps(changed, indent=2, sort_keys=True, default=str), "```"]
    if summary.get("data"):
        lines += ["", "## Training data", "", "```json", json.dumps(summary["data"], indent=2, sort_keys=True), "```"]
    versions = framework_versions()
    lines += ["", "## Framework versions", ""] + [f"- {k}: {v}" for k, v in versions.items()]
    cites = citations(method) if method else [BIBTEX["SimCSE"]]
    lines += ["", "## Citation", "", "```bibtex", "\n\n".join(cites), "```"]
    return "\n".join(lines) + "\n"


def _scores(summary: Mapping[str, Any], sts: Mapping[str, Any] | None) -> list[str]:
    rows = []
    if summary.get("stsb_dev") is not None:
        rows.append(f"| STS-B dev (selected step {summary.get('best_step')}) | {summary['stsb_dev']:.2f} |")
    for label in HUB_STS_DATASETS:
        entry = (sts or {}).get(label)
        if isinstance(entry, Mapping) and entry.get("spearman") is not None:
            rows.append(f"| {label} test | {float(entry['spearman']):.2f} |")
    if not rows:
        return []
    return ["", "## Scores (Spearman x100, cosine; SentEval 'all' setting)", "", "| set | value |", "|---|---|", *rows]


def hub_datasets(base_url: str) -> list[str]:
    """The hub dataset a corpus URL (or its mirror's path) names: ``.../datasets/<owner>/<name>/resolve/...``."""
    import re

    m = re.search(r"datasets/([^/]+/[^/]+)/resolve/", base_url or "")
    return [m.group(1)] if m else []


def write_card(model_dir: str | Path, summary_path: str | Path, out: str | Path,
               sts_path: str | Path | None = None, datasets: list[str] | None = None) -> Path:
    """Write the card of an exported folder with its run's summary.json and evaluate's sts.json
    (the workflow's ``model_card`` rule; ``hardneg push --card`` uploads it as README.md)."""
    from hardneg.encoders.st_folder import folder_pooler, read_folder
    from hardneg.shards.io import atomic_path

    spec = read_folder(model_dir)
    pooler = folder_pooler(spec) or "avg"
    modules = json.loads((Path(model_dir) / "modules.json").read_text(encoding="utf-8"))
    native = all(str(m.get("type", "")).startswith("sentence_transformers.") for m in modules)
    summary = json.loads(Path(summary_path).read_text(encoding="utf-8"))
    sts = json.loads(Path(sts_path).read_text(encoding="utf-8")) if sts_path else None
    text = model_card(pooler, spec.template, int(spec.max_seq_length or 0), native, summary, sts, datasets)
    with atomic_path(out) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(out)
