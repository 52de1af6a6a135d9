#!/usr/bin/env bash
# One-command install: Debian packages the later stages need, a .venv with every Python
# dependency, torch pinned by a constraints file (CPU wheel by default; TORCH=cuda for GPUs).
#   tools/install.sh                 # CPU machine (torch==2.13.0+cpu from the local wheel folder)
#   TORCH=cuda tools/install.sh      # GPU machine (CUDA build of torch)
#   NO_APT=1 tools/install.sh        # skip Debian packages (no root)
set -euo pipefail
cd "$(dirname "$0")/.."

TORCH="${TORCH:-cpu}"
PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"
# The machine's local wheel folder that carries torch 2.13.0+cpu (pip.conf names it as find-links;
# uv ignores pip.conf, so it is passed explicitly).
WHEELS="${TORCH_FIND_LINKS:-$(pip config get global.find-links 2>/dev/null || echo /opt/wheels)}"

apt_packages=(apertium apertium-eng-spa apertium-eng-cat slurm-wlm munge chromium)
if [ -z "${NO_APT:-}" ] && command -v apt-get >/dev/null; then
  missing=()
  for p in "${apt_packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    echo "[install] Debian packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

if ! command -v uv >/dev/null 2>&1; then
  "$PYTHON" -m pip install -q --user uv || "$PYTHON" -m pip install -q uv
  export PATH="$HOME/.local/bin:$PATH"
fi

[ -x "$VENV/bin/python" ] || uv venv -q --python "$PYTHON" "$VENV"
constraints="constraints/$TORCH.txt"
[ -f "$constraints" ] || { echo "[install] unknown TORCH=$TORCH (constraints/cpu.txt or constraints/cuda.txt)" >&2; exit 2; }
links=()
[ -d "$WHEELS" ] && links=(--find-links "$WHEELS")
echo "[install] python deps into $VENV (torch: $(grep -v '^#' "$constraints"))"
VIRTUAL_ENV="$VENV" uv pip install -q --python "$VENV/bin/python" "${links[@]}" \
  --constraint "$constraints" --index-strategy unsafe-best-match -e ".[offline,dev]"
# Bytecode for every installed module, once (~70 CPU-s): each workflow job and test subprocess is a
# new interpreter, and without .pyc files (uv writes none by default, and PYTHONDONTWRITEBYTECODE=1
# keeps Python from writing them) each one compiles torch, transformers, spaCy and Snakemake again:
# ~9 CPU-s more per training job, ~3 per Snakemake start (docs/benchmarks.md). A few files in
# torch's test helpers use newer syntax and stay source (compileall's exit status 1).
purelib="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$VENV/bin/python" -m compileall -q -j 0 "$purelib" >/dev/null || true
"$VENV/bin/python" -c "import torch, transformers, spacy, snakemake; print('[install] torch', torch.__version__, '| transformers', transformers.__version__, '| snakemake', snakemake.__version__)"
