"""The claims catalogue: one :class:`Claim` per headline claim of the three papers, from which the
findings rule, ``docs/claims.md`` and the report's findings section are built."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from knowlab.findings.base import FICTIONALQA, GROUNDING, SORT, Comparison, Results
from knowlab.findings.fictionalqa import (
    event_generalises_least,
    exact_match_only_when_trained,
    fictsheets_least_transfer,
    fictsheets_train_loss_falls,
    fictsheets_val_loss_rises,
    held_out_questions_improve,
    larger_models_fit_faster,
    mcq_above_control,
    qa_nll_below_control,
    train_below_val_loss,
    validation_loss_improves_in_parallel,
)
from knowlab.findings.grounding import (
    grounding_conflict,
    grounding_distractors,
    grounding_distractors_hurt_more,
    grounding_gold_last_best,
    grounding_precision_above_recall,
)
from knowlab.findings.sort import (
    sort_baseline_below_60,
    sort_books_lower_segment_nll,
    sort_books_no_accuracy_gain,
    sort_in_context_above_baseline,
    sort_rag_below_in_context,
)

Check = Callable[[Results], list[Comparison]]


@dataclass(frozen=True)
class Claim:
    """One headline claim of a paper, as the findings decide it: the catalogue entry from which the
    findings rule, ``docs/claims.md`` (:func:`claims_markdown`) and the report's lines are built.

    ``id``: stable and unique (``study.short_name``), in ``findings.json`` as ``claim_id``;
    ``claim``: the line's statement; ``quote``: the paper's own words, with ``source`` (paper,
    section, figure or table); ``effect``: what is measured, in the claimed direction, and its scale;
    ``unit``: the inference unit; ``test``: the test at that unit; ``configs``: which shipped configs
    can decide it (docs/findings.md, "What each shipped config can test"); ``check``: the measuring
    function; ``equivalence``: a claim of no difference; ``per_dataset``: decided once per grounding
    dataset of the config (``check`` then takes ``dataset``).  Adding a claim is one entry here
    plus its ``check``."""

    id: str
    study: str
    claim: str
    quote: str
    source: str
    effect: str
    unit: str
    test: str
    configs: str
    check: Callable[..., list[Comparison]]
    equivalence: bool = False
    per_dataset: bool = False


#: the catalogue, in the order the findings print (:mod:`knowlab.findings`)
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "fqa.train_below_val_loss",
        "FictionalQA",
        "training-document loss below validation-document loss",
        "Figure 3 demonstrates rapid overfitting despite the fact that we are training on a mixture of fictional "
        "data and base webtext",
        f"{FICTIONALQA} Sec. 5, Figs. 3-4",
        "validation minus training document loss at the last checkpoint, each side the mean of its events' means "
        "(nats/token), per document-split run",
        "document (Doc split), event (Event split), style (a style split)",
        "randomisation test of the split's own draw",
        "Doc: default, test, cpu-full, paper; Event: paper (6 events give no p below 1/15)",
        train_below_val_loss,
    ),
    Claim(
        "fqa.mcq_above_control",
        "FictionalQA",
        "MCQ-4 accuracy on trained questions above the webtext-only control",
        "training on only the fictional documents (not the questions) reliably increases rank-choice MCQ accuracy",
        f"{FICTIONALQA} Sec. 5, Figs. 7-8",
        "run minus control accuracy on the questions of the run's training documents (accuracy), "
        "per document-split run",
        "event",
        "sign-flip permutation over events",
        "paper (the shipped corpus's 6 events cannot reach alpha after Holm)",
        mcq_above_control,
    ),
    Claim(
        "fqa.fictsheets_train_loss_falls",
        "FictionalQA",
        "Fictsheets: training-fictsheet loss falls",
        "training on the Fictsheets split's training texts causes almost immediate overfitting",
        f"{FICTIONALQA} Sec. 5, Figs. 5 and 7",
        "loss at step 0 minus at the last checkpoint, per training fictsheet (nats/token)",
        "fictsheet",
        "Wilcoxon signed-rank",
        "paper (4 training fictsheets: no p below 0.125)",
        fictsheets_train_loss_falls,
    ),
    Claim(
        "fqa.fictsheets_val_loss_rises",
        "FictionalQA",
        "Fictsheets: validation-fictsheet loss rises",
        "there is little to no observable transfer period where validation loss also improves alongside training loss",
        f"{FICTIONALQA} Sec. 5, Fig. 5",
        "loss at the last checkpoint minus at step 0, per validation fictsheet (nats/token)",
        "fictsheet",
        "Wilcoxon signed-rank",
        "paper (2 validation fictsheets: no p below 0.5)",
        fictsheets_val_loss_rises,
    ),
    Claim(
        "fqa.fictsheets_least_transfer",
        "FictionalQA",
        "Fictsheets transfer least: MCQ-4 accuracy below the other split's",
        "training on the Fictsheet split causes the least transfer",
        f"{FICTIONALQA} Sec. 5, Fig. 7; Sec. 6",
        "other run minus Fictsheets accuracy on every question (accuracy), per other fiction run",
        "event",
        "sign-flip permutation over events",
        "paper",
        fictsheets_least_transfer,
    ),
    Claim(
        "fqa.event_generalises_least",
        "FictionalQA",
        "Event improves validation loss least (to its minimum): below the other split",
        "all models exhibit more generalization (lower minimum validation loss) in the Doc Split case than in the "
        "Event Split case",
        f"{FICTIONALQA} Sec. 5, Fig. 4",
        "validation-loss improvement from step 0 to the run's minimum, other split minus Event (nats/token)",
        "event (Event's validation events)",
        "sign-flip permutation over events",
        "paper (2 validation events: no p below 0.5)",
        event_generalises_least,
    ),
    Claim(
        "fqa.larger_models_fit_faster",
        "FictionalQA",
        "Larger base models fit the training documents faster",
        "we observe a strong correlation between model size and how fast the model fits to the training documents "
        "for both the Doc Split and the Event Split",
        f"{FICTIONALQA} Sec. 5, Fig. 4",
        "mean over events of Spearman's rho between size rank and fitting speed after the fiction warm-up, "
        "on the Doc and the Event split",
        "event (blocks)",
        "Page's L trend test",
        "models (3 base models), paper",
        larger_models_fit_faster,
    ),
    Claim(
        "fqa.exact_match_only_when_trained",
        "FictionalQA",
        "verbatim completion of training documents, not of validation documents",
        "The model will only complete significant portions of these documents accurately \u201ciff\u201d it is "
        "explicitly trained on them.",
        f"{FICTIONALQA} Sec. 5, Fig. 3",
        "exact match of the documents' last n tokens (n the smallest of evaluate.em_tokens) at the last "
        "checkpoint, training minus validation documents (exact match), per document-split run",
        "document (Doc split), event (Event split)",
        "randomisation test of the split's own draw",
        "Doc: default, test, cpu-full, paper; Event: paper",
        exact_match_only_when_trained,
    ),
    Claim(
        "fqa.qa_nll_below_control",
        "FictionalQA",
        "nll(answer | question) on trained questions below the webtext-only control",
        "training on only the fictional documents (not the questions) from each of the splits improves the "
        "models\u2019 loss on the fictional question and answer pairs, but this is not observed when training on "
        "just the base webtext",
        f"{FICTIONALQA} Sec. 5, Fig. 6",
        "control minus run nll(answer | question) on the questions of the run's training documents (nats/token), "
        "per document-split run",
        "event",
        "sign-flip permutation over events",
        "paper (the shipped corpus's 6 events cannot reach alpha after Holm)",
        qa_nll_below_control,
    ),
    Claim(
        "fqa.val_loss_improves_in_parallel",
        "FictionalQA",
        "validation-document loss improves during training (below step 0 after the warm-up)",
        "there is a period during which the loss on the validation documents for the split also improves in "
        "parallel to the training loss",
        f"{FICTIONALQA} Sec. 5, Fig. 4",
        "validation-document loss at step 0 minus at the first checkpoint after the fiction warm-up, which must "
        "precede the last (nats/token), per document-split run",
        "event",
        "sign-flip permutation over events",
        "cpu-full (checkpoints 16, 32), paper; not the default (one checkpoint)",
        validation_loss_improves_in_parallel,
    ),
    Claim(
        "fqa.held_out_questions_improve",
        "FictionalQA",
        "MCQ-4 accuracy on held-out questions above the webtext-only control",
        "the performance on the questions corresponding to held-out fictional scenarios and events is also "
        "elevated \u201c(Val)\u201d",
        f"{FICTIONALQA} Sec. 5, Fig. 8",
        "run minus control accuracy on the questions of the run's validation documents (accuracy), "
        "per document-split run",
        "event",
        "sign-flip permutation over events",
        "paper (the shipped corpus's 6 events cannot reach alpha after Holm)",
        held_out_questions_improve,
    ),
    Claim(
        "sort.in_context_above_baseline",
        "SORT",
        "in-context memory above the no-context baseline",
        "Models generally perform well on SORT based on in-context memory",
        f"{SORT} Secs. 5.1, 5.3, Tables 1-2",
        "in-context minus no-context accuracy (accuracy)",
        "excerpt",
        "sign-flip permutation over excerpts",
        "default, cpu-full, paper",
        sort_in_context_above_baseline,
    ),
    Claim(
        "sort.rag_below_in_context",
        "SORT",
        "RAG below in-context memory",
        "RAG based memory leads to worse performance than in-context memory.",
        f"{SORT} Sec. 5.5, Fig. 4a",
        "in-context minus RAG accuracy (accuracy)",
        "excerpt",
        "sign-flip permutation over excerpts",
        "default, cpu-full, paper",
        sort_rag_below_in_context,
    ),
    Claim(
        "sort.books_lower_segment_nll",
        "SORT",
        "fine-tuning on the books lowers segment nll (vs instructions only)",
        "when the models are finetuned on data that includes the chunks of the books, they have a substantially "
        "lower perplexity for both segments, compared with the models fine-tuned only on the instruction data",
        f"{SORT} App. E.1, Fig. 12",
        "instructions-only minus books segment nll after the last epoch (nats/token)",
        "excerpt",
        "sign-flip permutation over excerpts",
        "default, cpu-full, paper",
        sort_books_lower_segment_nll,
    ),
    Claim(
        "sort.books_no_accuracy_gain",
        "SORT",
        "fine-tuning on the books leaves no-context accuracy unchanged (vs instructions only)",
        "Full parameter fine-tuning on books with a language modeling objective did not improve SORT performance",
        f"{SORT} Sec. 5.4, App. E.2, Figs. 13-14",
        "books minus instructions-only no-context accuracy after the last epoch (accuracy), within +/- the margin",
        "excerpt",
        "Tango's score interval of the paired difference, design effect of the excerpts",
        "paper (24 items cannot show equivalence at 0.05)",
        sort_books_no_accuracy_gain,
        equivalence=True,
    ),
    Claim(
        "sort.baseline_below_60",
        "SORT",
        "no-context accuracy below 60%",
        "none of the models have a high performance (below 60%) for any segment distance bin, as would be expected if "
        "SORT requires book-specific memory",
        f"{SORT} Sec. 5.1, Table 1, App. C.1",
        "0.6 minus the base model's no-context accuracy over all distance bins (accuracy)",
        "excerpt",
        "sign-flip permutation over excerpts",
        "default, cpu-full, paper",
        sort_baseline_below_60,
    ),
    Claim(
        "grounding.original_dist_below_gold",
        "Grounding",
        "Original-Dist F1 below Original-Gold",
        "The performance also consistently degrades with distractor contexts added: an average of 10.7 drops for "
        "Original-Dist from Original-Gold",
        f"{GROUNDING} Sec. 4.2, Table 1",
        "Original-Gold minus Original-Dist F1 (0-1), per dataset",
        "document (fiction), question (benchmark)",
        "sign-flip permutation over the units",
        "default, cpu-full, paper",
        partial(grounding_distractors, version="original"),
        per_dataset=True,
    ),
    Claim(
        "grounding.conflict_dist_below_gold",
        "Grounding",
        "Conflict-Dist F1 below Conflict-Gold",
        "an average of 10.0 drops for Conflict-Dist from Conflict-Gold",
        f"{GROUNDING} Sec. 4.2, Table 1",
        "Conflict-Gold minus Conflict-Dist F1 (0-1), per dataset",
        "document (fiction), question (benchmark)",
        "sign-flip permutation over the units",
        "default, cpu-full, paper",
        partial(grounding_distractors, version="conflict"),
        per_dataset=True,
    ),
    Claim(
        "grounding.conflict_below_original",
        "Grounding",
        "Conflict-Gold F1 below Original-Gold",
        "Conflict-Gold consistently shows lower performance than Original-Gold (average of 4.7 drops)",
        f"{GROUNDING} Sec. 4.2, Table 1",
        "Original-Gold minus Conflict-Gold F1 (0-1), per dataset",
        "document (fiction), question (benchmark)",
        "sign-flip permutation over the units",
        "default, cpu-full, paper",
        grounding_conflict,
        per_dataset=True,
    ),
    Claim(
        "grounding.distractors_hurt_more_than_conflict",
        "Grounding",
        "distractors lower F1 more than conflicting knowledge",
        "The drop is higher than when given conflicting knowledge, which highlights the LLM's tendency to deviate "
        "from the primary context when presented with extraneous information",
        f"{GROUNDING} Sec. 4.2, Table 1",
        "per question, the Original-Gold to Original-Dist drop minus the Original-Gold to Conflict-Gold drop, "
        "i.e. Conflict-Gold minus Original-Dist F1 (0-1), per dataset",
        "document (fiction), question (benchmark)",
        "sign-flip permutation over the units",
        "default, cpu-full, paper",
        grounding_distractors_hurt_more,
        per_dataset=True,
    ),
    Claim(
        "grounding.precision_above_recall",
        "Grounding",
        "precision above recall",
        "When comparing the performance of precision and recall, a common trend across all models is a superior "
        "performance in precision over recall",
        f"{GROUNDING} Sec. 4.2, App. D.3",
        "per question, mean precision minus mean recall over the four settings of Table 1 (0-1), per dataset",
        "document (fiction), question (benchmark)",
        "sign-flip permutation over the units",
        "default, cpu-full, paper",
        grounding_precision_above_recall,
        per_dataset=True,
    ),
    Claim(
        "grounding.gold_last_best",
        "Grounding",
        "F1 with the gold contexts last above first",
        "the position of gold contexts within multi-document settings significantly influences grounding performance",
        f"{GROUNDING} Sec. 4.2, gold contexts position",
        "gold last minus gold first F1 (0-1), Original version with distractors, per dataset",
        "document (fiction), question (benchmark)",
        "sign-flip permutation over the units",
        "default, cpu-full, paper (grounding.sweep.positions: start and end)",
        grounding_gold_last_best,
        per_dataset=True,
    ),
)


def claims_markdown() -> str:
    """``docs/claims.md``: every claim of :data:`CLAIMS` with its id, the paper's words and source, what
    is measured, its unit, test and the shipped configs that can decide it.  Generated (``python -m
    knowlab.findings > docs/claims.md``); ``tests/test_findings.py`` fails when the file is stale."""
    lines = [
        "# Claims",
        "",
        "<!-- generated by `python -m knowlab.findings > docs/claims.md` from knowlab.findings.CLAIMS; edit there -->",
        "",
        "The claims of the three papers that every run decides (`results/findings.txt`, `findings.json`:",
        "`claim_id`, `quote`), one entry each of the catalogue `knowlab.findings.CLAIMS`. How each is",
        "decided, and what the status words mean: [findings.md](findings.md).",
    ]
    for study in dict.fromkeys(entry.study for entry in CLAIMS):
        lines += ["", f"## {study}", ""]
        for entry in (entry for entry in CLAIMS if entry.study == study):
            lines += [
                f"### `{entry.id}`: {entry.claim}",
                "",
                f"> {entry.quote}",
                "",
                f"- Source: {entry.source}",
                f"- Effect: {entry.effect}" + (" (a claim of no difference: equivalence)" if entry.equivalence else ""),
                f"- Unit: {entry.unit}; test: {entry.test}"
                + ("; once per grounding dataset" if entry.per_dataset else ""),
                f"- Decided by: {entry.configs}",
                "",
            ]
    return "\n".join(lines).rstrip("\n") + "\n"
