"""Response generation for the grounding study: the input format, prompt fitting, batched decoding.

Sources (paper "How Well Do Large Language Models Truly Ground?", seed 002):

- *Input format* (App. C.2, Fig. 12): an instruction, ``[context]`` and the contexts,
  ``[question]`` and the question, a reminder that repeats the instruction, then ``[answer]``.
  :data:`INSTRUCTION` and :data:`REMINDER` say what Fig. 12 says in this project's own words;
  :func:`build_prompt` lays the parts out as Fig. 12 does (parts separated by blank lines,
  each context verbatim, contexts separated by blank lines).  For chat models the prompt is
  the user turn of the model's own chat template (:func:`render_chat`), as the paper changed
  the format to TULU's training format (App. C.2).
- *Inference configuration* (App. C.3): inputs and outputs limited to 2048 tokens
  (``max_input_tokens``, ``max_new_tokens``; the paper's outputs rarely approach the limit, the
  default here is 256 new tokens); decoding is greedy by default, sampling (the paper:
  top-k 10 for Llama-2/Vicuna/Falcon, temperature 0.6 for TULU) is configurable.  The paper's
  4-bit quantisation is not reproduced (models run in the dtype they are loaded in).

Truncation rule (:func:`fit_prompt`): the template (instruction, markers, question, reminder,
chat-template tokens) is never cut.  When the rendered prompt is longer than
``max_input_tokens``, context tokens are dropped from the end of the last context backwards
(then from the end of the context before it, ...), token-exactly, until the prompt fits; the
number of dropped context tokens is recorded.  :func:`generate_texts` only checks that its
inputs fit and raises otherwise.

Texts are encoded without added special tokens (``add_special_tokens=False``, as the
scoring engine :mod:`knowlab.core.scoring` does): a rendered chat template already holds
its special tokens.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tqdm.auto import tqdm

from knowlab.core.io import DataError

# Paper Fig. 12 (App. C.2), reworded; the bracketed markers are the paper's.
INSTRUCTION = (
    "Write an [answer] to the [question] below in full sentences. Use all the information in the [context] "
    "that is needed to answer it, and use no information that is not in the [context]. State every piece of "
    "information from the [context] that you use in your answer."
)
REMINDER = (
    "Remember: write the [answer] to the [question] in full sentences, using all the information from the "
    "[context] that is needed and only information from the [context]. Also state every piece of information "
    "from the [context] that you use."
)
CONTEXT_MARKER = "[context]"
QUESTION_MARKER = "[question]"
ANSWER_MARKER = "[answer]"
SEPARATOR = "\n\n"  # between the parts of the prompt and between contexts (Fig. 12)

#: defaults of :func:`generate_responses` (paper App. C.3: 2048-token inputs; greedy decoding here)
DEFAULT_CONFIG: dict[str, Any] = {
    "max_new_tokens": 256,
    "max_input_tokens": 2048,
    "do_sample": False,
    "temperature": 1.0,
    "top_k": None,
    "top_p": None,
    "seed": 0,
    "batch_size": 8,
    "system_prompt": None,
}


def build_prompt(question: str, contexts: Sequence[str]) -> str:
    """The paper's input format (App. C.2, Fig. 12) for one question, as plain text.

    Layout (parts separated by a blank line)::

        INSTRUCTION
        [context]
        <context 1>
        <context 2> ...          (each verbatim, separated by a blank line)
        [question]
        <question>
        REMINDER
        [answer]

    With no contexts the ``[context]`` part is empty (the marker stays).
    """
    parts = [INSTRUCTION, CONTEXT_MARKER, *contexts, QUESTION_MARKER, question, REMINDER, ANSWER_MARKER]
    return SEPARATOR.join(parts)


def render_chat(tokenizer, prompt: str, system_prompt: str | None = None) -> str:
    """The text the model reads: ``prompt`` as the user turn of the tokenizer's chat template.

    With a chat template (``tokenizer.chat_template`` set): ``apply_chat_template(messages,
    add_generation_prompt=True, tokenize=False)`` on ``[system?, user]``; a template that
    refuses a system role (it raises a template error) gets the system prompt as the first
    paragraph of the user message instead (as :func:`knowlab.sort.prompts.render_prompt`).
    ``system_prompt=None`` or ``""`` sends no system message (the template may insert its own
    default, e.g. SmolLM2's).  Without a chat template: ``system prompt``, blank line, prompt
    (or the prompt alone).
    """
    if getattr(tokenizer, "chat_template", None):
        from jinja2.exceptions import TemplateError

        messages = [{"role": "user", "content": prompt}]
        try:
            if system_prompt:
                messages.insert(0, {"role": "system", "content": system_prompt})
            return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        except TemplateError:
            if not system_prompt:
                raise
            merged = [{"role": "user", "content": system_prompt + SEPARATOR + prompt}]
            return tokenizer.apply_chat_template(merged, add_generation_prompt=True, tokenize=False)
    return system_prompt + SEPARATOR + prompt if system_prompt else prompt


def count_tokens(tokenizer, text: str) -> int:
    """Number of tokens of ``text`` as the model reads it (no added special tokens)."""
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def fit_prompt(
    tokenizer,
    question: str,
    contexts: Sequence[str],
    max_input_tokens: int,
    render: Callable[[str], str] | None = None,
) -> tuple[str, int]:
    """The rendered prompt of :func:`build_prompt`, cut on the contexts to fit ``max_input_tokens``.

    Truncation rule: instruction, question, reminder and the chat template are kept whole;
    the contexts, each tokenized alone, are cut token-exactly from the end of the last
    context backwards (a context cut to nothing is left out) to the longest prefix of context
    tokens for which ``render(build_prompt(question, kept_contexts))`` is at most
    ``max_input_tokens`` tokens long (found by bisection, each candidate tokenized in full;
    a context is cut at the character end of its last kept token).

    Args:
        render: prompt -> the text the model reads; default ``render_chat(tokenizer, prompt)``.

    Returns:
        ``(text, n_dropped_tokens)``: the rendered prompt and the number of context tokens
        left out (0 when everything fits).

    Raises:
        ValueError: the prompt does not fit even with all contexts left out.
    """
    if render is None:
        render = lambda prompt: render_chat(tokenizer, prompt)

    def rendered(kept: Sequence[str]) -> str:
        return render(build_prompt(question, kept))

    text = rendered(contexts)
    if count_tokens(tokenizer, text) <= max_input_tokens:
        return text, 0
    ends: list[tuple[int, int]] = []  # (context index, character end) of every context token, in order
    for index, context in enumerate(contexts):
        offsets = tokenizer(context, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        ends.extend((index, end) for _, end in offsets)

    def cut(n_kept: int) -> list[str]:
        if n_kept == 0:
            return []
        index, end = ends[n_kept - 1]
        return [*contexts[:index], contexts[index][:end]]

    def fits(n_kept: int) -> bool:
        return count_tokens(tokenizer, rendered(cut(n_kept))) <= max_input_tokens

    if not fits(0):
        raise ValueError(
            f"the prompt template and question alone exceed max_input_tokens={max_input_tokens} "
            f"(question: {question[:80]!r})"
        )
    low, high = 0, len(ends)  # fits(low); not fits(high)
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return rendered(cut(low)), len(ends) - low


def stop_token_ids(model, tokenizer) -> list[int]:
    """Token ids that end a response: the tokenizer's EOS and the model's ``generation_config.eos_token_id``.

    For SmolLM2 both are ``<|im_end|>`` (the chat template's end of turn).
    """
    ids: list[int] = []
    config_ids = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    for value in (tokenizer.eos_token_id, config_ids):
        for token in value if isinstance(value, (list, tuple)) else [value]:
            if token is not None and int(token) not in ids:
                ids.append(int(token))
    if not ids:
        raise ValueError("neither the tokenizer nor the model's generation_config defines an EOS token")
    return ids


def _prompt_seed(seed: int, text: str) -> int:
    """A 63-bit seed from ``seed`` and the prompt text (sha256; Python's salted ``hash`` is not used)."""
    digest = hashlib.sha256(f"{seed}\x1f{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


class _SeededSampler:
    """Logits processor that samples each row with its own ``torch.Generator`` (one per prompt).

    Applies temperature, top-k and top-p (transformers' warpers, in that order), draws the next
    token of row ``i`` from the resulting distribution with generator ``i``, and returns scores
    that are 0 at the drawn token and -inf elsewhere, so greedy decoding emits the draw.
    """

    def __init__(self, seeds: Sequence[int], temperature: float, top_k: int | None, top_p: float | None):
        from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

        self.seeds = list(seeds)
        self.generators = None
        self.warpers = []
        if temperature is not None and temperature != 1.0:
            self.warpers.append(TemperatureLogitsWarper(temperature))
        if top_k:
            self.warpers.append(TopKLogitsWarper(top_k))
        if top_p is not None and top_p < 1.0:
            self.warpers.append(TopPLogitsWarper(top_p))

    def __call__(self, input_ids, scores):
        import torch

        if self.generators is None:
            self.generators = [torch.Generator(device=scores.device).manual_seed(s) for s in self.seeds]
        scores = scores.float()
        for warper in self.warpers:
            scores = warper(input_ids, scores)
        probs = torch.softmax(scores, dim=-1)
        drawn = torch.cat([torch.multinomial(probs[i], 1, generator=g) for i, g in enumerate(self.generators)])
        out = torch.full_like(scores, float("-inf"))
        out[torch.arange(len(drawn), device=scores.device), drawn] = 0.0
        return out


def generate_texts(
    model,
    tokenizer,
    texts: Sequence[str],
    max_new_tokens: int = 256,
    max_input_tokens: int = 2048,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int = 0,
    batch_size: int = 8,
    desc: str = "generate",
) -> list[dict[str, Any]]:
    """Continue each rendered prompt with ``model.generate``, batched with left padding.

    Texts are encoded as they are (no added special tokens), sorted by token length (longest
    first) and run in batches of ``batch_size``, each left-padded with the pad token (EOS when
    the tokenizer has none) and an attention mask; results come back in input order.
    Decoding stops at any of :func:`stop_token_ids` or after ``max_new_tokens``.

    Greedy (default) decoding is deterministic; with left padding the logits of a padded row
    differ from those of the row alone only by float rounding, so outputs do not depend on
    ``batch_size`` except where two tokens tie to rounding (tested on SmolLM2-135M).

    Sampling (``do_sample=True``; temperature, then top-k, then top-p) draws each prompt's
    tokens with its own ``torch.Generator`` seeded from sha256(``seed``, prompt text)
    (transformers' ``generate`` has no per-row generator, so the draw is done in a logits
    processor).  Guarantee: on one machine, software stack and dtype, the same
    ``(seed, prompt)`` gives the same response on rerun, whatever the batch size, batch
    composition or input order, up to the float-rounding caveat of greedy decoding above;
    identical prompts in one call get identical responses.  Across devices or library
    versions results may differ.

    Returns:
        one dict per text: ``text`` (the decoded new tokens up to the stop token, special
        tokens skipped, stripped), ``n_input_tokens``, ``n_new_tokens`` (generated tokens,
        the stop token included), ``finished`` (a stop token was generated within
        ``max_new_tokens``).

    Raises:
        ValueError: a text longer than ``max_input_tokens`` tokens (the message gives its
            index and start; fit prompts first with :func:`fit_prompt`).
    """
    import torch

    encoded = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
    for index, ids in enumerate(encoded):
        if len(ids) > max_input_tokens:
            raise ValueError(
                f"text {index} has {len(ids)} tokens, more than max_input_tokens={max_input_tokens} "
                f"(starts {texts[index][:80]!r}); fit it with fit_prompt first"
            )
    stops = stop_token_ids(model, tokenizer)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stops[0]
    gen_config = copy.deepcopy(model.generation_config)
    for key in ("temperature", "top_k", "top_p", "min_p", "typical_p"):  # the sampler below does the warping
        setattr(gen_config, key, None)
    gen_config.do_sample = False
    gen_config.num_beams = 1
    gen_config.max_new_tokens = max_new_tokens
    gen_config.max_length = None
    gen_config.eos_token_id = stops
    gen_config.pad_token_id = pad_id
    device = next(model.parameters()).device
    order = sorted(range(len(texts)), key=lambda i: -len(encoded[i]))
    results: list[dict[str, Any] | None] = [None] * len(texts)
    for start in tqdm(range(0, len(order), batch_size), desc=desc, leave=False, mininterval=5):
        batch = order[start : start + batch_size]
        width = max(len(encoded[i]) for i in batch)
        input_ids = torch.tensor([[pad_id] * (width - len(encoded[i])) + encoded[i] for i in batch], device=device)
        attention = torch.tensor(
            [[0] * (width - len(encoded[i])) + [1] * len(encoded[i]) for i in batch], device=device
        )
        processors = []
        if do_sample:
            processors = [_SeededSampler([_prompt_seed(seed, texts[i]) for i in batch], temperature, top_k, top_p)]
        from transformers import LogitsProcessorList

        with torch.no_grad():
            output = model.generate(
                input_ids=input_ids,
                attention_mask=attention,
                generation_config=gen_config,
                logits_processor=LogitsProcessorList(processors),
            )
        for row, i in enumerate(batch):
            new = output[row, width:].tolist()
            stop_at = next((k for k, token in enumerate(new) if token in stops), None)
            kept = new if stop_at is None else new[:stop_at]
            results[i] = {
                "text": tokenizer.decode(kept, skip_special_tokens=True).strip(),
                "n_input_tokens": len(encoded[i]),
                "n_new_tokens": len(kept) if stop_at is None else stop_at + 1,
                "finished": stop_at is not None,
            }
    return results  # type: ignore[return-value]


def model_name(model) -> str:
    """The model's name or path (``model.name_or_path`` / ``config._name_or_path``), or ``"unknown"``."""
    name = getattr(model, "name_or_path", None) or getattr(getattr(model, "config", None), "_name_or_path", None)
    return str(name) if name else "unknown"


def response_id(model: str, prompt: str, params: Mapping[str, Any]) -> str:
    """Identifier of a generation request: first 16 hex digits of sha256 of JSON ``{model, prompt, params}``.

    ``params`` are the generation parameters (``max_new_tokens``, ``do_sample``, ``temperature``,
    ``top_k``, ``top_p``, ``seed``); JSON keys are sorted, so the id does not depend on order.
    """
    payload = json.dumps({"model": model, "prompt": prompt, "params": dict(params)}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def generate_responses(
    model,
    tokenizer,
    items_with_contexts: Sequence[Mapping[str, Any]],
    cfg: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Generate a response for every record (paper Sec. 4 / App. C.2-C.3).

    Args:
        items_with_contexts: records with ``question`` (str) and ``contexts`` (list[str],
            already packed: gold contexts, with distractors where the condition has them);
            other fields are copied to the output.
        cfg: keys of :data:`DEFAULT_CONFIG` (missing keys take the defaults): ``max_new_tokens``,
            ``max_input_tokens``, ``do_sample``, ``temperature``, ``top_k``, ``top_p``,
            ``seed``, ``batch_size``, ``system_prompt``.

    Returns:
        per record, in order, a copy with ``prompt`` (the rendered text the model read, after
        :func:`fit_prompt`), ``response``, ``n_input_tokens``, ``n_truncated_tokens`` (context
        tokens dropped to fit), ``n_new_tokens``, ``finished`` and ``response_id``
        (:func:`response_id` of the model name, the prompt and the generation parameters).

    Raises:
        DataError: a record without a string ``question`` or a list ``contexts`` (the message
            names its ``item_id`` or index).
        ValueError: an unknown cfg key, or a template + question longer than ``max_input_tokens``.
    """
    unknown = set(cfg or {}) - set(DEFAULT_CONFIG)
    if unknown:
        raise ValueError(f"unknown generation config keys {sorted(unknown)}; known: {sorted(DEFAULT_CONFIG)}")
    conf = {**DEFAULT_CONFIG, **(cfg or {})}
    prompts, dropped = [], []
    for index, record in enumerate(items_with_contexts):
        name = record.get("item_id", f"record {index}")
        if not isinstance(record.get("question"), str) or not isinstance(record.get("contexts"), list):
            raise DataError(f"{name}: a generation record needs a string 'question' and a list 'contexts'")
        text, n_dropped = fit_prompt(
            tokenizer,
            record["question"],
            record["contexts"],
            conf["max_input_tokens"],
            lambda prompt: render_chat(tokenizer, prompt, conf["system_prompt"]),
        )
        prompts.append(text)
        dropped.append(n_dropped)
    params = {key: conf[key] for key in ("max_new_tokens", "do_sample", "temperature", "top_k", "top_p", "seed")}
    outputs = generate_texts(
        model,
        tokenizer,
        prompts,
        max_input_tokens=conf["max_input_tokens"],
        batch_size=conf["batch_size"],
        **params,
    )
    name = model_name(model)
    return [
        {
            **record,
            "prompt": prompt,
            "response": out["text"],
            "n_input_tokens": out["n_input_tokens"],
            "n_truncated_tokens": n_dropped,
            "n_new_tokens": out["n_new_tokens"],
            "finished": out["finished"],
            "response_id": response_id(name, prompt, params),
        }
        for record, prompt, n_dropped, out in zip(items_with_contexts, prompts, dropped, outputs, strict=True)
    ]
