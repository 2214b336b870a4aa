"""knowlab.tooling.compare: two results folders, table by table."""

import json

import numpy as np
import pandas as pd

from knowlab.tooling.compare import compare, main


def _results(root, loss=1.0):
    (root / "stats").mkdir(parents=True)
    pd.DataFrame({"item_id": ["a", "b"], "loss": [loss, np.nan]}).to_parquet(root / "stats" / "t.parquet")
    (root / "splits.json").write_text(json.dumps({"train": ["a"]}))
    (root / "items.jsonl").write_text('{"id": 1}\n{"id": 2}\n')
    (root / "manifest.json").write_text(json.dumps({"wall_s": loss}))  # provenance: left out
    (root / "logs").mkdir()
    (root / "logs" / "x.log").write_text(str(loss))


def test_identical_folders_and_nan(tmp_path, capsys):
    _results(tmp_path / "a")
    _results(tmp_path / "b")
    assert compare(tmp_path / "a", tmp_path / "b") == (3, 3, [])
    assert main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "compare: identical=3/3"


def test_a_changed_value_and_a_missing_table_are_reported(tmp_path, capsys):
    _results(tmp_path / "a")
    _results(tmp_path / "b", loss=1.0 + 1e-12)
    (tmp_path / "b" / "items.jsonl").unlink()
    identical, total, problems = compare(tmp_path / "a", tmp_path / "b")
    assert (identical, total) == (1, 3)
    assert problems[0] == "only in before: items.jsonl" and problems[1].startswith("differs: stats/t.parquet")
    assert main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1


def test_moved_removed_and_volatile_columns(tmp_path):
    _results(tmp_path / "a")
    _results(tmp_path / "b")
    (tmp_path / "b" / "stats" / "t.parquet").rename(tmp_path / "b" / "moved.parquet")
    (tmp_path / "a" / "old.jsonl").write_text('{"id": 3}\n')
    pd.DataFrame({"step": [1], "wall_s": [0.1]}).to_parquet(tmp_path / "a" / "log.parquet")
    pd.DataFrame({"step": [1], "wall_s": [0.2]}).to_parquet(tmp_path / "b" / "log.parquet")
    identical, total, problems = compare(
        tmp_path / "a", tmp_path / "b", moved={"stats/t.parquet": "moved.parquet"}, removed=["old.jsonl"]
    )
    assert (identical, total) == (4, 4)
    assert problems == ["moved: stats/t.parquet -> moved.parquet", "removed: old.jsonl"]
    assert compare(tmp_path / "a", tmp_path / "b", ignore_columns=())[0] < 4


def test_empty_jsonl_tables_compare_as_tables(tmp_path):
    """A legitimately empty output (no kept question) is a table of 0 records, not bad input."""
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "fict_qa.jsonl").write_text("")
    assert compare(tmp_path / "a", tmp_path / "b") == (1, 1, [])
    (tmp_path / "b" / "fict_qa.jsonl").write_text('{"id": 1}\n')
    assert compare(tmp_path / "a", tmp_path / "b") == (0, 1, ["differs: fict_qa.jsonl: 0 vs 1 records"])


def test_a_moved_folder_maps_every_table_under_it(tmp_path, capsys):
    """``--moved OLD=NEW`` with a folder: every table under it is compared at the same path under NEW;
    a table moved by its own path, or by a longer folder, is not taken by the shorter folder."""
    _results(tmp_path / "a")
    _results(tmp_path / "b")
    (tmp_path / "a" / "stats" / "run").mkdir()
    (tmp_path / "a" / "stats" / "run" / "s.json").write_text(json.dumps({"p": 0.5}))
    (tmp_path / "a" / "stats" / "u.json").write_text("[1]")
    (tmp_path / "b" / "study" / "stats" / "run").mkdir(parents=True)
    (tmp_path / "b" / "stats" / "t.parquet").rename(tmp_path / "b" / "study" / "stats" / "t.parquet")
    (tmp_path / "b" / "study" / "stats" / "run" / "s.json").write_text(json.dumps({"p": 0.5}))
    (tmp_path / "b" / "study" / "u.json").write_text("[1]")
    moved = {"stats": "study/stats", "stats/u.json": "study/u.json"}
    identical, total, problems = compare(tmp_path / "a", tmp_path / "b", moved=moved)
    assert (identical, total) == (5, 5)
    assert problems == ["moved: stats/ -> study/stats/ (2 tables)", "moved: stats/u.json -> study/u.json"]
    (tmp_path / "b" / "study" / "stats" / "run" / "s.json").write_text(json.dumps({"p": 0.25}))
    moves = ["--moved", "stats/=study/stats/", "--moved", "stats/u.json=study/u.json"]
    assert main([str(tmp_path / "a"), str(tmp_path / "b"), *moves]) == 1
    out = capsys.readouterr().out
    assert "differs: stats/run/s.json -> study/stats/run/s.json: json content differs" in out
    assert out.strip().splitlines()[-1] == "compare: identical=4/5"
