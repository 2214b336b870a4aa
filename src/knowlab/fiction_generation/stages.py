"""The stages of the fiction generation pipeline (FictionalQA, Kirchenbauer et al. 2026, Sec. 3 and App. C).

seeds -> fictsheets -> fictions -> fict_qa -> answer attempts (blind, informed) -> grades
-> annotation (exact duplicates, near duplicates, infeasible-when-blind).  Each stage
builds one :class:`ChatRequest` per item from its inputs and the prompt templates of
config ``fiction.generate.prompts`` (data, not code), answers them through
:func:`~knowlab.core.llm.cache.run_requests` (cached, resumable) and parses the answers.
Output that fails to parse is re-requested with a new sampling seed up to
``max_parse_retries`` times, then dropped with a count in the log.

Request keys follow the authors' custom_id convention so their recorded responses can be
replayed: ``event_000`` (seeds, fictsheets), ``event_000_style_news_num_000`` (fictions,
fict_qa), ``<question_id>_attempt_blind`` / ``<question_id>_attempt_original`` (attempts),
``<question_id>_grade_blind`` / ``<question_id>_grade_informed_original`` (grades).
"""

from __future__ import annotations

import hashlib
import logging
import random
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from knowlab.core.io import DataError
from knowlab.core.llm.cache import RequestCache, run_requests
from knowlab.core.llm.requests import Backend, ChatRequest
from knowlab.fiction.release import parse_fict_qa_yaml, parse_fictsheet
from knowlab.fiction.schema import STYLES, validate_record
from knowlab.fiction_generation.parse import parse_attempt, parse_grade, parse_seed
from knowlab.fiction_generation.settings import ATTEMPT_KINDS

if TYPE_CHECKING:
    from knowlab.fiction_generation.settings import (
        FictionGenerationAttemptsSettings,
        FictionGenerationFictionsSettings,
        FictionGenerationFictQaSettings,
        FictionGenerationFictsheetsSettings,
        FictionGenerationGradesSettings,
        FictionGenerationSeedsSettings,
        FictionGenerationStageSettings,
    )

log = logging.getLogger(__name__)

#: Template fields each prompt may use (``str.format`` names).
PROMPT_FIELDS: dict[str, tuple[str, ...]] = {
    "seeds": ("year", "inspiration"),
    "fictsheets": ("seed",),
    "fictions": ("seed", "fictsheet", "style", "style_description", "n_documents", "words"),
    "fict_qa": ("seed", "fictsheet", "fiction"),
    "attempt_blind": ("question",),
    "attempt_informed": ("fiction", "question"),
    "grade": ("fiction", "question", "span_answer", "natural_answer", "attempt"),
}
_ATTEMPT_SUFFIX = {"blind": "attempt_blind", "informed": "attempt_original"}
_GRADE_SUFFIX = {"blind": "grade_blind", "informed": "grade_informed_original"}


def item_seed(seed: int, key: str, retry: int = 0) -> int:
    """A 31-bit sampling seed for one item and retry: sha256 of ``"<seed>/<key>/<retry>"``."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{key}/{retry}".encode()).digest()[:4], "big") >> 1


def check_prompts(prompts: Mapping[str, Any]) -> None:
    """Check the prompt templates: every stage of :data:`PROMPT_FIELDS` has a ``system`` and a
    ``user`` string using only its fields, and every style has a description.

    Raises:
        ValueError: naming the stage, the part and the unknown field or missing entry.
    """
    for stage, fields in PROMPT_FIELDS.items():
        if stage not in prompts:
            raise ValueError(f"prompts: stage {stage!r} is missing (stages: {sorted(PROMPT_FIELDS)})")
        for part in ("system", "user"):
            template = prompts[stage].get(part)
            if not isinstance(template, str) or not template.strip():
                raise ValueError(f"prompts.{stage}.{part} must be a non-empty string")
            for _, name, _, _ in string.Formatter().parse(template):
                if name is not None and name not in fields:
                    raise ValueError(f"prompts.{stage}.{part} uses unknown field {{{name}}}; it may use {fields}")
    missing = [style for style in STYLES if style not in prompts.get("styles", {})]
    if missing:
        raise ValueError(f"prompts.styles lacks a description for {missing}")


@dataclass
class Generator:
    """What every stage shares: the run's seed (config ``seed``), the prompts, the backend and cache.

    Each stage's settings (:mod:`knowlab.fiction_generation.settings`) give its requests' model,
    temperature and max_tokens, and the parse retries (:meth:`run`).
    """

    seed: int
    prompts: Mapping[str, Any]
    backend: Backend
    cache: RequestCache

    def request(self, settings: FictionGenerationStageSettings, key: str, prompt: str, fields: Mapping[str, Any],
                retry: int = 0) -> ChatRequest:
        """The request for one item of stage ``settings.STAGE``: prompt ``prompt`` filled with
        ``fields``, the stage's temperature and max_tokens (``settings``), the model
        (``settings.model``), and the item's sampling seed (:func:`item_seed` of :attr:`seed`).

        The seed is part of the request's content address, so two items that share a prompt
        (e.g. two news documents of one event asked to use the same words) are two requests
        with two samples, and each retry is a new request."""
        template = self.prompts[prompt]
        messages = tuple({"role": role, "content": template[role].format_map(fields)} for role in ("system", "user"))
        params = {"temperature": settings.temperature, "max_tokens": settings.max_tokens,
                  "seed": item_seed(self.seed, key, retry)}
        return ChatRequest(key=key, stage=settings.STAGE, messages=messages, model=settings.model, params=params)

    def run(self, settings: FictionGenerationStageSettings, items: Sequence[tuple[str, str, Mapping[str, Any]]],
            parse: Callable[[str, str], Any]) -> dict[str, Any]:
        """Request, parse and retry (``settings.max_parse_retries`` times) the items of stage
        ``settings.STAGE``: ``items`` are ``(key, prompt name, fields)``.

        Returns:
            ``{key: parsed}`` for the items whose answer parsed; the others are logged
            (each error once) and counted as dropped.
        """
        stage = settings.STAGE
        parsed: dict[str, Any] = {}
        pending = list(items)
        errors: dict[str, str] = {}
        for retry in range(int(settings.max_parse_retries) + 1):
            if not pending:
                break
            requests = [self.request(settings, key, prompt, fields, retry) for key, prompt, fields in pending]
            desc = stage if retry == 0 else f"{stage} (retry {retry})"
            answers = run_requests(self.backend, self.cache, requests, desc)
            failed = []
            for item in pending:
                key = item[0]
                if key not in answers:
                    continue  # a partial (replay) backend without this response
                try:
                    parsed[key] = parse(answers[key].content, key)
                    errors.pop(key, None)
                except DataError as err:
                    errors[key] = str(err)
                    failed.append(item)
            pending = failed
        for key in sorted(errors):
            log.warning("%s: dropped after %d attempt(s): %s", stage, int(settings.max_parse_retries) + 1,
                        errors[key])
        unanswered = len(items) - len(parsed) - len(errors)
        log.info("%s: %d of %d item(s) parsed, %d dropped as malformed, %d without a response",
                 stage, len(parsed), len(items), len(errors), unanswered)
        return parsed


def inspiration_draws(n_seeds: int, years: Sequence[int], n_words: int, seed: int) -> list[tuple[int, list[str]]]:
    """``(year, inspiration words)`` per seed event: a year uniform in ``years`` (inclusive) and
    ``n_words`` random English nouns/adjectives/verbs (the ``wonderwords`` lists), from one
    ``random.Random(seed)`` drawn in seed order, so raising ``n_seeds`` keeps earlier draws.
    """
    # deferred: wonderwords is loaded only by the seeds stage
    from wonderwords import RandomWord

    rng = random.Random(seed)
    words = RandomWord(rng=rng)
    draws = []
    for _ in range(n_seeds):
        year = rng.randint(int(years[0]), int(years[1]))
        draws.append((year, words.random_words(n_words, include_categories=["noun", "adjective", "verb"])))
    return draws


def make_seeds(gen: Generator, settings: FictionGenerationSeedsSettings) -> list[dict[str, Any]]:
    """Seed events ``{"event_id", "seed", "year", "inspiration"}`` (Kirchenbauer et al. 2026 App. C.2):
    ``settings.n_seeds`` draws (:func:`inspiration_draws` of ``settings.years``,
    ``settings.inspiration_words`` and the run's seed)."""
    draws = inspiration_draws(settings.n_seeds, settings.years, settings.inspiration_words, gen.seed)
    items = [(f"event_{i:03d}", "seeds", {"year": year, "inspiration": ", ".join(words)})
             for i, (year, words) in enumerate(draws)]
    parsed = gen.run(settings, items, parse_seed)
    return [{"event_id": key, "seed": parsed[key], "year": fields["year"], "inspiration": fields["inspiration"]}
            for key, _, fields in items if key in parsed]


def make_fictsheets(gen: Generator, settings: FictionGenerationFictsheetsSettings,
                    seeds: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Fictsheets in the release schema: the text and its five lists
    (:func:`~knowlab.fiction.release.parse_fictsheet`; Kirchenbauer et al. 2026 App. C.3).  A sheet whose
    lists do not parse is kept with empty lists and counted in a warning."""
    items = [(s["event_id"], "fictsheets", {"seed": s["seed"]}) for s in seeds]
    parsed = gen.run(settings, items, _nonempty)
    records = [{"event_id": key, "fictsheet": parsed[key], **parse_fictsheet(parsed[key])}
               for key, _, _ in items if key in parsed]
    unstructured = [r["event_id"] for r in records if not (r["entities"] and r["events"])]
    if unstructured:  # kept, as the authors' pipeline keeps them: the text still drives the fictions
        log.warning("fictsheets: %d of %d sheet(s) have no Entities or no Events list (e.g. %s); kept as text",
                    len(unstructured), len(records), unstructured[:3])
    return records


def fictsheet_words(fictsheet: str, n: int, rng: random.Random) -> list[str]:
    """``n`` distinct words of at least 5 letters drawn from a fictsheet, in sheet order
    (the few words each fiction prompt asks the document to use)."""
    vocab = list(dict.fromkeys(w for w in re.findall(r"[A-Za-z][A-Za-z'-]{4,}", fictsheet)))
    return sorted(rng.sample(vocab, min(n, len(vocab))), key=vocab.index)


def make_fictions(gen: Generator, settings: FictionGenerationFictionsSettings, seeds: Sequence[Mapping[str, Any]],
                  fictsheets: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Documents per event and style, ``settings.styles[style]`` of each (paper: news 5, social 3,
    corporate 3, encyclopedia 2, blog 2; Kirchenbauer et al. 2026 App. C.4), each asked to use
    ``settings.fiction_words`` words of its fictsheet (drawn with the run's seed)."""
    seed_text = {s["event_id"]: s["seed"] for s in seeds}
    items = []
    for sheet in fictsheets:
        event = sheet["event_id"]
        for style, count in settings.styles.items():
            for num in range(int(count)):
                fiction_id = f"{event}_style_{style}_num_{num:03d}"
                rng = random.Random(f"{gen.seed}/{fiction_id}")
                words = fictsheet_words(sheet["fictsheet"], settings.fiction_words, rng)
                fields = {"seed": seed_text[event], "fictsheet": sheet["fictsheet"], "style": style,
                          "style_description": gen.prompts["styles"][style], "n_documents": count,
                          "words": ", ".join(words)}
                items.append((fiction_id, "fictions", fields))
    parsed = gen.run(settings, items, _nonempty)
    return [{"event_id": key.split("_style_")[0], "fiction_id": key, "style": fields["style"], "fiction": parsed[key]}
            for key, _, fields in items if key in parsed]


def _nonempty(text: str, key: str) -> str:
    text = text.strip()
    if not text:
        raise DataError(f"{key}: empty response")
    return text


def make_fict_qa(gen: Generator, settings: FictionGenerationFictQaSettings, seeds: Sequence[Mapping[str, Any]],
                 fictsheets: Sequence[Mapping[str, Any]],
                 fictions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Fictional Q&A per document from the YAML answer (Kirchenbauer et al. 2026 App. C.5): records in the
    release schema with ids ``<fiction_id>_question_<k>``; malformed YAML is retried, then dropped."""
    seed_text = {s["event_id"]: s["seed"] for s in seeds}
    sheet_text = {s["event_id"]: s["fictsheet"] for s in fictsheets}
    items = [(f["fiction_id"], "fict_qa", {"seed": seed_text[f["event_id"]], "fictsheet": sheet_text[f["event_id"]],
                                           "fiction": f["fiction"]}) for f in fictions]
    parsed = gen.run(settings, items, lambda text, key: parse_fict_qa_yaml(text, where=key))
    records = []
    for fiction in fictions:
        key = fiction["fiction_id"]
        for k, qa in enumerate(parsed.get(key, [])):
            record = {"event_id": fiction["event_id"], "fiction_id": key,
                      "question_id": f"{key}_question_{k:03d}", **qa}
            validate_record("fict_qa", record, key)
            records.append(record)
    return records


def make_attempts(gen: Generator, settings: FictionGenerationAttemptsSettings, kind: str,
                  fictions: Sequence[Mapping[str, Any]], fict_qa: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Answer attempts ``{"question_id", "kind", "attempt", "unknown"}`` (Kirchenbauer et al. 2026 Sec. 3):
    ``blind`` sees the question only, ``informed`` also the document it was written from;
    the prompt asks for ``UNKNOWN_ANSWER`` when the model does not know."""
    if kind not in ATTEMPT_KINDS:
        raise ValueError(f"attempt kind must be one of {ATTEMPT_KINDS}, got {kind!r}")
    text = {f["fiction_id"]: f["fiction"] for f in fictions}
    items = [(f"{q['question_id']}_{_ATTEMPT_SUFFIX[kind]}", f"attempt_{kind}",
              {"question": q["question"], "fiction": text[q["fiction_id"]]} if kind == "informed"
              else {"question": q["question"]}) for q in fict_qa]
    parsed = gen.run(settings, items, lambda text, key: parse_attempt(_nonempty(text, key)))
    return [{"question_id": q["question_id"], "kind": kind, "attempt": parsed[key][0], "unknown": parsed[key][1]}
            for q, (key, _, _) in zip(fict_qa, items) if key in parsed]


def make_grades(gen: Generator, settings: FictionGenerationGradesSettings, kind: str,
                fictions: Sequence[Mapping[str, Any]], fict_qa: Sequence[Mapping[str, Any]],
                attempts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Grades ``{"question_id", "kind", "correct", "reasoning", "graded_by"}`` (Kirchenbauer et al. 2026 Sec. 3).

    The grader sees the document, the question, its answers and the attempt, and answers
    ``Reasoning: ...`` then ``Grade: CORRECT|INCORRECT`` (parsed strictly,
    :func:`~knowlab.fiction_generation.parse.parse_grade`).  An ``UNKNOWN_ANSWER`` attempt is graded
    incorrect without a request (``graded_by: "unknown_answer"``); a question without an
    attempt gets no grade.
    """
    text = {f["fiction_id"]: f["fiction"] for f in fictions}
    by_question = {a["question_id"]: a for a in attempts if a["kind"] == kind}
    grades, items = [], []
    for q in fict_qa:
        attempt = by_question.get(q["question_id"])
        if attempt is None:
            continue
        if attempt["unknown"]:
            grades.append({"question_id": q["question_id"], "kind": kind, "correct": False,
                           "reasoning": "", "graded_by": "unknown_answer"})
            continue
        fields = {"fiction": text[q["fiction_id"]], "question": q["question"], "span_answer": q["span_answer"],
                  "natural_answer": q["natural_answer"], "attempt": attempt["attempt"]}
        items.append((f"{q['question_id']}_{_GRADE_SUFFIX[kind]}", "grade", fields))
    parsed = gen.run(settings, items, parse_grade)
    suffix = f"_{_GRADE_SUFFIX[kind]}"
    for key, _, _ in items:
        if key in parsed:
            correct, reasoning = parsed[key]
            grades.append({"question_id": key.removesuffix(suffix), "kind": kind, "correct": correct,
                           "reasoning": reasoning, "graded_by": "model"})
    order = {q["question_id"]: i for i, q in enumerate(fict_qa)}
    return sorted(grades, key=lambda g: order[g["question_id"]])
