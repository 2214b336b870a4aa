"""The grounding item schema: check_items names the item and the violation."""

from __future__ import annotations

import pytest

from knowlab.core.io import DataError
from knowlab.grounding.schema import check_items


def _item(**changes):
    item = {
        "item_id": "Q1",
        "version": "original",
        "source": "kaist",
        "question": "What?",
        "answers": ["x"],
        "contexts": ["c"],
        "atomic_facts": ["f"],
        "gold_doc_ids": ["L_DOC0"],
        "extra": {},
        "factors": {"popularity": "high", "contexts": "single", "answer_type": "definite"},
    }
    item.update(changes)
    return item


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"atomic_facts": []}, "atomic_facts"),
        ({"contexts": []}, "contexts"),
        ({"version": "revised"}, "version"),
        ({"factors": ["single"]}, "factors"),
        ({"factors": {"popularity": "high", "contexts": "single", "answer_type": 1}}, "factors"),
        ({"factors": {"popularity": "mid", "contexts": "single", "answer_type": "definite"}}, "popularity"),
        ({"answers": "x"}, "answers"),
    ],
)
def test_check_items_names_the_item(changes, message):
    check_items([_item()])
    with pytest.raises(DataError, match=rf"'Q1'.*{message}"):
        check_items([_item(**changes)])


def test_check_items_missing_key_and_duplicates():
    item = _item()
    del item["gold_doc_ids"]
    with pytest.raises(DataError, match=r"'Q1'.*missing key 'gold_doc_ids'"):
        check_items([item])
    with pytest.raises(DataError, match=r"'Q1'.*duplicate"):
        check_items([_item(), _item()])
