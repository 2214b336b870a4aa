"""What each SORT step reads from the config (knowlab.sort.settings): the records build from the shipped configs,
round-trip through a rule's params, carry a source's or a choice's keys only where the step reads them, and
name the key a check rejects."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowlab.config import load_config
from knowlab.sort.settings import (
    SortEvaluateSettings,
    SortFictionItemsSettings,
    SortInstructionsSettings,
    SortItemsSettings,
    SortParametricTextsSettings,
    SortPromptSettings,
    SortRagEvaluateSettings,
    SortRagPromptSettings,
    SortRetrievalSettings,
    SortSelectionSettings,
    SortSourcesSettings,
    evaluate_settings,
    evaluate_settings_from_param,
)

CONFIG = Path(__file__).resolve().parents[2] / "config"


def test_the_default_and_test_configs_give_the_values_of_their_keys():
    config, test = load_config(), load_config(CONFIG / "test.yaml")
    items = SortItemsSettings.from_config(test)
    counts = (items.excerpt_lengths, items.segment_lengths, items.n_excerpts, items.n_validation)
    assert counts == ((120,), (10, 20), 3, 1)
    assert items.shakespeare_texts == ("macbeth",) and items.gutenberg_ids is None and items.release_path is None
    assert SortRetrievalSettings.from_config(config) == SortRetrievalSettings(
        embedder="packaged:all-MiniLM-L6-v2", chunk_size=1024, k=2, batch_size=32, scope="all_books"
    )
    texts = SortParametricTextsSettings.from_config(test)
    assert (texts.global_batch_size, texts.seq_len, texts.instructions.n) == (4, 128, 4)
    assert "batch_size" not in SortEvaluateSettings.from_config(config).param()  # sort.batch_size: no result


def test_a_key_is_carried_only_where_the_step_reads_it():
    config = load_config()
    # the source's own block
    gutenberg = load_config({"sort": {"source": "gutenberg", "gutenberg": {"sha256": {69087: "ab" * 32}}}})
    sources = SortSourcesSettings.from_config(gutenberg)
    assert sources.shakespeare_spec is None and sources.gutenberg_ids[0] == 69087
    assert sources.gutenberg_sha256 == {"69087": "ab" * 32}
    assert SortSourcesSettings.from_config(config).gutenberg_ids is None
    release = SortItemsSettings.from_config(load_config({"sort": {"source": "release", "conditions": ["baseline"]}}))
    assert release.release_path == "memari/booksort" and release.excerpt_lengths is None and release.bin_rule is None
    # a fixed template or reading: no selection keys; a selected one: its keys
    assert SortPromptSettings.from_config(config).selection is None  # sort.template: t01
    changed = load_config({"sort": {"max_rate_deviation": 0.4, "system_prompt": "Hi."}})
    assert SortPromptSettings.from_config(changed) == SortPromptSettings.from_config(config)
    assert SortRagPromptSettings.from_config(changed) == SortRagPromptSettings.from_config(config)
    selected = SortPromptSettings.from_config(load_config({"sort": {"template": None, "max_rate_deviation": 0.4}}))
    assert selected.selection == SortSelectionSettings(
        system_prompt="You are a helpful, respectful and honest assistant.", max_rate_deviation=0.4
    )
    # the RAG reading instructions: only under rag and oracle_rag
    readings = load_config({"sort": {"rag_readings": [{"id": "x", "reading": "Passages: {passages}"}]}})
    assert evaluate_settings(readings, "baseline") == evaluate_settings(config, "baseline")
    assert type(evaluate_settings(readings, "baseline")) is SortEvaluateSettings
    rag = evaluate_settings(readings, "oracle_rag")
    assert isinstance(rag, SortRagEvaluateSettings)
    assert rag.rag_readings == ({"id": "x", "reading": "Passages: {passages}"},)
    with pytest.raises(
        TypeError, match=r"SortEvaluateSettings has no field\(s\) \['rag_readings'\]"
    ):  # a script reading the wrong record fails
        SortEvaluateSettings.from_param(rag.param())
    for condition in ("baseline", "in_context", "rag", "oracle_rag"):  # what sort_evaluate.py reads back
        record = evaluate_settings(readings, condition)
        assert evaluate_settings_from_param(record.param(), condition) == record
    # sort.parametric.chunk_words: only when whole books are chunked
    assert SortParametricTextsSettings.from_config(config).chunk_words is None  # scope: excerpts
    books = load_config({"sort": {"parametric": {"scope": "books", "chunk_words": 300}}})
    assert SortParametricTextsSettings.from_config(books).chunk_words == 300


def test_checks_name_the_config_key():
    with pytest.raises(ValueError, match=r"sort\.rag\.k must be at least 1, got 0"):
        SortRetrievalSettings(embedder="packaged:all-MiniLM-L6-v2", chunk_size=1024, k=0, batch_size=32)
    with pytest.raises(ValueError, match=r"sort\.fiction\.segment_lengths must be below every sort\.fiction\.excerpt"):
        SortFictionItemsSettings(excerpt_lengths=[20], segment_lengths=[20], n_excerpts=1, max_documents=None)
    with pytest.raises(ValueError, match=r"sort\.answer must be one of forced_choice, greedy, got 'sampled'"):
        SortEvaluateSettings(system_prompt=None, answer="sampled")
    with pytest.raises(ValueError, match=r"sort\.n_validation must lie in \[0, sort\.n_excerpts=2\], got 3"):
        SortItemsSettings(source="release", n_excerpts=2, n_validation=3, release_path="memari/booksort")
    with pytest.raises(ValueError, match=r"sort\.template: a fixed template needs no selection settings"):
        SortPromptSettings(template="t01", selection=SortSelectionSettings(system_prompt=None, max_rate_deviation=0.2))
    with pytest.raises(ValueError, match=r"sort\.parametric\.instructions\.source must be one of sharegpt, openhermes"):
        SortInstructionsSettings(n=4, source="alpaca")
