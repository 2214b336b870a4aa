"""Figures of the FictionalQA study (seed 004), each saved as PDF and PNG.

- :func:`plot_loss`: train/val fiction loss and held-out webtext loss vs step (Figs. 4-5).
- :func:`plot_em`: EM@50 on train/val documents vs fiction epochs completed (Fig. 3 right).
- :func:`plot_mcq`: MCQ accuracy vs step on train-/val-document questions, fiction run vs control (Figs. 7, 10).
- :func:`plot_mixture`: samples seen and epochs completed per source vs step (Fig. 2).
- :func:`plot_mcnemar`: McNemar p-value matrix between checkpoints (Holm-corrected).

A fiction run is named after the split it trains on (``doc``, ``event``, ``style_news``...).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from knowlab.io import atomic_path  # noqa: E402

plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "figure.dpi": 120, "axes.grid": True, "grid.alpha": 0.3})
SIDE_STYLE = {"train": "-", "val": "--"}


def save(fig, pdf: str | Path, png: str | Path, tight: bool = True) -> None:
    """Save ``fig`` to both paths atomically and close it."""
    if tight:
        fig.tight_layout()
    for path in (pdf, png):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=Path(path).suffix[1:], dpi=150)
    plt.close(fig)


def _line(ax, frame: pd.DataFrame, x: str, y: str, **kwargs) -> None:
    frame = frame.sort_values(x)
    ax.plot(frame[x], frame[y], marker="o", markersize=3, **kwargs)


def plot_loss(summary: pd.DataFrame, run: str, control: str, pdf, png) -> None:
    """Left: fiction loss on train/val documents of the split; right: held-out webtext loss."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    docs = summary[summary["suite"] == "fiction_doc"]
    for r, color in ((run, "C0"), (control, "C7")):
        for side in ("train", "val"):
            part = docs[(docs["run"] == r) & (docs["side"] == side)]
            label = f"{'fiction run' if r == run else 'webtext-only control'}: {side} documents"
            _line(left, part, "step", "loss", color=color, linestyle=SIDE_STYLE[side], label=label)
        web = summary[(summary["suite"] == "webtext") & (summary["run"] == r) & (summary["side"] == "all")]
        _line(right, web, "step", "loss", color=color, label="fiction run" if r == run else "webtext-only control")
    left.set(title=f"Fiction document loss ({run} split)", xlabel="optimizer step", ylabel="loss (nats/token)")
    right.set(title="Held-out webtext loss", xlabel="optimizer step", ylabel="loss (nats/token)")
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    save(fig, pdf, png)


def plot_em(summary: pd.DataFrame, train_log: pd.DataFrame, run: str, em_tokens: int, pdf, png) -> None:
    """EM of the last ``em_tokens`` tokens vs fiction epochs completed at each checkpoint."""
    epochs = dict(zip(train_log["step"], train_log["fiction_epochs"]))
    epochs[0] = 0.0
    docs = summary[(summary["suite"] == "fiction_doc") & (summary["run"] == run)].copy()
    docs["epochs"] = docs["step"].map(epochs)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for side in ("train", "val"):
        _line(ax, docs[docs["side"] == side], "epochs", "em", linestyle=SIDE_STYLE[side], label=f"{side} documents")
    ax.set(
        title=f"Verbatim exact match of the last {em_tokens} tokens ({run} split)",
        xlabel="epochs completed on the fiction training documents",
        ylabel=f"EM@{em_tokens} (teacher-forced)",
        ylim=(-0.05, 1.05),
    )
    ax.legend(fontsize=8)
    save(fig, pdf, png)


def plot_mcq(summary: pd.DataFrame, run: str, control: str, suite: str, pdf, png) -> None:
    """MCQ ``acc`` and ``acc_norm`` vs step, train-/val-document questions, run vs control."""
    mcq = summary[summary["suite"] == suite]
    n_choices = int(suite.removeprefix("mcq"))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, metric in zip(axes, ("acc", "acc_norm")):
        for r, color in ((run, "C0"), (control, "C7")):
            for side in ("train", "val"):
                part = mcq[(mcq["run"] == r) & (mcq["side"] == side)]
                label = f"{'fiction run' if r == run else 'control'}: {side}-document questions"
                _line(ax, part, "step", metric, color=color, linestyle=SIDE_STYLE[side], label=label)
        ax.axhline(1 / n_choices, color="k", linewidth=0.8, linestyle=":", label="chance")
        ax.set(title=f"MCQ-{n_choices} {metric} ({run} split)", xlabel="optimizer step", ylabel=metric)
    axes[0].legend(fontsize=8)
    save(fig, pdf, png)


def plot_mixture(logs: pd.DataFrame, pdf, png) -> None:
    """Samples seen (left) and epochs completed (right) per source vs step, one line per run."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for i, (run, log) in enumerate(logs.groupby("run")):
        start = {"step": 0, **{f"{s}_{k}": 0 for s in ("fiction", "webtext") for k in ("samples_seen", "epochs")}}
        log = pd.concat([pd.DataFrame([start]), log], ignore_index=True)
        for source, style in (("fiction", "-"), ("webtext", "--")):
            kwargs = {"color": f"C{i}", "linestyle": style, "label": f"{run}: {source}"}
            left.plot(log["step"], log[f"{source}_samples_seen"], **kwargs)
            right.plot(log["step"], log[f"{source}_epochs"], **kwargs)
    left.set(title="Samples seen per source", xlabel="optimizer step", ylabel="samples seen")
    right.set(title="Epochs completed per source", xlabel="optimizer step", ylabel="epochs")
    left.legend(fontsize=8)
    save(fig, pdf, png)


def _pvalue_cells(ax, matrix: np.ndarray) -> None:
    for (i, j), value in np.ndenumerate(matrix):
        ax.text(j, i, f"{value:.2g}", ha="center", va="center", fontsize=8, color="w" if value > 0.5 else "k")
    ax.grid(False)


def plot_mcnemar(table: pd.DataFrame, title: str, pdf, png) -> None:
    """Holm-corrected McNemar p-values: checkpoint x checkpoint of the run (left) and,
    when present, the run vs the control at matched steps (right)."""
    run = table["run_a"].iloc[0]
    within = table[(table["run_a"] == run) & (table["run_b"] == run)]
    versus = table[table["run_b"] != run]
    fig, axes = plt.subplots(
        1, 2 if len(versus) else 1, figsize=(11 if len(versus) else 5.5, 4.5), squeeze=False, layout="constrained"
    )
    matrix = within.pivot(index="step_a", columns="step_b", values="pvalue_holm").sort_index().sort_index(axis=1)
    ax = axes[0][0]
    image = ax.imshow(matrix.to_numpy(), vmin=0, vmax=1, cmap="viridis_r")
    ax.set_xticks(range(len(matrix.columns)), matrix.columns)
    ax.set_yticks(range(len(matrix.index)), matrix.index)
    _pvalue_cells(ax, matrix.to_numpy())
    ax.set(title=f"{run}: checkpoint vs checkpoint", xlabel="checkpoint step", ylabel="checkpoint step")
    if len(versus):
        ax = axes[0][1]
        row = versus.sort_values("step_a")
        strip = row["pvalue_holm"].to_numpy()[None, :]
        ax.imshow(strip, vmin=0, vmax=1, cmap="viridis_r")
        ax.set_xticks(range(len(row)), row["step_a"])
        ax.set_yticks([0], [f"vs {row['run_b'].iloc[0]}"])
        _pvalue_cells(ax, strip)
        ax.set(title=f"{run} vs control at matched steps", xlabel="checkpoint step")
    fig.colorbar(image, ax=axes[0].tolist(), label=f"p-value ({table['correction'].iloc[0].capitalize()}-corrected)")
    fig.suptitle(title)
    save(fig, pdf, png, tight=False)
