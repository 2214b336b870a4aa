"""The KAIST grounding release: the real files, and malformed copies that must be rejected by name."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from knowlab.core.io import DataError, HashMismatchError, sha256_file
from knowlab.grounding.kaist import (
    KAIST_FILES,
    KAIST_SHA256,
    fetch_kaist_release,
    load_kaist_release,
    match_gold_docs,
    parse_answers,
    render_kaist_doc,
    verify_kaist_release,
)
from knowlab.grounding.schema import check_items

KAIST = Path(__file__).resolve().parents[3] / "shared" / "data" / "grounding_kaist"


@pytest.fixture(scope="module")
def kaist():
    if not (KAIST / "original_version.json").is_file():
        pytest.skip(f"KAIST grounding release not found at {KAIST}")
    return load_kaist_release(KAIST)


# --------------------------------------------------------------------------- real KAIST release


def test_real_release_counts_factors_and_pairing(kaist):
    original, conflict, pool = kaist
    assert len(original) == len(conflict) == 480 and len(pool) == 2620
    assert [i["item_id"] for i in original] == [i["item_id"] for i in conflict]
    assert {i["version"] for i in original} == {"original"} and {i["version"] for i in conflict} == {"conflict"}
    check_items(original + conflict)
    meta = json.loads((KAIST / "metadata" / "qId2metaInfo.json").read_text())
    for item in original:
        m = meta[item["item_id"]]
        assert item["factors"] == {
            "popularity": m["pop"],
            "contexts": "multi" if m["has_multi"] else "single",
            "answer_type": "definite" if m["has_answer"] else "free_form",
        }
    answer_types = Counter(i["factors"]["answer_type"] for i in original)
    assert answer_types == {"definite": 260, "free_form": 220}
    assert Counter(i["factors"]["contexts"] for i in original) == {"single": 400, "multi": 80}
    # free-form questions have no alternatives; definite ones do (except the two empty revised answers)
    assert all(bool(i["answers"]) == (i["factors"]["answer_type"] == "definite") for i in original)
    missing = sorted(i["item_id"] for i in conflict if i["extra"].get("answer_missing"))
    assert missing == ["Q102", "Q111"]
    by_id = {i["item_id"]: i for i in conflict}
    assert by_id["Q7"]["answers"] == ["None"]
    assert original[0]["item_id"] == "Q7"
    assert original[0]["answers"] == ["the son of Sigimer", "a prince of the nation"]
    assert pool[0]["title"] == "Lisztomania" and pool[0]["text"].startswith("Lisztomania or Liszt fever")


def test_real_release_gold_doc_ids(kaist):
    original, conflict, pool = kaist
    docs = {d["doc_id"]: d for d in pool}
    n_contexts = sum(len(i["contexts"]) for i in original)
    n_fallback = sum(i["extra"]["gold_title_fallback"] for i in original)
    assert (n_contexts, n_fallback) == (682, 13)
    exact = 0
    for item in original:
        assert item["gold_doc_ids"], item["item_id"]
        rendered = {render_kaist_doc(docs[d]).strip() for d in item["gold_doc_ids"]}
        exact += sum(c.strip() in rendered for c in item["contexts"])
        titles = {re.match(r"Title: (.*?) \[", c)[1] for c in item["contexts"]}
        assert {docs[d]["title"] for d in item["gold_doc_ids"]} <= titles
    assert exact == 669
    # the conflict version keeps the gold documents of its original
    assert [i["gold_doc_ids"] for i in original] == [i["gold_doc_ids"] for i in conflict]
    # duplicated pool texts: one context of Q15 matches two ids
    q15 = next(i for i in original if i["item_id"] == "Q15")
    assert {"L_DOC85", "L_DOC396"} <= set(q15["gold_doc_ids"])


def test_parse_answers():
    assert parse_answers("the son of Sigimer | a prince of the nation") == [
        "the son of Sigimer",
        "a prince of the nation",
    ]
    assert parse_answers("Unilever & England") == ["Unilever & England"]
    assert parse_answers(" | ") == [] and parse_answers("") == []
    assert parse_answers("a||b |") == ["a", "b"]


# --------------------------------------------------------------------------- malformed release copies


def _doc(title: str, text: str) -> tuple[str, str]:
    return f"Title: {title} [https://en.wikipedia.org/wiki/{title}]\n", text


def _write_release(root: Path, original: dict, conflict: dict, meta: dict) -> Path:
    docs = {
        "L_DOC0": _doc("Alpha", "Alpha is a town."),
        "L_DOC1": _doc("Alpha", "Alpha has a river."),
        "L_DOC2": _doc("Beta", "Beta is a river."),
    }
    (root / "metadata").mkdir(parents=True, exist_ok=True)
    (root / "original_version.json").write_text(json.dumps(original))
    (root / "revised_version.json").write_text(json.dumps(conflict))
    (root / "metadata" / "qId2metaInfo.json").write_text(json.dumps(meta))
    (root / "metadata" / "localDocId2title.json").write_text(json.dumps({k: v[0] for k, v in docs.items()}))
    (root / "metadata" / "localDocId2localDocText.json").write_text(json.dumps({k: v[1] for k, v in docs.items()}))
    return root


def _release():
    alpha = "Title: Alpha [https://en.wikipedia.org/wiki/Alpha]\n\nAlpha is a town."
    beta_cut = "Title: Beta [https://en.wikipedia.org/wiki/Beta]\n\nBeta is a river"  # not an exact pool text
    original = {
        "Q1": {
            "qId": "Q1",
            "qText": "What is Alpha?",
            "answer": "a town | town",
            "atomic_texts": ["Alpha is a town."],
            "context_list": [alpha],
        },
        "Q2": {
            "qId": "Q2",
            "qText": "Describe Beta.",
            "answer": "",
            "atomic_texts": ["Beta is a river."],
            "context_list": [beta_cut],
        },
    }
    conflict = copy.deepcopy(original)
    conflict["Q1"]["answer"] = "a city"
    conflict["Q1"]["context_list"] = [alpha.replace("town", "city")]
    meta = {
        "Q1": {"has_answer": True, "has_multi": False, "pop": "high"},
        "Q2": {"has_answer": False, "has_multi": False, "pop": "low"},
    }
    return original, conflict, meta


def test_small_release_reads(tmp_path):
    original, conflict, pool = load_kaist_release(_write_release(tmp_path, *_release()))
    assert [i["answers"] for i in original] == [["a town", "town"], []]
    assert conflict[0]["answers"] == ["a city"] and conflict[0]["version"] == "conflict"
    assert original[0]["gold_doc_ids"] == ["L_DOC0"] and original[0]["extra"]["gold_title_fallback"] == 0
    assert original[1]["gold_doc_ids"] == ["L_DOC2"] and original[1]["extra"]["gold_title_fallback"] == 1
    assert conflict[0]["gold_doc_ids"] == ["L_DOC0"]
    assert original[1]["factors"] == {"popularity": "low", "contexts": "single", "answer_type": "free_form"}
    assert [d["title"] for d in pool] == ["Alpha", "Alpha", "Beta"]
    assert match_gold_docs([render_kaist_doc(pool[1]) + "\n"], pool) == (["L_DOC1"], 0)


def test_record_without_atomic_facts_names_file_and_qid(tmp_path):
    original, conflict, meta = _release()
    conflict["Q2"]["atomic_texts"] = []
    with pytest.raises(DataError, match=r"revised_version\.json.*Q2.*atomic"):
        load_kaist_release(_write_release(tmp_path, original, conflict, meta))
    del original["Q1"]["atomic_texts"]
    with pytest.raises(DataError, match=r"original_version\.json.*Q1.*atomic_texts"):
        load_kaist_release(_write_release(tmp_path, original, conflict, meta))


def test_separator_only_answer(tmp_path):
    original, conflict, meta = _release()
    original["Q1"]["answer"] = " | "
    with pytest.raises(DataError, match=r"original_version\.json.*Q1.*separators"):
        load_kaist_release(_write_release(tmp_path, original, conflict, meta))
    original, conflict, meta = _release()
    original["Q2"]["answer"] = conflict["Q2"]["answer"] = " | "  # free-form: treated as no answer
    items, _, _ = load_kaist_release(_write_release(tmp_path, original, conflict, meta))
    assert items[1]["answers"] == []


def test_missing_factor_entry_names_qid_and_metadata_file(tmp_path):
    original, conflict, meta = _release()
    del meta["Q2"]
    with pytest.raises(DataError, match=r"qId2metaInfo\.json.*missing factor entry.*Q2"):
        load_kaist_release(_write_release(tmp_path, original, conflict, meta))


def test_definite_question_without_alternatives(tmp_path):
    original, conflict, meta = _release()
    original["Q1"]["answer"] = ""
    with pytest.raises(DataError, match=r"original_version\.json.*Q1.*no answer alternatives"):
        load_kaist_release(_write_release(tmp_path, original, conflict, meta))
    # the revised file may leave a definite answer empty (as Q102/Q111 of the release): kept, flagged
    original, conflict, meta = _release()
    conflict["Q1"]["answer"] = ""
    _, items, _ = load_kaist_release(_write_release(tmp_path, original, conflict, meta))
    assert items[0]["answers"] == [] and items[0]["extra"]["answer_missing"] is True


def test_versions_with_different_qids_are_rejected(tmp_path):
    original, conflict, meta = _release()
    del conflict["Q2"]
    with pytest.raises(
        DataError, match=r"original_version\.json and .*revised_version\.json hold different qIds, e\.g\. \['Q2'\]"
    ):
        load_kaist_release(_write_release(tmp_path, original, conflict, meta))


# --------------------------------------------------------------------------- pinned download


def test_pins_match_the_real_release_files():
    if not (KAIST / "original_version.json").is_file():
        pytest.skip(f"KAIST grounding release not found at {KAIST}")
    assert verify_kaist_release(KAIST, KAIST_SHA256) == KAIST
    assert sorted(KAIST_SHA256) == sorted(KAIST_FILES.values())


def _pins(root: Path) -> dict[str, str]:
    return {rel: sha256_file(root / rel) for rel in KAIST_FILES.values()}


def test_fetch_verifies_each_download_and_the_cache(tmp_path):
    source = _write_release(tmp_path / "source", *_release())
    pins = _pins(source)
    url = f"file://{source}"
    cache = tmp_path / "cache"
    bad = {**pins, "revised_version.json": "0" * 64}
    with pytest.raises(
        HashMismatchError, match=f"revised_version.json .*expected {'0' * 64}, got {pins['revised_version.json']}"
    ):
        fetch_kaist_release(url, cache, bad, timeout=5)
    assert not (cache / "revised_version.json").exists()  # the bad download was discarded
    assert not [p for p in cache.rglob("*") if p.name.startswith(".")]  # no temporary file left
    assert fetch_kaist_release(url, cache, pins, timeout=5) == cache
    assert _pins(cache) == pins
    # a cached file is verified too (not downloaded again): a corrupted cache fails by name
    (cache / "metadata" / "qId2metaInfo.json").write_text("{}")
    with pytest.raises(HashMismatchError, match="qId2metaInfo.json: expected " + pins["metadata/qId2metaInfo.json"]):
        fetch_kaist_release(url, cache, pins, timeout=5)
    with pytest.raises(
        ValueError, match=r"grounding.kaist.sha256: no pinned sha256 for release file\(s\) \['original_version.json'\]"
    ):
        fetch_kaist_release(url, tmp_path / "other", {k: v for k, v in pins.items() if k != "original_version.json"})


def test_load_verifies_a_local_release_when_pins_are_given(tmp_path):
    root = _write_release(tmp_path / "release", *_release())
    original, _, _ = load_kaist_release(root, sha256s=_pins(root))
    assert [item["item_id"] for item in original] == ["Q1", "Q2"]
    with pytest.raises(HashMismatchError, match="original_version.json: expected d923a696"):
        load_kaist_release(root, sha256s=KAIST_SHA256)
