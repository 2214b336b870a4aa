"""Webtext from gensim's packaged Wikipedia and Lee corpora, verified and split."""

import bz2
import functools
from pathlib import Path

import pytest
import yaml

from knowlab.core.io import DataError, HashMismatchError
from knowlab.fictionalqa import webtext
from knowlab.fictionalqa.settings import WebtextSettings
from knowlab.fictionalqa.webtext import build_webtext, lee_documents, wiki_paragraphs

CFG = yaml.safe_load((Path(__file__).resolve().parents[2] / "config" / "config.yaml").read_text())["webtext"]


def _settings(files=CFG["files"], min_words=CFG["min_words"], heldout_size=32):
    return WebtextSettings(files=files, min_words=min_words, heldout_size=heldout_size)


def test_real_paragraphs_split_deterministically(monkeypatch):
    # parse each pinned file once (~2 s for the wiki dump): the second build checks the split, on the same paragraphs
    for name in ("wiki_paragraphs", "lee_documents"):
        monkeypatch.setattr(webtext, name, functools.cache(getattr(webtext, name)))
    train, heldout = build_webtext(_settings(), seed=5)
    assert len(heldout) == 32 and len(train) > 3000
    ids = [r["webtext_id"] for r in train + heldout]
    assert len(ids) == len(set(ids))
    assert {r["source"] for r in train} == {"wiki", "lee"}
    assert all(len(r["text"].split()) >= CFG["min_words"] and "'''" not in r["text"] for r in train)
    assert (train, heldout) == build_webtext(_settings(), seed=5)
    other_train, other_heldout = build_webtext(_settings(), seed=6)
    assert other_heldout != heldout and sorted(map(str, other_train + other_heldout)) == sorted(
        map(str, train + heldout)
    )


def test_pin_mismatch_names_the_file():
    files = {**CFG["files"], "lee": {**CFG["files"]["lee"], "sha256": "1" * 64}}
    with pytest.raises(HashMismatchError, match=r"sha256 mismatch for .*/lee_background\.cor: expected 1{64}, got"):
        build_webtext(_settings(files, 40, 10), seed=0)


def test_lee_file_not_utf8_or_empty_names_the_file(tmp_path):
    path = tmp_path / "lee_background.cor"
    words = " ".join(["word"] * 40)
    path.write_bytes(f"{words}\n{words} caf".encode() + b"\xe9\n")
    with pytest.raises(
        DataError, match=r"lee_background\.cor:2: not valid utf-8 \(byte b'\\xe9' at column 204, file offset 403\)"
    ):
        lee_documents(path, 40)
    path.write_text(f"{words}\nshort line\n")
    assert [r["webtext_id"] for r in lee_documents(path, 40)] == ["lee_0"]
    for content, message in (("", "empty file"), ("short line\n", "no document of at least 40 words")):
        path.write_text(content)
        with pytest.raises(DataError, match=rf"lee_background\.cor: {message}"):
            lee_documents(path, 40)


def test_wiki_dump_empty_or_not_bz2_names_the_file(tmp_path):
    path = tmp_path / "enwiki.xml.bz2"
    for data, message in (
        (b"", "not a bz2-compressed UTF-8 MediaWiki XML dump"),
        (bz2.compress(b""), "not a bz2-compressed UTF-8 MediaWiki XML dump"),
        (b"plain text, not bz2", "not a bz2-compressed UTF-8 MediaWiki XML dump"),
        (bz2.compress(b"<mediawiki></mediawiki>"), "not a .* MediaWiki XML dump: ValueError"),
        (
            bz2.compress(b'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/"></mediawiki>'),
            "no paragraph of at",
        ),
        (  # a Latin-1 byte: the XML parser names the line and column
            bz2.compress(b'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">\n<page>caf\xe9</page>'),
            r"not a .* dump: ParseError: not well-formed \(invalid token\): line 2, column 9",
        ),
    ):
        path.write_bytes(data)
        with pytest.raises(DataError, match=rf"enwiki\.xml\.bz2: {message}"):
            wiki_paragraphs(path, 40)
    with pytest.raises(FileNotFoundError, match=r"No such file or directory: .*/absent\.xml\.bz2"):
        wiki_paragraphs(tmp_path / "absent.xml.bz2", 40)
