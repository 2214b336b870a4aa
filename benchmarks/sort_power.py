"""How many SORT items each memory-condition comparison needs: a power calculation from a run.

Reads the base model's item rows of a results folder
(``results/sort/evaluate/{model}/{condition}.parquet``), and for each pair of memory
conditions prints the paired items, both accuracies, the discordant counts, McNemar's p
(:func:`knowlab.core.stats.mcnemar_pair`) and the items McNemar's test would need to find
that difference at 80% power (:func:`knowlab.core.stats.mcnemar_sample_size`, Connor 1987):
at alpha 0.05, and at alpha 0.05 / m, Holm's first step over the m condition pairs the
findings use.  Run it on a pilot with many items (e.g. ``sort.n_excerpts: 16``) to size
``sort.n_excerpts`` for a model.

The last line is ``sort_power: pairs=<m> largest_n80=<items for the hardest comparison with a
difference> at alpha=0.05``.

Usage (from the repository root)::

    .venv/bin/python benchmarks/sort_power.py [--results results] [--model base_model]
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import pandas as pd  # noqa: E402

from knowlab.core.stats import mcnemar_pair, mcnemar_sample_size  # noqa: E402
from knowlab.sort.prompts import CONDITIONS  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="results", type=Path)
    parser.add_argument("--model", default="base_model")
    args = parser.parse_args()
    folder = args.results / "sort" / "evaluate" / args.model
    correct = {
        c: pd.read_parquet(folder / f"{c}.parquet").set_index("item_id")["correct"]
        for c in CONDITIONS
        if (folder / f"{c}.parquet").is_file()
    }
    if len(correct) < 2:
        sys.exit(f"sort_power: fewer than two conditions under {folder}")
    pairs = list(itertools.combinations(correct, 2))
    print(f"SORT item rows of {args.model} under {folder}\n")
    header = ["a", "b", "n", "accuracy a", "accuracy b", "a only right", "b only right", "McNemar p"]
    header += ["n for 80% power", "same, Holm first step"]
    print("| " + " | ".join(header) + " |\n|" + " --- |" * len(header))
    largest = 0
    for a, b in pairs:
        test = mcnemar_pair(correct[a], correct[b], 25)  # the default config's stats.mcnemar_exact_below
        n = test["n"]
        cells = [a, b, n, f"{correct[a].mean():.3f}", f"{correct[b].mean():.3f}", test["b"], test["c"]]
        row = "| " + " | ".join(map(str, cells)) + f" | {test['pvalue']:.2g} |"
        if test["b"] == test["c"]:
            print(row + " no difference | no difference |")
            continue
        p_b, p_c = test["b"] / n, test["c"] / n
        n80 = mcnemar_sample_size(p_b, p_c, alpha=0.05, power=0.8)  # the default's findings.alpha and power
        largest = max(largest, n80)
        print(row + f" {n80} | {mcnemar_sample_size(p_b, p_c, alpha=0.05 / len(pairs), power=0.8)} |")
    print(f"\nsort_power: pairs={len(pairs)} largest_n80={largest} at alpha=0.05")


if __name__ == "__main__":
    main()
