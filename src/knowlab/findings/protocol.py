"""The papers' protocols (issue 60): the settings of each paper that bear on its claims, with the paper's
values and where the paper states them, and a run's departures from them.

Each :class:`PaperSetting` reads the run's value from the config (:func:`run_protocol`, a field of
:class:`knowlab.findings.base.FindingsSettings`) and knows whether it is the paper's.  Each claim of the
catalogue names the settings that bear on it (``Claim.protocol``) and, of those, the ones the paper's
argument depends on (``Claim.depends``: a size claim on a model axis within one family, the U shape on
the low fiction rate).  Every line then carries its deviations (:func:`deviations`): ``findings.json``
the records (setting, the run's value, the paper's, the source), ``findings.txt`` and the report's
table the short form (``under lr 3e-4 to 3e-5 (paper 5e-5 to 5e-6), ...``), and a line whose
deviations include one its claim depends on says so beside its status: the verdict was reached under
a protocol the paper's argument does not cover, and is not the paper failing.

``docs/deviations.md``'s table "Settings every verdict names" is generated from :data:`PAPER_SETTINGS`
(:func:`deviations_page`, ``python -m knowlab.findings --deviations``; a test fails when it is stale),
so the lines and the page are one source.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from knowlab.config import ROOT, load_config
from knowlab.layout import finetune_models, model_slug

#: the papers, as every line and the catalogue cite them
FICTIONALQA = "Kirchenbauer et al. (2026)"
SORT = "Pink et al. (2024)"
GROUNDING = "Lee et al. (2024)"


def _number(x: float) -> str:
    """``3e-4``, ``0.05``, ``128``: the shortest plain form of a setting's number."""
    if float(x).is_integer():
        return str(int(x))
    short = np.format_float_scientific(float(x), trim="-", exp_digits=1)
    return min(f"{float(x):g}", short, key=len)  # the plain form on a tie: 0.05, not 5e-2


def _shipped(block: Mapping[str, Any]) -> str:
    """``24 shipped events, 1 style each``: the shipped corpus a run reads."""
    events, styles = block.get("events"), block.get("styles_per_event")
    return f"{events or 'all'} shipped events" + (
        f", {styles} style{'s' if styles != 1 else ''} each" if styles else ""
    )


def _block_slug(config: Mapping[str, Any], spec: Any) -> str:
    """The model slug of a model spec: ``base`` (the ``model`` block) or a block of its own."""
    return model_slug(config["model"] if spec == "base" else {**config["model"], **spec})


def _finetune_slugs(config: Mapping[str, Any]) -> list[str]:
    return [_block_slug(config, spec) for spec in finetune_models(config).values()]


def _eval_slug(config: Mapping[str, Any]) -> str:
    """The model SORT and grounding evaluate and decide their claims on (the ``eval_models`` key whose
    value is ``base``), or the config's model."""
    return _block_slug(config, "base")


#: Kirchenbauer et al. 2026, Sec. 5 and App. D.1: "the "base" checkpoints from the Llama 3.1, Llama 3.2,
#: Gemma 1, and Gemma 2 suites"
_PAPER_FAMILIES = re.compile(r"^(llama-3\.[12]-\d+b|gemma-(2-)?\d+b)$", re.IGNORECASE)


@dataclass(frozen=True)
class PaperSetting:
    """One setting of a paper's protocol: ``key`` (what a claim names), ``label`` (as a line prints it),
    ``study``, the paper's value as printed (``paper``) and where the paper states it (``source``), the
    config keys that set it (``keys``), ``read`` (the run's value from the config: builtins),
    ``matches`` (whether a run's value is the paper's) and ``show`` (the run's value as printed)."""

    key: str
    label: str
    study: str
    paper: str
    source: str
    keys: str
    read: Callable[[Mapping[str, Any]], Any]
    matches: Callable[[Any], bool]
    show: Callable[[Any], str] = str


def _finetune_number(key: str, config_key: str, label: str, paper: float, section: str, unit: str = "") -> PaperSetting:
    """A FictionalQA setting that is one number of the ``finetune`` block, the paper's ``paper``
    (Kirchenbauer et al. 2026, ``section``), printed with ``unit``."""
    return PaperSetting(
        key, label, "FictionalQA", f"{_number(paper)}{unit}", f"{FICTIONALQA} {section}", f"`finetune.{config_key}`",
        lambda c: float(c["finetune"][config_key]), lambda v: v == paper, lambda v: f"{_number(v)}{unit}",
    )  # fmt: skip


PAPER_SETTINGS: tuple[PaperSetting, ...] = (
    # ---------------------------------------------------------------- FictionalQA
    PaperSetting(
        "models", "model", "FictionalQA",
        "Llama 3.1/3.2 or Gemma 1/2 base, 1B-8B", f"{FICTIONALQA} Sec. 5, App. D.1", "`finetune.models` (or `model`)",
        _finetune_slugs, lambda v: all(_PAPER_FAMILIES.match(s) for s in v), ", ".join,
    ),
    PaperSetting(
        "lr", "lr", "FictionalQA", "5e-5 to 5e-6", f"{FICTIONALQA} App. D.1", "`finetune.lr`, `finetune.min_lr`",
        lambda c: [float(c["finetune"]["lr"]), float(c["finetune"]["min_lr"])],
        lambda v: v == [5e-5, 5e-6], lambda v: f"{_number(v[0])} to {_number(v[1])}",
    ),
    _finetune_number("fiction_rate", "fiction_rate", "fiction rate", 0.05, "Sec. 5"),
    _finetune_number("fiction_warmup", "fiction_warmup_steps", "warm-up", 50, "App. D.1", " steps"),
    _finetune_number("batch", "global_batch_size", "batch", 128, "App. D.1"),
    _finetune_number("seq_len", "seq_len", "sequence length", 2048, "App. D.1"),
    _finetune_number("steps", "max_steps", "steps", 500, "Figs. 4-8 (0 to 500 optimizer steps)"),
    PaperSetting(
        "corpus", "corpus", "FictionalQA", "the release, 100 events", f"{FICTIONALQA} Sec. 4",
        "`fiction.source`, `fiction.shipped.*`",
        lambda c: (
            "the release" if c["fiction"]["source"] == "release"
            else "a generated corpus" if c["fiction"]["source"] == "generate"
            else _shipped(c["fiction"]["shipped"])
        ),
        lambda v: v == "the release",
    ),  # fmt: skip
    PaperSetting(
        "ranker", "MCQ distractors", "FictionalQA", "ranked by Llama-3.2-3B-Instruct", f"{FICTIONALQA} App. C.6",
        "`mcq.distractors`, `mcq.ranker.model`",
        lambda c: (
            f"ranked by {c['mcq']['ranker']['model']}" if c["mcq"]["distractors"] == "model_ranked"
            else str(c["mcq"]["distractors"])
        ),
        lambda v: "llama-3.2-3b-instruct" in v.lower(),
    ),  # fmt: skip
    PaperSetting(
        "real_qa", "real-world questions", "FictionalQA", "TriviaQA", f"{FICTIONALQA} App. C.7", "`real_qa.source`",
        lambda c: "TriviaQA" if c["real_qa"]["source"] == "triviaqa" else "the shipped set",
        lambda v: v == "TriviaQA",
    ),
    # ---------------------------------------------------------------- SORT
    PaperSetting(
        "sort_model", "model", "SORT", "Llama3-8b-Instruct, Mistral-7b-v0.2-Instruct and larger", f"{SORT} Sec. 4.3",
        "`model`, `eval_models`",
        _eval_slug, lambda v: bool(re.search(r"llama-?3|mistral|gemma|mixtral", v, re.IGNORECASE)),
    ),
    PaperSetting(
        "books", "books", "SORT", "Book-SORT's 9 books", f"{SORT} Sec. 4.1", "`sort.source`",
        lambda c: c["sort"]["source"] if c["sort"]["source"] != "shakespeare"
        else " and ".join(c["sort"]["shakespeare"]["texts"]),
        lambda v: v in ("gutenberg", "release"),
    ),
    PaperSetting(
        "excerpts", "test excerpts per book and length", "SORT", "100", f"{SORT} Sec. 4.1",
        "`sort.n_excerpts`, `sort.n_validation`",
        lambda c: int(c["sort"]["n_excerpts"]) - int(c["sort"]["n_validation"]), lambda v: v == 100, str,
    ),
    PaperSetting(
        "excerpt_lengths", "excerpt lengths", "SORT", "250, 1000, 2500 words", f"{SORT} Sec. 4.1",
        "`sort.excerpt_lengths`",
        lambda c: sorted(int(n) for n in c["sort"]["excerpt_lengths"]), lambda v: v == [250, 1000, 2500],
        lambda v: ", ".join(map(str, v)) + " words",
    ),
    PaperSetting(
        "segment_lengths", "segment lengths", "SORT", "20, 50 words", f"{SORT} Sec. 4.1", "`sort.segment_lengths`",
        lambda c: sorted(int(n) for n in c["sort"]["segment_lengths"]), lambda v: v == [20, 50],
        lambda v: ", ".join(map(str, v)) + " words",
    ),
    PaperSetting(
        "parametric", "parametric fine-tuning", "SORT", "5 epochs on whole books (5,000-word chunks)",
        f"{SORT} Sec. 3.2, App. E", "`sort.parametric.epochs`, `sort.parametric.scope`",
        lambda c: [int(c["sort"]["parametric"]["epochs"]), str(c["sort"]["parametric"]["scope"])],
        lambda v: v == [5, "books"], lambda v: f"{v[0]} epoch{'s' if v[0] != 1 else ''} on the {v[1]}",
    ),
    PaperSetting(
        "rag_embedder", "RAG embedder", "SORT", "BGE-v1.5 (1024-d)", f"{SORT} Sec. 3.2", "`sort.rag.embedder`",
        lambda c: str(c["sort"]["rag"]["embedder"]).removeprefix("packaged:"), lambda v: "bge" in v.lower(),
    ),
    # ---------------------------------------------------------------- grounding
    PaperSetting(
        "grounding_model", "model", "Grounding", "25 LLMs of 7B-70B (Llama 2, Vicuna, TULU, Mistral, ...) and GPT",
        f"{GROUNDING} Sec. 4.1, App. C.1", "`model`, `eval_models`",
        _eval_slug, lambda v: bool(re.search(r"llama-?2|vicuna|tulu|mistral|zephyr|gpt", v, re.IGNORECASE)),
    ),
    PaperSetting(
        "grounding_data", "questions", "Grounding", "the authors' 480", f"{GROUNDING} Sec. 3.2",
        "`grounding.datasets`, `grounding.max_items`",
        lambda c: [list(c["grounding"]["datasets"]), c["grounding"]["max_items"]],
        lambda v: "kaist" in v[0] and v[1] is None,
        lambda v: ", ".join(v[0]) + (f" ({v[1]} each)" if v[1] else ""),
    ),
    PaperSetting(
        "decomposer", "atomic facts", "Grounding", "an LLM's decomposition", f"{GROUNDING} Sec. 3.1, App. A.3",
        "`grounding.decomposer.kind`",
        lambda c: str(c["grounding"]["decomposer"]["kind"]), lambda v: v == "llm",
        lambda v: "sentences" if v == "sentences" else f"{v} decomposition",
    ),
    PaperSetting(
        "evaluator", "fact evaluator", "Grounding", "cross-encoder, logit > 6", f"{GROUNDING} Sec. 3.3, App. B.2",
        "`grounding.evaluator.kind`",
        lambda c: str(c["grounding"]["evaluator"]["kind"]), lambda v: v == "cross_encoder",
        lambda v: v.replace("_", "-"),
    ),
    PaperSetting(
        "max_new_tokens", "answer length", "Grounding", "up to 2048 new tokens", f"{GROUNDING} App. C.2",
        "`grounding.generation.max_new_tokens`",
        lambda c: int(c["grounding"]["generation"]["max_new_tokens"]), lambda v: v >= 2048,
        lambda v: f"up to {v} new tokens",
    ),
)  # fmt: skip
_BY_KEY = {s.key: s for s in PAPER_SETTINGS}

#: what a FictionalQA fine-tuning claim's protocol is, every one of them
TRAINING = ("models", "lr", "fiction_rate", "fiction_warmup", "batch", "seq_len", "steps", "corpus")
#: SORT's evaluation, every claim
SORT_EVALUATION = ("sort_model", "books", "excerpts", "excerpt_lengths", "segment_lengths")
#: grounding's, every claim
GROUNDING_EVALUATION = ("grounding_model", "grounding_data", "decomposer", "evaluator", "max_new_tokens")


def run_protocol(config: Mapping[str, Any]) -> dict[str, Any]:
    """The run's value of every :data:`PAPER_SETTINGS` entry, by key (builtins: a rule's param).  A setting
    whose keys a partial config lacks (a test's hand-made config; a workflow's config is validated, every
    key present) is left out, and so never a deviation."""
    out = {}
    for s in PAPER_SETTINGS:
        try:
            out[s.key] = s.read(config)
        except (KeyError, TypeError):
            continue
    return out


def deviations(values: Mapping[str, Any], keys: Sequence[str], depends: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The settings of ``keys`` whose run value (``values``: :func:`run_protocol`) is not the paper's,
    those of ``depends`` first, then the shortest printed first: ``{"setting", "run", "paper", "source",
    "depends"}`` each (``depends``: the claim's argument rests on it).

    Raises:
        KeyError: a key that is no :data:`PAPER_SETTINGS` entry.
    """
    out = []
    for key in keys:
        setting = _BY_KEY[key]
        if key in values and not setting.matches(values[key]):
            out.append(
                {
                    "setting": setting.label,
                    "run": setting.show(values[key]),
                    "paper": setting.paper,
                    "source": setting.source,
                    "depends": key in depends,
                }
            )
    # what the claim rests on first, then the shortest first
    return sorted(out, key=lambda d: (not d["depends"], len(short_form([d]))))


def short_form(found: Sequence[Mapping[str, Any]]) -> str:
    """``lr 3e-4 to 3e-5 (paper 5e-5 to 5e-6), fiction rate 0.6 (paper 0.05)``: the deviations as a line
    prints them ("" for none)."""
    return ", ".join(f"{d['setting']} {d['run']} (paper {d['paper']})" for d in found)


def settings_markdown(configs: Mapping[str, Mapping[str, Any]]) -> str:
    """``docs/deviations.md``'s generated table: every setting the verdicts name, the paper's value and
    source, each of ``configs``' values (label -> merged config; "=" where it is the paper's) and the keys
    that set it."""
    values = {label: run_protocol(config) for label, config in configs.items()}
    lines = [
        "| study | setting | paper | source | " + " | ".join(configs) + " | set by |",
        "| --- | --- | --- | --- | " + " | ".join("---" for _ in configs) + " | --- |",
    ]
    for s in PAPER_SETTINGS:
        cells = ["=" if s.matches(v[s.key]) else s.show(v[s.key]) for v in values.values()]
        lines.append(f"| {s.study} | {s.label} | {s.paper} | {s.source} | " + " | ".join(cells) + f" | {s.keys} |")
    return "\n".join(lines) + "\n"


#: the markers of the generated table in ``docs/deviations.md``
BEGIN, END = (
    "<!-- begin: python -m knowlab.findings --deviations -->",
    "<!-- end: python -m knowlab.findings --deviations -->",
)


def deviations_page(text: str, configs: Mapping[str, Mapping[str, Any]]) -> str:
    """``text`` (``docs/deviations.md``) with its generated table (between :data:`BEGIN` and :data:`END`)
    made anew from :func:`settings_markdown`.

    Raises:
        ValueError: ``text`` lacks the markers.
    """
    if BEGIN not in text or END not in text:
        raise ValueError(f"docs/deviations.md: no {BEGIN} ... {END} section")
    head, rest = text.split(BEGIN, 1)
    return head + BEGIN + "\n" + settings_markdown(configs) + END + rest.split(END, 1)[1]


def page_configs() -> dict[str, Mapping[str, Any]]:
    """The configs ``docs/deviations.md`` compares with the papers: the default and ``config/paper.yaml``."""
    return {"default": load_config(), "paper.yaml": load_config(ROOT / "config" / "paper.yaml")}
