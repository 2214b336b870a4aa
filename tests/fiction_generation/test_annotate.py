"""Question annotation: near-duplicate clusters against the authors' duplicate groups."""

import itertools
import json
from pathlib import Path

import yaml

from knowlab.core.retrieval import embed
from knowlab.fiction_generation.annotate import near_duplicate_clusters

ROOT = Path(__file__).resolve().parents[2]


def test_near_duplicate_clusters_agree_with_the_authors_groups(sample, minilm):
    """At the default threshold, question pairs we cluster together vs pairs the authors
    marked exact or similar duplicates (same duplicate_root) on their 75 questions."""
    (row,) = [json.loads(line) for line in (sample / "intermediate_results" / "annotated_fict_qa.jsonl").open()]
    questions = list(row["questions"].values())
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["fiction"]["generate"]["near_duplicates"]
    assert cfg["embedder"] == "packaged:all-MiniLM-L6-v2"  # the session's minilm
    labels = near_duplicate_clusters(embed([q["question"] for q in questions], minilm), cfg["distance_threshold"])

    def together(groups):
        return {(a, b) for a, b in itertools.combinations(range(len(groups)), 2) if groups[a] == groups[b]}

    ours, theirs = together(list(labels)), together([q["duplicate_root"] for q in questions])
    assert len(ours & theirs) / len(ours) >= 0.75 and len(ours & theirs) / len(theirs) >= 0.95
