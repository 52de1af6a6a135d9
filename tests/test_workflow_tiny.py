"""The tiny experiment end to end, once locally (the session's ``tiny_local`` fixture, shared with
the identity and cache tests and bounded by its own limit), then:
- `snakemake --report` renders in headless Chromium with the STS table and the plots visible;
- the same workflow through `--profile profiles/slurm` on a real one-node Slurm cluster
  (tools/slurm/start.sh) gives byte-identical Parquet/JSON outputs; daemons always stopped;
- a request the cluster lacks is named by `hardneg slurm-check` and, at submission, by the
  workflow's own error hint (which rule, how to resume)."""

from __future__ import annotations

import base64
import os
import random
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from tinyrun import BIN, REPO, SNAKEMAKE, TINY, TINY_RUN_LIMIT_S, TINY_THREADS, output_digests, run

from hardneg.cluster.workdir import link_workflow

# the Slurm run: every rule, fewer training methods (experiments/tiny-slurm.yaml says which)
TINY_SLURM = [*TINY, "experiments/tiny-slurm.yaml"]
CHROMIUM = "/usr/bin/chromium"

pytestmark = pytest.mark.integration


# --- the HTML report -----------------------------------------------------------------------

def _chromium(args: list[str], tmp: Path, limit: int = 120) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
           f"--user-data-dir={tmp / 'chromium-profile'}", *args]
    return subprocess.run(["timeout", "-k", "5", str(limit), *cmd], capture_output=True, text=True, check=False)


def _ink(png: Path, box: tuple[int, int, int, int] | None = None) -> float:
    """Share of clearly non-white pixels (in ``box``): blank pages score ~0."""
    from PIL import Image

    img = Image.open(png).convert("L")
    if box:
        img = img.crop(box)
    hist = img.histogram()
    return sum(hist[:200]) / (img.width * img.height)


def _show(report: Path, out: Path, suffix: str, kind: str, category: str) -> Path:
    """A copy of the report that opens one of its own results in its viewer (as a click would)."""
    script = (
        "<script>setTimeout(function(){var k=Object.keys(results).find(function(p){return p.endsWith("
        f"'{suffix}')}});app.showCategory('{category}');app.setView({{content:'{kind}',"
        "contentPath:results[k].data_uri,resultPath:k});},200);</script>"
    )
    return _inject(report.read_text(encoding="utf-8"), script, out)


def _inject(html: str, script: str, out: Path) -> Path:
    # The last </body>: the report's embedded JS holds the string "</body>" too.
    i = html.rindex("</body>")
    out.write_text(html[:i] + script + html[i:], encoding="utf-8")
    return out


# Idle: `snakemake --report` and seven headless Chromium pages, about a minute on 2 idle cores
# (not timed alone); the tiny run it reads is the fixture's, not charged here.
@pytest.mark.timeout(600, func_only=True)
def test_report_renders_tables_and_plots_in_chromium(tiny_local, tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian chromium is needed (tools/install.sh installs it)")
    run([SNAKEMAKE, *TINY, "--report", "report.html"], tiny_local, limit=300)
    report = tiny_local / "report.html"
    html = report.read_text(encoding="utf-8")
    for category in ("1. STS", "2. Cont./Oppn.", "3. Training", "4. Augmentation", "5. Benchmarks"):
        assert category in html, category
    # The embedded STS table (a data URI inside the report) holds every method's row.
    sts_html = None
    for b64 in re.findall(r"data:text/html[^,]*;base64,([A-Za-z0-9+/=]+)", html):
        text = base64.b64decode(b64).decode("utf-8", "replace")
        if 'id="sts-summary"' in text:
            sts_html = text
    assert sts_html, "sts.html is not embedded in the report"
    for method in ("baseline", "simcse", "simcse_san"):
        assert f">{method}<" in sts_html, method
    assert "±" in sts_html

    # The report app itself renders (JS executed: the DOM has the navigation with our categories).
    dom = _chromium(["--virtual-time-budget=5000", "--dump-dom", report.as_uri()], tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "1. STS" in dom.stdout and "5. Benchmarks" in dom.stdout, dom.stdout[:2000]

    # Screenshots: the report's viewer showing our table and plots; each must carry ink in the
    # content area (right of the navbar), unlike the same viewer with nothing loaded.
    views = {
        "sts_table": ("/sts.html", "html", "1. STS"),
        "sts_plot": ("/sts.png", "img", "1. STS"),
        "cont_oppn": ("/cont_oppn.png", "img", "2. Cont./Oppn."),
        "curves": ("/curves.png", "img", "3. Training"),
        "benchmarks": ("/benchmarks.png", "img", "5. Benchmarks"),
    }
    ink = {}
    for name, (suffix, kind, cat) in views.items():
        page = _show(report, tmp_path / f"{name}.html", suffix, kind, cat)
        shot = tmp_path / f"{name}.png"
        res = _chromium(["--virtual-time-budget=5000", "--window-size=1400,900",
                         f"--screenshot={shot}", page.as_uri()], tmp_path)
        assert res.returncode == 0 and shot.exists(), res.stderr[-2000:]
        ink[name] = _ink(shot, (450, 80, 1400, 900))
    blank = tmp_path / "blank.png"
    empty = tmp_path / "empty.html"
    _inject(html, "<script>setTimeout(function(){app.setView({content:'text',contentText:' '});},200);"
            "</script>", empty)
    _chromium(["--virtual-time-budget=5000", "--window-size=1400,900", f"--screenshot={blank}",
               empty.as_uri()], tmp_path)
    base = _ink(blank, (450, 80, 1400, 900))
    for name, value in ink.items():
        assert value > base + 0.01, f"{name}: screenshot content looks blank ({value:.4f} vs {base:.4f})"


# --- Slurm --------------------------------------------------------------------------------

def _free_port_pair() -> int:
    for _ in range(50):
        port = random.randint(20000, 40000)
        free = True
        for p in (port, port + 1):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    free = False
        if free:
            return port
    raise RuntimeError("no free port pair for slurmctld/slurmd")


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    """A real Slurm cluster (munged, slurmctld, slurmd) on 127.0.0.1; always stopped."""
    if os.geteuid() != 0 or shutil.which("slurmctld") is None:
        pytest.fail("the slurm tests need root and Debian slurm-wlm + munge (tools/install.sh)")
    state = tmp_path_factory.mktemp("slurm")
    env = dict(os.environ, HARDNEG_SLURM_DIR=str(state), HARDNEG_SLURM_PORT=str(_free_port_pair()),
               HARDNEG_SLURM_MAXTIME="30", PATH=f"{BIN}:{os.environ['PATH']}")
    start = subprocess.run(["timeout", "-k", "5", "90", "bash", str(REPO / "tools/slurm/start.sh")],
                           env=env, capture_output=True, text=True, check=False)
    try:
        assert start.returncode == 0, start.stderr
        assert start.stdout.strip() == f"export SLURM_CONF={state}/etc/slurm.conf"
        env["SLURM_CONF"] = f"{state}/etc/slurm.conf"
        again = subprocess.run(["bash", str(REPO / "tools/slurm/start.sh")], env=env,
                               capture_output=True, text=True, timeout=60, check=False)
        assert again.returncode == 0 and again.stdout == start.stdout  # idempotent
        yield env
    finally:
        subprocess.run(["bash", str(REPO / "tools/slurm/stop.sh"), "--purge"], env=env, timeout=60, check=False)
        for name in ("slurmctld.pid", "slurmd.pid", "munged.pid"):
            assert not (state / "run" / name).exists()


def slurm_test_args(workdir: Path, env: dict, mem_mb: int = 800, runtime: int = 20) -> list[str]:
    """Every rule's requests scaled down to the one-node test cluster (2 CPUs), and `train`
    asking for a GPU (the node advertises placeholder GPUs) so the --gpus path runs too; one
    thread per job, as in the local run it is compared with (tinyrun.TINY_SCHEDULING)."""
    names = sorted({r for smk in (workdir / "rules").glob("*.smk")
                    for r in re.findall(r"^rule (\w+):", smk.read_text(), flags=re.MULTILINE)})
    sets = [f"{r}:{k}={v}" for r in names
            for k, v in (("mem_mb", mem_mb), ("runtime", runtime), ("cpus_per_task", 1))]
    if "train" in names:
        sets.append("train:gpu=1")
    return [*TINY_THREADS, "--slurm-init-seconds-before-status-checks", "2", "--slurm-no-account",
            "--default-resources", "slurm_partition=debug", f"mem_mb={mem_mb}", f"runtime={runtime}",
            "cpus_per_task=1", "--set-resources", *sets]


# Idle: one Slurm run of every rule with one trained method and its teacher (25 jobs; the 32-job
# run with three methods took 12 min), plus a dry run and one refused submission; the local
# run it compares with is the fixture's, not charged here.
@pytest.mark.slurm
@pytest.mark.timeout(TINY_RUN_LIMIT_S + 600, func_only=True)
def test_tiny_workflow_on_slurm_equals_local(tiny_local, slurm_cluster, tmp_path):
    remote = link_workflow(REPO, tmp_path / "main")
    # Unscaled, the paper-scale requests do not fit this 2-CPU node: the pre-flight check says so.
    check = run([str(BIN / "hardneg"), "slurm-check", "--snakemake", " ".join(TINY)], remote,
                slurm_cluster, limit=180, ok=False)
    assert check.returncode == 1, check.stdout + check.stderr
    assert re.search(r"rule \w+: cpus_per_task=\d+ but partition 'debug' offers at most 2", check.stdout)

    proc = run([SNAKEMAKE, *TINY_SLURM, "--profile", "profiles/slurm", *slurm_test_args(remote, slurm_cluster)],
               remote, slurm_cluster, limit=TINY_RUN_LIMIT_S)
    log = proc.stdout + proc.stderr
    submitted = set(re.findall(r"rule_(\w+)/", log))
    assert "has been submitted with SLURM jobid" in log and "train" in submitted, log[-3000:]
    assert "download" not in submitted  # localrules stay on the submit host

    a, b = output_digests(tiny_local), output_digests(remote)
    a = {k: v for k, v in a.items() if not k.startswith("results/report/")}  # timings inside
    b = {k: v for k, v in b.items() if not k.startswith("results/report/")}
    # The Slurm run trains a subset of the methods: everything it made, the local run made too,
    # and every augmentation shard, teacher and student it shares with the local run is the same.
    assert set(b) <= set(a), sorted(set(b) - set(a))
    assert any(p.startswith("results/train/tiny/simcse/") for p in b)  # the teacher, via the DAG
    assert any(p.startswith("results/train/tiny/rankcse_san/") for p in b)  # its student
    assert any(p.startswith("results/augment/") for p in b)
    deterministic = [p for p in b if p.endswith((".parquet", ".json", ".jsonl"))]
    assert len(deterministic) > 10
    # Parquet byte for byte; JSON byte for byte once wall-clock fields (seconds, sent/s) go.
    differ = [p for p in deterministic if a[p] != b[p]]
    assert not differ, f"outputs differ between local and Slurm runs: {differ}"

    # A resource the cluster lacks, at submission: sbatch refuses; the workflow names the rule
    # and says how to resume.
    bad = run([SNAKEMAKE, *TINY_SLURM, "--profile", "profiles/slurm", *slurm_test_args(remote, slurm_cluster),
               "prepare_corpus:mem_mb=99999999", "--forcerun", "prepare_corpus", "--until",
               "prepare_corpus"], remote, slurm_cluster, limit=300, ok=False)
    text = bad.stdout + bad.stderr
    assert bad.returncode != 0
    assert "hardneg: what failed and how to resume" in text, text[-3000:]
    assert re.search(r"rule prepare_corpus was rejected by sbatch", text), text[-3000:]
    assert "Resume: re-run the same snakemake command" in text
