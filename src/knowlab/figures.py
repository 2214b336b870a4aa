"""Figures of the FictionalQA study (seed 004), each saved as PDF and PNG.

- :func:`plot_loss`: train/val fiction loss and held-out webtext loss vs step (Figs. 4-5).
- :func:`plot_em`: EM@50 on train/val documents vs fiction epochs completed (Fig. 3 right).
- :func:`plot_mcq`: MCQ accuracy vs step on train-/val-document questions, fiction run vs control (Figs. 7, 10).
- :func:`plot_mixture`: samples seen and epochs completed per source vs step (Fig. 2).
- :func:`plot_mcnemar`: McNemar p-value matrix between checkpoints (Holm-corrected).
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


def save(fig, pdf: str | Path, png: str | Path) -> None:
    """Save ``fig`` to both paths atomically and close it."""
    fig.tight_layout()
    for path in (pdf, png):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=Path(path).suffix[1:], dpi=150)
    plt.close(fig)


def _line(ax, frame: pd.DataFrame, x: str, y: str, **kwargs) -> None:
    frame = frame.sort_values(x)
    ax.plot(frame[x], frame[y], marker="o", markersize=3, **kwargs)


def plot_loss(summary: pd.DataFrame, run: str, control: str, split_name: str, pdf, png) -> None:
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
    left.set(title=f"Fiction document loss ({split_name} split)", xlabel="optimizer step", ylabel="loss (nats/token)")
    right.set(title="Held-out webtext loss", xlabel="optimizer step", ylabel="loss (nats/token)")
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    save(fig, pdf, png)


def plot_em(summary: pd.DataFrame, train_log: pd.DataFrame, run: str, split_name: str, em_tokens: int, pdf, png) -> None:
    """EM of the last ``em_tokens`` tokens vs fiction epochs completed at each checkpoint."""
    epochs = dict(zip(train_log["step"], train_log["fiction_epochs"]))
    epochs[0] = 0.0
    docs = summary[(summary["suite"] == "fiction_doc") & (summary["run"] == run)].copy()
    docs["epochs"] = docs["step"].map(epochs)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for side in ("train", "val"):
        _line(ax, docs[docs["side"] == side], "epochs", "em", linestyle=SIDE_STYLE[side], label=f"{side} documents")
    ax.set(
        title=f"Verbatim exact match of the last {em_tokens} tokens ({split_name} split)",
        xlabel="epochs completed on the fiction training documents",
        ylabel=f"EM@{em_tokens} (teacher-forced)",
        ylim=(-0.05, 1.05),
    )
    ax.legend(fontsize=8)
    save(fig, pdf, png)


def plot_mcq(summary: pd.DataFrame, run: str, control: str, split_name: str, suite: str, pdf, png) -> None:
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
        ax.set(title=f"MCQ-{n_choices} {metric} ({split_name} split)", xlabel="optimizer step", ylabel=metric)
    axes[0].legend(fontsize=8)
    save(fig, pdf, png)


def plot_mixture(logs: pd.DataFrame, pdf, png) -> None:
    """Samples seen (left) and epochs completed (right) per source vs step, one line per run."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for i, (run, log) in enumerate(logs.groupby("run")):
        for source, style in (("fiction", "-"), ("webtext", "--")):
            kwargs = {"color": f"C{i}", "linestyle": style, "label": f"{run}: {source}"}
            left.plot(log["step"], log[f"{source}_samples_seen"], **kwargs)
            right.plot(log["step"], log[f"{source}_epochs"], **kwargs)
    left.set(title="Samples seen per source", xlabel="optimizer step", ylabel="samples seen")
    right.set(title="Epochs completed per source", xlabel="optimizer step", ylabel="epochs")
    left.legend(fontsize=8)
    save(fig, pdf, png)


def plot_mcnemar(table: pd.DataFrame, title: str, pdf, png) -> None:
    """Heatmap of Holm-corrected McNemar p-values between the checkpoints of each run."""
    runs = sorted(table["run_a"].unique())
    fig, axes = plt.subplots(1, len(runs), figsize=(5 * len(runs), 4.3), squeeze=False)
    for ax, run in zip(axes[0], runs):
        part = table[(table["run_a"] == run) & (table["run_b"] == run)]
        matrix = part.pivot(index="step_a", columns="step_b", values="pvalue_holm").sort_index().sort_index(axis=1)
        image = ax.imshow(matrix.to_numpy(), vmin=0, vmax=1, cmap="viridis_r")
        ax.set_xticks(range(len(matrix.columns)), matrix.columns)
        ax.set_yticks(range(len(matrix.index)), matrix.index)
        for (i, j), value in np.ndenumerate(matrix.to_numpy()):
            ax.text(j, i, f"{value:.2g}", ha="center", va="center", fontsize=7, color="w" if value < 0.5 else "k")
        ax.set(title=f"{run}", xlabel="checkpoint step", ylabel="checkpoint step")
        ax.grid(False)
        fig.colorbar(image, ax=ax, label="p-value (Holm-corrected)")
    fig.suptitle(title)
    save(fig, pdf, png)
