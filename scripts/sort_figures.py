"""SORT figures of the base model: Fig. 3a/3b (in context), Fig. 4 (RAG), Fig. 10 (baseline), condition matrices."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab.core.io import read_parquets
from knowlab.core.provenance import rule_step
from knowlab.sort.condition_plots import plot_by_distance, plot_by_excerpt_length, plot_rag
from knowlab.sort.matrix_plots import plot_matrix
from knowlab.sort.answers import answer_note

with rule_step(snakemake):
    out, params = snakemake.output, snakemake.params
    rows = read_parquets(snakemake.input.rows)
    binomial = read_parquets([snakemake.input.binomial])
    retrieval = read_parquets([snakemake.input.retrieval]) if snakemake.input.get("retrieval") else None
    plot_by_excerpt_length(rows, out.fig3a_pdf, out.fig3a_png)
    plot_by_distance(rows, out.fig3b_pdf, out.fig3b_png)
    plot_by_distance(
        rows, out.fig10_pdf, out.fig10_png, condition="baseline", hue="segment_length", panel="model",
        marks=binomial[binomial.condition == "baseline"],
    )  # fmt: skip
    recall = None
    if retrieval is not None:
        recall = retrieval[retrieval.condition == "rag"].merge(rows[["item_id", "distance_bin"]].drop_duplicates())
    plot_rag(rows, out.fig4_pdf, out.fig4_png, recall=recall)
    for test in ("mcnemar", "ttest"):
        table = read_parquets([getattr(snakemake.input, test)])
        title = {"mcnemar": "McNemar's test on correctness", "ttest": "paired t-test on the score"}[test]
        plot_matrix(
            table, f"SORT, base model: {title} across memory conditions",
            getattr(out, f"{test}_pdf"), getattr(out, f"{test}_png"), model=params.model,
            note=answer_note(rows) if test == "mcnemar" else None,  # correctness depends on the answer rule
        )  # fmt: skip
