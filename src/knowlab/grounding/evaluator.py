"""The evaluation model M_eval: does the knowledge of an atomic fact exist in a text?

Paper (Lee et al. 2024, "How Well Do Large Language Models Truly Ground?"), Sec. 3.3 "Grounding
Performance" and App. B.2: ``M_eval(a, B) = 1`` when the knowledge of atomic fact ``a``
exists in text ``B``, else 0.  Three evaluators share one interface (:class:`Evaluator`):

- :class:`BiEncoderEvaluator`: cosine similarity of the fact's and the passage's sentence
  embeddings (App. B.2 "Bi, Cross": MiniLM fine-tuned on 1B pairs, i.e. all-MiniLM-L6-v2,
  packaged offline here); supported when ``>= 0.4``, the paper's calibrated threshold.
- :class:`CrossEncoderEvaluator`: the paper's M_eval (Sec. 3.3, footnote 6),
  ``cross-encoder/ms-marco-MiniLM-L-12-v2``; the score is the raw logit of the pair
  ``(fact, passage)`` (no sigmoid); supported when ``> 6`` (App. B.2).
- :class:`LLMJudge`: an LM asked the App. B.2 prompt (after Min et al., 2023, FActScore);
  the score is ``log p(True) - log p(False)`` of the next token; supported when ``> 0``.

Windowing (``grounding.evaluator.window``, :data:`knowlab.grounding.methods.WINDOWS`; the paper does not
describe it):

- ``max`` (the default; required by the task): a text longer than the evaluator's window is
  split into passages that fit, and the score of a fact against the text is the **maximum over
  its passages**.  The window is the model's input limit minus room for the fact, the prompt
  and the special tokens.  Passages are cut by LangChain's ``RecursiveCharacterTextSplitter``
  (token lengths from the model's own tokenizer), which prefers paragraph, line and sentence
  breaks over word breaks; no passage exceeds the window (:func:`split_passages`).  The
  bi-encoder scores single sentences instead (:func:`sentence_windows`): a short fact against
  a long passage gets a low cosine; see :class:`BiEncoderEvaluator` for the measurement that
  chose the rule.  Within one call every distinct text is split once and every distinct
  passage and fact is embedded / scored once (the bi-encoder also keeps embeddings across
  calls, see ``cache_size``).
- ``truncate`` (the released scorer: ``src/cal_f1.py`` of the authors' repository
  ``kaistAI/How-Well-Do-LLMs-Truly-Ground``, ``cal_cross_score``): one ``(fact, text)`` pair,
  scored once, the text cut to its first :data:`TRUNCATE_TOKENS` (512) tokens of the
  evaluator's tokenizer (:func:`truncate_text`), or to the model's window where that is
  smaller.  Cross-encoder: the pair ``(fact, text[:512 tokens])`` goes to ``CrossEncoder.predict``,
  whose tokenizer truncates the pair to ``max_seq_length`` (512 for the paper's MiniLM) with
  ``truncation="longest_first"``, as ``model.predict([(fact, para)])`` does in the released
  ``cal_cross_score`` (the gold contexts joined by ``"\\n"`` there, by a blank line here); a
  fact at token 600 of the text is never seen.  Bi-encoder: the text cut to the embedder's window
  (254 word pieces for all-MiniLM-L6-v2, smaller than 512; the released ``cal_bi_score`` embeds the
  whole text, which the encoder truncates to the same window).  LLM judge: the paragraph cut to
  512 tokens (or its passage window, if smaller).

Scores of a fact against an empty (or whitespace-only) text are ``-inf``: nothing is in it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
from tqdm.auto import tqdm

from knowlab.core.device import current_compute, one_cpu_thread
from knowlab.core.llm.local import render_messages
from knowlab.core.models import is_local_path, load_model, resolve_model
from knowlab.core.retrieval import embed, load_embedder
from knowlab.core.scoring import encode_context, score_token_ids
from knowlab.grounding.facts import split_sentences
from knowlab.grounding.methods import DEFAULTS, WINDOWS

if TYPE_CHECKING:  # the settings module imports this one
    from knowlab.grounding.settings import GroundingEvaluatorSettings

#: Sentence boundary: whitespace after ``.``, ``!`` or ``?`` (optionally a closing quote or
#: bracket) before an upper-case letter, a digit or an opening quote/bracket; so "U.S. forces"
#: stays whole, "Mr. Smith" is cut (a harmless extra cut when passages span sentences).
SENTENCE_BOUNDARY = r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[]?[A-Z0-9])"

#: tokens of a text that ``window: truncate`` keeps: the 512-token input of the released scorer's
#: cross-encoder (``src/cal_f1.py``, ``cal_cross_score``: ``CrossEncoder.predict`` truncates each pair
#: to the model's ``max_length``, 512 for ``cross-encoder/ms-marco-MiniLM-L-12-v2``)
TRUNCATE_TOKENS = 512

#: Tokens kept free for the fact in pair models (cross-encoder, LLM judge): atomic facts are
#: one short sentence (KAIST: at most 40 word pieces, 42 SmolLM2 tokens); a longer fact is truncated by
#: the model's tokenizer (cross-encoder) or shortens the passage room (LLM judge).
FACT_TOKENS = 64

LLM_JUDGE_PROMPT = (
    "context: {paragraph}\nstatement: {fact}\n"
    "Generate 'True' if all information in given statement is in given context. Else generate 'False'"
)
LLM_JUDGE_LABELS = ("True", "False")

@runtime_checkable
class Evaluator(Protocol):
    """M_eval (paper Sec. 3.3): scores ``(fact, text)`` pairs and thresholds them.

    Attributes:
        name: short name (``"bi_encoder"``, ``"cross_encoder"``, ``"llm_judge"``).
        threshold: the decision threshold of :meth:`decide`.
    """

    name: str
    threshold: float

    def scores(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Float64 array of shape ``(len(pairs),)``: each fact's maximum score over its text's passages."""
        ...

    def decide(self, scores: np.ndarray) -> np.ndarray:
        """Bool array, same shape: the scores compared with the threshold."""
        ...

    def supported(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Bool array of shape ``(len(pairs),)``: ``M_eval(fact, text)``."""
        ...


def _fits(tokenizer, text: str, max_tokens: int) -> bool:
    return len(tokenizer.tokenize(text)) <= max_tokens


def _cut_to_window(tokenizer, text: str, max_tokens: int) -> list[str]:
    """Guard: cut ``text`` at token offsets into pieces of at most ``max_tokens`` tokens."""
    if _fits(tokenizer, text, max_tokens):
        return [text]
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    starts = [offsets[i][0] for i in range(0, len(offsets), max_tokens)]
    pieces = [text[a:b].strip() for a, b in zip(starts, [*starts[1:], len(text)])]
    return [p for p in pieces if p]


def truncate_text(text: str, tokenizer, max_tokens: int) -> str:
    """``text`` (stripped) up to its first ``max_tokens`` tokens (the ``window: truncate`` rule).

    Tokens are the tokenizer's own, without special tokens (``len(tokenizer.tokenize(...))``); the
    text is cut at the start offset of token ``max_tokens + 1``, so the kept text is the first
    ``max_tokens`` tokens' span (re-tokenized, its last word may split differently).

    Returns:
        the cut text, stripped; the whole stripped text when it fits; ``""`` for an empty text.

    Raises:
        ValueError: ``max_tokens < 1``.
    """
    if max_tokens < 1:
        raise ValueError(f"truncation length must be >= 1 token, got {max_tokens}")
    text = text.strip()
    if not text or _fits(tokenizer, text, max_tokens):
        return text
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    return text[: offsets[max_tokens][0]].strip()


def split_passages(text: str, tokenizer, max_tokens: int) -> list[str]:
    """Passages of ``text`` of at most ``max_tokens`` tokens each (the windowing rule, see module docstring).

    A text that fits is one passage (stripped).  Otherwise LangChain's
    ``RecursiveCharacterTextSplitter.from_huggingface_tokenizer`` cuts it at paragraph breaks,
    then line breaks, then sentence boundaries (:data:`SENTENCE_BOUNDARY`), then spaces, then
    characters, and merges neighbouring pieces up to ``max_tokens`` (no overlap); any passage
    that still exceeds the window after re-tokenisation is cut at token offsets.  Lengths are
    ``len(tokenizer.tokenize(passage))``, i.e. without special tokens.

    Args:
        text: the text (a response, or the joined gold contexts).
        tokenizer: a fast Hugging Face tokenizer (its ``tokenize`` counts the tokens).
        max_tokens: the window, >= 1.

    Returns:
        passages in text order, stripped, non-empty; ``[]`` for an empty text.

    Raises:
        ValueError: ``max_tokens < 1``.
    """
    if max_tokens < 1:
        raise ValueError(f"passage window must be >= 1 token, got {max_tokens}")
    text = text.strip()
    if not text:
        return []
    if _fits(tokenizer, text, max_tokens):
        return [text]
    # deferred: langchain's splitter is loaded only when a text exceeds the window
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(
        tokenizer,
        chunk_size=max_tokens,
        chunk_overlap=0,
        separators=[r"\n\n", r"\n", SENTENCE_BOUNDARY, " ", ""],
        is_separator_regex=True,
    )
    return [piece for chunk in splitter.split_text(text) for piece in _cut_to_window(tokenizer, chunk, max_tokens)]


def sentence_windows(text: str, tokenizer, max_tokens: int, size: int) -> list[str]:
    """Passages of ``size`` consecutive sentences (stride 1), each cut to ``max_tokens`` tokens.

    A text of fewer than ``size`` sentences is one passage of all of them.  A window longer
    than ``max_tokens`` tokens is cut by :func:`split_passages`, so no passage exceeds it.

    Returns:
        distinct passages in text order; ``[]`` for an empty text.

    Raises:
        ValueError: ``size < 1`` or ``max_tokens < 1``.
    """
    if size < 1:
        raise ValueError(f"sentences per passage must be >= 1, got {size}")
    sentences = split_sentences(text)
    windows = [" ".join(sentences[i : i + size]) for i in range(max(len(sentences) - size + 1, 1))]
    passages = [p for w in windows if w for p in split_passages(w, tokenizer, max_tokens)]
    return list(dict.fromkeys(passages))


class _PassageEvaluator:
    """Shared plumbing: split each distinct text once, score each distinct (fact, passage) once, max per pair."""

    name = "base"
    threshold = 0.0
    strict = True  # supported when score > threshold (else >=)
    batch_size = 32
    window_mode = "max"  # grounding.evaluator.window (WINDOWS)
    truncate_tokens = TRUNCATE_TOKENS  # tokens kept by window_mode "truncate"

    def _set_window_mode(self, window_mode: str) -> None:
        if window_mode not in WINDOWS:
            raise ValueError(f"grounding.evaluator.window must be one of {WINDOWS}, got {window_mode!r}")
        self.window_mode = window_mode

    def passages(self, text: str) -> list[str]:
        """The passages of ``text`` this evaluator scores (see module docstring "Windowing").

        ``window_mode`` ``max``: the evaluator's passages (:meth:`_split`); ``truncate``: one
        passage, the text's first :attr:`truncate_tokens` tokens (:func:`truncate_text`).

        Returns:
            passages in text order, stripped, non-empty; ``[]`` for an empty text.
        """
        if self.window_mode == "truncate":
            cut = truncate_text(text, self.tokenizer, self.truncate_tokens)
            return [cut] if cut else []
        return self._split(text)

    def _split(self, text: str) -> list[str]:
        """The passages of ``text`` under ``window_mode`` ``max``."""
        raise NotImplementedError

    def _passage_scores(self, facts: list[str], passages: list[str], index: np.ndarray) -> np.ndarray:
        """Scores of the (fact, passage) rows ``index`` (shape (m, 2), ints into facts / passages), shape (m,)."""
        raise NotImplementedError

    def scores(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Score of each ``(fact, text)`` pair: the maximum over the text's passages (``-inf`` for an empty text).

        Returns:
            float64 array of shape ``(len(pairs),)``.
        """
        fact_ids: dict[str, int] = {}
        text_passages: dict[str, np.ndarray] = {}
        passage_ids: dict[str, int] = {}
        for _, text in pairs:
            if text not in text_passages:
                text_passages[text] = np.array(
                    [passage_ids.setdefault(p, len(passage_ids)) for p in self.passages(text)], dtype=np.int64
                )
        rows: dict[tuple[int, int], int] = {}  # (fact id, passage id) -> row
        pair_rows = []
        for fact, text in pairs:
            if not len(text_passages[text]):  # empty text: no passage, nothing to score
                pair_rows.append([])
                continue
            f = fact_ids.setdefault(fact, len(fact_ids))
            pair_rows.append([rows.setdefault((f, int(p)), len(rows)) for p in text_passages[text]])
        out = np.full(len(pairs), -np.inf)
        if not rows:
            return out
        index = np.array(list(rows), dtype=np.int64).reshape(-1, 2)
        row_scores = np.asarray(self._passage_scores(list(fact_ids), list(passage_ids), index), dtype=np.float64)
        for i, r in enumerate(pair_rows):
            if r:
                out[i] = row_scores[r].max()
        return out

    def decide(self, scores: np.ndarray) -> np.ndarray:
        """``scores > threshold`` (cross-encoder, LLM judge) or ``scores >= threshold`` (bi-encoder)."""
        scores = np.asarray(scores, dtype=np.float64)
        return scores > self.threshold if self.strict else scores >= self.threshold

    def supported(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """``M_eval(fact, text)`` of each pair: :meth:`decide` of :meth:`scores`, bool array of shape
        ``(len(pairs),)``."""
        return self.decide(self.scores(pairs))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(threshold={self.threshold})"


class BiEncoderEvaluator(_PassageEvaluator):
    """Bi-encoder M_eval (paper App. B.2): cosine similarity of fact and passage embeddings, supported when ``>= 0.4``.

    Passage rule (windowing, see module docstring): single sentences by default
    (``sentences_per_passage=1``; :func:`sentence_windows`, each cut to the embedder's window,
    ``max_seq_length`` minus the 2 special tokens: 254 word pieces for all-MiniLM-L6-v2);
    ``k > 1`` gives windows of ``k`` consecutive sentences, ``None`` window-sized passages
    (:func:`split_passages`).  Chosen by measurement on the KAIST release (original version,
    all 480 questions; every gold atomic fact scored against (a) the joined gold contexts,
    (b) the joined contexts of the most similar other question that shares no gold article,
    by embedding of question + gold facts, and (c) those of an arbitrary other question
    (index + 240); threshold 0.4; mean over questions of the fraction supported):

    ==========================  ==========  ===============  =================
    passages                    (a) gold    (b) near other   (c) random other
    ==========================  ==========  ===============  =================
    single sentences (default)  0.976       0.211            0.000
    2-sentence windows          0.945       0.161            0.000
    3-sentence windows          0.888       0.134            0.000
    window (254 tokens)         0.792       0.077            0.000
    ==========================  ==========  ===============  =================

    The revised (conflict) version gives the same picture: sentences 0.962 / 0.196 / 0.000,
    2-sentence windows 0.929 / 0.146 / 0.001.  A short fact against a long passage gets a
    lower cosine (mean best cosine of a gold fact: 0.74 against sentences, 0.53 against
    windows), so windows miss a fifth of the gold facts
    when the gold contexts themselves are the response.  Single sentences recover nearly all
    of them and still accept no fact against an unrelated question's contexts; against the
    contexts of a closely related question (often the same people or places) about a fifth
    match, against a sixth for 2-sentence windows, a small price for the 3 points of recall.
    Caveat: the paper calibrated 0.4 with its own (unstated) passage rule; with sentences the
    cosines are higher, so 0.4 is the more lenient for it.

    Args:
        model: ``"packaged:all-MiniLM-L6-v2"`` (offline), a local folder or a Hub id, loaded
            by :func:`knowlab.core.retrieval.load_embedder`; or a ``SentenceTransformer``.
        threshold: cosine threshold (paper App. B.2: 0.4, range 0 to 1).
        sentences_per_passage: sentences per passage window, or ``None`` for window passages.
        batch_size: texts per encoder batch (16: a quarter faster than 64 on CPU for KAIST sentences).
        max_passage_tokens: optional cap below the embedder's window.
        device: torch device for the encoder (default: the job's, :func:`knowlab.core.device.current_compute`).
        cache_size: embeddings kept across calls (distinct texts, oldest forgotten first;
            about 1.5 kB each for 384-d): the same gold contexts are scored for every
            condition and model.
        window_mode: ``grounding.evaluator.window``: ``max`` (the passages above, the maximum
            of their cosines) or ``truncate`` (the text's first ``min(512, window)`` tokens, one
            cosine: 254 word pieces for all-MiniLM-L6-v2, as the released ``cal_bi_score``
            whose encoder truncates the whole text to its window).

    Raises:
        ValueError: an unknown ``window_mode``.
    """

    name = "bi_encoder"
    strict = False

    def __init__(
        self,
        model: Any = DEFAULTS["bi_encoder"][0],
        threshold: float = DEFAULTS["bi_encoder"][1],
        sentences_per_passage: int | None = 1,
        batch_size: int = 16,
        max_passage_tokens: int | None = None,
        device: str | None = None,
        cache_size: int = 100_000,
        window_mode: str = "max",
    ) -> None:
        self._set_window_mode(window_mode)
        self.embedder = load_embedder(model, device=device) if isinstance(model, str) else model
        self.threshold = float(threshold)
        self.sentences_per_passage = sentences_per_passage
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._cache: dict[str, np.ndarray] = {}
        self.tokenizer = self.embedder.tokenizer
        window = int(self.embedder.max_seq_length) - 2  # [CLS] ... [SEP]
        self.window = min(window, max_passage_tokens) if max_passage_tokens else window
        self.truncate_tokens = min(TRUNCATE_TOKENS, self.window)

    def _split(self, text: str) -> list[str]:
        if self.sentences_per_passage is None:
            return split_passages(text, self.tokenizer, self.window)
        return sentence_windows(text, self.tokenizer, self.window, self.sentences_per_passage)

    def _embed(self, texts: list[str]) -> np.ndarray:
        """Embeddings of distinct ``texts``, shape (n, dim); only texts not in the cache are encoded."""
        missing = [t for t in texts if t not in self._cache]
        chunk = 2048
        for i in tqdm(range(0, len(missing), chunk), desc="bi-encoder", disable=len(missing) <= chunk, leave=False):
            self._cache.update(
                zip(missing[i : i + chunk], embed(missing[i : i + chunk], self.embedder, self.batch_size))
            )
        out = np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 1), dtype=np.float32)
        for _ in range(len(self._cache) - self.cache_size):  # forget the oldest
            self._cache.pop(next(iter(self._cache)))
        return out

    def _passage_scores(self, facts: list[str], passages: list[str], index: np.ndarray) -> np.ndarray:
        distinct = {t: i for i, t in enumerate(dict.fromkeys(facts + passages))}  # a fact may also be a passage
        vectors = self._embed(list(distinct))
        fact_vec = vectors[[distinct[t] for t in facts]]
        passage_vec = vectors[[distinct[t] for t in passages]]
        out = np.empty(len(index))
        for start in range(0, len(index), 8192):  # bounded memory: (8192, dim) at a time
            f, p = index[start : start + 8192].T
            out[start : start + 8192] = np.einsum("ij,ij->i", fact_vec[f], passage_vec[p])
        return out


class CrossEncoderEvaluator(_PassageEvaluator):
    """Cross-encoder M_eval, the paper's choice (Sec. 3.3, footnote 6; App. B.2): raw logit of
    ``(fact, passage)`` ``> 6``.

    The model is loaded as ``sentence_transformers.CrossEncoder(model,
    activation_fn=torch.nn.Identity())``: sentence-transformers applies a sigmoid to
    single-label models by default (``CrossEncoder.activation_fn``), the identity keeps the
    raw logit, the scale of the paper's threshold 6.  The fact is the first text (the
    "query" of MS MARCO), the passage the second.

    Windowing (``window_mode``): ``max``: passages of at most ``max_seq_length - FACT_TOKENS - 3``
    tokens (445 for the 512-token MiniLM; 3 = [CLS] and two [SEP]), :func:`split_passages`; the
    score of a text is the maximum over its passages.  ``truncate``: the released scorer
    (``src/cal_f1.py``, ``cal_cross_score``): the text cut to its first ``min(512,
    max_seq_length)`` tokens, and the pair ``(fact, text)`` truncated by ``predict``'s
    tokenizer to ``max_seq_length`` (``longest_first``: the text loses its end), scored once.

    Args:
        model: Hub id (default the paper's ``cross-encoder/ms-marco-MiniLM-L-12-v2``; read from rule
            ``hub_download``'s folder of it where there is one, :func:`knowlab.core.models.resolve_model`) or a
            local folder; or a loaded ``CrossEncoder`` (its activation is then set to the identity).
        threshold: logit threshold, strictly greater (paper App. B.2: 6).
        batch_size: pairs per forward pass.
        max_passage_tokens: optional cap below the window (also below the truncation length).
        device: torch device (default: the job's, :func:`knowlab.core.device.current_compute`).
        window_mode: ``grounding.evaluator.window``, ``max`` or ``truncate`` (above).

    Raises:
        ValueError: the model's ``max_seq_length`` leaves no room for a passage; an unknown ``window_mode``.
    """

    name = "cross_encoder"
    strict = True

    def __init__(
        self,
        model: Any = DEFAULTS["cross_encoder"][0],
        threshold: float = DEFAULTS["cross_encoder"][1],
        batch_size: int = 32,
        max_passage_tokens: int | None = None,
        device: str | None = None,
        window_mode: str = "max",
    ) -> None:
        self._set_window_mode(window_mode)
        # deferred: torch and sentence-transformers are loaded only for this evaluator kind
        import torch
        from sentence_transformers import CrossEncoder

        if isinstance(model, str):
            compute = current_compute()  # the job's device and dtype (knowlab.core.device)
            revision = None
            if not is_local_path(model):  # a Hub id: rule hub_download's folder of it where there is one
                model, revision, _ = resolve_model(model, None, "grounding.evaluator.model")
            model = CrossEncoder(
                model,
                revision=revision,
                device=device or compute.device,
                activation_fn=torch.nn.Identity(),
                model_kwargs={"dtype": compute.torch_dtype},
            )
        else:
            model.activation_fn = torch.nn.Identity()
        self.model = model
        self.tokenizer = model.tokenizer
        self.threshold = float(threshold)
        self.batch_size = batch_size
        window = int(model.max_seq_length) - FACT_TOKENS - 3
        if window < 1:
            raise ValueError(f"cross-encoder max_seq_length {model.max_seq_length} leaves no room for a passage")
        self.window = min(window, max_passage_tokens) if max_passage_tokens else window
        # truncate: the pair itself is cut to max_seq_length by predict's tokenizer (longest_first)
        self.truncate_tokens = min(TRUNCATE_TOKENS, int(model.max_seq_length), max_passage_tokens or TRUNCATE_TOKENS)

    def _split(self, text: str) -> list[str]:
        return split_passages(text, self.tokenizer, self.window)

    def _passage_scores(self, facts: list[str], passages: list[str], index: np.ndarray) -> np.ndarray:
        inputs = [(facts[f], passages[p]) for f, p in index]
        with one_cpu_thread(self.model.device):  # the same logits at any thread count per job
            return self.model.predict(inputs, batch_size=self.batch_size, show_progress_bar=len(inputs) > 1000)


class LLMJudge(_PassageEvaluator):
    """LLM M_eval with the App. B.2 prompt (after Min et al., 2023): ``log p(True) - log p(False)`` of the next token.

    The user message is :data:`LLM_JUDGE_PROMPT` (``context: {paragraph}\\nstatement: {atomic
    fact}\\nGenerate 'True' if ... Else generate 'False'``).  With a chat template it is
    rendered by ``apply_chat_template(..., add_generation_prompt=True)``
    (:func:`knowlab.core.llm.local.render_messages`, no system message); without one the
    prompt is followed by ``"\\nAnswer:"``.  Each label's probability is the summed
    probability of its single-token forms ``"True"`` / ``" True"`` (as SORT sums ``"A"`` /
    ``" A"``, :mod:`knowlab.sort.score`); the score is ``log p(True) - log p(False)`` (nats)
    and a fact is supported when it is ``> threshold`` (default 0: True more likely).

    Scoring goes through the one engine, :func:`knowlab.core.scoring.score_token_ids`,
    with the prompt's own tokens as the context.  (:func:`~knowlab.core.scoring.next_token_logprobs`
    moves a context's trailing whitespace into the continuation, harness-style; a chat
    generation prompt ends with a newline, so the label would become ``"\\nTrue"``, two
    tokens.  For a context without trailing whitespace both give the same numbers.)

    Token ids (:meth:`prompt_ids`): the special tokens the core's harness encoding puts before a
    context (:func:`knowlab.core.scoring.encode_context`: those the tokenizer adds by default, as
    lm-evaluation-harness's ``HFLM``: ``<|begin_of_text|>`` on Llama-3, none on SmolLM2, none
    where the rendered prompt already starts with the BOS text, as a Llama-3 chat template's
    does), then the prompt's own tokens *with* its trailing whitespace (``encode_context`` moves
    trailing whitespace to the continuation; here the label must follow the generation prompt's
    newline as one token).

    Windowing (``window_mode``): ``max``: passages of at most ``limit - prompt - FACT_TOKENS - 1``
    tokens, where ``limit`` is the model's ``max_position_embeddings`` (capped by the tokenizer's
    ``model_max_length``) and ``prompt`` the tokens :meth:`prompt_ids` gives the rendered prompt
    with an empty paragraph and fact (special tokens included); :func:`split_passages`; maximum
    over passages.  ``truncate``: the paragraph cut to its first ``min(512, window)`` tokens,
    scored once.

    The judge runs in the job (on the device of its ``compute`` policy, where
    :func:`knowlab.core.models.load_model` puts the model), never on an OpenAI-compatible
    server: the score needs the exact log-probabilities of both labels' tokens after the
    prompt, and a chat-completions server gives at most the top-20 log-probabilities of the
    tokens it generates (a label outside them has no value).

    Args:
        model: a causal LM (e.g. from :func:`knowlab.core.models.load_model`).
        tokenizer: its tokenizer.
        threshold: on ``log p(True) - log p(False)``, strictly greater.
        batch_size: sequences per forward pass.
        max_passage_tokens: optional cap below the window (long contexts are slow on CPU).
        window_mode: ``grounding.evaluator.window``, ``max`` or ``truncate`` (above).

    Raises:
        ValueError: a label with no single-token form, a window with no room for a passage, or
            an unknown ``window_mode``.
    """

    name = "llm_judge"
    strict = True

    def __init__(
        self,
        model,
        tokenizer,
        threshold: float = DEFAULTS["llm_judge"][1],
        batch_size: int = 8,
        max_passage_tokens: int | None = None,
        window_mode: str = "max",
    ) -> None:
        self._set_window_mode(window_mode)
        self.model, self.tokenizer = model, tokenizer
        self.threshold = float(threshold)
        self.batch_size = batch_size
        self.label_ids: dict[str, list[int]] = {}
        for label in LLM_JUDGE_LABELS:
            ids = [tokenizer(v, add_special_tokens=False)["input_ids"] for v in (label, " " + label)]
            self.label_ids[label] = list(dict.fromkeys(i[0] for i in ids if len(i) == 1))
            if not self.label_ids[label]:
                raise ValueError(f"LLM judge label {label!r}: neither {label!r} nor ' {label}' is a single token")
        limit = getattr(model.config, "max_position_embeddings", None) or 2048
        if 0 < getattr(tokenizer, "model_max_length", math.inf) < limit:
            limit = int(tokenizer.model_max_length)
        # the special tokens encode_context puts before a prompt: every prompt starts alike (the chat
        # template's head, or "context: "), so they are found once
        probe = self.prompt("", "")
        context = encode_context(tokenizer, probe)
        self.head = context[: len(context) - len(tokenizer(probe.rstrip(), add_special_tokens=False)["input_ids"])]
        overhead = len(self.prompt_ids("", ""))  # the prompt's tokens and its special tokens
        window = limit - overhead - FACT_TOKENS - 1
        if window < 1:
            raise ValueError(f"LLM judge window {limit} leaves no room for a passage after a {overhead}-token prompt")
        self.window = min(window, max_passage_tokens) if max_passage_tokens else window
        self.truncate_tokens = min(TRUNCATE_TOKENS, self.window)

    def prompt(self, fact: str, paragraph: str) -> str:
        """The rendered judge prompt of one (fact, paragraph) pair (paper App. B.2)."""
        user = LLM_JUDGE_PROMPT.format(paragraph=paragraph, fact=fact)
        if getattr(self.tokenizer, "chat_template", None):
            return render_messages(self.tokenizer, [{"role": "user", "content": user}])
        return user + "\nAnswer:"

    def prompt_ids(self, fact: str, paragraph: str) -> list[int]:
        """Token ids of :meth:`prompt` as the model reads them: :attr:`head` (the special tokens of
        :func:`knowlab.core.scoring.encode_context`) + the prompt's tokens, trailing newline kept."""
        return self.head + self.tokenizer(self.prompt(fact, paragraph), add_special_tokens=False)["input_ids"]

    def _split(self, text: str) -> list[str]:
        return split_passages(text, self.tokenizer, self.window)

    def _passage_scores(self, facts: list[str], passages: list[str], index: np.ndarray) -> np.ndarray:
        requests, owners = [], []
        for row, (f, p) in enumerate(index):
            context = self.prompt_ids(facts[f], passages[p])
            for label, ids in self.label_ids.items():
                requests += [(context, [token]) for token in ids]
                owners += [(row, label)] * len(ids)
        scored = score_token_ids(self.model, requests, batch_size=self.batch_size, desc="LLM judge")
        logp = {label: [[] for _ in range(len(index))] for label in LLM_JUDGE_LABELS}
        for (row, label), s in zip(owners, scored):
            logp[label][row].append(float(s.logprobs[0]))
        true, false = (np.array([np.logaddexp.reduce(v) for v in logp[label]]) for label in LLM_JUDGE_LABELS)
        return true - false


def load_evaluator(settings: GroundingEvaluatorSettings, model=None, tokenizer=None) -> Evaluator:
    """Build M_eval from ``grounding.evaluator``.

    Args:
        settings: :class:`~knowlab.grounding.settings.GroundingEvaluatorSettings`: ``kind``
            (``bi_encoder``, ``cross_encoder`` or ``llm_judge``: :class:`BiEncoderEvaluator`,
            :class:`CrossEncoderEvaluator` or :class:`LLMJudge`), and their constructor arguments
            ``model``, ``threshold`` (None: the kind's default, the paper's) and ``window`` (one of
            :data:`~knowlab.grounding.methods.WINDOWS`, their ``window_mode``).  The constructors'
            other arguments (:data:`~knowlab.grounding.methods.EVALUATOR_KEYS`: batch sizes, device,
            cache) keep their defaults.
        model, tokenizer: the judge LM for ``llm_judge``; when not given, ``settings.model``
            is a model folder loaded by :func:`knowlab.core.models.load_model`.

    Raises:
        ValueError: an ``llm_judge`` with neither a model nor ``settings.model`` (an unknown kind
            or window fails when the settings are made).
    """
    kind = settings.kind
    chosen = {"model": settings.model, "threshold": settings.threshold, "window": settings.window}
    args = {k: v for k, v in chosen.items() if v is not None}  # None: the kind's default
    if "window" in args:
        args["window_mode"] = args.pop("window")
    if kind == "bi_encoder":
        return BiEncoderEvaluator(**args)
    if kind == "cross_encoder":
        return CrossEncoderEvaluator(**args)
    path = args.pop("model", None)
    if model is None or tokenizer is None:
        if path is None:
            raise ValueError(
                "grounding.evaluator.model: llm_judge needs a model (pass model and tokenizer, or a folder)"
            )
        model, tokenizer = load_model(path)
    return LLMJudge(model, tokenizer, **args)

