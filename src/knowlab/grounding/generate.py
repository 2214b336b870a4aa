"""Response generation for the grounding study: the input format, prompt fitting and the response records.

Sources (paper "How Well Do Large Language Models Truly Ground?", Lee et al. 2024):

- *Input format* (App. C.2, Fig. 12): an instruction, ``[context]`` and the contexts,
  ``[question]`` and the question, a reminder that repeats the instruction, then ``[answer]``.
  :data:`INSTRUCTION` and :data:`REMINDER` say what Fig. 12 says in this project's own words;
  :func:`build_prompt` lays the parts out as Fig. 12 does (parts separated by blank lines,
  each context verbatim, contexts separated by blank lines).  For chat models the prompt is
  the user turn of the model's own chat template (:func:`knowlab.core.llm.local.render_chat`),
  as the paper changed the format to TULU's training format (App. C.2).
- *Inference configuration* (App. C.3): inputs and outputs limited to 2048 tokens
  (``max_input_tokens``, ``max_new_tokens``; the paper's outputs rarely approach the limit, the
  default here is 256 new tokens); decoding is greedy by default, sampling (the paper:
  top-k 10 for Llama-2/Vicuna/Falcon, temperature 0.6 for TULU) is configurable.  The paper's
  4-bit quantisation is not reproduced (models run in the dtype they are loaded in).

Truncation rule (:func:`fit_prompt`): the template (instruction, markers, question, reminder,
chat-template tokens) is never cut.  When the rendered prompt is longer than
``max_input_tokens``, context tokens are dropped from the end of the last context backwards
(then from the end of the context before it, ...), token-exactly, until the prompt fits; the
number of dropped context tokens is recorded.

Backends (config ``grounding.generation.backend``):

- ``transformers`` (default): the model in this process, the shared local generation
  mechanism :func:`knowlab.core.llm.local.generate_texts` (batches of ``batch_size``
  prompts, longest first, seeded sampling) on the rendered prompts; on the device of the
  job's ``compute`` policy.  It is the mechanism behind
  :class:`knowlab.core.llm.backends.TransformersBackend`, called directly: that backend
  re-cuts batches in request order, checks prompts against the model's context instead of
  ``max_input_tokens``, and refuses empty answers, which grounding records.
- ``openai``: an OpenAI-compatible chat server (vLLM, ...), through the
  :class:`~knowlab.core.llm.requests.Backend` protocol
  (:class:`~knowlab.core.llm.openai_backend.OpenAIChatBackend`, ``concurrency`` requests in
  flight; the server batches them).  The request is the chat messages, the system prompt
  (when set) and the fitted prompt as the user turn; the server applies its own chat
  template.  Prompts are fitted with the *local* tokenizer and chat template of the model
  folder (token counts of :func:`knowlab.core.llm.local.render_chat`): exact when the server
  serves that folder (its template is the folder's), an approximation otherwise; the
  server's own count is recorded as ``n_input_tokens``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from knowlab.core.io import DataError
from knowlab.core.llm.cache import RequestCache, run_requests
from knowlab.core.llm.local import count_tokens, generate_texts, model_name, render_chat
from knowlab.core.llm.openai_backend import OpenAIChatBackend
from knowlab.core.llm.requests import Backend, BackendError, ChatRequest, Completion

if TYPE_CHECKING:  # the settings module imports this one
    from knowlab.grounding.settings import GroundingGenerationSettings

log = logging.getLogger(__name__)

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

#: the generation parameters of :func:`response_id`
GENERATION_PARAMS = ("max_new_tokens", "do_sample", "temperature", "top_k", "top_p", "seed")


@dataclass(frozen=True)
class ClientOptions:
    """How an ``openai`` backend's client reaches its server: ``api_key_env``, ``max_retries``,
    ``timeout_s`` and ``concurrency`` of config ``grounding.generation.openai`` (defaults here) or
    ``grounding.decomposer.openai`` (:data:`knowlab.grounding.facts.DECOMPOSER_CLIENT`).

    No result depends on them (the variable the API key is read from, retries of transient
    errors, seconds per request, requests in flight: the answers are those of the server and
    the request), so they are in no step's settings
    (:class:`knowlab.grounding.settings.GroundingGenerationSettings`): the scripts read them
    from the job's config."""

    api_key_env: str = "OPENAI_API_KEY"
    max_retries: int = 5
    timeout_s: float = 600.0
    concurrency: int = 16


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


def fit_prompt(
    tokenizer,
    question: str,
    contexts: Sequence[str],
    max_input_tokens: int,
    render: Callable[[str], str] | None = None,
) -> tuple[str, int]:
    """The rendered prompt of :func:`build_prompt`, cut on the contexts to fit ``max_input_tokens``.

    ``render(build_prompt(question, kept))`` of :func:`fit_contexts`; see there for the rule.

    Returns:
        ``(text, n_dropped_tokens)``: the rendered prompt and the number of context tokens
        left out (0 when everything fits).

    Raises:
        ValueError: the prompt does not fit even with all contexts left out.
    """
    if render is None:
        render = lambda prompt: render_chat(tokenizer, prompt)
    kept, n_dropped = fit_contexts(tokenizer, question, contexts, max_input_tokens, render)
    return render(build_prompt(question, kept)), n_dropped


def fit_contexts(
    tokenizer,
    question: str,
    contexts: Sequence[str],
    max_input_tokens: int,
    render: Callable[[str], str] | None = None,
) -> tuple[list[str], int]:
    """The contexts of :func:`build_prompt`, cut to fit ``max_input_tokens`` once rendered.

    Truncation rule: instruction, question, reminder and the chat template are kept whole;
    the contexts, each tokenized alone, are cut token-exactly from the end of the last
    context backwards (a context cut to nothing is left out) to the longest prefix of context
    tokens for which ``render(build_prompt(question, kept_contexts))`` is at most
    ``max_input_tokens`` tokens long (found by bisection, each candidate tokenized in full;
    a context is cut at the character end of its last kept token).

    Args:
        render: prompt -> the text the model reads; default
            ``knowlab.core.llm.local.render_chat(tokenizer, prompt)``.

    Returns:
        ``(kept_contexts, n_dropped_tokens)``: the contexts as cut (all of them, unchanged,
        when everything fits) and the number of context tokens left out.

    Raises:
        ValueError: the prompt does not fit even with all contexts left out.
    """
    if render is None:
        render = lambda prompt: render_chat(tokenizer, prompt)

    def rendered(kept: Sequence[str]) -> str:
        return render(build_prompt(question, kept))

    if count_tokens(tokenizer, rendered(contexts)) <= max_input_tokens:
        return list(contexts), 0
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
    return cut(low), len(ends) - low


def response_id(model: str, prompt: str, params: Mapping[str, Any]) -> str:
    """Identifier of a generation request: first 16 hex digits of sha256 of JSON ``{model, prompt, params}``.

    ``params`` are the generation parameters (``max_new_tokens``, ``do_sample``, ``temperature``,
    ``top_k``, ``top_p``, ``seed``); JSON keys are sorted, so the id does not depend on order.
    The ``openai`` backend's ids (:func:`generate_responses`) take the served model name, the
    JSON of the chat messages as ``prompt`` and ``backend: "openai"`` among the params, so they
    never equal a local id.
    """
    payload = json.dumps({"model": model, "prompt": prompt, "params": dict(params)}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def served_model(settings: GroundingGenerationSettings, key: str | None, path: str) -> tuple[str, str | None]:
    """The served model name and server of one evaluated model or checkpoint (``openai`` backend).

    ``settings.openai_models`` (``grounding.generation.openai.models``) maps a model's key (the
    ``eval_models`` name, e.g. ``llama2-7b-chat``, or ``<run>/step-<step>`` of a fine-tuning
    checkpoint, e.g. ``doc/step-100``; step 0 is ``base_model/step-0``) to the served name
    (a string) or to ``{"model": name, "base_url": url}`` (either may be left out), for a model
    on a server of its own.  Default name: ``path``, the model folder the job reads, as given
    (relative to the working directory: ``resources/models/<name>``, ``resources/base_model``,
    ``results/fictionalqa/finetune/<run>/checkpoints/step-<n>``), the name under which ``vllm serve <path>``
    started in the working directory serves it.  Default server: ``settings.openai_base_url``
    (``grounding.generation.openai.base_url``).

    Returns:
        ``(name, base_url)``.

    Raises:
        ValueError: an entry that is neither a non-empty string nor such a mapping.
    """
    base_url = settings.openai_base_url
    entry = (settings.openai_models or {}).get(key) if key is not None else None
    if entry is None:
        return str(path), base_url
    if isinstance(entry, str) and entry:
        return entry, base_url
    if isinstance(entry, Mapping) and set(entry) <= {"model", "base_url"}:
        return str(entry.get("model") or path), entry.get("base_url") or base_url
    raise ValueError(
        f"grounding.generation.openai.models.{key}: expected a served model name or {{model, base_url}}, got {entry!r}"
    )


def chat_backend(model: str, base_url: str | None, client: ClientOptions | None = None) -> OpenAIChatBackend:
    """:class:`~knowlab.core.llm.openai_backend.OpenAIChatBackend` for the served ``model`` at ``base_url``
    (None: api.openai.com), the client as ``client`` says (default :class:`ClientOptions`); empty
    answers are results (``allow_empty``), not errors.

    Raises:
        BackendError: no ``base_url`` and ``$api_key_env`` unset.
    """
    client = client if client is not None else ClientOptions()
    return OpenAIChatBackend(
        model,
        base_url,
        api_key_env=client.api_key_env or ClientOptions.api_key_env,
        max_retries=int(client.max_retries),
        timeout_s=float(client.timeout_s),
        concurrency=int(client.concurrency),
        allow_empty=True,
    )


def answer_requests(
    backend: Backend, requests: Sequence[ChatRequest], cache: RequestCache | None, desc: str
) -> dict[str, Completion]:
    """``{request.key: completion}`` of every request: through ``cache``
    (:func:`knowlab.core.llm.cache.run_requests`, resumable) when given, else straight from ``backend``.

    Raises:
        BackendError: the backend failed (the message names the request) or left a request unanswered.
        ValueError: two requests share a key.
    """
    if cache is not None:
        return run_requests(backend, cache, requests, desc)
    keys = [r.key for r in requests]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{desc}: duplicate request keys {sorted({k for k in keys if keys.count(k) > 1})[:5]}")
    done = {request.key: completion for request, completion in backend.complete(requests)}
    missing = [key for key in keys if key not in done]
    if missing:
        raise BackendError(
            f"{desc}: {backend.name} returned no answer for {len(missing)} request(s), e.g. {missing[:5]}"
        )
    return done


def chat_params(settings: GroundingGenerationSettings) -> dict[str, Any]:
    """The chat request parameters of the generation settings: ``max_tokens``; greedy decoding is
    ``temperature`` 0, sampling sends ``temperature``, ``top_p`` and ``top_k`` (when set) and ``seed``."""
    if not settings.do_sample:
        return {"max_tokens": settings.max_new_tokens, "temperature": 0.0}
    params = {"max_tokens": settings.max_new_tokens, "temperature": settings.temperature, "seed": settings.seed}
    params.update({k: getattr(settings, k) for k in ("top_p", "top_k") if getattr(settings, k) is not None})
    return params


def _request_keys(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """``<item_id>/<condition>`` of each record (``record <index>`` without them), ``#n`` added to repeats."""
    keys, seen = [], {}
    for index, record in enumerate(records):
        base = f"{record['item_id']}/{record['condition']}" if "item_id" in record and "condition" in record else None
        base = base or f"record {index}"
        seen[base] = seen.get(base, 0) + 1
        keys.append(base if seen[base] == 1 else f"{base}#{seen[base] - 1}")
    return keys


def generate_responses(
    model,
    tokenizer,
    items_with_contexts: Sequence[Mapping[str, Any]],
    settings: GroundingGenerationSettings,
    *,
    backend: Backend | None = None,
    served: str | None = None,
    cache: RequestCache | None = None,
    client: ClientOptions | None = None,
) -> list[dict[str, Any]]:
    """Generate a response for every record (paper Sec. 4 / App. C.2-C.3).

    Args:
        model: the local causal LM (``transformers`` backend); unused by ``openai``.
        tokenizer: the model's tokenizer (both backends: it fits the prompts).
        items_with_contexts: records with ``question`` (str) and ``contexts`` (list[str],
            already packed: gold contexts, with distractors where the condition has them);
            other fields are copied to the output.
        settings: ``grounding.generation`` (:class:`~knowlab.grounding.settings.GroundingGenerationSettings`):
            ``backend``, ``max_new_tokens``, ``max_input_tokens``, ``do_sample``, ``temperature``,
            ``top_k``, ``top_p``, ``seed``, ``batch_size``, ``system_prompt``, ``openai_base_url``.
        backend: ``openai`` only: the chat backend (default :func:`chat_backend` of ``served``,
            ``settings.openai_base_url`` and ``client``).
        served: ``openai`` only: the served model name sent with every request (required).
        cache: ``openai`` only: a request cache; a re-run sends only the requests it lacks.
        client: ``openai`` only, without ``backend``: how the client reaches the server
            (default :class:`ClientOptions`).

    Decoding: ``transformers``: :func:`knowlab.core.llm.local.generate_texts` with the
    settings' parameters.  ``openai``: one chat request per record (key
    ``<item_id>/<condition>``, stage ``grounding``; messages: the system prompt when set, then
    the fitted prompt as the user turn; parameters :func:`chat_params`).

    Returns:
        per record, in order, a copy with ``prompt``, ``response``, ``n_input_tokens``,
        ``n_truncated_tokens`` (context tokens dropped to fit), ``n_new_tokens``, ``finished``
        and ``response_id``.  ``transformers``: ``prompt`` is the rendered text the model read
        (after :func:`fit_prompt`), ``response_id`` is :func:`response_id` of the model's
        name/path, the prompt and the generation parameters.  ``openai``: ``prompt`` is the
        fitted user turn (the server renders it), ``n_input_tokens`` / ``n_new_tokens`` are the
        server's counts (the local ones where it reports none), ``finished`` is a
        ``finish_reason`` of ``stop``, ``response_id`` is :func:`response_id` of the served
        name, the JSON of the messages and the parameters with ``backend: "openai"``; and the
        record also has ``backend`` (``"openai"``) and ``served_model``.

    Raises:
        DataError: a record without a string ``question`` or a list ``contexts`` (the message
            names its ``item_id`` or index).
        ValueError: a template + question longer than ``max_input_tokens``, no tokenizer, no
            model (``transformers``) or no served name (``openai``).
        BackendError: ``openai``: a request failed (the message names its key, the HTTP
            status and the server's message).
    """
    if tokenizer is None:
        raise ValueError("grounding generation needs the model's tokenizer (it fits the prompts)")
    openai_backend = settings.backend == "openai"
    if openai_backend and not served:
        raise ValueError("grounding.generation.backend openai needs the served model name")
    if not openai_backend and model is None:
        raise ValueError("grounding.generation.backend transformers needs the model")
    render = lambda prompt: render_chat(tokenizer, prompt, settings.system_prompt)
    prompts, dropped = [], []
    for index, record in enumerate(items_with_contexts):
        name = record.get("item_id", f"record {index}")
        if not isinstance(record.get("question"), str) or not isinstance(record.get("contexts"), list):
            raise DataError(f"{name}: a generation record needs a string 'question' and a list 'contexts'")
        if openai_backend:
            kept, n_dropped = fit_contexts(
                tokenizer, record["question"], record["contexts"], settings.max_input_tokens, render
            )
            text = build_prompt(record["question"], kept)
        else:
            text, n_dropped = fit_prompt(
                tokenizer, record["question"], record["contexts"], settings.max_input_tokens, render
            )
        prompts.append(text)
        dropped.append(n_dropped)
    params = {key: getattr(settings, key) for key in GENERATION_PARAMS}
    if openai_backend:
        return _served_responses(
            items_with_contexts, prompts, dropped, settings, params, tokenizer, backend, served, cache, client
        )
    outputs = generate_texts(
        model,
        tokenizer,
        prompts,
        max_input_tokens=settings.max_input_tokens,
        batch_size=settings.batch_size,
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


def _served_responses(records, prompts, dropped, settings, params, tokenizer, backend, served, cache, client):
    """The ``openai`` half of :func:`generate_responses` (prompts are the fitted user turns)."""
    backend = backend if backend is not None else chat_backend(served, settings.openai_base_url, client)
    system = settings.system_prompt
    requests = [
        ChatRequest(
            key=key,
            stage="grounding",
            messages=(*([{"role": "system", "content": system}] if system else []), {"role": "user", "content": p}),
            model=served,
            params=chat_params(settings),
        )
        for key, p in zip(_request_keys(records), prompts, strict=True)
    ]
    answers = answer_requests(backend, requests, cache, f"grounding responses ({served})")
    out, over = [], 0
    for record, request, prompt, n_dropped in zip(records, requests, prompts, dropped, strict=True):
        completion = answers[request.key]
        text = completion.content.strip()
        usage = completion.usage
        n_input = usage.get("prompt_tokens")
        if n_input is None:
            n_input = count_tokens(tokenizer, render_chat(tokenizer, prompt, system))
        over += n_input > settings.max_input_tokens
        messages = json.dumps([dict(m) for m in request.messages], ensure_ascii=False)
        out.append(
            {
                **record,
                "prompt": prompt,
                "response": text,
                "n_input_tokens": n_input,
                "n_truncated_tokens": n_dropped,
                "n_new_tokens": usage.get("completion_tokens", count_tokens(tokenizer, text)),
                "finished": completion.finish_reason == "stop",
                "response_id": response_id(served, messages, {**params, "backend": "openai"}),
                "backend": backend.name,
                "served_model": served,
            }
        )
    if over:
        log.warning(
            "%d of %d prompt(s) are longer than max_input_tokens=%d as the server counts them: its chat template "
            "or tokenizer differs from the local one of %s",
            over,
            len(out),
            settings.max_input_tokens,
            served,
        )
    return out
