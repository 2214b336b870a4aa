"""This machine's matmul throughput: the floor beside the run's achieved FLOP/s.

Measures ``torch.matmul`` GFLOP/s (``2 * m * k * n`` FLOPs per product) per dtype (float32, the
scoring jobs' ``compute.dtype``; bfloat16, the weights of ``finetune.precision: bf16``) and thread
count (``torch.set_num_threads``: 1, the default ``threads``, and 2), on two shapes:

- ``mlp``: (4096 x 576) @ (576 x 1536), SmolLM2-135M's MLP up-projection over 4096 tokens (its
  hidden size 576, intermediate 1536): the matmuls a job of the default model runs;
- ``square``: (2048 x 2048) @ (2048 x 2048), a large square one (the ceiling ``threads.py`` and
  ``capacity.py`` measure).

Each figure is the median over ``--repeats`` timings, each timing as many products as fill about
``--min-seconds`` (after one warm-up product). The load average is printed before and after: on a
shared machine the figures follow it. The last line is
``matmul: float32_t1=<GFLOP/s> bfloat16_t1=<GFLOP/s> float32_t2=<...> bfloat16_t2=<...>`` for the
``mlp`` shape (the model's own), which ``docs/measured.yaml`` keeps as the entry
``benchmarks/matmul.py`` that ``knowlab.tooling.measured`` divides the runs' achieved FLOP/s by.

Usage (from the repository root)::

    .venv/bin/python benchmarks/matmul.py [--repeats 7] [--threads 1 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

#: name -> (m, k, n) of ``(m x k) @ (k x n)``
SHAPES = {"mlp": (4096, 576, 1536), "square": (2048, 2048, 2048)}
DTYPES = ("float32", "bfloat16")


def gflops(m: int, k: int, n: int, dtype: str, threads: int, repeats: int, min_seconds: float) -> float:
    """Median GFLOP/s of ``(m x k) @ (k x n)`` in ``dtype`` at ``threads`` threads."""
    import torch  # deferred: a benchmark script; torch only when measuring

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    a = torch.randn(m, k).to(getattr(torch, dtype))
    b = torch.randn(k, n).to(getattr(torch, dtype))
    start = time.perf_counter()
    torch.matmul(a, b)  # warm-up, and an estimate of one product's time
    once = max(time.perf_counter() - start, 1e-6)
    number = max(1, int(min_seconds / once))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            torch.matmul(a, b)
        times.append((time.perf_counter() - start) / number)
    return 2 * m * k * n / statistics.median(times) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--min-seconds", type=float, default=0.3, help="time of one timing (default 0.3)")
    args = parser.parse_args()
    import torch  # deferred: a benchmark script; torch only when measuring

    before = os.getloadavg()
    summary = {}
    for threads in args.threads:
        for dtype in DTYPES:
            for name, (m, k, n) in SHAPES.items():
                value = gflops(m, k, n, dtype, threads, args.repeats, args.min_seconds)
                print(f"{name} ({m}x{k})@({k}x{n}) {dtype} threads={threads}: {value:.1f} GFLOP/s")
                if name == "mlp":
                    summary[f"{dtype}_t{threads}"] = value
    after = os.getloadavg()
    print(
        f"cpus={os.cpu_count()} torch={torch.__version__} repeats={args.repeats} "
        f"load_average_before={before[0]:.2f} load_average_after={after[0]:.2f}"
    )
    print("matmul: " + " ".join(f"{key}={value:.1f}" for key, value in summary.items()))


if __name__ == "__main__":
    main()
