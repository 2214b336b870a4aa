"""The FictionalQA paper's own numbers as figure curves, drawn by :func:`knowlab.fictionalqa.figures.plot_family`.

The paper's authors exported the numbers behind their figures from Weights &
Biases (``paper_figures/raw_data`` of jwkirchenbauer/fictionalqa): one CSV per
plot, one row per logged step, one column ``"Name: <run> - <metric>"`` per run
(plus ``__MIN`` / ``__MAX`` twins and ``_step`` columns, ignored here).  Run
names encode the model and the split, e.g.
``exp1_train_val_splits_5pct_4N_mb8-wb128_llama-3-1-8B_doc-split-train-val``;
``base-only-all-val`` is the webtext-only control.  Families covered (keys of
:data:`knowlab.fictionalqa.figures.FAMILIES`; export folders ``v5/``, ``v6-7/``, ``6-7/``):

- ``fig3`` (Fig. 3): ``v5/`` Doc split train/val loss over 1,500 steps (left);
  EM@50 of train/val documents vs epochs (right).
- ``fig4`` (Fig. 4): ``v6-7/`` Doc split and Event split train/val loss, five models + control.
- ``fig5`` (Fig. 5): ``v6-7/`` Fictsheets train/val loss (left); webtext loss
  while training on the Doc split (right).
- ``fig6`` (Fig. 6): ``v6-7/`` Llama-3.1-8B nll(answer | question) on fictional
  Q&A and TriviaQA, one series per split + control.
- ``fig7`` (Fig. 7): ``6-7/`` MCQ-4 accuracy across models on the Doc split
  (left), Llama-3.1-8B across splits (right).
- ``fig8`` (Fig. 8): ``6-7/`` Llama-3.1-8B MCQ-4 on questions from train vs val
  documents, one panel per split.
- ``fig9`` (Fig. 9): ``v6-7/`` nll(answer | question) across models, Doc split.
- ``fig10`` (Fig. 10): ``6-7/`` MCQ-4 on train vs val questions across models,
  Doc / Event / Fictsheets panels (every exported model, Gemma included).
- ``fig10_11`` (Fig. 11): ``6-7/`` MCQ-4 vs MCQ-10 across models, Doc split.

Figure 2 (samples seen and epochs per split) is not in the exports.  Runs with a
single logged value (Gemma-2-9B: step 0 only) are left out.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from knowlab.core.checkpoints import CONTROL_RUN
from knowlab.fiction.splits import run_name
from knowlab.fictionalqa.figures import DOC_SIDES, FAMILIES, QUESTION_SIDES, SPLITS, plot_family

SPLIT_TAGS = {
    "doc-split-train-val": "doc",
    "event-split-fictions-train-val": "event",
    "event-split-fictsheets-train-val": "fictsheets",
    "style-split-loo-news-train-val": "style_news",
    "style-split-loo-blog-train-val": "style_blog",
    "base-only-all-val": CONTROL_RUN,
}
# One epoch of the Doc split's training documents: 100 seed events x 15 documents,
# one document per style (5 styles) held out per event (paper Sec. 4, C.3) -> 100 x 10.
DOC_SPLIT_TRAIN_DOCS = 1000


@dataclass(frozen=True)
class Export:
    """Export files drawn in one panel (index into the family's panels; ``None``: one
    panel per split), series named by ``model`` or ``split``; ``per_epoch``: the export
    is indexed by fiction samples seen, divided by this to give epochs."""

    files: tuple[str, ...]
    panel: int | None = None
    by: str = "model"
    per_epoch: int | None = None


def _pair(folder: str, stem: str) -> tuple[str, str]:
    return f"{folder}/5pct_{stem.format('train')}.csv", f"{folder}/5pct_{stem.format('val')}.csv"


EXPORTS = {
    "fig3": (
        Export(_pair("v5", "doc_split_{}_loss"), 0),
        Export(("v5/5pct_doc_split_train_val_samples_vs_em_50.csv",), 1, per_epoch=DOC_SPLIT_TRAIN_DOCS),
    ),
    "fig4": (
        Export(_pair("v6-7", "doc_split_{}_loss"), 0),
        Export(_pair("v6-7", "event_split_fictions_{}_loss"), 1),
    ),
    "fig5": (
        Export(_pair("v6-7", "event_split_fictsheets_{}_loss"), 0),
        Export(("v6-7/5pct_doc_split_base_loss.csv",), 1),
    ),
    "fig6": (
        Export(("v6-7/5pct_8b_fictqa_loss.csv",), 0, by="split"),
        Export(("v6-7/5pct_8b_triviaqa_loss.csv",), 1, by="split"),
    ),
    "fig7": (
        Export(("6-7/5pct_doc_split_fictqa_mcq4.csv",), 0),
        Export(("6-7/5pct_8b_fictqa_mcq4.csv",), 1, by="split"),
    ),
    "fig8": (Export(("6-7/5pct_8b_train_val_fictqa_mcq4.csv",)),),
    "fig9": (
        Export(("v6-7/5pct_doc_split_fictqa_loss.csv",), 0),
        Export(("v6-7/5pct_doc_split_triviaqa_loss.csv",), 1),
    ),
    "fig10": (
        Export(
            _pair("6-7", "doc_split_{}_fictqa_mcq4")
            + _pair("6-7", "event_split_{}_fictqa_mcq4")
            + _pair("6-7", "event_split_fictsheets_{}_fictqa_mcq4")
        ),
    ),
    "fig10_11": (
        Export(("6-7/5pct_doc_split_fictqa_mcq4.csv",), 0),
        Export(("6-7/5pct_doc_split_fictqa_mcq10.csv",), 1),
    ),
}


def parse_run(run: str) -> tuple[str, str]:
    """``(model display name, split)`` of a W&B run name, e.g. ``..._llama-3-1-8B_doc-split-train-val``
    -> ``("Llama-3.1-8B", "doc")``; ``gemma-2-2b`` -> "Gemma-2-2B", ``gemma-2b`` -> "Gemma-2B".

    Raises:
        ValueError: the name does not end in ``_<model>_<split tag>`` with a known tag.
    """
    try:
        _, model, tag = run.rsplit("_", 2)
        split = SPLIT_TAGS[tag]
    except (ValueError, KeyError):
        raise ValueError(f"unrecognised W&B run name {run!r}") from None
    name, *version, size = model.split("-")
    return "-".join(part for part in (name.capitalize(), ".".join(version), size.upper()) if part), split


def read_wandb_export(path: str | Path) -> pd.DataFrame:
    """One W&B CSV export as a long table with columns ``run, model, split, metric, step, value``.

    ``step`` is the export's first column: the optimizer step (``optimizer_step`` or
    ``Step``), or for ``*_samples_vs_*`` exports the fiction samples seen.  Empty
    cells, ``__MIN`` / ``__MAX`` twins and ``_step`` columns are dropped.
    """
    frame = pd.read_csv(path)
    index = frame.columns[0]
    parts = []
    for column in frame.columns[1:]:
        run, metric = column.removeprefix("Name: ").split(" - ", 1)
        if metric == "_step" or metric.endswith(("__MIN", "__MAX")):
            continue
        model, split = parse_run(run)
        cells = frame[[index, column]].dropna()
        parts.append(
            pd.DataFrame(
                {
                    "run": run,
                    "model": model,
                    "split": split,
                    "metric": metric,
                    "step": cells[index],
                    "value": cells[column],
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def paper_curves(folder: str | Path, family: str) -> pd.DataFrame:
    """Curves of ``family`` (a key of :data:`EXPORTS`) from the export ``folder`` (the
    ``raw_data`` folder holding ``v5/``, ``v6-7/``, ``6-7/``), in the columns of
    :func:`knowlab.fictionalqa.figures.plot_family`: ``panel, series, style, x, y``.

    Raises:
        ValueError: the family is not in the exports (``fig2``).
    """
    if family not in EXPORTS:
        raise ValueError(f"family {family!r} is not in the paper's W&B exports (covered: {', '.join(EXPORTS)})")
    panels = FAMILIES[family].panels
    order = {s: i for i, s in enumerate((*SPLITS, CONTROL_RUN))}
    frames = []
    for export in EXPORTS[family]:
        long = pd.concat([read_wandb_export(Path(folder) / f) for f in export.files], ignore_index=True)
        long = long[long.groupby(["run", "metric"])["value"].transform("size") > 1]
        long = long.assign(rank=long["split"].map(order)).sort_values(["rank", "model", "metric", "step"])
        control = long["split"] == CONTROL_RUN
        names = long["model"] if export.by == "model" else long["split"].map(run_name)
        series = names.where(~control, "Base webtext (control, " + long["model"] + ")")
        sides = QUESTION_SIDES if long["metric"].str.contains("mcq").all() else DOC_SIDES
        side = long["metric"].str.extract(r"_(train|val)(?:_|/|$)")[0]
        frames.append(
            pd.DataFrame(
                {
                    "panel": long["split"].map(run_name) if export.panel is None else panels[export.panel].title,
                    "series": series,
                    "style": side.map(sides),
                    "x": long["step"] / export.per_epoch if export.per_epoch else long["step"],
                    "y": long["value"],
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def main(argv: list[str] | None = None) -> None:
    """``python -m knowlab.fictionalqa.paper_figures FOLDER OUTDIR``: draw every family the exports cover,
    as ``OUTDIR/paper_<family>.{pdf,png}``, for side-by-side comparison with this pipeline's figures."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("folder", type=Path, help="the paper's raw_data folder (v5/, v6-7/, 6-7/)")
    parser.add_argument("outdir", type=Path)
    args = parser.parse_args(argv)
    args.outdir.mkdir(parents=True, exist_ok=True)
    for family in FAMILIES:
        if family == "fig2":
            continue  # not in the exports
        out = args.outdir / f"paper_{family}"
        plot_family(
            family, paper_curves(args.folder, family), f"{out}.pdf", f"{out}.png", note="the paper's W&B exports"
        )
        print(f"{out}.png")


if __name__ == "__main__":
    main()
