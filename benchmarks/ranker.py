"""Distractor ranking throughput: prompts/s with and without packing a question's prompts, and the paper-scale cost.

The ranker (paper App. C.6) scores " Yes" and " No" after one prompt per (question,
candidate); a question's prompts share everything up to the candidate.  Measured on the
default ranker (SmolLM2-135M, float32, one thread) with the shipped corpus:

- ``before``: the scoring engine's default ``min_shared_prefix=32``, which packs only the prompts
  whose shared head is 32 tokens or longer (long questions);
- ``after``: ``min_shared_prefix=1``, every question's prompts packed where the engine's cost
  model says it pays (what :func:`knowlab.fictionalqa.corpus.mcq.rank_candidates` does);

for two workloads: the CPU default (16 sampled candidates per question) and the paper's
(every answer of the corpus a candidate: 224 per question here).  Both rankings must agree
(ranks identical, losses within 1e-4 nats).  A warm-up ranking runs first: a process's first
forward passes are slower, which would favour whichever setting runs second.  The projection multiplies the paper-scale
prompt count (about 7,500 questions x 7,500 answers for the full FictionalQA release) by the
measured time per prompt; GPU costs are in the capacity plan (``benchmarks/capacity.py``).

Usage (from the repository root)::

    .venv/bin/python benchmarks/ranker.py [--model resources/base_model] [--questions 8]

Last line: ``ranker: before=<prompts/s> after=<prompts/s> speedup=<x> identical_ranks=<bool>``
(for the paper workload).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

PAPER_PROMPTS = 7_500 * 7_500  # questions x distinct answers of the full release (about)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(ROOT / "resources" / "base_model"))
    parser.add_argument("--questions", type=int, default=8, help="questions per workload")
    args = parser.parse_args()

    import numpy as np
    import torch
    import yaml

    from knowlab.core.io import read_jsonl
    from knowlab.core.models import BaseModelSettings, CheckpointError, check_model_dir, load_model, prepare_base_model
    from knowlab.fictionalqa.corpus.mcq import RANKER_TEMPLATE, _rank_shard, answer_pool

    torch.set_num_threads(1)
    try:
        model_dir = check_model_dir(args.model)
    except CheckpointError:
        model_dir = Path(tempfile.mkdtemp()) / "base_model"
        config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
        prepare_base_model(BaseModelSettings.from_config(config), model_dir, seed=0)
    model, tokenizer = load_model(model_dir)
    qa = sorted(read_jsonl(ROOT / "data" / "fiction" / "fict_qa.jsonl"), key=lambda r: r["question_id"])
    pool = answer_pool(qa)
    questions = qa[:: max(1, len(qa) // args.questions)][: args.questions]
    print(f"model {model_dir.name}, {len(questions)} questions, pool of {len(pool)} answers, 1 thread, float32 CPU")
    for shared in (32, 1):  # warm-up: the first forward passes of a process are slower
        _rank_shard(model, tokenizer, qa[1:2], pool, 0, RANKER_TEMPLATE, 16, 16, shared, desc="warm-up")
    for name, candidates in (("default (16 candidates)", 16), ("paper (every answer)", None)):
        times, tables = {}, {}
        for label, shared in (("before", 32), ("after", 1)):
            began = time.perf_counter()
            tables[label] = _rank_shard(
                model, tokenizer, questions, pool, 1234, RANKER_TEMPLATE, candidates, 16, shared, desc=label
            )
            times[label] = len(tables[label]) / (time.perf_counter() - began)
        before, after = tables["before"], tables["after"]
        delta = float(
            np.abs(before[["loss_yes", "loss_no"]].to_numpy() - after[["loss_yes", "loss_no"]].to_numpy()).max()
        )
        ranks = [
            t.assign(score=t.loss_yes / t.loss_no).groupby("question_id")["score"].rank(method="first")
            for t in (before, after)
        ]
        identical = bool((ranks[0] == ranks[1]).all())
        hours = PAPER_PROMPTS / times["after"] / 3600
        print(
            f"{name}: {len(before)} prompts; before {times['before']:.2f} prompts/s, after {times['after']:.2f} "
            f"prompts/s ({times['after'] / times['before']:.2f}x); max |delta loss| {delta:.1e} nats; "
            f"identical ranks {identical}; paper scale ({PAPER_PROMPTS / 1e6:.0f}M prompts) at this rate: "
            f"{hours:,.0f} CPU-hours"
        )
    print(
        f"ranker: before={times['before']:.2f} after={times['after']:.2f} "
        f"speedup={times['after'] / times['before']:.2f} identical_ranks={identical}"
    )


if __name__ == "__main__":
    main()
