"""Our MCQ scoring against EleutherAI lm-evaluation-harness: same checkpoint, same items, same numbers?

Scores the MCQ-4 and MCQ-10 suites with :func:`knowlab.fictionalqa.suites.mcq_rows`
(the shared-context engine of :mod:`knowlab.core.scoring`) in this process, and
with lm-evaluation-harness in a subprocess (``--lm-eval-python``, by default this
interpreter: lm-eval is in the project's requirements), on
the task files written by :func:`knowlab.fictionalqa.lm_eval_export.export_mcq_task`.
The harness runs through ``lm_eval.simple_evaluate`` with the ``hf`` model built
from ``model_args="pretrained=...,dtype=float32,device=cpu"`` (as
``simple_evaluate(model="hf", model_args=...)`` builds it) and ``log_samples=True``.

Timed: only the scoring, with the model loaded and warmed up by one forward pass
in both processes: our ``mcq_rows`` call (tokenization, scoring, predictions), the
harness's ``HFLM.loglikelihood`` call (tokenization and scoring) inside
``simple_evaluate``.  Same threads (``torch.set_num_threads``), same batch size.

Checked: per item, the harness's requests equal ours, and the predictions
(argmax of the summed log-likelihood: ``acc``; of the log-likelihood per character
of the choice: ``acc_norm``) are identical; printed: the max abs difference of the
per-choice log-likelihoods.  The last line is
``eval_speedup=<harness seconds / our seconds> identical=<True|False> items=<n>``.

Usage (from the repository root)::

    .venv/bin/python benchmarks/eval_vs_lm_eval.py [--model resources/base_model] \\
        [--mcq mcq4.jsonl mcq10.jsonl] [--threads 1] [--batch-size 8] [--limit N]

Without ``--mcq`` the items are built from data/fiction/fict_qa.jsonl by
``build_mcq(..., n_choices, seed=1234)`` (random other-event distractors) for 4 and 10 choices.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _warm_up(model) -> None:
    import torch

    with torch.inference_mode():
        model(input_ids=torch.tensor([[1, 2, 3, 4]]))


def lm_eval_worker(model_path: str, task_dir: str, tasks: list[str], batch_size: int, threads: int, out: str) -> None:
    """Run in the side environment: each task through ``simple_evaluate``; per-sample results to ``out`` (JSON)."""
    import torch

    torch.set_num_threads(threads)
    import lm_eval
    from lm_eval.api.registry import get_model
    from lm_eval.tasks import TaskManager

    lm = get_model("hf").create_from_arg_string(
        f"pretrained={model_path},dtype=float32,device=cpu", {"batch_size": batch_size}
    )
    _warm_up(lm.model)
    seconds: list[float] = []
    scoring = lm.loglikelihood

    def timed(requests, *args, **kwargs):
        start = time.perf_counter()
        result = scoring(requests, *args, **kwargs)
        seconds.append(time.perf_counter() - start)
        return result

    lm.loglikelihood = timed
    manager = TaskManager(include_path=task_dir)
    report = {}
    for task in tasks:
        seconds.clear()
        results = lm_eval.simple_evaluate(
            model=lm, tasks=[task], task_manager=manager, batch_size=batch_size, log_samples=True, bootstrap_iters=0
        )
        samples = results["samples"][task]
        report[task] = {
            "seconds": sum(seconds),
            "items": {
                s["doc"]["question_id"]: {
                    "arguments": [list(a) for a in s["arguments"]],
                    "loglik": [float(r[0]) for r in s["filtered_resps"]],
                    "acc": s["acc"],
                    "acc_norm": s["acc_norm"],
                }
                for s in samples
            },
        }
    Path(out).write_text(json.dumps(report))


def input_tokens(tokenizer, items, template) -> tuple[int, int]:
    """Model input tokens: one sequence per request (the harness) and one context pass per question (ours)."""
    from knowlab.core.scoring import encode_pair

    per_request = shared = 0
    for item in items:
        context = template.format(question=item["question"])
        pairs = [encode_pair(tokenizer, context, " " + choice) for choice in item["choices"]]
        per_request += sum(len(c) + len(x) - 1 for c, x in pairs)
        shared += len(pairs[0][0]) + sum(len(x) - 1 for _, x in pairs)
    return per_request, shared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(ROOT / "resources" / "base_model"), help="checkpoint folder (read only)")
    parser.add_argument("--mcq", nargs="*", help="MCQ JSONL files (default: built from data/fiction/fict_qa.jsonl)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--limit", type=int, help="first N questions of each suite (a quick check)")
    parser.add_argument("--lm-eval-python", default=sys.executable, help="a Python with lm-eval (default: this one)")
    parser.add_argument("--worker", nargs=3, metavar=("TASK_DIR", "TASKS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        task_dir, tasks, out = args.worker
        lm_eval_worker(args.model, task_dir, tasks.split(","), args.batch_size, args.threads, out)
        return

    import torch

    torch.set_num_threads(args.threads)
    from knowlab.core.io import read_jsonl
    from knowlab.core.models import load_model
    from knowlab.fictionalqa.corpus.mcq import build_mcq
    from knowlab.fictionalqa.lm_eval_export import export_mcq_task
    from knowlab.fictionalqa.suites import MCQ_TEMPLATE, mcq_rows

    if args.mcq:
        items = [item for path in args.mcq for item in read_jsonl(path)]
    else:
        qa = read_jsonl(ROOT / "data" / "fiction" / "fict_qa.jsonl")
        items = [item for k in (4, 10) for item in build_mcq(qa, k, seed=1234)]
    suites = {
        f"fictionalqa_mcq{k}": [item for item in items if int(item["n_choices"]) == k][: args.limit]
        for k in sorted({int(item["n_choices"]) for item in items})
    }

    with tempfile.TemporaryDirectory() as tmp:
        for name, subset in suites.items():
            export_mcq_task(subset, tmp, name, MCQ_TEMPLATE)
        out = Path(tmp) / "lm_eval.json"
        threads = str(args.threads)
        env = dict(os.environ, OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads, HF_HUB_OFFLINE="1")
        env.update(HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_CACHE=str(Path(tmp) / "datasets"))
        command = [args.lm_eval_python, str(Path(__file__).resolve()), "--model", str(Path(args.model).resolve())]
        command += [
            "--threads",
            threads,
            "--batch-size",
            str(args.batch_size),
            "--worker",
            tmp,
            ",".join(suites),
            str(out),
        ]
        subprocess.run(command, check=True, env=env, cwd=ROOT)
        theirs = json.loads(out.read_text())

    model, tokenizer = load_model(args.model)
    _warm_up(model)
    total_ours = total_theirs = 0.0
    all_identical, n_items = True, 0
    for name, subset in suites.items():
        start = time.perf_counter()
        rows = mcq_rows(model, tokenizer, subset, MCQ_TEMPLATE, args.batch_size)
        ours = time.perf_counter() - start
        harness = theirs[name]
        identical, max_diff = len(harness["items"]) == len(subset), 0.0
        for item, row in zip(subset, rows):
            other = harness["items"][item["question_id"]]
            context = MCQ_TEMPLATE.format(question=item["question"])
            lls = np.array(other["loglik"])
            lengths = np.array([len(choice) for choice in item["choices"]], dtype=float)
            identical &= other["arguments"] == [[context, " " + choice] for choice in item["choices"]]
            identical &= int(lls.argmax()) == row["pred"] and int((lls / lengths).argmax()) == row["pred_norm"]
            identical &= other["acc"] == row["acc"] and other["acc_norm"] == row["acc_norm"]
            max_diff = max(max_diff, float(np.abs(lls - np.array(row["choice_loglik"])).max()))
        per_request, shared = input_tokens(tokenizer, subset, MCQ_TEMPLATE)
        print(
            f"{name}: items={len(subset)} ours={ours:.2f}s lm_eval={harness['seconds']:.2f}s "
            f"speedup={harness['seconds'] / ours:.2f} identical={identical} max_abs_dloglik={max_diff:.2e} "
            f"input_tokens lm_eval={per_request} ours={shared} ratio={per_request / shared:.2f} "
            f"acc={np.mean([r['acc'] for r in rows]):.4f} acc_norm={np.mean([r['acc_norm'] for r in rows]):.4f}"
        )
        total_ours += ours
        total_theirs += harness["seconds"]
        all_identical &= identical
        n_items += len(subset)
    print(f"threads={args.threads} batch_size={args.batch_size} model={args.model}")
    print(f"eval_speedup={total_theirs / total_ours:.2f} identical={all_identical} items={n_items}")


if __name__ == "__main__":
    sys.exit(main())
