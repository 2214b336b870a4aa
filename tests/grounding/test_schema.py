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
        ({"atomic_facts": []}, "'atomic_facts' must be a non-empty list of non-empty strings"),
        ({"contexts": []}, "'contexts' must be a non-empty list of non-empty strings"),
        ({"version": "revised"}, r"\(revised\): version must be original\|conflict"),
        ({"factors": ["single"]}, "'factors' must be dict, got list"),
        (
            {"factors": {"popularity": "high", "contexts": "single", "answer_type": 1}},
            r"factors must map str to str, got \{",
        ),
        (
            {"factors": {"popularity": "mid", "contexts": "single", "answer_type": "definite"}},
            r"factor 'popularity' = 'mid', expected one of \['high', 'low'\]",
        ),
        ({"answers": "x"}, "'answers' must be list, got str"),
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
    with pytest.raises(DataError, match=r"item 'Q1' \(original\): duplicate item_id and version"):
        check_items([_item(), _item()])
