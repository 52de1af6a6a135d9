# The two set-up commands: `make quick` (install + the quick experiment end to end)
# and `make test` (install + the test suite). Everything else is a convenience.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
SNAKEMAKE := $(VENV)/bin/snakemake
QUICK := --configfile config.yaml experiments/quick.yaml
CORES ?= all

.PHONY: install quick test test-fast lint dryrun bench report clean

$(VENV)/.installed: pyproject.toml constraints/cpu.txt tools/install.sh
	bash tools/install.sh
	touch $@

install: $(VENV)/.installed

quick: install
	$(SNAKEMAKE) $(QUICK) --cores $(CORES) --rerun-incomplete

test: install
	$(VENV)/bin/pytest -q --durations=15

test-fast: install
	$(VENV)/bin/pytest -q -m "not integration and not slurm"

lint: install
	$(PY) tools/lint_workflow.py
	$(VENV)/bin/snakefmt --check Snakefile rules
	$(VENV)/bin/ruff check src tests bench workflow tools

dryrun: install
	$(SNAKEMAKE) -n --quiet rules
	$(SNAKEMAKE) $(QUICK) -n --quiet rules

bench: install
	$(PY) -m bench

clean:
	rm -rf results logs benchmarks .snakemake
