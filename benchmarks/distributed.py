"""Distributed fine-tuning on the CPU: world size 2 against world size 1, ZeRO stages 0, 2 and 3.

For each ZeRO stage, trains the same run with the same global batch twice through the
workflow's own launch path (``python -m torch.distributed.run ... -m knowlab.finetune_job``,
gloo): once with one process, once with two, each rank taking its half of every step's
sequences.  Checks that the loss at every step agrees within ``--tolerance`` (relative) and
that each stage's checkpoint loads with ``AutoModelForCausalLM.from_pretrained`` and gives the
same logits at both world sizes (within the same tolerance).

The model is a small random Llama with a tokenizer trained on the shipped fiction
(``--model`` names another folder); the run is the Fictsheets split of the shipped corpus
mixed into its fiction paragraphs as webtext, ``--steps`` steps of ``--global-batch``
sequences in micro-batches of ``--micro-batch``.

The last line is ``world_size=2 zero=0,2,3 max_rel_dloss=X loadable=True``.

Usage (from the repository root)::

    .venv/bin/python benchmarks/distributed.py [--steps 4] [--global-batch 8] [--micro-batch 2] [--zero 0 2 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from knowlab.core.io import read_jsonl, write_json, write_jsonl  # noqa: E402
from knowlab.core.models import build_tiny_model  # noqa: E402
from knowlab.core.train import launch_command  # noqa: E402
from knowlab.fiction.splits import make_split  # noqa: E402
from knowlab.finetune_job import job_command, job_spec  # noqa: E402

TINY = {
    "vocab_size": 512,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 512,
}


def finetune_cfg(args: argparse.Namespace, zero: int) -> dict:
    return {
        "max_steps": args.steps,
        "checkpoint_every": args.steps,
        "fiction_rate": 0.5,
        "fiction_warmup_steps": 1,
        "micro_batch_size": args.micro_batch,
        "global_batch_size": args.global_batch,
        "seq_len": 128,
        "lr": 1e-3,
        "min_lr": 1e-4,
        "lr_warmup_steps": 1,
        "weight_decay": 0.0,
        "gradient_clipping": 1.0,
        "precision": "fp32",
        "zero_stage": zero,
        "offload": {"optimizer": False, "parameters": False},
        "gradient_checkpointing": False,
        "lora": {"enabled": False, "r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]},
    }


def prepare(work: Path, model: Path | None) -> dict[str, str]:
    """The inputs of a Fictsheets run: model, split, fiction tables and webtext."""
    fictions = read_jsonl(ROOT / "data/fiction/fictions.jsonl")
    fict_qa = read_jsonl(ROOT / "data/fiction/fict_qa.jsonl")
    if model is None:
        model = work / "model"
        build_tiny_model([r["fiction"] for r in fictions], model, TINY, seed=0)
    write_json(work / "split.json", make_split("fictsheets", fictions, fict_qa, 0, 2 / 3))
    write_jsonl(work / "webtext.jsonl", [{"text": r["fiction"][:400]} for r in fictions[20:60]])
    return {
        "model": str(model),
        "webtext": str(work / "webtext.jsonl"),
        "split": str(work / "split.json"),
        "fictions": str(ROOT / "data/fiction/fictions.jsonl"),
        "fictsheets": str(ROOT / "data/fiction/fictsheets.jsonl"),
    }


def train(work: Path, inputs: dict[str, str], cfg: dict, world: int, tag: str) -> Path:
    """One launch of the workflow's fine-tuning job; returns its output folder."""
    out = work / tag
    outputs = {
        "checkpoint": out / "checkpoint",
        "train_log": out / "train_log.parquet",
        "manifest": out / "manifest.json",
    }
    spec = job_spec("fictionalqa", "fictsheets", f"step-{cfg['max_steps']}", inputs, outputs, cfg, None, seed=4)
    launch = launch_command({"launcher": "torchrun", "nodes": 1, "processes_per_node": world}, sys.executable)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    command = job_command(launch, spec, threads=world)
    done = subprocess.run(command, shell=True, env=env, capture_output=True, text=True, cwd=ROOT)
    (work / f"{tag}.log").write_text(done.stdout + done.stderr)
    if done.returncode:
        sys.exit(f"{tag} failed (exit {done.returncode}); see {work / tag}.log:\n{done.stderr[-3000:]}")
    return out


def logits(folder: Path):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    with torch.no_grad():
        return model(torch.arange(1, 33).unsqueeze(0)).logits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None, help="a model folder (default: a small random Llama)")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--global-batch", type=int, default=8)
    parser.add_argument("--micro-batch", type=int, default=2)
    parser.add_argument("--zero", type=int, nargs="+", default=[0, 2, 3])
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--keep", type=Path, default=None, help="keep the runs in this folder")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        inputs = prepare(work, args.model)
        worst, loadable = 0.0, True
        for zero in args.zero:
            cfg = finetune_cfg(args, zero)
            runs = {world: train(work, inputs, cfg, world, f"zero{zero}-world{world}") for world in (1, 2)}
            one, two = (pd.read_parquet(runs[w] / "train_log.parquet") for w in (1, 2))
            rel = ((two["loss"] - one["loss"]).abs() / one["loss"].abs()).max()
            try:
                a, b = (logits(runs[w] / "checkpoint") for w in (1, 2))
                drift = float(((a - b).abs().max() / a.abs().max()))
            except Exception as err:  # a checkpoint transformers cannot load
                print(f"zero {zero}: checkpoint does not load: {type(err).__name__}: {err}")
                loadable, drift = False, float("nan")
            worst = max(worst, float(rel))
            print(
                f"zero {zero}: losses world 1 {[round(x, 5) for x in one['loss']]}, "
                f"world 2 {[round(x, 5) for x in two['loss']]}: max rel. difference {rel:.2e}; "
                f"checkpoint logits max rel. difference {drift:.2e}"
            )
            loadable &= bool(drift <= args.tolerance)
        if worst > args.tolerance:
            print(f"FAIL: a loss differs by {worst:.2e} > {args.tolerance:g} between world sizes")
        print(f"world_size=2 zero={','.join(map(str, args.zero))} max_rel_dloss={worst:.2e} loadable={loadable}")


if __name__ == "__main__":
    main()
