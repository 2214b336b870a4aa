"""Atomic facts of a generated response (paper Sec. 3.1, footnote 4; App. A.3, Table 4).

The paper decomposes text into *atomic facts*, "short sentences conveying one piece of
information", with InstructGPT prompted as in FActScore (Min et al., 2023), which splits the
text into sentences and decomposes each sentence with a few-shot prompt.  This module does the
same with a local instruct model, or, as a model-free fallback, uses the sentences themselves:

- :func:`split_sentences`: sentence segmentation with pysbd (rule-based, English).
- :data:`DECOMPOSE_INSTRUCTION` + :data:`DECOMPOSE_DEMOS`: a few-shot prompt written for this
  project (the first demonstration is the paper's Sec. 3.1 example), the default
  (``grounding.decomposer.demos: null``).  With a chat template the instruction is the system
  message and each demonstration a user/assistant exchange (:func:`render_decompose_prompt`);
  without one, the plain text :data:`DECOMPOSE_PROMPT`.
- Demonstrations as published (``grounding.decomposer.demos: <path>``): a file in FActScore's
  format (``demos/demons.json`` of its data download: a JSON object mapping a demonstration
  sentence to its list of atomic facts; :func:`load_demos`), prompted as FActScore prompts
  (:data:`FACTSCORE_QUESTION`); per sentence, the first ``n_demos`` demonstrations of the file
  and the ``k_demos`` most similar by BM25 (:class:`Demonstrations`, after FActScore's
  ``AtomicFactGenerator.get_init_atomic_facts_from_sentence`` and ``best_demos``).
- Unit of decomposition: one *sentence* of the response per prompt (FActScore style).  With
  SmolLM2-135M, decomposing whole responses at once dropped most of the information and
  copied prompt echoes, while per-sentence prompts gave usable facts for most sentences.
- :func:`parse_facts` reads the ``- fact`` lines of the output; a sentence whose output has no
  fact (or none that passes the optional support filter, ``min_support``) contributes the
  sentence itself.  A response's ``method`` is ``"llm"`` (every sentence decomposed by the
  model), ``"sentences"`` (none: sentence split, or ``kind == "sentences"``) or ``"mixed"``.
- :class:`FactCache`: a JSON file of decompositions keyed by decomposer, prompt version and
  response text, so a response is decomposed once across runs.
- Backends (``grounding.decomposer.backend``): ``transformers`` (default) generates with the
  local model (:func:`knowlab.core.llm.local.generate_texts`, greedy); ``openai`` sends the
  same turns as chat messages (:func:`decompose_messages`, temperature 0) to an
  OpenAI-compatible server (:class:`~knowlab.core.llm.openai_backend.OpenAIChatBackend`,
  ``grounding.decomposer.openai``), which applies its own chat template.
- :func:`knowlab.grounding.settings.decomposer_label`: the decomposer as every grounding table
  (column ``decomposer``) and figure footnote names it: ``"llm:<model>"``, or ``"sentences
  (sentence-level, not atomic facts)"`` (:data:`knowlab.grounding.methods.SENTENCE_LEVEL`), whose
  numbers are not comparable with the paper's.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knowlab.core.io import DataError, read_json, write_json
from knowlab.core.llm.cache import RequestCache
from knowlab.core.llm.local import generate_texts, model_name, render_messages
from knowlab.core.llm.requests import Backend, ChatRequest
from knowlab.grounding.generate import ClientOptions, answer_requests, chat_backend

if TYPE_CHECKING:  # the settings module imports this one
    from knowlab.grounding.settings import GroundingDecomposerSettings

log = logging.getLogger(__name__)

#: bump when the prompt, the parsing or the fallback changes: cached decompositions then miss
PROMPT_VERSION = "facts-v1"

DECOMPOSE_INSTRUCTION = (
    "You break a sentence into atomic facts. An atomic fact is a short, complete sentence that states exactly "
    'one piece of information from the given sentence. Write each fact on its own line starting with "- ". '
    "Do not add information."
)
#: (sentence, facts) demonstrations; the first is the paper's example (Sec. 3.1)
DECOMPOSE_DEMOS: list[tuple[str, str]] = [
    ("Napoleon is a French general.", "- Napoleon is French.\n- Napoleon is a general."),
    (
        "The Nile, the longest river in Africa, flows north into the Mediterranean Sea.",
        (
            "- The Nile is a river.\n- The Nile is the longest river in Africa.\n- The Nile flows north.\n"
            "- The Nile flows into the Mediterranean Sea."
        ),
    ),
]
#: the same few-shot prompt as plain text (models without a chat template); ``{text}`` is the sentence
DECOMPOSE_PROMPT = (
    DECOMPOSE_INSTRUCTION
    + "\n\n"
    + "".join(f"Sentence: {s}\nFacts:\n{f}\n\n" for s, f in DECOMPOSE_DEMOS).replace("{", "{{").replace("}", "}}")
    + "Sentence: {text}\nFacts:\n"
)
#: :data:`DECOMPOSE_DEMOS` in FActScore's demonstrations format (sentence -> list of atomic facts), as
#: ``data/grounding/decomposer_demos.json`` ships them
PROJECT_DEMOS: dict[str, list[str]] = {
    sentence: [line.removeprefix("- ") for line in facts.splitlines()] for sentence, facts in DECOMPOSE_DEMOS
}
#: FActScore's request before each demonstration and before the target sentence (Min et al. 2023; the
#: FActScore repository, ``factscore/atomic_facts.py``,
#: ``AtomicFactGenerator.get_init_atomic_facts_from_sentence``); ``{}`` is the sentence
FACTSCORE_QUESTION = "Please breakdown the following sentence into independent facts: {}\n"
#: the two prompt layouts: ``project`` (:data:`DECOMPOSE_INSTRUCTION`, ``Sentence:`` / ``Facts:``
#: demonstrations; ``demos: null``) and ``factscore`` (:data:`FACTSCORE_QUESTION`; a demonstrations file)
LAYOUTS = ("project", "factscore")

METHODS = ("llm", "sentences", "mixed")
#: the client of a served decomposer by default (``grounding.decomposer.openai``: 120 s per request)
DECOMPOSER_CLIENT = ClientOptions(timeout_s=120.0)

_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])(?:\s+(.*))?$")
_WORD = re.compile(r"\w+")
# function words left out of the support check (copulas and articles a fact may add freely)
# fmt: off
_FUNCTION_WORDS = frozenset((
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "am", "of", "in", "on", "at", "to",
    "for", "by", "with", "from", "as", "and", "or", "it", "its", "this", "that", "these", "those", "he", "she",
    "they", "his", "her", "their", "has", "have", "had", "also",
))
# fmt: on


@functools.lru_cache(maxsize=1)
def _segmenter():
    # deferred: pysbd is loaded only by the jobs that split sentences
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (pysbd, English rules), each stripped; empty pieces dropped.

    Blank-line-separated paragraphs are segmented separately, so a title line or a
    ``[question]`` marker followed by a blank line is its own "sentence".
    """
    sentences: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        if paragraph.strip():
            sentences.extend(s.strip() for s in _segmenter().segment(paragraph) if s.strip())
    return sentences


def parse_facts(generated: str) -> list[str]:
    """Facts of a decomposer output: the text of lines starting ``- ``, ``* ``, ``•`` or ``1.``/``1)``.

    Lines before the first fact are skipped (a preamble), blank lines and empty bullets are ignored, and the
    first other line after facts started ends the list (the model went on with something
    else, e.g. a new ``Sentence:``).  Facts are stripped; duplicates (exact, after
    stripping) keep their first occurrence.

    Returns:
        the facts in order, possibly empty.
    """
    facts: list[str] = []
    for line in generated.splitlines():
        if not line.strip():
            continue
        match = _BULLET.match(line)
        if match is None:
            if facts:
                break
            continue
        fact = (match.group(1) or "").strip()
        if fact and fact not in facts:
            facts.append(fact)
    return facts


def support(fact: str, source: str) -> float:
    """Share (0-1) of the fact's content words (lower-cased ``\\w+`` tokens, function words
    excepted) that occur in ``source``; 1.0 for a fact with no content word.

    A cheap guard against facts a small decomposer invents (e.g. "X is a Chinese person" from
    a sentence that never says so); it cannot catch wrong combinations of source words.
    """
    words = {w for w in _WORD.findall(fact.lower()) if w not in _FUNCTION_WORDS}
    if not words:
        return 1.0
    return len(words & set(_WORD.findall(source.lower()))) / len(words)


def _line_of(text: str, key: str) -> int | None:
    """1-based line of the JSON object key ``key`` in ``text`` (the file's JSON), None if not found."""
    for encoded in (json.dumps(key, ensure_ascii=False), json.dumps(key)):
        at = text.find(encoded + ":")
        at = at if at >= 0 else text.find(encoded)
        if at >= 0:
            return text.count("\n", 0, at) + 1
    return None


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type (``object``, ``array``, ``string``, ...)."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def load_demos(path: str | Path) -> dict[str, list[str]]:
    """Decomposer demonstrations in FActScore's format (Min et al. 2023): a JSON object mapping a
    demonstration sentence to the list of its atomic facts, e.g. ``{"Napoleon is a French general.":
    ["Napoleon is French.", "Napoleon is a general."]}``.

    This is the format of FActScore's published ``demos/demons.json`` (and ``demons_complex.json``),
    which ``AtomicFactGenerator.__init__`` (FActScore repository, ``factscore/atomic_facts.py``)
    reads with ``json.load``; ``data/grounding/decomposer_demos.json`` holds the project's own
    demonstrations (:data:`PROJECT_DEMOS`) in it.  A sentence may have an empty fact list.

    Args:
        path: the file (a relative path is read from the working directory).

    Returns:
        ``{sentence: [fact, ...]}`` in file order (order matters: the first ``n_demos`` go into every prompt).

    Raises:
        FileNotFoundError: no such file (the message names ``grounding.decomposer.demos`` and the path).
        DataError: not UTF-8 or not JSON, not a JSON object, no demonstration, an empty sentence,
            or facts that are not a list of non-empty strings; the message names the file and the
            line (``<file>:<line>: ...``) and the demonstration.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"grounding.decomposer.demos: {path} not found (FActScore's demos/demons.json: see config/README.md)"
        )
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataError(
            f"{path}:1: decomposer demonstrations must be a JSON object mapping a sentence to its list of atomic "
            f"facts (FActScore's demons.json format), got a JSON {_json_type(data)}"
        )
    if not data:
        raise DataError(f"{path}:1: no demonstration (an empty JSON object)")
    text = None
    for sentence, facts in data.items():
        problem = None
        if not sentence.strip():
            problem = "an empty demonstration sentence"
        elif not isinstance(facts, list):
            problem = f"its facts must be a list of strings, got a JSON {_json_type(facts)}"
        elif not all(isinstance(f, str) and f.strip() for f in facts):
            problem = "its facts must be non-empty strings"
        if problem:
            text = text if text is not None else path.read_text(encoding="utf-8")
            line = _line_of(text, sentence)
            where = f"{path}:{line}" if line else str(path)
            raise DataError(f"{where}: demonstration {sentence[:60]!r}: {problem}")
    return {sentence: list(facts) for sentence, facts in data.items()}


class Demonstrations:
    """The decomposer's few-shot demonstrations, selected per sentence, and its prompt for a sentence.

    Selection, as FActScore (Min et al. 2023; repository ``shmsw25/FActScore``,
    ``factscore/atomic_facts.py``): ``AtomicFactGenerator.__init__`` indexes the demonstration
    sentences, each split on ``" "``, with ``rank_bm25.BM25Okapi``;
    ``AtomicFactGenerator.get_init_atomic_facts_from_sentence`` puts the first ``n``
    demonstrations of the file into every prompt, then the ``k`` returned by ``best_demos``
    (``bm25.get_top_n(sentence.split(" "), sentences, k)``: BM25 scores, highest first), then
    the sentence.  The released code always takes its ``is_bio`` branch: ``demons.json``,
    ``n = 7``, ``k = 1`` (else ``demons_complex.json``, ``n = 8``, ``k = 0``).  A BM25 pick may
    repeat one of the first ``n``; FActScore keeps the repeat, and so does this.

    Layouts (:data:`LAYOUTS`):

    - ``factscore`` (a demonstrations file): FActScore's prompt text
      (``get_init_atomic_facts_from_sentence``), each
      demonstration ``FACTSCORE_QUESTION.format(sentence)`` + ``"- <fact>\\n"`` per fact +
      ``"\\n"``, then ``FACTSCORE_QUESTION.format(target)``.  Plain text for a model without a
      chat template (FActScore's InstructGPT completion); with a chat template or a chat server,
      the whole text as one user message, no system message (FActScore's ChatGPT path,
      ``factscore/openai_lm.py``, ``OpenAIModel._generate``).
    - ``project`` (``demos: null``: :data:`DECOMPOSE_DEMOS`): :data:`DECOMPOSE_INSTRUCTION`, then
      ``"Sentence: <s>\\nFacts:\\n- <fact>..."`` per demonstration (plain text, :data:`DECOMPOSE_PROMPT`
      for all of them), or the instruction as system message and one user/assistant exchange per
      demonstration.  With ``n = None`` and ``k = 0`` this is the prompt of every earlier
      version, byte for byte.

    Args:
        demos: ``{sentence: [fact, ...]}`` in order (:func:`load_demos`).
        n: the first ``n`` demonstrations go into every prompt (None: all of them).
        k: the ``k`` demonstrations most similar to the sentence by BM25 follow (0: none).
        layout: ``"project"`` or ``"factscore"``.
        source: where the demonstrations come from, for messages.

    Raises:
        ValueError: an unknown layout, ``n`` or ``k`` negative, or ``n`` larger than the number
            of demonstrations (naming ``grounding.decomposer.n_demos`` and ``source``).
    """

    def __init__(
        self,
        demos: Mapping[str, Sequence[str]],
        n: int | None = None,
        k: int = 0,
        *,
        layout: str = "factscore",
        source: str = "demonstrations",
    ) -> None:
        if layout not in LAYOUTS:
            raise ValueError(f"unknown decomposer prompt layout {layout!r}; expected one of {LAYOUTS}")
        self.demos = {sentence: list(facts) for sentence, facts in demos.items()}
        self.sentences = list(self.demos)
        if n is not None and not 0 <= n <= len(self.sentences):
            raise ValueError(f"grounding.decomposer.n_demos={n}: {source} holds {len(self.sentences)} demonstrations")
        if k < 0:
            raise ValueError(f"grounding.decomposer.k_demos must be >= 0, got {k}")
        self.n = len(self.sentences) if n is None else n
        self.k = k
        self.layout = layout
        self.source = source
        self._bm25 = None

    @classmethod
    def from_settings(cls, settings: GroundingDecomposerSettings | None = None) -> Demonstrations:
        """The demonstrations of ``grounding.decomposer`` (``settings``): ``demos`` (a file,
        :func:`load_demos`, layout ``factscore``; None: :data:`PROJECT_DEMOS`, layout ``project``),
        ``n_demos``, ``k_demos``; no settings: the project's, all of them, no BM25 pick.

        Raises:
            FileNotFoundError, DataError: as :func:`load_demos`.
            ValueError: as the constructor.
        """
        path = settings.demos if settings is not None else None
        n = settings.n_demos if settings is not None else None
        k = (settings.k_demos or 0) if settings is not None else 0
        if path is None:
            return cls(PROJECT_DEMOS, n, k, layout="project", source="the project's demonstrations (DECOMPOSE_DEMOS)")
        return cls(load_demos(path), n, k, layout="factscore", source=str(path))

    @property
    def is_default(self) -> bool:
        """The project's demonstrations, all of them, no BM25 pick: the prompt of ``demos: null``."""
        return self.layout == "project" and self.demos == PROJECT_DEMOS and self.n == len(self.sentences) and not self.k

    @property
    def ident(self) -> str:
        """Part of the decomposer's cache identity: ``""`` for :attr:`is_default` (earlier cache
        entries stay valid), else ``":demos=<layout>-<sha256 of the demonstrations, 12 hex>:n=<n>:k=<k>"``."""
        if self.is_default:
            return ""
        digest = hashlib.sha256(json.dumps(self.demos, ensure_ascii=False).encode()).hexdigest()[:12]
        return f":demos={self.layout}-{digest}:n={self.n}:k={self.k}"

    def select(self, sentence: str) -> list[tuple[str, list[str]]]:
        """``(demonstration sentence, facts)`` of the prompt for ``sentence``: the first ``n``,
        then the top ``k`` by BM25 (``rank_bm25.BM25Okapi.get_top_n`` of ``sentence.split(" ")``)."""
        chosen = self.sentences[: self.n]
        if self.k:
            if self._bm25 is None:
                # deferred: rank_bm25 is loaded only by decomposers that pick demonstrations
                from rank_bm25 import BM25Okapi

                self._bm25 = BM25Okapi([s.split(" ") for s in self.sentences])
            chosen = chosen + self._bm25.get_top_n(sentence.split(" "), self.sentences, self.k)
        return [(s, self.demos[s]) for s in chosen]

    def system(self) -> str | None:
        """The system message: :data:`DECOMPOSE_INSTRUCTION` (``project``) or None (``factscore``)."""
        return DECOMPOSE_INSTRUCTION if self.layout == "project" else None

    def prompt(self, sentence: str) -> str:
        """The plain-text prompt for ``sentence`` (a model without a chat template)."""
        chosen = self.select(sentence)
        if self.layout == "factscore":
            blocks = (FACTSCORE_QUESTION.format(s) + "".join(f"- {f}\n" for f in facts) + "\n" for s, facts in chosen)
            return "".join(blocks) + FACTSCORE_QUESTION.format(sentence)
        blocks = (f"Sentence: {s}\nFacts:\n{_fact_lines(facts)}\n\n" for s, facts in chosen)
        return DECOMPOSE_INSTRUCTION + "\n\n" + "".join(blocks) + f"Sentence: {sentence}\nFacts:\n"

    def turns(self, sentence: str) -> list[dict[str, str]]:
        """The chat turns for ``sentence`` (after :meth:`system`): ``factscore``: :meth:`prompt` as one
        user turn; ``project``: a user/assistant exchange per demonstration, then the sentence."""
        if self.layout == "factscore":
            return [{"role": "user", "content": self.prompt(sentence)}]
        turns: list[dict[str, str]] = []
        for demo_sentence, demo_facts in self.select(sentence):
            turns += [
                {"role": "user", "content": demo_sentence},
                {"role": "assistant", "content": _fact_lines(demo_facts)},
            ]
        turns.append({"role": "user", "content": sentence})
        return turns


def _fact_lines(facts: Sequence[str]) -> str:
    return "\n".join(f"- {f}" for f in facts)


def render_decompose_prompt(tokenizer, sentence: str, demos: Demonstrations | None = None) -> str:
    """The decomposition prompt for one sentence, as the model reads it.

    ``demos`` (default: the project's, :meth:`Demonstrations.from_settings` of ``demos: null``)
    gives the demonstrations and the layout.  With a chat template
    (:func:`knowlab.core.llm.local.render_messages`): the system message
    (:meth:`Demonstrations.system`; merged into the first user turn when the template refuses a
    system role), the turns of :meth:`Demonstrations.turns`, and the generation prompt.
    Without one: :meth:`Demonstrations.prompt` (the default: :data:`DECOMPOSE_PROMPT` with the
    sentence).
    """
    demos = demos if demos is not None else Demonstrations.from_settings()
    if not getattr(tokenizer, "chat_template", None):
        return demos.prompt(sentence)
    return render_messages(tokenizer, demos.turns(sentence), demos.system())


def decompose_messages(sentence: str, demos: Demonstrations | None = None) -> tuple[dict[str, str], ...]:
    """The chat messages of one sentence's decomposition (``openai`` backend): the system
    message, if any, then the turns (those of :func:`render_decompose_prompt`, unrendered).
    Default: system message :data:`DECOMPOSE_INSTRUCTION`, the project's demonstrations as
    user/assistant turns, the sentence as the last user turn; a FActScore demonstrations file:
    FActScore's whole prompt as one user message."""
    demos = demos if demos is not None else Demonstrations.from_settings()
    system = demos.system()
    return (*([{"role": "system", "content": system}] if system else []), *demos.turns(sentence))


def decomposer_id(settings: GroundingDecomposerSettings, model=None, demos: Demonstrations | None = None) -> str:
    """Identifier of a decomposer configuration (part of the cache key).

    ``"sentences:pysbd"`` for ``kind == "sentences"``; for ``"llm"``:
    ``"llm:<name>:max_new_tokens=<n>:min_support=<s>"`` where ``name`` is ``settings.name``
    or the model's name/path, and with the ``openai`` backend ``openai:<served model name>``
    (``settings.openai_model``, ``grounding.decomposer.openai.model``), so a served decomposer
    never shares cache entries with a local one; followed by :attr:`Demonstrations.ident` of
    ``demos`` (default: read as the settings say, :meth:`Demonstrations.from_settings`): nothing
    for the project's demonstrations, else the demonstrations' digest, ``n`` and ``k``, so
    another demonstrations file, or an edited one, misses the cache.

    Raises:
        FileNotFoundError, DataError, ValueError: ``llm`` only, as :meth:`Demonstrations.from_settings`.
    """
    if settings.kind == "sentences":
        return "sentences:pysbd"
    if settings.backend == "openai":
        name = settings.name or f"openai:{settings.openai_model}"
    else:
        name = settings.name or model_name(model)
    demos = demos if demos is not None else Demonstrations.from_settings(settings)
    return f"llm:{name}:max_new_tokens={settings.max_new_tokens}:min_support={settings.min_support}{demos.ident}"


class FactCache:
    """Decompositions stored in a JSON file: ``{key: {"facts": [...], "method": ..., "decomposer": ...}}``.

    ``key`` is :meth:`key` (sha256 of decomposer id, :data:`PROMPT_VERSION` and the response
    text).  Entries are read when the object is made (a missing file is an empty cache) and
    written by :meth:`save`, atomically.

    Raises:
        DataError: the file is not JSON or not a JSON object (the message names the file).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.entries: dict[str, dict[str, Any]] = {}
        if self.path.is_file():
            data = read_json(self.path)
            if not isinstance(data, dict):
                raise DataError(f"{self.path}: a fact cache must be a JSON object, got {type(data).__name__}")
            self.entries = data

    @staticmethod
    def key(decomposer: str, text: str) -> str:
        """sha256 hex of ``decomposer``, :data:`PROMPT_VERSION` and ``text`` (separated by U+001F)."""
        return hashlib.sha256(f"{decomposer}\x1f{PROMPT_VERSION}\x1f{text}".encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry, or None."""
        return self.entries.get(key)

    def put(self, key: str, entry: Mapping[str, Any]) -> None:
        """Store ``entry`` (``facts``, ``method``, ``decomposer``) under ``key`` (in memory until :meth:`save`)."""
        self.entries[key] = {
            "facts": list(entry["facts"]),
            "method": entry["method"],
            "decomposer": entry["decomposer"],
        }

    def save(self) -> None:
        """Write all entries to :attr:`path` (atomic replace)."""
        write_json(self.path, self.entries)

    def __len__(self) -> int:
        return len(self.entries)


def _served_outputs(
    sentences: list[str],
    settings: GroundingDecomposerSettings,
    backend: Backend | None,
    cache: RequestCache | None,
    demos: Demonstrations,
    client: ClientOptions | None = None,
) -> list[dict[str, Any]]:
    """``{"text", "finished"}`` of each sentence from an OpenAI-compatible server (greedy)."""
    served = settings.openai_model
    if backend is None:
        backend = chat_backend(served, settings.openai_base_url, client if client is not None else DECOMPOSER_CLIENT)
    requests = [
        ChatRequest(
            key=f"sentence {index}: {sentence[:60]}",
            stage="atomic facts",
            messages=decompose_messages(sentence, demos),
            model=served,
            params={"max_tokens": settings.max_new_tokens, "temperature": 0.0},
        )
        for index, sentence in enumerate(sentences)
    ]
    answers = answer_requests(backend, requests, cache, f"atomic facts ({served})")
    return [
        {"text": answers[r.key].content.strip(), "finished": answers[r.key].finish_reason == "stop"} for r in requests
    ]


def _llm_facts(
    sentences: Sequence[str],
    settings: GroundingDecomposerSettings,
    model,
    tokenizer,
    backend: Backend | None = None,
    cache: RequestCache | None = None,
    demos: Demonstrations | None = None,
    client: ClientOptions | None = None,
) -> dict[str, list[str]]:
    """Model facts of each distinct sentence ([] where the output has none that passes the filter)."""
    distinct = list(dict.fromkeys(sentences))
    demos = demos if demos is not None else Demonstrations.from_settings(settings)
    if settings.backend == "openai":
        outputs = _served_outputs(distinct, settings, backend, cache, demos, client)
    else:
        outputs = generate_texts(
            model,
            tokenizer,
            [render_decompose_prompt(tokenizer, s, demos) for s in distinct],
            max_new_tokens=settings.max_new_tokens,
            batch_size=settings.batch_size,
            desc="atomic facts",
        )
    found = {}
    for sentence, out in zip(distinct, outputs, strict=True):
        text = out["text"]
        if not out["finished"]:  # cut at max_new_tokens: the last line may be a truncated fact
            text = text.rsplit("\n", 1)[0] if "\n" in text else ""
        facts = parse_facts(text)
        if settings.min_support is not None:
            facts = [f for f in facts if support(f, sentence) >= settings.min_support]
        found[sentence] = facts
    return found


def decompose_responses(
    responses: Sequence[str],
    settings: GroundingDecomposerSettings,
    model=None,
    tokenizer=None,
    cache: FactCache | None = None,
    *,
    backend: Backend | None = None,
    request_cache: RequestCache | None = None,
    client: ClientOptions | None = None,
) -> list[dict[str, Any]]:
    """Atomic facts of each response (paper Sec. 3.1, footnote 4; FActScore-style, per sentence).

    Args:
        responses: generated responses.
        settings: ``grounding.decomposer``
            (:class:`~knowlab.grounding.settings.GroundingDecomposerSettings`): ``kind`` (``"llm"`` or
            ``"sentences"``), ``backend`` (``"transformers"`` or ``"openai"``), ``max_new_tokens``,
            ``batch_size``, ``min_support``, ``demos``, ``n_demos``, ``k_demos``,
            ``openai_base_url`` and ``openai_model`` (the served name, required for ``openai``),
            ``name`` (optional, the model's name in the cache key).  ``"llm"``: the prompt of
            each sentence holds the demonstrations
            :meth:`Demonstrations.select` picks for it (``demos``: a FActScore-format file,
            FActScore's prompt; None: the project's prompt; the first ``n_demos``, None: all,
            then the ``k_demos`` most similar by BM25); each distinct sentence of the uncached responses is decomposed,
            greedily, by ``model`` (backend ``transformers``,
            :func:`knowlab.core.llm.local.generate_texts` of :func:`render_decompose_prompt`) or
            by the served model (backend ``openai``, the chat messages of
            :func:`decompose_messages`, temperature 0); an output cut at ``max_new_tokens``
            loses its last line; with ``min_support`` set, facts whose :func:`support` in their
            sentence is lower are dropped; a sentence left with no fact contributes itself.
            ``"sentences"``: the facts are the sentences (:func:`split_sentences`).
        model, tokenizer: the local decomposer (``llm`` with backend ``transformers``).
        cache: looked up before and filled after decomposing (saving it is the caller's call).
        backend: ``openai`` only: the chat backend (default
            :func:`knowlab.grounding.generate.chat_backend` of ``settings.openai_model``,
            ``settings.openai_base_url`` and ``client``).
        request_cache: ``openai`` only: a per-sentence request cache; a re-run of a killed
            job sends only the sentences it lacks.
        client: ``openai`` only, without ``backend``: how the client reaches the server
            (``grounding.decomposer.openai``'s client keys; default :data:`DECOMPOSER_CLIENT`).

    Returns:
        per response, in order, ``{"facts": list[str], "method": "llm" | "sentences" | "mixed"}``,
        the same whether it came from ``cache`` or from the decomposer (how many came from the
        cache is logged, not returned: an output holds results, not how a run reached them); an
        empty or whitespace response gives ``facts == []`` (method ``"sentences"``, no model
        call); identical responses are decomposed once.

    Raises:
        ValueError: ``kind == "llm"`` with backend ``transformers`` without model and tokenizer,
            or backend ``openai`` without ``openai_model``; ``n_demos`` larger than the number of
            demonstrations.
        FileNotFoundError, DataError: ``llm``: the ``demos`` file is missing or malformed
            (:func:`load_demos`; read before any model call).
        BackendError: backend ``openai``: a request failed (the message names the sentence's
            request key, ``sentence <n>``, the HTTP status and the server's message).
    """
    if settings.kind == "llm" and settings.backend == "transformers" and (model is None or tokenizer is None):
        raise ValueError("decomposer kind 'llm' needs a model and a tokenizer")
    if settings.kind == "llm" and settings.backend == "openai" and not settings.openai_model:
        raise ValueError("grounding.decomposer.backend openai needs the served model name (openai.model)")
    demos = Demonstrations.from_settings(settings) if settings.kind == "llm" else None
    ident = decomposer_id(settings, model, demos)
    done: dict[str, dict[str, Any]] = {}  # response text -> {facts, method}
    todo: list[str] = []
    n_cached = 0
    for text in dict.fromkeys(responses):
        hit = cache.get(FactCache.key(ident, text)) if cache is not None else None
        if hit is not None:
            done[text] = {"facts": list(hit["facts"]), "method": hit["method"]}
            n_cached += 1
        elif not text.strip():
            done[text] = {"facts": [], "method": "sentences"}
        else:
            todo.append(text)
    log.info("%d distinct response(s): %d from the cache, %d to decompose", len(done) + len(todo), n_cached, len(todo))
    sentences = {text: split_sentences(text) for text in todo}
    llm: dict[str, list[str]] = {}
    if settings.kind == "llm" and todo:
        llm = _llm_facts(
            [s for text in todo for s in sentences[text]],
            settings,
            model,
            tokenizer,
            backend,
            request_cache,
            demos,
            client,
        )
    for text in todo:
        facts: list[str] = []
        n_llm = 0
        for sentence in sentences[text]:
            from_model = llm.get(sentence, [])
            n_llm += bool(from_model)
            facts.extend(f for f in (from_model or [sentence]) if f not in facts)
        method = "llm" if n_llm == len(sentences[text]) else "sentences" if n_llm == 0 else "mixed"
        done[text] = {"facts": facts, "method": method}
        if cache is not None:
            cache.put(FactCache.key(ident, text), {"facts": facts, "method": method, "decomposer": ident})
    return [dict(done[text], facts=list(done[text]["facts"])) for text in responses]
