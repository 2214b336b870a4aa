"""Compare the tables of two results folders: the check that a refactor changed no number.

Every table under both folders is compared by content: parquet and csv as data frames
(``pandas.testing.assert_frame_equal``, exact values, NaN equal to NaN, same column
order and dtypes), json as parsed objects, jsonl record by record, tex and txt as text.
Provenance records (``manifest.json``, ``*.manifest.json``) and logs are left out: they
carry wall times, hosts and commits, which differ between any two runs.  Figures (pdf,
png) are left out too: matplotlib embeds creation dates in PDFs.

Usage::

    python -m knowlab.core.compare BEFORE/results AFTER/results

prints one line per differing, missing or extra table and a last line
``compare: identical=N/M``; exit status 0 when every table is identical, else 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd
from pandas.testing import assert_frame_equal

from knowlab.core.io import read_jsonl

TABLE_SUFFIXES = (".parquet", ".csv", ".json", ".jsonl", ".tex", ".txt")


def _is_table(path: Path, root: Path) -> bool:
    rel = path.relative_to(root)
    if rel.parts and rel.parts[0] == "logs":
        return False
    if path.name == "manifest.json" or path.name.endswith(".manifest.json"):
        return False
    return path.suffix in TABLE_SUFFIXES


def tables(root: Path) -> list[str]:
    """Relative paths (posix) of every table under ``root``, sorted."""
    root = Path(root)
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and _is_table(p, root))


def difference(a: Path, b: Path) -> str | None:
    """``None`` when the two files hold the same table, else a one-line reason."""
    suffix = a.suffix
    try:
        if suffix in (".parquet", ".csv"):
            read = pd.read_parquet if suffix == ".parquet" else pd.read_csv
            assert_frame_equal(read(a), read(b), check_exact=True)
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


def compare(before: Path, after: Path) -> tuple[int, int, list[str]]:
    """Compare every table of two results folders.

    Returns:
        ``(identical, total, problems)``: the number of tables present in both and equal,
        the number of distinct table paths in either folder, and one line per problem
        (``differs``, ``only in before``, ``only in after``).
    """
    before, after = Path(before), Path(after)
    a, b = set(tables(before)), set(tables(after))
    problems = [f"only in before: {p}" for p in sorted(a - b)] + [f"only in after: {p}" for p in sorted(b - a)]
    identical = 0
    for rel in sorted(a & b):
        reason = difference(before / rel, after / rel)
        if reason is None:
            identical += 1
        else:
            problems.append(f"differs: {rel}: {reason}")
    return identical, len(a | b), problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    for root in (args.before, args.after):
        if not root.is_dir():
            parser.error(f"not a folder: {root}")
    identical, total, problems = compare(args.before, args.after)
    for line in problems:
        print(line)
    print(f"compare: identical={identical}/{total}")
    return 0 if identical == total else 1


if __name__ == "__main__":
    sys.exit(main())
