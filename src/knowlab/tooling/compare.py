"""Compare the tables of two results folders: the check that a refactor changed no number.

Every table under both folders is compared by content: parquet and csv as data frames
(``pandas.testing.assert_frame_equal``, exact values, NaN equal to NaN, same column
order and dtypes), json as parsed objects, jsonl record by record, tex and txt as text.
Left out: provenance records (``manifest.json``, ``*manifest.json``, the RO-Crate) and logs, which carry
wall times, hosts and commits; figures (pdf, png), whose PDFs embed creation dates; and
the columns named by ``--ignore-columns`` (default ``wall_s``, the training log's wall
clock), which measure the machine, not the result.

A change that moves a table names it with ``--moved BEFORE_PATH=AFTER_PATH`` (compared
across the two paths), or moves a folder with ``--moved BEFORE_FOLDER=AFTER_FOLDER`` (every
table under it compared with the same relative path under the new folder; a moved table, or a
longer moved folder, takes precedence over a folder that holds it), and one that stops writing a
table with ``--removed PATH`` (listed, not counted as a difference); all are relative to the
results folders.

Usage::

    python -m knowlab.tooling.compare BEFORE/results AFTER/results [--moved A=B ...] [--removed P ...]

prints one line per differing, missing, extra, moved or removed table and a last line
``compare: identical=N/M``; exit status 0 when every compared table is identical, else 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
from pandas.testing import assert_frame_equal

from knowlab.core.io import read_jsonl
from knowlab.layout import LOGS_FOLDER, RO_CRATE

TABLE_SUFFIXES = (".parquet", ".csv", ".json", ".jsonl", ".tex", ".txt")
VOLATILE_COLUMNS = ("wall_s",)


def _is_table(path: Path, root: Path) -> bool:
    rel = path.relative_to(root)
    if rel.parts and rel.parts[0] in (LOGS_FOLDER, RO_CRATE.relative()):  # the crate records the commit: provenance
        return False
    if path.name.endswith("manifest.json"):
        return False
    return path.suffix in TABLE_SUFFIXES


def tables(root: Path) -> list[str]:
    """Relative paths (posix) of every table under ``root``, sorted."""
    root = Path(root)
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and _is_table(p, root))


def difference(a: Path, b: Path, ignore_columns: Sequence[str] = VOLATILE_COLUMNS) -> str | None:
    """``None`` when the two files hold the same table, else a one-line reason."""
    suffix = a.suffix
    try:
        if suffix in (".parquet", ".csv"):
            read = pd.read_parquet if suffix == ".parquet" else pd.read_csv
            frames = [read(path) for path in (a, b)]
            frames = [f.drop(columns=[c for c in ignore_columns if c in f.columns]) for f in frames]
            assert_frame_equal(*frames, check_exact=True)
        elif suffix == ".json":
            if json.loads(a.read_text()) != json.loads(b.read_text()):
                return "json content differs"
        elif suffix == ".jsonl":
            ra, rb = read_jsonl(a), read_jsonl(b)
            if len(ra) != len(rb):
                return f"{len(ra)} vs {len(rb)} records"
            for i, (x, y) in enumerate(zip(ra, rb), start=1):
                if x != y:
                    return f"record {i} differs"
        elif a.read_bytes() != b.read_bytes():
            return "text differs"
    except AssertionError as err:
        return " ".join(str(err).split())[:300]
    return None


def moves(moved: Mapping[str, str], before: set[str], after: set[str]) -> dict[str, tuple[str, str]]:
    """``{table in before: (table in after, the --moved source)}`` for ``moved`` (``{before: after}``):
    a key that is a table of ``before`` moves to its value; any other key is a folder, whose every
    table moves to the same relative path under the value.  A table moved by its own path wins over a
    folder that holds it, a longer folder over a shorter one; a pair whose new path is not in
    ``after`` is left out."""
    pairs: dict[str, tuple[str, str]] = {}
    folders = [(old.rstrip("/"), new.rstrip("/")) for old, new in moved.items() if old not in before]
    for old, new in sorted(folders, key=lambda move: len(move[0])):  # longer folders last: they win
        for path in before:
            if path.startswith(f"{old}/"):
                pairs[path] = (f"{new}/{path[len(old) + 1 :]}", f"{old}/")
    pairs |= {old: (new, old) for old, new in moved.items() if old in before}
    return {old: (new, source) for old, (new, source) in pairs.items() if new in after}


def compare(
    before: Path,
    after: Path,
    *,
    moved: Mapping[str, str] | None = None,
    removed: Sequence[str] = (),
    ignore_columns: Sequence[str] = VOLATILE_COLUMNS,
) -> tuple[int, int, list[str]]:
    """Compare every table of two results folders.

    Args:
        moved: ``{path in before: path in after}`` for tables (or folders, :func:`moves`) the change moved.
        removed: paths in ``before`` of tables the change no longer writes.
        ignore_columns: columns left out of every data-frame comparison.

    Returns:
        ``(identical, total, problems)``: the number of tables compared and equal, the number
        compared or missing on one side (removed tables not counted), and one line per
        table not identical (``differs``, ``only in before``, ``only in after``), then one
        line per moved table (per moved folder, with its count of tables) or removed table.
    """
    before, after = Path(before), Path(after)
    moved, removed = dict(moved or {}), set(removed)
    a, b = set(tables(before)), set(tables(after))
    moves_found = moves(moved, a, b)
    pairs = {p: p for p in a & b} | {old: new for old, (new, _) in moves_found.items()}
    only_before = sorted(a - set(pairs) - removed)
    only_after = sorted(b - set(pairs.values()))
    problems = [f"only in before: {p}" for p in only_before] + [f"only in after: {p}" for p in only_after]
    identical = 0
    for old, new in sorted(pairs.items()):
        reason = difference(before / old, after / new, ignore_columns)
        if reason is None:
            identical += 1
        else:
            problems.append(f"differs: {old}" + (f" -> {new}" if new != old else "") + f": {reason}")
    notes = []
    for old, new in sorted(moved.items()):
        if old in a:
            notes += [f"moved: {old} -> {new}"] if new in b else []
            continue
        n = sum(source == f"{old.rstrip('/')}/" for _, source in moves_found.values())
        notes += [f"moved: {old.rstrip('/')}/ -> {new.rstrip('/')}/ ({n} tables)"] if n else []
    notes += [f"removed: {p}" for p in sorted(removed & a)]
    return identical, len(pairs) + len(only_before) + len(only_after), problems + notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--moved", action="append", default=[], metavar="BEFORE=AFTER", help="a moved table, or folder")
    parser.add_argument("--removed", action="append", default=[], metavar="PATH", help="a table no longer written")
    parser.add_argument(
        "--ignore-columns", nargs="*", default=list(VOLATILE_COLUMNS), help="columns left out (default: wall_s)"
    )
    args = parser.parse_args(argv)
    if bad := [m for m in args.moved if m.count("=") != 1]:
        parser.error(f"--moved takes BEFORE=AFTER, got {bad[0]!r}")
    for root in (args.before, args.after):
        if not root.is_dir():
            parser.error(f"not a folder: {root}")
    identical, total, problems = compare(
        args.before,
        args.after,
        moved=dict(m.split("=") for m in args.moved),
        removed=args.removed,
        ignore_columns=args.ignore_columns,
    )
    for line in problems:
        print(line)
    print(f"compare: identical={identical}/{total}")
    return 0 if identical == total else 1


if __name__ == "__main__":
    sys.exit(main())
