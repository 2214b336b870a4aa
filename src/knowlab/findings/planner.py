"""The design planner (issue 56): what every claim's test can reach on a config, before any job runs.

:func:`plan_design` builds, from the config and the fiction corpus alone (no model, no download,
seconds), the tables :func:`knowlab.findings.collect` reads after a run, and runs the claims on them
through the same checks, tests and Holm correction (:func:`knowlab.findings.decide_all`; the tests give
their smallest p and draw no permutation).  So the planner's unit, number of units and of measured
values are those the run's ``results/findings_design.csv`` reports, by construction rather than by a
second description of the design, and its smallest p after Holm is the design's, which a run reaches
unless its values tie (:func:`disagreements`; ``tests/test_findings_planner.py`` and
``tests/workflow/test_pipeline.py`` compare plans with finished runs of the default and of
``config/test.yaml``).

What the planner builds, and from what:

- **identities, exactly**: the corpus (:func:`knowlab.fiction.corpus.load_fiction`, the same
  ``fiction.shipped.events``, ``styles_per_event`` and ``questions_per_document``), the splits
  (:func:`knowlab.fiction.splits.make_split`), the documents and questions each checkpoint scores
  (:func:`knowlab.fiction.splits.scored_documents`,
  :func:`knowlab.fictionalqa.settings.document_suites`), the grounding questions
  (:func:`knowlab.grounding.fiction.fiction_grounding_items`,
  :func:`knowlab.grounding.conditions.select_question_ids`) and the grounding conditions;
- **identities by count** where the items need a download: SORT's items (books x excerpt lengths
  x segment lengths x ``n_excerpts - n_validation`` test excerpts x
  :data:`knowlab.sort.build.N_BINS` distance bins), the held-out webtext paragraphs, the
  real-world questions, and a released or generated fiction corpus that is not on this machine
  (the release's counts, :data:`knowlab.fiction.release.RELEASE_EVENTS`; a generated corpus's from
  ``fiction.generate``); the output says which;
- **values, from stated assumptions** (:class:`Assumptions`): each measured value is a unit effect
  plus an item's noise, normal, with the standard deviation of its scale and an intra-unit
  correlation; every run and condition draws its own, with no effect between runs or conditions,
  but three shapes a run has: a trained checkpoint's losses sit 0.5 nats below step 0's (the
  minimum-validation-loss checkpoint is a trained one), the parametric SORT rows are 0/1 (Tango's
  interval takes proportions), and the in-context distances follow the drawn correctness, rising or
  falling per excerpt (its rank correlation is never a chance 0).  The values set the minimum
  detectable effect (the unit means' spread); they never tie, so the smallest p is the design's:
  every unit differing.  A run whose own tables tie (every document's exact match 0, a
  grounding question's F1 equal under two conditions) reaches a larger smallest p than planned,
  and its ``findings_design.csv`` says so.
- **exposure, exactly**: per fiction run and checkpoint, the fiction epochs its training has completed
  and how many of the scored training documents it has drawn at least once, from the run's own
  mixture sampler (:func:`knowlab.core.mixture.fiction_exposure`: the same seed, rate, warm-up and
  batch; its epochs equal the run's ``train_log``).  Below one epoch by the last checkpoint the plan
  says so: the memorisation claims (verbatim exact match, the U shape's rise, the train-validation
  gap) are about repeated training (Kirchenbauer et al. 2026 Sec. 5, Fig. 2), and a document never
  drawn cannot be memorised; the values drawn for the MDE do not know this (:attr:`Plan.exposure`).
- With ``results`` (the last finished run's folder), a table there whose rows are the planned
  table's items is read instead of drawn, so the minimum detectable effect uses the run's
  variance.

Run it as ``python -m knowlab.findings.plan [--configfile FILE ...]`` (``make plan``).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from knowlab import layout
from knowlab.config import ROOT, load_config, model_config
from knowlab.core.checkpoints import replicated_run
from knowlab.core.mixture import fiction_exposure
from knowlab.fiction.corpus import first_events, load_fiction, question_sample, style_sample
from knowlab.fiction.release import RELEASE_EVENTS, RELEASE_QUESTIONS_PER_DOCUMENT, RELEASE_STYLES
from knowlab.fiction.settings import FictionCorpusSettings
from knowlab.fiction.splits import make_split, scored_documents
from knowlab.fictionalqa.settings import document_suites
from knowlab.findings import decide_all, design_table
from knowlab.findings.base import Finding, FindingsSettings, Results, Skip
from knowlab.grounding.conditions import select_question_ids
from knowlab.grounding.fiction import fiction_grounding_items
from knowlab.grounding.kaist import KAIST_QUESTIONS
from knowlab.grounding.settings import GroundingConditionSettings, condition_names
from knowlab.layout import Layout, training_seeds
from knowlab.sort.build import N_BINS
from knowlab.sort.release import BOOKSORT_BOOKS

#: the suites of an evaluation's item table and the value columns each carries
_SUITE_COLUMNS = {
    "fiction_doc": ("loss", "em"),
    "fictsheet_doc": ("loss", "em"),
    "webtext": ("loss",),
    "fict_qa_nll": ("loss",),
    "real_qa_nll": ("loss",),
}


@dataclass(frozen=True)
class Assumptions:
    """The variance the planner assumes where it has no run's tables: per measured value, normal
    with standard deviation ``sd[scale]``, of which the share ``icc`` is shared by the values of one
    unit (event, excerpt, document).  Defaults: a Bernoulli accuracy at 0.5 (SD 0.5); per-token losses
    and nll with SD 0.5 nats around 3 (the default run's document and question losses: SD 0.3-0.6);
    F1 with SD 0.35 (the default's grounding F1); ICC 0.3 (the issue's power simulation)."""

    sd: Mapping[str, float] = field(
        default_factory=lambda: {"accuracy": 0.5, "loss": 0.5, "em": 0.3, "f1": 0.35, "score": 0.3}
    )
    icc: float = 0.3
    seed: int = 0

    def describe(self) -> str:
        sds = ", ".join(f"{k} {v:g}" for k, v in self.sd.items())
        return f"item SD {sds}; intra-unit correlation {self.icc:g}"


class PlannedResults(Results):
    """The tables of a run of ``config`` as :mod:`knowlab.findings` reads them, built without running it
    (:mod:`knowlab.findings.planner`).  ``tables``: relative path -> table (or split record)."""

    def __init__(self, settings: FindingsSettings, tables: Mapping[str, Any], trains: set[str], model: str | None):
        super().__init__(Path(layout.RESULTS), settings, model)
        self._cache.update(tables)
        self._trains = trains
        self.p_values = False  # the smallest p and the MDE are the plan; a p of drawn values is not

    def read(self, relative: str) -> Any:
        if relative not in self._cache:
            raise Skip(f"no results/{relative} in this config")
        return self._cache[relative]

    def trains(self, ft_model: str, run: str) -> bool:
        return layout.ITEMS.relative(ft_model=ft_model, run=run, step=self.last) in self._trains


@dataclass
class Plan:
    """What :func:`plan_design` found: the findings on the planned tables, and where the tables'
    identities came from (``sources``: one line each)."""

    findings: list[Finding]
    sources: list[str]
    assumptions: Assumptions
    exposure: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Per fiction run (its first training seed) and checkpoint after step 0: ``run, step, epochs``
    (fiction epochs completed), ``scored_training`` (the run's training documents among those each
    checkpoint scores) and ``scored_trained`` (of those, drawn at least once by ``step``)."""

    def design(self) -> pd.DataFrame:
        """The columns of ``results/findings_design.csv`` that the design fixes (no status: nothing ran)."""

        return design_table(self.findings).drop(columns=["status"])


def plan_design(
    config: Mapping[str, Any],
    basedir: str | Path = ".",
    *,
    assumptions: Assumptions | None = None,
    results: str | Path | None = None,
) -> Plan:
    """Every claim's design on ``config`` (a merged config, :func:`knowlab.config.load_config`),
    decided on planned tables (:mod:`knowlab.findings.planner`).

    Args:
        basedir: the checkout, for the shipped corpus and the real-world questions.
        assumptions: the variance of the drawn values (None: :class:`Assumptions`' defaults).
        results: a finished run's ``results`` folder whose matching tables replace drawn ones.

    Raises:
        as :func:`knowlab.fiction.corpus.load_fiction` (a shipped file that differs from its pin, a
        malformed corpus record: file, line and field).
    """

    assumptions = assumptions or Assumptions()
    builder = _Builder(config, Path(basedir), assumptions, None if results is None else Path(results))
    settings = FindingsSettings.from_config(config)
    found = decide_all(PlannedResults(settings, builder.tables(), builder.trained, builder.model))
    return Plan(found, builder.sources, assumptions, builder.exposure)


class _Builder:
    """Builds the planned tables of one config (:func:`plan_design`)."""

    def __init__(self, config: Mapping[str, Any], basedir: Path, assumptions: Assumptions, results: Path | None):

        self.config, self.basedir, self.a, self.results = config, basedir, assumptions, results
        self.layout = Layout(config)
        self.sources: list[str] = []
        self.trained: set[str] = set()
        #: the tables read from ``results`` (a finished run's, holding the planned items)
        self.finished: list[str] = []
        #: the grounding rows' model name (the planned rows hold one model)
        self.model: str | None = None
        self.base_eval = next((name for name, spec in config["eval_models"].items() if spec == "base"), None)
        #: :attr:`Plan.exposure`
        self.exposure = pd.DataFrame(columns=["run", "step", "epochs", "scored_training", "scored_trained"])

    # -------------------------------------------------------------- values

    def _rng(self, *key: Any) -> np.random.Generator:
        digest = hashlib.sha256(repr((self.a.seed, *key)).encode()).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "little"))

    def values(self, scale: str, units: Sequence[str], key: tuple, mean: float = 0.0) -> np.ndarray:
        """One value per entry of ``units`` (each entry a value's unit): the unit's effect plus the
        value's noise, at :class:`Assumptions`' SD and ICC for ``scale``; drawn from ``key``."""
        sd, icc = self.a.sd[scale], self.a.icc
        codes, uniques = pd.factorize(pd.Series(units, dtype=object), sort=True)
        shared = self._rng(scale, "unit", *key).normal(0, sd * icc**0.5, len(uniques))
        noise = self._rng(scale, "noise", *key).normal(0, sd * (1 - icc) ** 0.5, len(units))
        return mean + shared[codes] + noise

    def _finished(
        self, relative: str, planned: pd.DataFrame, keys: Sequence[str], counted: Sequence[str] = ()
    ) -> pd.DataFrame:
        """The finished run's table at ``relative`` when its rows are ``planned``'s (same ``keys``; of the
        suites in ``counted``, whose ids the planner counts, the same number of rows), else ``planned``."""
        if self.results is None:
            return planned
        path = self.results / relative
        if not path.is_file():
            return planned
        table = pd.read_parquet(path)
        if not set(keys) <= set(table):
            return planned

        def rows(frame: pd.DataFrame) -> tuple[set, dict]:
            by_count = frame["suite"].isin(counted) if counted else pd.Series(False, index=frame.index)
            exact = set(map(tuple, frame.loc[~by_count, list(keys)].astype(str).to_numpy()))
            return exact, frame.loc[by_count, "suite"].value_counts().to_dict() if counted else {}

        (have, have_n), (want, want_n) = rows(table), rows(planned)
        if have != want or have_n != want_n:
            return planned
        self.finished.append(relative)
        return table

    # -------------------------------------------------------------- tables

    def tables(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.layout.fiction_runs:
            out |= self.fictionalqa()
        if self.config["sort"]["conditions"]:
            out |= self.sort()
        if self.config["grounding"]["datasets"]:
            out |= self.grounding()
        if self.finished:
            self.sources.append(
                f"{len(self.finished)} of the tables read from the finished run in {self.results} (its values, its "
                "variance), the others drawn"
            )
        return out

    @functools.cached_property
    def corpus(self) -> dict[str, list[dict[str, Any]]]:
        """The fiction corpus every step reads (``{table: records}``)."""

        settings = FictionCorpusSettings.from_config(self.config)
        if settings.source == "shipped":
            self.sources.append(f"fiction corpus: {settings.shipped['dir']} (its sha256 pins checked)")
            return load_fiction(settings, self.basedir)
        release = settings.release or {}
        if settings.source == "release" and release.get("path"):
            self.sources.append(f"fiction corpus: the release at {release['path']}")
            return load_fiction(settings, self.basedir)
        tables = _counted_corpus(self.config, settings.source)
        self.sources.append(
            f"fiction corpus: {settings.source} is not on this machine before the run; counted "
            f"({len(tables['seeds'])} events, {len(tables['fictions'])} documents, {len(tables['fict_qa'])} questions: "
            + (
                "the release's counts, Kirchenbauer et al. 2026"
                if settings.source == "release"
                else "fiction.generate's"
            )
            + ")"
        )
        if settings.events is not None:
            tables = first_events(tables, settings.events)
        if settings.styles_per_event is not None:
            tables = style_sample(tables, settings.styles_per_event)
        if settings.questions_per_document is not None:
            tables["fict_qa"] = question_sample(tables["fict_qa"], settings.questions_per_document)
        return tables

    def fictionalqa(self) -> dict[str, Any]:

        cfg = self.config
        corpus = self.corpus
        fictions, fict_qa, fictsheets = corpus["fictions"], corpus["fict_qa"], corpus["fictsheets"]
        out: dict[str, Any] = {
            layout.CORPUS.relative(table="fictions"): pd.DataFrame(fictions),
            layout.CORPUS.relative(table="fict_qa"): pd.DataFrame(fict_qa),
        }
        fraction = float(cfg["splits"]["event_train_fraction"])
        for run in self.layout.fiction_runs:
            out[layout.SPLIT.relative(split=run)] = make_split(run, fictions, fict_qa, int(cfg["seed"]), fraction)
        event_of = {r["fiction_id"]: r["event_id"] for r in fictions} | {
            r["event_id"]: r["event_id"] for r in fictsheets
        }
        event_of |= {q["question_id"]: q["event_id"] for q in fict_qa}
        scored = scored_documents(fictions, cfg["evaluate"]["max_documents"])
        webtext = [f"webtext_{i:04d}" for i in range(int(cfg["webtext"]["heldout_size"]))]
        real_qa = self._real_qa_ids()
        texts = {"fiction_doc": [d["fiction_id"] for d in scored], "fictsheet_doc": [s["event_id"] for s in fictsheets]}
        n_choices = sorted(int(n) for n in cfg["mcq"]["n_choices"])
        em_tokens = [int(n) for n in cfg["evaluate"]["em_tokens"]]
        other = bool(cfg["evaluate"]["other_documents"])
        sizes = []
        for k, ft_model in enumerate(self.layout.ft_models):
            sizes.append({"model": ft_model, "n_parameters": k + 1})
            for path in self.layout.run_items(ft_model, *self.layout.model_trainings(ft_model)):
                relative = path.removeprefix(f"{layout.RESULTS}/")
                self.trained.add(relative)
                run, step = re.search(r"/evaluate/([^/]+)/step-(\d+)", relative).groups()
                # a trained checkpoint's losses 0.5 nats lower (the default's fall 0.3-0.9): the minimum-validation-loss checkpoint
                # (Event generalising least) is then a trained one, as in a run, not step 0 by chance
                loss = 3.0 if step == "0" else 2.5
                suites = {
                    **{s: texts[s] for s in document_suites(replicated_run(run), other)},
                    "webtext": webtext,
                    "fict_qa_nll": [q["question_id"] for q in fict_qa],
                    "real_qa_nll": real_qa,
                }
                frames = []
                for suite, ids in suites.items():
                    units = [event_of.get(i, i) for i in ids]
                    frame = pd.DataFrame({"suite": suite, "item_id": ids})
                    frame["loss"] = self.values("loss", units, (relative, suite), loss)
                    if "em" in _SUITE_COLUMNS[suite]:
                        for n in em_tokens:
                            frame[f"em{n}"] = self.values("em", units, (relative, suite, n), 0.1)
                    frames.append(frame)
                for n in n_choices:
                    ids = [q["question_id"] for q in fict_qa]
                    units = [event_of[i] for i in ids]
                    frame = pd.DataFrame({"suite": f"mcq{n}", "item_id": ids})
                    frame["acc"] = self.values("accuracy", units, (relative, n), 1 / n)
                    frames.append(frame)
                planned = pd.concat(frames, ignore_index=True)
                out[relative] = self._finished(relative, planned, ("suite", "item_id"), ("webtext", "real_qa_nll"))
        out[layout.MODELS.relative()] = pd.DataFrame(sizes)
        self._exposure(out, {d["fiction_id"] for d in scored} | {s["event_id"] for s in fictsheets})
        self.sources.append(
            f"FictionalQA: {len(fictions)} documents ({len(scored)} scored per checkpoint), {len(fict_qa)} questions, "
            f"{len(webtext)} held-out webtext paragraphs, {len(real_qa)} real-world questions; "
            f"model sizes in finetune.models' order"
        )
        return out

    def _exposure(self, tables: Mapping[str, Any], scored: set[str]) -> None:
        """:attr:`Plan.exposure` of every fiction run's split in ``tables``, and a source line per run: the
        reference base model's training settings (its ``finetune.models`` entry over ``finetune``, as its
        fine-tuning job reads them)."""
        block = model_config(self.config, self.layout.ft_models[0])["finetune"]
        rows = []
        seed = training_seeds(self.config)[0]
        for run in self.layout.fiction_runs:
            train = tables[layout.SPLIT.relative(split=run)]["train_documents"]
            mine = [i for i, document in enumerate(train) if document in scored]
            drawn = fiction_exposure(
                len(train), float(block["fiction_rate"]), int(block["fiction_warmup_steps"]),
                int(block["global_batch_size"]), seed, self.layout.steps[1:],
            )  # fmt: skip
            for step, (epochs, seen) in drawn.items():
                rows.append((run, step, epochs, len(mine), len(seen.intersection(mine))))
        self.exposure = pd.DataFrame(rows, columns=self.exposure.columns)
        for run, frame in self.exposure.groupby("run", sort=False):
            steps = "; ".join(
                f"step {r.step}: {r.epochs:.2g} epochs, {r.scored_trained} of its {r.scored_training} scored training "
                "documents drawn"
                for r in frame.itertuples()
            )
            last = frame.iloc[-1]
            short = (
                " (below one epoch: the memorisation claims are about repeated training, Kirchenbauer et al. 2026 "
                "Sec. 5, Fig. 2; an undrawn document cannot be memorised)"
                if last["epochs"] < 1
                else ""
            )
            self.sources.append(f"fiction exposure, {run} (seed {seed}, its own sampler's draws): {steps}{short}")

    def _real_qa_ids(self) -> list[str]:
        block = self.config["real_qa"]
        if block["source"] == "shipped":
            path = self.basedir / block["shipped"]
            with open(path, encoding="utf-8") as f:
                return [f"real_{i:05d}" for i, line in enumerate(f) if line.strip()]
        return [f"real_{i:05d}" for i in range(int(block["triviaqa"]["n"]))]

    def sort(self) -> dict[str, Any]:

        s = self.config["sort"]
        books = _sort_books(s)
        n_test = int(s["n_excerpts"]) - int(s["n_validation"])
        rows = [
            {
                "item_id": f"{book}|E{le}|S{ls}|x{k:03d}|b{b}",
                "book_id": book,
                "excerpt_length": int(le),
                "segment_length": int(ls),
                "distance_bin": b,
            }
            for book in books
            for le in s["excerpt_lengths"]
            for ls in s["segment_lengths"]
            if int(ls) < int(le)
            for k in range(1, n_test + 1)
            for b in range(N_BINS)
        ]
        items = pd.DataFrame(rows)
        self.sources.append(
            f"SORT: {len(books)} texts x {len(s['excerpt_lengths'])} excerpt and {len(s['segment_lengths'])} segment "
            f"lengths x {n_test} test excerpts x {N_BINS} distance bins = {len(items)} items (counted: the texts are "
            f"fetched by the run)"
        )
        units = [i.rpartition("|")[0] for i in items["item_id"]]
        out: dict[str, Any] = {}
        # distances ordered as the drawn correctness, rising or falling per excerpt at random: every
        # excerpt's rank correlation is +1 or -1, never a chance 0 (a rank statistic of 4 items ties
        # at 0 for 2 of their 24 orders), so the planned distance claim reaches the design's floor
        codes, uniques = pd.factorize(pd.Series(units, dtype=object), sort=True)
        direction = self._rng("distance").choice([-1.0, 1.0], len(uniques))[codes]
        for condition in s["conditions"]:
            relative = layout.SORT_ROWS.relative(model=self.base_eval, condition=condition)
            correct = self.values("accuracy", units, (relative,), 0.5)
            planned = items.assign(correct=correct, distance=correct * direction)
            out[relative] = self._finished(relative, planned, ("item_id",))
        if s["parametric"]["enabled"]:
            epochs = int(s["parametric"]["epochs"])
            for prun in self.layout.parametric_runs:
                relative = layout.SORT_PARAMETRIC_ROWS.relative(prun=prun, epoch=epochs)
                frames = [  # 0/1 correctness: the claim of no accuracy gain takes Tango's interval of paired proportions
                    items.assign(
                        condition=c,
                        correct=self.values("accuracy", units, (relative, c), 0.5) > 0.5,
                        score=self.values("score", units, (relative, c, "score"), -0.7),
                    )
                    for c in ("baseline", "in_context")
                ]
                out[relative] = pd.concat(frames, ignore_index=True)
                relative = layout.SORT_PARAMETRIC_NLL.relative(prun=prun, epoch=epochs)
                out[relative] = items[["item_id"]].assign(
                    nll_a=self.values("loss", units, (relative, "a"), 5.0),
                    nll_b=self.values("loss", units, (relative, "b"), 5.0),
                )
        return out

    def grounding(self) -> dict[str, Any]:

        g = self.config["grounding"]
        conditions = condition_names(GroundingConditionSettings.from_config(self.config))
        frames = []
        for dataset in g["datasets"]:
            if dataset == "fiction":

                corpus = self.corpus
                if all("fict" in q for q in corpus["fict_qa"]):
                    original, _, _ = fiction_grounding_items(
                        corpus["fictions"], corpus["fict_qa"], int(self.config["seed"])
                    )
                else:  # a counted corpus (no text): every question, as the builder keeps nearly all (236 of 240 shipped)
                    style = {d["fiction_id"]: d["style"] for d in corpus["fictions"]}
                    original = [
                        {
                            "item_id": q["question_id"],
                            "extra": {"fiction_id": q["fiction_id"]},
                            "factors": {
                                "contexts": "single",
                                "answer_type": "definite",
                                "style": style[q["fiction_id"]],
                            },
                        }
                        for q in corpus["fict_qa"]
                    ]
                qids = select_question_ids(original, g["max_items"], int(self.config["seed"]))
                by_id = {i["item_id"]: i for i in original}
                questions = [
                    {
                        "item_id": q,
                        "document_id": by_id[q]["extra"]["fiction_id"],
                        **{f"factor_{k}": v for k, v in by_id[q]["factors"].items()},
                    }
                    for q in qids
                ]
            else:
                n = KAIST_QUESTIONS if g["max_items"] is None else min(g["max_items"], KAIST_QUESTIONS)
                questions = [
                    {
                        "item_id": f"kaist_{i:04d}",
                        "document_id": None,
                        "factor_contexts": ("single", "multi")[i % 2],
                        "factor_answer_type": ("definite", "free_form")[i // 2 % 2],
                        "factor_popularity": ("low", "high")[i // 4 % 2],
                    }
                    for i in range(n)
                ]
                self.sources.append(
                    f"grounding kaist: {n} questions, each its own unit, factors balanced (counted: the release is "
                    f"fetched by the run; Lee et al. 2024: 480 questions)"
                )
            self.sources.append(f"grounding {dataset}: {len(questions)} questions x {len(conditions)} conditions")
            qs = pd.DataFrame(questions)
            units = [d or q for q, d in zip(qs["item_id"], qs["document_id"])]
            for c in conditions:
                key = (dataset, c)
                frames.append(
                    qs.assign(
                        dataset=dataset,
                        condition=c,
                        model="base",
                        f1=self.values("f1", units, (*key, "f1"), 0.6),
                        precision=self.values("f1", units, (*key, "precision"), 0.6),
                        recall=self.values("f1", units, (*key, "recall"), 0.6),
                    )
                )
        self.model = "base"
        return {layout.GROUNDING_ROWS.relative(): pd.concat(frames, ignore_index=True)}


def _sort_books(s: Mapping[str, Any]) -> list[str]:
    if s["source"] == "shakespeare":
        return list(s["shakespeare"]["texts"])
    if s["source"] == "gutenberg":
        return [str(i) for i in s["gutenberg"]["ids"]]

    return [f"book_{i}" for i in range(BOOKSORT_BOOKS)]


def _counted_corpus(config: Mapping[str, Any], source: str) -> dict[str, list[dict[str, Any]]]:
    """A corpus of ids only, at the release's counts (100 events x 15 documents, 5 questions each:
    Kirchenbauer et al. 2026) or at ``fiction.generate``'s (``n_seeds`` events, ``styles`` documents
    per style, 4 questions each: the prompt asks for about that many)."""
    if source == "release":
        styles, n_events, per_document = RELEASE_STYLES, RELEASE_EVENTS, RELEASE_QUESTIONS_PER_DOCUMENT
    else:
        gen = config["fiction"]["generate"]
        styles, n_events, per_document = dict(gen["styles"]), int(gen["n_seeds"]), 4
    events = [f"event_{e:03d}" for e in range(n_events)]
    fictions = [
        {"event_id": e, "fiction_id": f"{e}_style_{s}_num_{k:03d}", "style": s}
        for e in events
        for s, n in styles.items()
        for k in range(n)
    ]
    fict_qa = [
        {"event_id": d["event_id"], "fiction_id": d["fiction_id"], "question_id": f"{d['fiction_id']}_question_{q:03d}"}
        for d in fictions
        for q in range(per_document)
    ]
    return {"seeds": [{"event_id": e} for e in events], "fictsheets": [{"event_id": e} for e in events],
            "fictions": fictions, "fict_qa": fict_qa}  # fmt: skip


#: the columns of ``findings_design.csv`` the planner must equal: what the design fixes
EXACT_COLUMNS = ("study", "claim", "unit", "n_clusters", "n", "seeds", "alpha")


def disagreements(planned: pd.DataFrame, run: pd.DataFrame) -> list[str]:
    """Where a plan (:meth:`Plan.design`) and a finished run's ``results/findings_design.csv`` of the same
    config disagree, one message each (none: they agree).  They agree when every line has the same
    :data:`EXACT_COLUMNS` and the run's smallest p is not below the plan's: the plan's is the
    design's, every unit differing, and a run whose values tie (every document's exact match 0) can
    only reach a larger one, so a plan's ``testable`` may be a run's ``not tested``, never the reverse."""
    out = []
    if list(zip(planned["study"], planned["claim"])) != list(zip(run["study"], run["claim"])):
        return [f"the lines differ: {len(planned)} planned, {len(run)} in the run, or in another order"]
    for i, (plan_row, run_row) in enumerate(zip(planned.to_dict("records"), run.to_dict("records"))):
        for column in EXACT_COLUMNS:
            a, b = plan_row[column], run_row[column]
            if not (a == b or (pd.isna(a) and pd.isna(b))):
                out.append(f"line {i + 1} ({run_row['claim']}): {column} planned {a}, run {b}")
        a, b = plan_row["min_p"], run_row["min_p"]
        if pd.isna(a) != pd.isna(b) or (not pd.isna(a) and b < a * (1 - 1e-9)):
            out.append(f"line {i + 1} ({run_row['claim']}): smallest p planned {a}, run {b} (below the design's)")
    return out


def render(plan: Plan, config_label: str) -> str:
    """The planner's printout: a header (the config, where the tables' identities came from, the
    assumptions), then one line per comparison: claim, unit and count, values, smallest p after
    Holm, testable, and the minimum detectable effect at the config's power."""
    findings = plan.findings
    lines = [f"Design of {config_label}: what each claim's test can reach (knowlab.findings.planner)"]
    lines += [f"  {s}" for s in plan.sources]
    lines.append(f"  values drawn for the MDE: {plan.assumptions.describe()}")
    tested = [f for f in findings if f.min_p is not None]
    reach = sum(f.min_p < f.alpha for f in tested)
    lines.append(
        f"  {reach} of {len(findings)} lines can reach alpha; {len(findings) - len(tested)} lack what the claim needs"
    )
    width = max(len(f"{f.study}: {f.claim}") for f in findings)
    for f in findings:
        name = f"{f.study}: {f.claim}".ljust(width)
        if f.min_p is None:
            lines.append(f"{name}  not tested: {f.detail}")
            continue
        mde = f"MDE {f.mde:.3g} {f.scale}" if f.mde is not None else "no MDE (cannot reach alpha)"
        lines.append(
            f"{name}  {f.n_clusters} {f.unit}s ({f.n} values), min p {f.min_p:.2g} "
            f"{'<' if f.min_p < f.alpha else '>='} {f.alpha:g}: {'testable' if f.min_p < f.alpha else 'NOT TESTABLE'}; {mde}"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m knowlab.findings.plan [--configfile FILE ...] [--results DIR] [--csv FILE]``: print the
    design of the config (``config/config.yaml`` with each ``--configfile`` laid over it, as
    Snakemake merges them)."""
    parser = argparse.ArgumentParser(prog="python -m knowlab.findings.plan", description=main.__doc__)
    parser.add_argument("--configfile", action="append", default=[], help="a config laid over config/config.yaml")
    parser.add_argument(
        "--results", default=layout.RESULTS, help="a finished run's results folder whose matching tables give the variance"
    )
    parser.add_argument("--csv", help="also write the design table (findings_design.csv's columns) here")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    config = load_config(*args.configfile)
    results = Path(args.results) if Path(args.results).is_dir() else None
    plan = plan_design(config, ROOT, results=results)
    label = " + ".join(["config/config.yaml", *args.configfile])
    print(render(plan, label), end="")
    if args.csv:
        plan.design().to_csv(args.csv, index=False)
    print(f"planned in {time.perf_counter() - start:.1f} s, no model run")
    return 0


__all__ = ["EXACT_COLUMNS", "Assumptions", "Plan", "PlannedResults", "disagreements", "main", "plan_design", "render"]
