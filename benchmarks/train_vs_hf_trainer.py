"""Our fine-tuning path against ``transformers.Trainer``: tokens per second, and MFU.

Trains the same model on the same fixed-length sequences (every sequence exactly
``--seq-len`` tokens, so no padding differs), with the same micro-batch size,
gradient accumulation, precision (float32 on CPU), learning-rate schedule,
weight decay, gradient clipping and number of optimizer steps:

- *ours*: :func:`knowlab.core.train.finetune` (DeepSpeed engine, AdamW, the
  mixture sampler on the webtext pool alone), as the workflow's ``finetune`` rule runs it;
- *Trainer*: ``transformers.Trainer`` with ``TrainingArguments`` set to the same
  hyperparameters and otherwise its defaults (its default optimizer, fused AdamW).

Each runs in its own subprocess (DeepSpeed sets up a process group) with
``torch.set_num_threads(--threads)``; ``--rounds`` runs each path that many times,
alternating, so that drift in the machine's speed hits both alike.  Timed: the
duration of each optimizer step after the first ``--warmup`` of a run (end of one
step to the end of the next; model loading and checkpoint saving fall outside).
tokens/s = tokens per step / the median step duration (the median, because a shared
2-core machine has spikes of +-20% on single steps).

MFU: achieved FLOP/s / measured peak.  Training FLOPs per token are
``6 N + 12 L H Q T`` (PaLM, Chowdhery et al. 2022, App. B: N parameters,
L layers, H heads, Q head dim, T sequence length; SmolLM2 ties its input and output
embeddings, so N counts the output projection once).  The peak is measured in this
run: the best of several ``torch.matmul`` of two ``--peak-size`` square matrices in
the training dtype, at the same thread count, 2 n^3 FLOPs each.

The last line is ``train_speedup=<our tokens/s / Trainer tokens/s> mfu=<ours>``.

Usage (from the repository root)::

    .venv/bin/python benchmarks/train_vs_hf_trainer.py [--model resources/base_model] \\
        [--steps 10] [--warmup 2] [--rounds 1] [--micro-batch-size 1] [--grad-accum 4] [--seq-len 512] \\
        [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def training_texts(tokenizer, n: int, seq_len: int) -> list[str]:
    """``n`` texts of at least ``seq_len`` tokens each: consecutive webtext paragraphs joined."""
    from knowlab.core.io import read_jsonl

    paragraphs = [r["text"] for r in read_jsonl(ROOT / "resources/webtext/train.jsonl")]
    texts, current = [], []
    for paragraph in paragraphs:
        current.append(paragraph)
        if len(tokenizer("\n\n".join(current))["input_ids"]) >= seq_len:
            texts.append("\n\n".join(current))
            current = []
            if len(texts) == n:
                return texts
    raise ValueError(f"webtext has fewer than {n} texts of {seq_len} tokens")


def matmul_peak(size: int, dtype, repeats: int = 5) -> float:
    """Best FLOP/s of ``torch.matmul`` on two ``size`` x ``size`` matrices of ``dtype`` (2 size^3 FLOPs)."""
    import torch

    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    torch.matmul(a, b)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        torch.matmul(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best


def flops_per_token(config, n_params: int, seq_len: int) -> float:
    """Training FLOPs per token, ``6 N + 12 L H Q T`` (PaLM App. B)."""
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return 6 * n_params + 12 * config.num_hidden_layers * config.num_attention_heads * head_dim * seq_len


class _StepTimes(logging.Handler):
    """The time of the trainer's log record at the start of training and after each step."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith(("run ", "step ")):
            self.times.append(record.created)


def run_ours(args, texts: list[str], out_dir: str) -> list[float]:
    """Our ``finetune``; returns the end time of every optimizer step (s, from its start)."""
    from knowlab.core.train import TrainSettings, finetune

    cfg = {
        **CFG,
        "max_steps": args.steps,
        "checkpoint_every": args.steps,
        "micro_batch_size": args.micro_batch_size,
        "global_batch_size": args.micro_batch_size * args.grad_accum,
        "seq_len": args.seq_len,
    }
    times = _StepTimes()
    trainer_log = logging.getLogger("knowlab.core.train")
    trainer_log.addHandler(times)
    trainer_log.setLevel(logging.INFO)
    trainer_log.propagate = False
    train_log = finetune(
        base_model=args.model,
        out_dir=out_dir,
        run="benchmark",
        fiction_texts=[],
        webtext_texts=texts,
        settings=TrainSettings.from_block(cfg),
        seed=0,
    )
    assert (train_log["tokens"] == args.micro_batch_size * args.grad_accum * args.seq_len).all()
    return [t - times.times[0] for t in times.times[1:]]


def run_trainer(args, texts: list[str], out_dir: str) -> tuple[list[float], int]:
    """``transformers.Trainer`` on the same sequences and hyperparameters.

    Returns the end time of every optimizer step (s, from the start of training) and the
    model's parameter count (tied weights once).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainerCallback, TrainingArguments

    from knowlab.core.train import tokenize_sequences

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    sequences = tokenize_sequences(tokenizer, texts, args.seq_len)
    dataset = [{"input_ids": s, "attention_mask": [1] * len(s), "labels": s} for s in sequences]
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    ends: list[float] = []

    class StepTimes(TrainerCallback):
        def on_train_begin(self, *_, **__):
            self.start = time.perf_counter()

        def on_step_end(self, *_, **__):
            ends.append(time.perf_counter() - self.start)

    training_args = TrainingArguments(
        output_dir=out_dir,
        use_cpu=True,
        per_device_train_batch_size=args.micro_batch_size,
        gradient_accumulation_steps=args.grad_accum,
        max_steps=args.steps,
        learning_rate=CFG["lr"],
        weight_decay=CFG["weight_decay"],
        max_grad_norm=CFG["gradient_clipping"],
        lr_scheduler_type="cosine_with_min_lr",
        lr_scheduler_kwargs={"min_lr": CFG["min_lr"]},
        warmup_steps=CFG["lr_warmup_steps"],
        save_strategy="no",
        logging_strategy="no",
        report_to=[],
        seed=0,
    )
    Trainer(model=model, args=training_args, train_dataset=dataset, callbacks=[StepTimes()]).train()
    return ends, sum(p.numel() for p in model.parameters())


CFG = {
    "fiction_rate": 0.0,
    "fiction_warmup_steps": 0,
    "lr": 2.0e-4,
    "min_lr": 2.0e-5,
    "lr_warmup_steps": 2,
    "weight_decay": 0.0,
    "gradient_clipping": 1.0,
    "precision": "fp32",
    "zero_stage": 0,
    "offload": {"optimizer": False, "parameters": False},
    "gradient_checkpointing": False,
    "lora": {"enabled": False},
}


def worker(args) -> None:
    """One path in this process: write its step end times and the peak to ``args.out`` (JSON)."""
    import torch
    from transformers import AutoTokenizer

    torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.WARNING)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    n_texts = args.steps * args.micro_batch_size * args.grad_accum
    texts = training_texts(tokenizer, n_texts, args.seq_len)
    with tempfile.TemporaryDirectory() as tmp:
        if args.worker == "ours":
            result = {"ends": run_ours(args, texts, tmp), "peak": matmul_peak(args.peak_size, torch.float32)}
        else:
            ends, n_params = run_trainer(args, texts, tmp)
            result = {"ends": ends, "n_params": n_params}
    Path(args.out).write_text(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "resources/base_model"))
    parser.add_argument("--steps", type=int, default=10, help="optimizer steps per path")
    parser.add_argument("--warmup", type=int, default=2, help="first steps left out of the timing")
    parser.add_argument("--micro-batch-size", type=int, default=1)
    parser.add_argument("--grad-accum", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1, help="runs of each path, alternating")
    parser.add_argument("--peak-size", type=int, default=4096, help="side of the square matrices of the peak matmul")
    parser.add_argument("--worker", choices=["ours", "trainer"], help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    if args.steps <= max(args.warmup, 1):
        parser.error("--steps must exceed --warmup")

    from transformers import AutoConfig

    durations: dict[str, list[float]] = {"ours": [], "trainer": []}
    peaks, n_params = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for path in durations:
                out = Path(tmp) / f"{path}.json"
                subprocess.run(
                    [sys.executable, __file__, *sys.argv[1:], "--worker", path, "--out", str(out)], check=True
                )
                result = json.loads(out.read_text())
                durations[path] += np.diff([0.0, *result["ends"]])[max(args.warmup, 1) :].tolist()
                peaks.append(result.get("peak", 0.0))
                n_params = result.get("n_params", n_params)

    tokens_per_step = args.micro_batch_size * args.grad_accum * args.seq_len
    speed = {}
    for path, seconds in durations.items():
        speed[path] = tokens_per_step / np.median(seconds)
        print(
            f"{path}: {len(seconds)} timed steps of {tokens_per_step} tokens, median {np.median(seconds):.2f}s "
            f"(min {min(seconds):.2f}, max {max(seconds):.2f}), {speed[path]:.1f} tokens/s"
        )

    config = AutoConfig.from_pretrained(args.model)
    per_token = flops_per_token(config, n_params, args.seq_len)
    peak = max(peaks)
    for path, tokens_per_s in speed.items():
        print(f"{path}: {tokens_per_s * per_token / 1e9:.1f} GFLOP/s achieved")
    print(
        f"model={args.model} params={n_params} flops_per_token={per_token:.3e} "
        f"matmul_peak={peak / 1e9:.1f} GFLOP/s (float32, {args.peak_size}^2) threads={args.threads} "
        f"batch={args.micro_batch_size}x{args.grad_accum} seq_len={args.seq_len}"
    )
    print(f"train_speedup={speed['ours'] / speed['trainer']:.2f} mfu={speed['ours'] * per_token / peak:.3f}")


if __name__ == "__main__":
    main()
