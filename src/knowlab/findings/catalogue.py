"""The claims catalogue: one :class:`~knowlab.findings.base.Claim` per headline claim of the three papers,
from which the findings rule, ``docs/claims.md`` and the report's findings section are built."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from knowlab.findings.base import FICTIONALQA, GROUNDING, SORT, Claim
from knowlab.findings.protocol import GROUNDING_EVALUATION, PAPER_SETTINGS, SORT_EVALUATION, TRAINING
from knowlab.findings.fictionalqa import (
    event_generalises_least,
    exact_match_only_when_trained,
    fictsheets_least_transfer,
    fictsheets_train_loss_falls,
    event_transfers_less_qa,
    fictsheets_qa_no_gain,
    fictsheets_val_loss_rises,
    gap_opens_after_minimum,
    held_out_below_trained,
    held_out_questions_improve,
    larger_models_fit_faster,
    larger_models_transfer_more,
    mcq_above_control,
    qa_nll_below_control,
    real_qa_no_improvement,
    train_below_val_loss,
    validation_loss_improves_in_parallel,
    validation_loss_rises_after,
    webtext_not_destroyed,
)
from knowlab.findings.grounding import (
    grounding_conflict,
    grounding_distractors,
    grounding_distractors_hurt_more,
    grounding_gold_last_best,
    grounding_definite_above_free_form,
    grounding_low_popularity_above_high,
    grounding_precision_above_recall,
    grounding_single_above_multi,
)
from knowlab.findings.sort import (
    sort_accuracy_falls_with_excerpt_length,
    sort_accuracy_rises_with_distance,
    sort_baseline_below_60,
    sort_books_higher_answer_likelihood,
    sort_books_lower_segment_nll,
    sort_books_no_accuracy_gain,
    sort_in_context_above_baseline,
    sort_in_context_falls_after_finetuning,
    sort_longer_segments_better,
    sort_rag_below_in_context,
)
from knowlab.layout import (
    ACROSS_MODELS_FIGURE,
    FQA_FIGURE,
    GROUNDING_FIGURE,
    GROUNDING_TABLES,
    RESULTS,
    SORT_FIGURE,
)

# A claim's ``figure``: a path under results/ named by knowlab.layout, so that it moves with the file the
# rules write; ``{ft_model}`` stays a wildcard, the reference base model's (Claim.figure_of).


def _fqa_figure(family: str) -> str:
    """The PNG of FictionalQA figure family ``family`` (``fig3``) of a base model (:data:`FQA_FIGURE`)."""
    return FQA_FIGURE.fix(family=family, ext="png").template


def _across_models_figure(family: str) -> str:
    """The PNG of FictionalQA figure family ``family`` across the base models (:data:`ACROSS_MODELS_FIGURE`)."""
    return ACROSS_MODELS_FIGURE.fix(family=family, ext="png").template


def _sort_figure(name: str) -> str:
    """The PNG of SORT's figure ``name`` (``fig3b``; :data:`SORT_FIGURE`)."""
    return SORT_FIGURE.fix(name=name, ext="png").template


def _grounding_figure(name: str) -> str:
    """The PNG of grounding's figure ``name`` (``fig5``; :data:`GROUNDING_FIGURE`)."""
    return GROUNDING_FIGURE.fix(name=name, ext="png").template


def _grounding_table(name: str) -> str:
    """Grounding's table ``name`` (``table1``), a CSV in :data:`GROUNDING_TABLES`."""
    return f"{GROUNDING_TABLES.relative()}/{name}.csv"


#: unit and test of the claims that compare a document-split run's training with its validation documents
#: (:func:`knowlab.findings.base.split_comparison`)
SPLIT_DESIGN = (
    "document (Doc split), event (Event split, a style split)",
    "randomisation test of the split's own draw; a style split: sign flips over events, each document against "
    "the control",
)


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
        *SPLIT_DESIGN,
        "Doc: default, test, cpu-full, paper; Event: default, cpu-full, paper (test.yaml's 6 events give no p below 1/15)",
        train_below_val_loss,
        figure=_fqa_figure("fig3"),
        scale="nats/token",
        protocol=TRAINING,
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
        "default, cpu-full, paper (24 events; test.yaml's 6 cannot reach alpha after Holm)",
        mcq_above_control,
        figure=_fqa_figure("fig7"),
        scale="accuracy",
        protocol=(*TRAINING, "ranker"),
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
        "default, cpu-full, paper (16 training fictsheets; test.yaml's 4: no p below 0.125)",
        fictsheets_train_loss_falls,
        figure=_fqa_figure("fig5"),
        scale="nats/token",
        protocol=TRAINING,
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
        "default, cpu-full, paper (8 validation fictsheets; test.yaml's 2: no p below 0.5)",
        fictsheets_val_loss_rises,
        figure=_fqa_figure("fig5"),
        scale="nats/token",
        protocol=TRAINING,
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
        "default, cpu-full, paper (24 events; test.yaml's 6 cannot reach alpha after Holm)",
        fictsheets_least_transfer,
        figure=_fqa_figure("fig7"),
        scale="accuracy",
        protocol=(*TRAINING, "ranker"),
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
        "default, cpu-full, paper (8 validation events; test.yaml's 2: no p below 0.5)",
        event_generalises_least,
        figure=_fqa_figure("fig4"),
        scale="nats/token",
        protocol=TRAINING,
        depends=("fiction_rate",),
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
        figure=_across_models_figure("fig4"),
        scale="Spearman rho",
        protocol=TRAINING,
        depends=("models",),
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
        *SPLIT_DESIGN,
        "Doc: default, test, cpu-full, paper; Event: default, cpu-full, paper",
        exact_match_only_when_trained,
        figure=_fqa_figure("fig3"),
        scale="exact match",
        protocol=TRAINING,
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
        "default, cpu-full, paper (24 events; test.yaml's 6 cannot reach alpha after Holm)",
        qa_nll_below_control,
        figure=_fqa_figure("fig6"),
        scale="nats/token",
        protocol=TRAINING,
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
        "default, cpu-full (checkpoints 16, 32), paper; not test.yaml (one checkpoint)",
        validation_loss_improves_in_parallel,
        figure=_fqa_figure("fig4"),
        scale="nats/token",
        protocol=TRAINING,
        depends=("fiction_rate",),
    ),
    Claim(
        "fqa.val_loss_rises_after",
        "FictionalQA",
        "validation-document loss rises again after the dip (the U shape)",
        "The U-shaped curve in validation loss seen in the left side of Figure 3 indicates a region where "
        "generalization via factual and stylistic memorization is possible",
        f"{FICTIONALQA} Sec. 5, Fig. 3",
        "validation-document loss at the last checkpoint minus at the first checkpoint after the fiction warm-up "
        "(nats/token), per document-split run",
        "event",
        "sign-flip permutation over events",
        "default, cpu-full (checkpoints 16, 32), paper; not test.yaml (one checkpoint)",
        validation_loss_rises_after,
        figure=_fqa_figure("fig3"),
        scale="nats/token",
        protocol=TRAINING,
        depends=("fiction_rate",),
    ),
    Claim(
        "fqa.gap_opens_after_minimum",
        "FictionalQA",
        "the train-validation gap opens after the validation dip",
        "there is a period during which the loss on the validation documents for the split also improves in "
        "parallel to the training loss",
        f"{FICTIONALQA} Sec. 5, Figs. 3-4",
        "change of the validation minus training document loss from the first checkpoint after the fiction warm-up "
        "to the last (nats/token), per document-split run",
        *SPLIT_DESIGN,
        "default, cpu-full (checkpoints 16, 32), paper; not test.yaml (one checkpoint)",
        gap_opens_after_minimum,
        figure=_fqa_figure("fig3"),
        scale="nats/token",
        protocol=TRAINING,
        depends=("fiction_rate",),
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
        "default, cpu-full, paper (24 events; test.yaml's 6 cannot reach alpha after Holm)",
        held_out_questions_improve,
        figure=_fqa_figure("fig8"),
        scale="accuracy",
        protocol=(*TRAINING, "ranker"),
    ),
    Claim(
        "fqa.held_out_below_trained",
        "FictionalQA",
        "MCQ-4 gain over the control smaller on held-out questions than on trained ones",
        "albeit slightly less than for questions corresponding to scenarios that were trained on \u201c(Train)\u201d",
        f"{FICTIONALQA} Sec. 5, Fig. 8",
        "per document, run minus control accuracy on its questions; training minus validation documents, each side "
        "the mean of its events' means (accuracy), per document-split run",
        *SPLIT_DESIGN,
        "Doc: default, test, cpu-full, paper; Event: default, cpu-full, paper",
        held_out_below_trained,
        figure=_fqa_figure("fig8"),
        scale="accuracy",
        protocol=(*TRAINING, "ranker"),
    ),
    Claim(
        "fqa.webtext_not_destroyed",
        "FictionalQA",
        "webtext loss within 5% of the webtext-only control's (not destroyed)",
        "the ability to faithfully model normal webtext is not destroyed by finetuning on the fictional data at this "
        "5% relative rate",
        f"{FICTIONALQA} Sec. 5, Fig. 5",
        "non-inferiority on the log scale: log(1.05 x the control's / the run's webtext loss) at the last "
        "checkpoint (log loss ratio), per fiction run",
        "webtext document",
        "sign-flip permutation over webtext documents",
        "default, test, cpu-full, paper",
        webtext_not_destroyed,
        figure=_fqa_figure("fig5"),
        scale="log loss ratio",
        protocol=TRAINING,
    ),
    Claim(
        "fqa.real_qa_no_improvement",
        "FictionalQA",
        "real-world nll(answer | question) does not improve (falls by less than 5%)",
        "we also measure the same question conditional answer loss but for real TriviaQA questions and see that the "
        "models don\u2019t improve at all in terms of answer likelihood on real factual question answering data",
        f"{FICTIONALQA} Sec. 5, Figs. 6 and 9, App. C.7",
        "log(the run's nll(answer | question) at the last checkpoint / 0.95 x the base model's), on the real-world "
        "questions (TriviaQA, or the shipped set) (log loss ratio), per fiction run",
        "real-world question",
        "sign-flip permutation over questions",
        "default, test, cpu-full, paper",
        real_qa_no_improvement,
        figure=_fqa_figure("fig6"),
        scale="log loss ratio",
        protocol=(*TRAINING, "real_qa"),
    ),
    Claim(
        "fqa.fictsheets_qa_no_gain",
        "FictionalQA",
        "Fictsheets: nll(answer | question) not 5% below the webtext-only control",
        "training on the Fictsheets split does not consistently improve Q&A loss",
        f"{FICTIONALQA} Sec. 5, Fig. 6",
        "log(the Fictsheets run's nll(answer | question) / 0.95 x the control's) on the questions of its training "
        "events, at the last checkpoint (log loss ratio)",
        "event",
        "sign-flip permutation over events",
        "default, cpu-full, paper (16 training fictsheets' events; test.yaml's 4: no p below 0.125)",
        fictsheets_qa_no_gain,
        figure=_fqa_figure("fig6"),
        scale="log loss ratio",
        protocol=TRAINING,
    ),
    Claim(
        "fqa.event_transfers_less_qa",
        "FictionalQA",
        "Event transfers less to Q&A loss than Doc on the events Event holds out",
        "the stronger factual separation between train and validation samples for the Event Split appears to result "
        "in less transfer to Q&A loss, while the more complete coverage of all events in the Doc Split allows for "
        "more improvement",
        f"{FICTIONALQA} Sec. 5, Fig. 6",
        "Event minus Doc nll(answer | question) on the questions of the Event split's validation events, at the "
        "last checkpoint (nats/token)",
        "event",
        "sign-flip permutation over events",
        "default, cpu-full, paper (8 validation events; test.yaml's 2: no p below 0.5)",
        event_transfers_less_qa,
        figure=_fqa_figure("fig6"),
        scale="nats/token",
        protocol=TRAINING,
    ),
    Claim(
        "fqa.larger_models_transfer_more",
        "FictionalQA",
        "Larger base models gain more MCQ-4 accuracy",
        "training on only the fictional documents (not the questions) reliably increases rank-choice MCQ accuracy, "
        "and that larger models achieve higher levels of transfer",
        f"{FICTIONALQA} Sec. 5, Fig. 7",
        "mean over events of Spearman's rho between size rank and the MCQ-4 accuracy gain from step 0 to the last "
        "checkpoint, on the Doc and the Event split",
        "event (blocks)",
        "Page's L trend test",
        "models (3 base models), paper",
        larger_models_transfer_more,
        figure=_across_models_figure("fig7"),
        scale="Spearman rho",
        protocol=(*TRAINING, "ranker"),
        depends=("models",),
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
        figure=_sort_figure("fig3b"),
        scale="accuracy",
        protocol=SORT_EVALUATION,
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
        figure=_sort_figure("fig4"),
        scale="accuracy",
        protocol=(*SORT_EVALUATION, "rag_embedder"),
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
        figure=_sort_figure("fig12"),
        scale="nats/token",
        protocol=(*SORT_EVALUATION, "parametric"),
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
        "default (16 test excerpts), cpu-full, paper (12 excerpts, or test.yaml's 4, cannot show equivalence at 0.05)",
        sort_books_no_accuracy_gain,
        equivalence=True,
        figure=_sort_figure("fig13"),
        scale="accuracy",
        protocol=(*SORT_EVALUATION, "parametric"),
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
        figure=_sort_figure("fig10"),
        scale="accuracy",
        protocol=SORT_EVALUATION,
    ),
    Claim(
        "sort.accuracy_rises_with_distance",
        "SORT",
        "in-context accuracy rises with segment distance",
        "In-context memory performance increases with greater distance between segments.",
        f"{SORT} Sec. 5.3, Fig. 3b",
        "mean over excerpts of Spearman's rho between segment distance and correctness, in context",
        "excerpt",
        "sign-flip permutation of the excerpts' rho",
        "default, cpu-full, paper (test.yaml: 4 excerpts, no p below 0.125)",
        sort_accuracy_rises_with_distance,
        figure=_sort_figure("fig3b"),
        scale="Spearman rho",
        protocol=SORT_EVALUATION,
    ),
    Claim(
        "sort.accuracy_falls_with_excerpt_length",
        "SORT",
        "in-context accuracy falls with excerpt length",
        "For increasing excerpt lengths, we see a consistently monotonic decrease in average accuracy",
        f"{SORT} Sec. 5.3, Fig. 3a",
        "in-context accuracy of the shortest minus the longest excerpts (accuracy)",
        "excerpt",
        "permutation test of two independent samples of excerpts",
        "paper (sort.excerpt_lengths 250, 1000, 2500); not the default (one length)",
        sort_accuracy_falls_with_excerpt_length,
        figure=_sort_figure("fig3a"),
        scale="accuracy",
        protocol=SORT_EVALUATION,
    ),
    Claim(
        "sort.longer_segments_better",
        "SORT",
        "in-context accuracy higher with longer segments",
        "Models handle longer segments (50 words) slightly more effectively than shorter segments (20 words), with an "
        "improvement of up to 4%.",
        f"{SORT} Sec. 5.3, App. C.2, Tables 11-12",
        "in-context accuracy of the excerpts with the longest minus the shortest segments (accuracy)",
        "excerpt",
        "permutation test of two independent samples of excerpts",
        "cpu-full, paper (sort.segment_lengths 20, 50); not the default (one length)",
        sort_longer_segments_better,
        scale="accuracy",
        protocol=SORT_EVALUATION,
    ),
    Claim(
        "sort.books_higher_answer_likelihood",
        "SORT",
        "fine-tuning on the books raises the correct answer's log-probability (vs instructions only)",
        "the book text condition performing better than the others after one epoch of training with statistical "
        "significance (p < 0.01)",
        f"{SORT} App. E.3, Figs. 15-16",
        "books minus instructions-only log p(correct) / (p(A) + p(B)) without context after the last epoch " "(nats)",
        "excerpt",
        "sign-flip permutation over excerpts",
        "default, cpu-full, paper",
        sort_books_higher_answer_likelihood,
        figure=_sort_figure("fig16"),
        scale="log-probability",
        protocol=(*SORT_EVALUATION, "parametric"),
    ),
    Claim(
        "sort.in_context_falls_after_finetuning",
        "SORT",
        "in-context accuracy falls after fine-tuning on the books",
        "the accuracy with source excerpts presented in-context of SORT decreased from 0.93 to 0.90 after a single "
        "epoch and to 0.88 after three epochs of fine-tuning",
        f"{SORT} App. E.4",
        "the base model's in-context accuracy minus the books run's after the last epoch (accuracy)",
        "excerpt",
        "sign-flip permutation over excerpts",
        "default, cpu-full, paper",
        sort_in_context_falls_after_finetuning,
        scale="accuracy",
        protocol=(*SORT_EVALUATION, "parametric"),
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
        figure=_grounding_table("table1"),
        scale="F1",
        protocol=GROUNDING_EVALUATION,
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
        figure=_grounding_table("table1"),
        scale="F1",
        protocol=GROUNDING_EVALUATION,
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
        figure=_grounding_table("table1"),
        scale="F1",
        protocol=GROUNDING_EVALUATION,
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
        figure=_grounding_figure("fig5"),
        scale="F1",
        protocol=GROUNDING_EVALUATION,
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
        figure=_grounding_figure("fig15_16"),
        scale="precision - recall",
        protocol=GROUNDING_EVALUATION,
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
        figure=_grounding_figure("position"),
        scale="F1",
        protocol=GROUNDING_EVALUATION,
    ),
    Claim(
        "grounding.single_context_above_multi",
        "Grounding",
        "F1 higher for single-context than multi-context questions",
        "queries demanding reasoning across multiple contexts (multi) show lower grounding performance than those "
        "confined to a single context (single)",
        f"{GROUNDING} Sec. 4.2, Fig. 3c, App. D.2",
        "Original-Gold F1 of the single minus the multi questions (0-1), per dataset",
        "document (fiction), question (benchmark)",
        "permutation test of two independent samples of units",
        "paper (the kaist dataset); not fiction (every fiction question needs one context)",
        grounding_single_above_multi,
        per_dataset=True,
        figure=_grounding_figure("fig3c"),
        scale="F1",
        protocol=GROUNDING_EVALUATION,
    ),
    Claim(
        "grounding.definite_above_free_form",
        "Grounding",
        "F1 higher for definite than free-form answers",
        "questions with predetermined answers (definite) tend to achieve better grounding than openended answers "
        "(free-form)",
        f"{GROUNDING} Sec. 4.2, Fig. 3c, App. D.2",
        "Original-Gold F1 of the definite minus the free-form questions (0-1), per dataset",
        "document (fiction), question (benchmark)",
        "permutation test of two independent samples of units",
        "paper (the kaist dataset); not fiction (every fiction question has a definite answer)",
        grounding_definite_above_free_form,
        per_dataset=True,
        figure=_grounding_figure("fig3c"),
        scale="F1",
        protocol=GROUNDING_EVALUATION,
    ),
    Claim(
        "grounding.low_popularity_above_high",
        "Grounding",
        "F1 higher with less popular contexts",
        "the model generally outperforms when provided with less common contexts (low), compared to when provided "
        "with more prevalent contexts (high)",
        f"{GROUNDING} Sec. 4.2, Fig. 3c, App. D.2",
        "Original-Gold F1 of the low minus the high popularity questions (0-1), per dataset",
        "document (fiction), question (benchmark)",
        "permutation test of two independent samples of units",
        "paper (the kaist dataset); not fiction (no popularity)",
        grounding_low_popularity_above_high,
        per_dataset=True,
        figure=_grounding_figure("fig3c"),
        scale="F1",
        protocol=GROUNDING_EVALUATION,
    ),
)


def default_statuses(records: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """What the default run decided, per claim id: each of its lines' status, with the comparison's label,
    and the effect and p, or the reason it is not tested (``records``: a ``results/findings.json``)."""
    by_id = {entry.id: entry for entry in CLAIMS}
    out: dict[str, list[str]] = {}
    for record in records:
        entry = by_id[record["claim_id"]]
        labels = [record["claim"][len(entry.claim) + 2 : -1], record["study"].partition(" (")[2][:-1]]
        label = ", ".join(filter(None, labels))
        if record["effect"] is None:  # the config lacks what the claim needs: the detail says what
            why = record["detail"]
        elif record["status"] == "not tested":  # the design cannot reach alpha: the first clause says why
            why = record["detail"].split("; ")[0]
        else:
            why = f"{record['effect']:+.3g} {record['scale']}, p = {record['p']:.2g}"
        out.setdefault(entry.id, []).append(f"`{record['status']}` ({label + ': ' if label else ''}{why})")
    return {claim_id: "; ".join(lines) for claim_id, lines in out.items()}


def _protocol(entry: Claim) -> str:
    """The paper's settings that bear on ``entry``, and those its argument rests on, for ``docs/claims.md``."""
    label = {s.key: f"{s.label} ({s.paper})" for s in PAPER_SETTINGS}
    text = "; ".join(label[k] for k in entry.protocol) or "none named"
    if entry.depends:
        text += "; the claim rests on " + ", ".join(label[k].split(" (")[0] for k in entry.depends)
    return text + " ([deviations.md](deviations.md))"


def claims_markdown(default: Mapping[str, str] | None = None) -> str:
    """``docs/claims.md``: every claim of :data:`CLAIMS` with its id, the paper's words and source, what
    is measured, its unit, test, the shipped configs that can decide it, and what the default run
    decided (``default``: :func:`default_statuses` of its ``results/findings.json``).  Generated
    (``python -m knowlab.findings --default results/findings.json > docs/claims.md``);
    ``tests/test_findings.py`` fails when the file is stale."""
    default = default or {}
    lines = [
        "# Claims",
        "",
        "<!-- generated by `python -m knowlab.findings --default results/findings.json > docs/claims.md` from",
        "knowlab.findings.CLAIMS and the default run's findings; edit there -->",
        "",
        f"The {len(CLAIMS)} claims of the three papers that every run decides (`results/findings.txt`,",
        "`findings.json`: `claim_id`, `quote`, `figure`), one entry each of the catalogue `knowlab.findings.CLAIMS`.",
        'How each is decided, and what the status words mean: [findings.md](findings.md). "On the default": what',
        "the run of `config/config.yaml` in [default.md](default.md) decided, line by line.",
    ]
    for study in dict.fromkeys(entry.study for entry in CLAIMS):
        lines += ["", f"## {study}", ""]
        for entry in (entry for entry in CLAIMS if entry.study == study):
            lines += [
                f"### `{entry.id}`: {entry.claim}",
                "",
                f"> {entry.quote}",
                "",
                f"- Source: {entry.source}"
                + (f"; figure of the run: `{RESULTS}/{entry.figure}`" if entry.figure else ""),
                f"- Effect: {entry.effect}" + (" (a claim of no difference: equivalence)" if entry.equivalence else ""),
                f"- Unit: {entry.unit}; test: {entry.test}"
                + ("; once per grounding dataset" if entry.per_dataset else ""),
                f"- Protocol: {_protocol(entry)}",
                f"- Decided by: {entry.configs}",
                f"- On the default: {default.get(entry.id, 'not measured')}",
                "",
            ]
    return "\n".join(lines).rstrip("\n") + "\n"
