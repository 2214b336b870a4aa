"""Webtext from gensim's packaged Wikipedia and Lee corpora, verified and split."""

from pathlib import Path

import pytest
import yaml

from knowlab.core.io import HashMismatchError
from knowlab.fictionalqa.webtext import build_webtext

CFG = yaml.safe_load((Path(__file__).resolve().parents[2] / "config" / "config.yaml").read_text())["webtext"]


def test_real_paragraphs_split_deterministically():
    train, heldout = build_webtext(CFG["files"], CFG["min_words"], 32, seed=5)
    assert len(heldout) == 32 and len(train) > 3000
    ids = [r["webtext_id"] for r in train + heldout]
    assert len(ids) == len(set(ids))
    assert {r["source"] for r in train} == {"wiki", "lee"}
    assert all(len(r["text"].split()) >= CFG["min_words"] and "'''" not in r["text"] for r in train)
    assert (train, heldout) == build_webtext(CFG["files"], CFG["min_words"], 32, seed=5)


def test_pin_mismatch_names_the_file():
    files = {**CFG["files"], "lee": {**CFG["files"]["lee"], "sha256": "1" * 64}}
    with pytest.raises(HashMismatchError, match="lee_background.cor"):
        build_webtext(files, 40, 10, seed=0)
