"""How many torch threads per job: measured, for scoring and for training.

Snakemake runs ``--cores C`` as jobs of ``threads`` cores each, so the choice is
between C / t jobs of t threads.  This measures, on the default model:

- ``matmul``: FLOP/s of a large float32 ``torch.matmul`` (the compute ceiling);
- ``score``: tokens/s of :func:`knowlab.core.scoring.score_token_ids` on
  MCQ-shaped requests (a shared question, four choices);
- ``train``: tokens/s of a training step (forward, backward, fused AdamW) at the
  default sequence length;

each (a) as one process with t threads, for t = 1 .. the machine's cores, and
(b) as the machine's cores / t processes of t threads running at once (the
aggregate throughput of a Snakemake run).  Every measurement is a fresh
subprocess; a step is repeated ``--repeats`` times and the median kept.

The last line is ``best_threads=<t with the highest aggregate training throughput>
aggregate_speedup=<that aggregate / the aggregate at the other extreme>``.

Usage (from the repository root)::

    .venv/bin/python benchmarks/threads.py [--model resources/base_model] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def measure(kind: str, model_path: str, threads: int, repeats: int) -> float:
    """Throughput of ``kind`` in this process at ``threads`` threads: FLOP/s or tokens/s (median of repeats)."""
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    if kind == "matmul":
        a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
        work, step = 2 * 2048**3, lambda: torch.matmul(a, b)
    else:
        from knowlab.core.models import load_model

        model, _ = load_model(model_path)
        vocab = model.config.vocab_size
        if kind == "score":
            from knowlab.core.scoring import score_token_ids

            questions = [torch.randint(0, vocab, (20,)).tolist() for _ in range(16)]
            pairs = [(q, torch.randint(0, vocab, (5,)).tolist()) for q in questions for _ in range(4)]
            work = sum(len(q) for q in questions) + sum(len(c) - 1 for _, c in pairs)
            step = lambda: score_token_ids(model, pairs, batch_size=8)
        else:
            ids = torch.randint(0, vocab, (1, 512))
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
            model.train()

            def step():
                model(input_ids=ids, labels=ids, use_cache=False).loss.backward()
                optimizer.step()
                optimizer.zero_grad()

            work = ids.numel()
    step()  # warm-up
    return work / statistics.median(timeit.repeat(step, number=1, repeat=repeats))


def run_concurrently(kind: str, model_path: str, threads: int, jobs: int, repeats: int) -> list[float]:
    """Start ``jobs`` worker processes of ``threads`` threads at once; their throughputs."""
    argv = [sys.executable, __file__, "--worker", kind, "--model", model_path]
    argv += ["--threads", str(threads), "--repeats", str(repeats)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    procs = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        for _ in range(jobs)
    ]
    return [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "resources/base_model"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kinds", nargs="+", default=["matmul", "score", "train"])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(args.worker, args.model, args.threads, args.repeats)))
        return

    cores = os.cpu_count() or 1
    options = [t for t in range(1, cores + 1) if cores % t == 0]
    unit = {"matmul": "GFLOP/s", "score": "tokens/s", "train": "tokens/s"}
    aggregate: dict[str, dict[int, float]] = {}
    for kind in args.kinds:
        aggregate[kind] = {}
        for threads in options:
            alone = run_concurrently(kind, args.model, threads, 1, args.repeats)[0]
            together = run_concurrently(kind, args.model, threads, cores // threads, args.repeats)
            aggregate[kind][threads] = sum(together)
            scale = 1e9 if kind == "matmul" else 1
            print(
                f"{kind}: threads={threads} one job {alone / scale:.1f} {unit[kind]}; "
                f"{cores // threads} jobs at once {sum(together) / scale:.1f} {unit[kind]} in all "
                f"({', '.join(f'{x / scale:.1f}' for x in together)})"
            )
    kind = "train" if "train" in aggregate else args.kinds[-1]
    best = max(aggregate[kind], key=aggregate[kind].get)
    other = min(options) if best != min(options) else max(options)
    print(f"cores={cores} model={args.model} repeats={args.repeats}")
    print(f"best_threads={best} aggregate_speedup={aggregate[kind][best] / aggregate[kind][other]:.2f}")


if __name__ == "__main__":
    main()
