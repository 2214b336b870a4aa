"""Tables as CSV and LaTeX, shared by the studies (SORT Tables 1-2, the grounding tables)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from knowlab.core.io import atomic_path

_LATEX_SPECIAL = re.compile(r"([\\&%$#_{}~^])")
_LATEX_REPLACE = {"\\": r"\textbackslash{}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
_LATEX_UNICODE = {"±": r"$\pm$", "≤": r"$\leq$", "≥": r"$\geq$", "–": "--", "—": "---"}


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters (``\\ & % $ # _ { } ~ ^``) in plain ``text``."""
    return _LATEX_SPECIAL.sub(lambda m: _LATEX_REPLACE.get(m.group(1), "\\" + m.group(1)), str(text))


def _latex_unicode(text: str) -> str:
    for char, macro in _LATEX_UNICODE.items():
        text = text.replace(char, macro)
    return text


def write_table(
    df: pd.DataFrame,
    csv_path: str | Path,
    tex_path: str | Path,
    caption: str,
    label: str | None = None,
    float_format: str = "{:.3f}",
) -> None:
    """Write ``df`` as CSV (UTF-8, no index) and as a LaTeX ``table`` (booktabs rules), atomically.

    The LaTeX has every special character of the cells, the column names and the caption
    escaped (``_`` -> ``\\_``), and ``±``, ``≤``, ``≥`` written as math so that it compiles
    with pdflatex (needs ``\\usepackage{booktabs}``).  Floats use ``float_format``.

    Raises:
        ValueError: ``df`` has no columns.
    """
    if df.shape[1] == 0:
        raise ValueError("write_table got a table without columns")
    with atomic_path(csv_path) as tmp:
        df.to_csv(tmp, index=False)
    shown = df.copy()
    shown.columns = [latex_escape(c) for c in shown.columns]
    for column in shown.columns:
        if pd.api.types.is_float_dtype(shown[column]):
            shown[column] = [("" if pd.isna(v) else float_format.format(v)) for v in shown[column]]
        else:
            shown[column] = ["" if v is None or v is pd.NA else latex_escape(v) for v in shown[column]]
    body = shown.to_latex(
        index=False,
        escape=False,
        caption=latex_escape(caption),
        label=label,
        column_format="l" + "r" * (shown.shape[1] - 1),
        position="htbp",
    )
    with atomic_path(tex_path) as tmp:
        tmp.write_text(_latex_unicode(body), encoding="utf-8")
