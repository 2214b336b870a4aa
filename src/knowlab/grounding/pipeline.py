"""Grounding conditions: which contexts each item is answered from (paper Sec. 3.2, Fig. 2, Figs. 4-5).

Conditions (names used in every table, figure and row):

- ``original_gold`` / ``conflict_gold``: the gold contexts of the Original / Conflict version.
- ``original_dist`` / ``conflict_dist``: the same gold contexts with ranked distractors packed
  to ``grounding.distractors.budget`` tokens (of the answering model's tokenizer), the gold
  contexts placed at ``grounding.distractors.position``.  Both versions get the same
  distractors in the same arrangement (ranking is by the question, which the two versions
  share; the random placement is seeded by the item), so they differ only in the gold text.
- ``no_context``: the question alone (answer accuracy only; Table 12).
- ``length_<N>``: Original gold contexts with distractors packed to ``N`` tokens, for
  ``N`` in ``grounding.sweep.budgets`` other than the ``*_dist`` budget (Fig. 4; the
  ``*_dist`` budget is ``original_dist``, zero distractors is ``original_gold``).
- ``position_<p>``: Original gold contexts at position ``p`` among the distractors at the
  ``*_dist`` budget, for ``p`` in ``grounding.sweep.positions`` other than the ``*_dist``
  position (Sec. 4.2, "Impact of gold contexts position"; that position is ``original_dist``).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

log = logging.getLogger(__name__)

GOLD_CONDITIONS = ("original_gold", "original_dist", "conflict_gold", "conflict_dist")
NO_CONTEXT = "no_context"
# across fine-tuning (issue: "the fiction-derived set with Gold and Conflict contexts")
FINETUNE_CONDITIONS = ("original_gold", "conflict_gold")


def condition_names(cfg: Mapping[str, Any]) -> list[str]:
    """Every condition the ``grounding`` config asks for, in table order (see the module docstring)."""
    budget, position = cfg["distractors"]["budget"], cfg["distractors"]["position"]
    names = [*GOLD_CONDITIONS, NO_CONTEXT]
    names += [f"length_{n}" for n in sorted(cfg["sweep"]["budgets"]) if n != budget]
    names += [f"position_{p}" for p in cfg["sweep"]["positions"] if p != position]
    return names


def condition_spec(condition: str, cfg: Mapping[str, Any]) -> dict[str, Any]:
    """``{"version", "budget", "position"}`` of a condition; ``budget`` None means gold contexts only,
    and ``version`` None the question alone.

    Raises:
        ValueError: an unknown condition name.
    """
    budget, position = cfg["distractors"]["budget"], cfg["distractors"]["position"]
    if condition == NO_CONTEXT:
        return {"version": None, "budget": None, "position": None}
    if condition in GOLD_CONDITIONS:
        version, kind = condition.split("_")
        return {"version": version, "budget": budget if kind == "dist" else None, "position": position}
    kind, _, value = condition.partition("_")
    if kind == "length" and value.isdigit():
        return {"version": "original", "budget": int(value), "position": position}
    if kind == "position" and value in ("start", "middle", "end", "random"):
        return {"version": "original", "budget": budget, "position": value}
    raise ValueError(f"unknown grounding condition {condition!r}")


def _rank(seed: int, item_id: str) -> str:
    return hashlib.sha256(f"{seed}:{item_id}".encode()).hexdigest()


def select_question_ids(items: Sequence[Mapping[str, Any]], max_items: int | None, seed: int) -> list[str]:
    """A seeded sample of ``max_items`` question ids (all when None), the same for every model and checkpoint.

    Questions are ordered by ``sha256(f"{seed}:{item_id}")``, which does not depend on the
    order of the file or on Python's ``hash``; the first ``max_items`` are kept, returned
    in that order.
    """
    ids = sorted({item["item_id"] for item in items}, key=lambda i: _rank(seed, i))
    return ids if max_items is None else ids[:max_items]


def condition_records(
    items: Sequence[Mapping[str, Any]],
    question_ids: Sequence[str],
    conditions: Sequence[str],
    ranked: Mapping[str, Sequence[str]],
    pool: Mapping[str, Mapping[str, Any]],
    cfg: Mapping[str, Any],
    count_tokens: Callable[[str], int],
    seed: int,
) -> list[dict[str, Any]]:
    """One record per (question, condition): the item of the condition's version and its ordered contexts.

    Args:
        items: grounding items of both versions (schema in :mod:`knowlab.grounding.data`).
        question_ids: which questions (:func:`select_question_ids`).
        ranked: item id -> distractor doc ids, best first (:func:`knowlab.grounding.distractors.rank_distractors`).
        pool: doc id -> pool document (``doc_id``, ``title``, ``text``).
        count_tokens: token count of a context in the answering model's tokenizer.

    Returns:
        Records with the item's fields (``contexts`` replaced by the condition's contexts,
        gold ones kept as ``gold_contexts``), ``condition``, ``n_distractors`` and
        ``context_tokens``.

    Raises:
        KeyError: a question without an item of a condition's version.
    """
    from knowlab.grounding.distractors import document_text, pack_contexts
    from knowlab.core.rng import keyed_rng

    by_key = {(item["item_id"], item["version"]): item for item in items}
    records = []
    for qid in question_ids:
        for condition in conditions:
            spec = condition_spec(condition, cfg)
            item = by_key[(qid, spec["version"] or "original")]
            gold = list(item["contexts"])
            if spec["version"] is None:
                contexts = []
            elif spec["budget"] is None:
                contexts = gold
            else:
                distractors = [document_text(pool[d]) for d in ranked.get(qid, [])]
                # the same placement for both versions and every budget of one question
                rng = keyed_rng(seed, qid, "gold position")
                contexts = pack_contexts(gold, distractors, spec["budget"], count_tokens, spec["position"], rng)
            records.append(
                {
                    **item,
                    "gold_contexts": gold,
                    "contexts": contexts,
                    "condition": condition,
                    "n_distractors": sum(c not in gold for c in contexts),
                    "context_tokens": sum(count_tokens(c) for c in contexts),
                }
            )
    return records


# --- the rules' steps (scripts/grounding_*.py call these) ----------------------------------


def make_items(
    dataset: str, cfg: Mapping[str, Any], inputs: Mapping[str, str], seed: int, cache_dir: str | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Items of both versions and the document pool of ``dataset`` (``fiction`` or ``kaist``).

    ``fiction``: :func:`knowlab.grounding.data.fiction_grounding_items` on ``inputs["fictions"]``
    and ``inputs["fict_qa"]``; the pool is every fiction document (distractor ranking leaves
    out the question's own event).  ``kaist``: :func:`knowlab.grounding.data.load_kaist_release`
    from ``grounding.kaist.path``, or from ``grounding.kaist.url`` into ``cache_dir``.

    Raises:
        ValueError: an unknown dataset; as the loaders.
    """
    from knowlab.grounding import data
    from knowlab.grounding.distractors import fiction_pool
    from knowlab.core.io import read_jsonl

    if dataset == "fiction":
        fictions = read_jsonl(inputs["fictions"])
        original, conflict, report = data.fiction_grounding_items(fictions, read_jsonl(inputs["fict_qa"]), seed)
        pool = fiction_pool(fictions)
        log.info("fiction grounding set: %d questions kept; left out by reason: %s", len(original), report)
    elif dataset == "kaist":
        root = cfg["kaist"]["path"] or cfg["kaist"]["url"]
        original, conflict, pool = data.load_kaist_release(root, cache_dir)
    else:
        raise ValueError(f"unknown grounding dataset {dataset!r}")
    items = [*original, *conflict]
    data.check_items(items)
    log.info(
        "%s: %d items (%d questions x 2 versions), %d pool documents", dataset, len(items), len(original), len(pool)
    )
    return items, pool


def distractor_table(items: Sequence[Mapping[str, Any]], pool: Sequence[Mapping[str, Any]], cfg: Mapping[str, Any]):
    """Ranked distractors of every question: a frame ``item_id, rank, doc_id`` (rank 0 = most similar),
    enough per question to fill the largest token budget (``grounding.distractors.k``)."""
    import pandas as pd

    from knowlab.grounding.distractors import rank_distractors
    from knowlab.sort.rag import load_embedder

    questions = [item for item in items if item["version"] == "original"]
    ranked = rank_distractors(questions, pool, load_embedder(cfg["retriever"]), cfg["distractors"]["k"])
    rows = [{"item_id": i, "rank": r, "doc_id": d} for i, docs in ranked.items() for r, d in enumerate(docs)]
    return pd.DataFrame(rows, columns=["item_id", "rank", "doc_id"])


def respond(model, tokenizer, items, pool, distractors, conditions, cfg, max_items, seed) -> list[dict[str, Any]]:
    """Generate every (question, condition) response of one model or checkpoint.

    Questions: :func:`select_question_ids` (``max_items``, ``seed``); contexts:
    :func:`condition_records` with token counts of ``tokenizer``; generation:
    :func:`knowlab.grounding.generate.generate_responses` with ``grounding.generation``.
    """
    from knowlab.grounding.generate import count_tokens, generate_responses

    ranked = {i: list(g.sort_values("rank").doc_id) for i, g in distractors.groupby("item_id")}
    by_id = {doc["doc_id"]: doc for doc in pool}
    qids = select_question_ids(items, max_items, seed)
    records = condition_records(
        items, qids, conditions, ranked, by_id, cfg, lambda text: count_tokens(tokenizer, text), seed
    )
    log.info("%d questions x %d conditions = %d responses", len(qids), len(conditions), len(records))
    return generate_responses(model, tokenizer, records, cfg["generation"])


def score(
    records: Sequence[Mapping[str, Any]], cfg: Mapping[str, Any], decomposer_path: str, facts_path: str, cache_path: str
):
    """Atomic facts of every response (:mod:`knowlab.grounding.facts`) and their metrics
    (:func:`knowlab.grounding.metrics.score_responses`) against the *gold* contexts and facts.

    Precision is taken against the gold contexts only, also in the ``*_dist`` conditions: a
    fact that only a distractor supports is not grounded in the knowledge the question needs
    (the issue's definition; the paper's Sec. 3.1 writes the contexts C).  ``facts_path``
    receives the decomposition of every response (response id -> facts and method);
    ``cache_path`` is the decomposer's cache (:class:`knowlab.grounding.facts.FactCache`, keyed
    by decomposer and response text), kept across re-runs so that a changed evaluator does not
    decompose again.
    """
    from knowlab.grounding.evaluator import load_evaluator
    from knowlab.grounding.facts import FactCache, decompose_responses
    from knowlab.grounding.metrics import score_responses
    from knowlab.core.io import write_json
    from knowlab.core.models import load_model

    model = tokenizer = None
    if cfg["decomposer"]["kind"] == "llm" or cfg["evaluator"]["kind"] == "llm_judge":  # the base model
        model, tokenizer = load_model(decomposer_path)
    cache = FactCache(cache_path)
    decomposed = decompose_responses([r["response"] for r in records], cfg["decomposer"], model, tokenizer, cache)
    cache.save()
    facts = {r["response_id"]: d["facts"] for r, d in zip(records, decomposed, strict=True)}
    write_json(facts_path, {r["response_id"]: d for r, d in zip(records, decomposed, strict=True)})
    evaluator = load_evaluator(cfg["evaluator"], model, tokenizer)
    gold = [{**r, "contexts": r["gold_contexts"]} for r in records]
    rows = score_responses(gold, facts, evaluator)
    extra = [
        {
            "model": r["model"],
            "run": r["run"],
            "step": r["step"],
            "dataset": r["source"],
            "condition": r["condition"],
            "response": r["response"],
            "answers": list(r["answers"]),
            "context_tokens": r["context_tokens"],
            "n_distractors": r["n_distractors"],
            "n_truncated_tokens": r["n_truncated_tokens"],
            "document_id": r.get("extra", {}).get("fiction_id"),
            "response_id": r["response_id"],
        }
        for r in records
    ]
    import pandas as pd

    extra = pd.DataFrame(extra)
    return pd.concat([rows.drop(columns=[c for c in extra.columns if c in rows.columns]), extra], axis=1)


CAPTIONS = {
    "summary": "Grounding metrics (x 100, macro averages, 95% bootstrap intervals) per dataset, model and condition.",
    "table1": "Grounding F1 (x 100) per model in the four settings (paper Table 1).",
    "table1_precision": "Precision (x 100): response atomic facts supported by the gold contexts (paper Figs. 15-16).",
    "table1_recall": "Recall (x 100): gold atomic facts supported by the response (paper Figs. 15-16).",
    "table12": "Answer accuracy (x 100, definite-answer questions) in five settings (paper Table 12).",
    "reduction_rates": "Reduction rate (%) of F1 from Gold to Dist contexts (paper Fig. 5).",
    "length_curve": "F1 (x 100) against input context length in tokens, Original version (paper Fig. 4).",
    "position": "F1 (x 100) by the position of the gold contexts among distractors (paper Sec. 4.2).",
    "factors": "Grounding F1 (x 100) by question and context factors, {} (paper Tables 8-11).",
}


def tables_and_figures(
    rows, out_dir: str, figures: Mapping[str, str], cfg: Mapping[str, Any], *, n_resamples: int = 2000, seed: int = 0
) -> None:
    """Write the grounding tables (CSV + LaTeX) into ``out_dir`` and draw the figures.

    Tables: ``summary`` (every metric x 100 with 95% bootstrap intervals per dataset, model
    and condition), ``table1`` (F1; ``table1_precision``, ``table1_recall``: Figs. 15-16),
    ``factors_<setting>`` for the four settings (Tables 8-11), ``table12`` (answer accuracy),
    ``reduction_rates`` (Fig. 5), ``length_curve`` (Fig. 4), ``position``.  ``figures`` maps
    ``<name>_pdf`` / ``<name>_png`` to paths for the names fig3c, fig4, fig5, fig15_16, position.
    """
    from knowlab.grounding import analysis, plots
    from knowlab.core.io import atomic_dir
    from knowlab.core.tables import write_table

    summary = analysis.summarize(rows, ["dataset", "model", "condition"], n_resamples=n_resamples, seed=seed)
    tables = {
        "summary": summary.set_index(["dataset", "model", "condition"]),
        "table1": analysis.table1(summary, "f1"),
        "table1_precision": analysis.table1(summary, "precision"),
        "table1_recall": analysis.table1(summary, "recall"),
        "table12": analysis.answer_accuracy_table(summary),
        "reduction_rates": analysis.reduction_rates(summary).set_index(["dataset", "model", "version"]),
        "length_curve": analysis.length_curve(rows, summary).set_index(["dataset", "model", "condition"]),
        "position": analysis.position_table(summary, cfg["distractors"]["position"]),
    }
    for condition in GOLD_CONDITIONS:
        tables[f"factors_{condition}"] = analysis.factor_table(rows, condition)
    with atomic_dir(out_dir) as folder:
        for name, table in tables.items():
            setting = analysis.SETTING_LABELS.get(name.removeprefix("factors_"))
            caption = CAPTIONS.get(name) or CAPTIONS["factors"].format(setting)
            write_table(table.reset_index(), folder / f"{name}.csv", folder / f"{name}.tex", caption, float_format="{:.1f}")
    models = ", ".join(sorted(rows.model.unique()))
    note = f"Models: {models}. Evaluator: {cfg['evaluator']['kind']}; decomposer: {cfg['decomposer']['kind']}."
    draw = {
        "fig3c": lambda pdf, png: plots.plot_by_factor(tables["factors_original_gold"], pdf, png, note=note),
        "fig4": lambda pdf, png: plots.plot_length_curve(tables["length_curve"].reset_index(), pdf, png, note=note),
        "fig5": lambda pdf, png: plots.plot_reduction(tables["reduction_rates"].reset_index(), pdf, png, note=note),
        "fig15_16": lambda pdf, png: plots.plot_precision_recall(summary, pdf, png, note=note),
        "position": lambda pdf, png: plots.plot_position(tables["position"], pdf, png, note=note),
    }
    for name, plot in draw.items():
        if f"{name}_pdf" in figures:
            plot(figures[f"{name}_pdf"], figures[f"{name}_png"])
