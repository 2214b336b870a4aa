"""Splits: no document and no question on both sides; bad splits fail clearly."""

from collections import Counter

import pytest

from knowlab.fictionalqa.corpus.schema import STYLES
from knowlab.fictionalqa.splits import SPLITS, TEXT_FIELD, SplitError, make_split, training_texts


@pytest.mark.parametrize("name", SPLITS)
def test_no_document_or_question_on_both_sides(corpus, name):
    split = make_split(name, corpus["fictions"], corpus["fict_qa"], seed=3)
    id_field, _ = TEXT_FIELD[split["documents"]]
    train_docs, val_docs = set(split["train_documents"]), set(split["val_documents"])
    assert train_docs and val_docs and not train_docs & val_docs
    assert train_docs | val_docs == {r[id_field] for r in corpus[split["documents"]]}
    train_q, val_q = set(split["train_questions"]), set(split["val_questions"])
    assert train_q and val_q and not train_q & val_q
    assert train_q | val_q == {q["question_id"] for q in corpus["fict_qa"]}
    owner = {q["question_id"]: q[id_field] for q in corpus["fict_qa"]}
    assert all(owner[q] in train_docs for q in train_q)
    assert all(owner[q] in val_docs for q in val_q)
    assert split == make_split(name, corpus["fictions"], corpus["fict_qa"], seed=3)
    assert len(training_texts(split, corpus)) == len(train_docs)


def test_fictsheets_split_is_the_event_split_on_fictsheets(corpus):
    event = make_split("event", corpus["fictions"], corpus["fict_qa"], seed=3)
    sheets = make_split("fictsheets", corpus["fictions"], corpus["fict_qa"], seed=3)
    event_of = {r["fiction_id"]: r["event_id"] for r in corpus["fictions"]}
    assert sheets["documents"] == "fictsheets" and event["documents"] == "fictions"
    assert sheets["train_documents"] == sorted({event_of[i] for i in event["train_documents"]})
    assert sheets["train_questions"] == event["train_questions"]
    texts = training_texts(sheets, corpus)
    assert all(t.startswith("**Entities:**") for t in texts)


def test_training_texts_fail_when_split_and_corpus_disagree(corpus):
    split = make_split("doc", corpus["fictions"], corpus["fict_qa"], seed=3)
    with pytest.raises(SplitError, match="not in fictions"):
        training_texts(split, {"fictions": corpus["fictions"][:5]})


def test_doc_split_holds_out_one_document_per_style_per_event(corpus):
    split = make_split("doc", corpus["fictions"], corpus["fict_qa"], seed=3)
    style = {r["fiction_id"]: (r["event_id"], r["style"]) for r in corpus["fictions"]}
    held = Counter(style[i] for i in split["val_documents"])
    assert set(held.values()) == {1}
    assert len(held) == len({style[i] for i in style})


def test_event_split_keeps_events_whole(corpus):
    split = make_split("event", corpus["fictions"], corpus["fict_qa"], seed=3)
    event = {r["fiction_id"]: r["event_id"] for r in corpus["fictions"]}
    train_events = {event[i] for i in split["train_documents"]}
    val_events = {event[i] for i in split["val_documents"]}
    assert not train_events & val_events
    assert len(train_events) == round(len(train_events | val_events) * 2 / 3)


@pytest.mark.parametrize("style", STYLES)
def test_style_split_holds_out_one_whole_style(corpus, style):
    split = make_split(f"style_{style}", corpus["fictions"], corpus["fict_qa"], seed=0)
    styles = {r["fiction_id"]: r["style"] for r in corpus["fictions"]}
    assert {styles[i] for i in split["val_documents"]} == {style}
    assert {styles[i] for i in split["train_documents"]} == set(STYLES) - {style}


def test_split_with_zero_documents_fails(corpus):
    one_event = [r for r in corpus["fictions"] if r["event_id"] == "event_000"]
    with pytest.raises(SplitError, match="zero validation documents"):
        make_split("event", one_event, corpus["fict_qa"], seed=0, event_train_fraction=0.9)
    single = [r for r in one_event if r["fiction_id"].endswith("num_000")]
    with pytest.raises(SplitError, match="zero train documents"):
        make_split("doc", single, corpus["fict_qa"], seed=0)
    with pytest.raises(SplitError, match="unknown split"):
        make_split("style", corpus["fictions"], corpus["fict_qa"], seed=0)
    no_blog = [r for r in corpus["fictions"] if r["style"] != "blog"]
    with pytest.raises(SplitError, match="zero validation documents"):
        make_split("style_blog", no_blog, corpus["fict_qa"], seed=0)
