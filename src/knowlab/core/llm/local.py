"""Local generation with a transformers causal LM: chat-template rendering, batching, seeded sampling.

The one mechanism behind every local ``model.generate`` call of the project: grounding
responses (:mod:`knowlab.grounding.generate`, Lee et al. 2024 App. C.2-C.3), the atomic-fact
decomposer (:mod:`knowlab.grounding.facts`) and the fiction-generation backend
(:class:`knowlab.core.llm.backends.TransformersBackend`, Kirchenbauer et al. 2026 Sec. 3).  Models are
loaded by :func:`knowlab.core.models.load_model`; the callers own their prompt formats.

Texts are encoded without added special tokens (``add_special_tokens=False``, as the
scoring engine :mod:`knowlab.core.scoring` does): a rendered chat template already holds
its special tokens.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from tqdm.auto import tqdm

from knowlab.core.device import cut_batches, place

#: between a system prompt and the prompt when they are merged into one user turn
SYSTEM_SEPARATOR = "\n\n"


def render_messages(tokenizer, turns: Sequence[Mapping[str, str]], system_prompt: str | None = None) -> str:
    """``turns`` (``[{"role": "user"|"assistant", "content": str}, ...]``, ending with a user turn)
    through the tokenizer's chat template, with the generation prompt.

    ``apply_chat_template(messages, add_generation_prompt=True, tokenize=False)`` on
    ``[system?, *turns]``; a template that refuses a system role (it raises a jinja2
    ``TemplateError``) gets the system prompt as the first paragraph of the first turn
    instead.  ``system_prompt=None`` or ``""`` sends no system message (the template may
    insert its own default, e.g. SmolLM2's).

    Raises:
        jinja2.exceptions.TemplateError: the template fails without a system prompt.
    """
    # deferred: jinja2 comes with transformers, in the envs whose tokenizers apply chat templates
    from jinja2.exceptions import TemplateError

    messages = [dict(turn) for turn in turns]
    try:
        if system_prompt:
            return tokenizer.apply_chat_template(
                [{"role": "system", "content": system_prompt}, *messages], add_generation_prompt=True, tokenize=False
            )
        return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    except TemplateError:
        if not system_prompt:
            raise
        messages[0] = {**messages[0], "content": system_prompt + SYSTEM_SEPARATOR + messages[0]["content"]}
        return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


def render_chat(tokenizer, prompt: str, system_prompt: str | None = None) -> str:
    """The text the model reads: ``prompt`` as the user turn of the tokenizer's chat template.

    With a chat template (``tokenizer.chat_template`` set): :func:`render_messages` of the one
    user turn (system prompt as a system message, or merged into the user message when the
    template refuses a system role, as :func:`knowlab.sort.prompts.render_prompt`).
    ``system_prompt=None`` or ``""`` sends no system message.  Without a chat template:
    ``system prompt``, blank line, prompt (or the prompt alone).
    """
    if getattr(tokenizer, "chat_template", None):
        return render_messages(tokenizer, [{"role": "user", "content": prompt}], system_prompt)
    return system_prompt + SYSTEM_SEPARATOR + prompt if system_prompt else prompt


def count_tokens(tokenizer, text: str) -> int:
    """Number of tokens of ``text`` as the model reads it (no added special tokens)."""
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def stop_token_ids(model, tokenizer) -> list[int]:
    """Token ids that end a response: the tokenizer's EOS and the model's ``generation_config.eos_token_id``.

    For SmolLM2 both are ``<|im_end|>`` (the chat template's end of turn).

    Raises:
        ValueError: neither defines an EOS token.
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


def model_name(model) -> str:
    """The model's name or path (``model.name_or_path`` / ``config._name_or_path``), or ``"unknown"``."""
    name = getattr(model, "name_or_path", None) or getattr(getattr(model, "config", None), "_name_or_path", None)
    return str(name) if name else "unknown"


def prompt_seed(seed: int, text: str) -> int:
    """A 63-bit seed from ``seed`` and the prompt text (sha256; Python's salted ``hash`` is not used)."""
    digest = hashlib.sha256(f"{seed}\x1f{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


class SeededSampler:
    """Logits processor that samples each row with its own ``torch.Generator`` (one per prompt).

    Applies temperature, top-k and top-p (transformers' warpers, in that order), draws the next
    token of row ``i`` from the resulting distribution with generator ``i`` (seeded with
    ``seeds[i]``), and returns scores that are 0 at the drawn token and -inf elsewhere, so
    greedy decoding emits the draw.
    """

    def __init__(self, seeds: Sequence[int], temperature: float, top_k: int | None, top_p: float | None):
        # deferred: transformers is loaded only by the jobs that generate
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
        # deferred: torch is loaded only by the jobs that generate
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
    first) and run in batches of ``batch_size`` (fewer where the job's token budget,
    ``compute.max_batch_tokens``, is reached, counting rows x (prompt + ``max_new_tokens``)),
    each left-padded with the pad token (EOS when the tokenizer has none) and an attention
    mask; results come back in input order.
    Decoding stops at any of :func:`stop_token_ids` or after ``max_new_tokens``.

    Greedy (default) decoding is deterministic; with left padding the logits of a padded row
    differ from those of the row alone only by float rounding, so outputs do not depend on
    ``batch_size`` except where two tokens tie to rounding (tested on SmolLM2-135M).

    Sampling (``do_sample=True``; temperature, then top-k, then top-p) draws each prompt's
    tokens with its own ``torch.Generator`` seeded from sha256(``seed``, prompt text)
    (:func:`prompt_seed`; transformers' ``generate`` has no per-row generator, so the draw is
    done in a logits processor, :class:`SeededSampler`).  Guarantee: on one machine, software
    stack and dtype, the same ``(seed, prompt)`` gives the same response on rerun, whatever
    the batch size, batch composition or input order, up to the float-rounding caveat of
    greedy decoding above; identical prompts in one call get identical responses.  Across
    devices or library versions results may differ.

    Returns:
        one dict per text: ``text`` (the decoded new tokens up to the stop token, special
        tokens skipped, stripped), ``n_input_tokens``, ``n_new_tokens`` (generated tokens,
        the stop token included), ``finished`` (a stop token was generated within
        ``max_new_tokens``).

    Raises:
        ValueError: a text longer than ``max_input_tokens`` tokens (the message gives its
            index and start; cut prompts first, e.g. :func:`knowlab.grounding.generate.fit_prompt`).
    """
    # deferred: torch and transformers are loaded only by the jobs that generate
    import torch
    from transformers import LogitsProcessorList

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
    order = sorted(range(len(texts)), key=lambda i: -len(encoded[i]))
    results: list[dict[str, Any] | None] = [None] * len(texts)
    batches = cut_batches(order, [len(encoded[i]) + max_new_tokens for i in order], batch_size)
    for batch in tqdm(batches, desc=desc, leave=False, mininterval=5):
        width = max(len(encoded[i]) for i in batch)
        input_ids = place(torch.tensor([[pad_id] * (width - len(encoded[i])) + encoded[i] for i in batch]), model)
        attention = place(torch.tensor([[0] * (width - len(encoded[i])) + [1] * len(encoded[i]) for i in batch]), model)
        processors = []
        if do_sample:
            processors = [SeededSampler([prompt_seed(seed, texts[i]) for i in batch], temperature, top_k, top_p)]
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
