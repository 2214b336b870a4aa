"""Audit: re-hash what every manifest recorded and report what changed since.

Each job's manifest (see :mod:`knowlab.core.provenance`) lists its inputs and outputs
with sha256.  :func:`audit` walks every ``*manifest.json`` under a folder, hashes
those files again, and returns one row per recorded file whose content differs
(``changed``) or that is gone (``missing``).  An empty table means every number
in ``results/`` still derives from the inputs its manifest names.

Run it as ``python -m knowlab.tooling.audit [results] [resources]``; it prints the
differences and exits with 1 when there are any.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from knowlab.core.io import read_json, sha256_file
from knowlab.layout import OUTPUT_FOLDERS
from knowlab.tooling.trace import recorded_files


def audit(*folders: str | Path, base: str | Path = ".") -> pd.DataFrame:
    """Rows ``manifest, role, path, status, recorded, current`` for every changed or missing file.

    Paths in manifests are relative to the workflow's working directory ``base``.
    """
    rows = []
    base = Path(base)
    for folder in folders:
        for manifest_path in sorted(Path(folder).rglob("*manifest.json")):
            manifest = read_json(manifest_path)
            for role in ("inputs", "outputs"):
                for entry in manifest.get(role, []):
                    for name, recorded in recorded_files(entry):
                        path = Path(name)
                        full = path if path.is_absolute() else base / path
                        if recorded is None:
                            continue
                        current = sha256_file(full) if full.is_file() else None
                        if current != recorded:
                            rows.append(
                                {
                                    "manifest": str(manifest_path),
                                    "role": role[:-1],
                                    "path": str(path),
                                    "status": "missing" if current is None else "changed",
                                    "recorded": recorded,
                                    "current": current,
                                }
                            )
    return pd.DataFrame(rows, columns=["manifest", "role", "path", "status", "recorded", "current"])


def main(argv: list[str] | None = None) -> int:
    folders = (argv if argv is not None else sys.argv[1:]) or list(OUTPUT_FOLDERS)
    table = audit(*folders)
    if table.empty:
        print(f"audit: every file recorded in the manifests under {', '.join(folders)} is unchanged")
        return 0
    print(table.to_string(index=False))
    print(f"audit: {len(table)} recorded file(s) changed or missing")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
