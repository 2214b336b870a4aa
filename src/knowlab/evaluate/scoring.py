"""Log-likelihood scoring with lm-evaluation-harness semantics: the one scoring engine.

A request is a ``(context, continuation)`` pair of strings.  As in the harness
(lm-evaluation-harness ``TemplateLM._encode_pair``, used by ``HFLM``): trailing
whitespace of the context moves to the start of the continuation; the context's
tokens are those of the context alone and the continuation's tokens are the
tokens of ``context + continuation`` after as many tokens as the context has; an
empty context is replaced by the model's prefix token (BOS if the tokenizer has
one, else EOS).  As in ``HFLM._loglikelihood_tokens``, the model sees
``(context + continuation)[:-1]``, cut from the left to its window, and each
continuation token is scored by the log-softmax at the position before it.

Outputs per request: summed log-likelihood (nats), number of continuation
tokens, and whether greedy (argmax) decoding reproduces every continuation
token under teacher forcing.

How requests are run (:func:`score_token_ids`):

- *Shared context*: requests whose context token ids are identical (several
  choices of one question, several answers to one prompt) and that fit the window
  uncut share one forward pass over the context.  Its last position scores every
  continuation's first token; each continuation's remaining tokens
  (``continuation[:-1]`` as input) run on top of a copy of the context's KV cache
  (``transformers.DynamicCache``), rows selected per continuation with
  ``Cache.batch_select_indices``.  Contexts are batched only with contexts of the
  same token length, so neither pass needs an attention mask or position ids:
  continuations are right-padded, and causal attention keeps padding out of every
  real position.  The harness instead re-encodes the context once per choice.
- *Per request*: every other request (a unique context such as a document, an
  empty context, or one that the window cuts) runs as one right-padded sequence,
  logits kept only from the first scored position of the batch on.

Within each path requests are sorted by length (longest first) and batched;
results return in request order and do not depend on the batch size (to float
rounding, ~1e-6 nats in float32).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm


@dataclass(frozen=True)
class TokenScores:
    """Per-token scores of one request's continuation: log-probabilities (nats) and greedy matches."""

    logprobs: np.ndarray  # shape (n_continuation_tokens,), float64
    greedy: np.ndarray  # shape (n_continuation_tokens,), bool


def prefix_token_id(tokenizer) -> int:
    """The token that stands in for an empty context (harness ``HFLM.prefix_token_id``)."""
    return tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id


def encode_pair(tokenizer, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """Context and continuation token ids, harness semantics (see module docstring).

    No special tokens are added (the harness's default for tokenizers that add none, such as
    SmolLM2's).  Where a token spans the context/continuation boundary, the context keeps its
    own tokens and the continuation starts after as many tokens of the whole, as in the harness.
    """
    n_space = len(context) - len(context.rstrip())
    if n_space:
        continuation = context[-n_space:] + continuation
        context = context[:-n_space]
    if not context:
        return [prefix_token_id(tokenizer)], tokenizer(continuation, add_special_tokens=False)["input_ids"]
    whole = tokenizer(context + continuation, add_special_tokens=False)["input_ids"]
    context_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
    return context_ids, whole[len(context_ids) :]


def _token_scores(logits, targets: Sequence[int]) -> TokenScores:
    """Scores of ``targets`` (length n) under ``logits`` of shape (n, vocab): log-softmax in float32."""
    import torch

    logits = logits.float()
    target = torch.tensor(targets, device=logits.device)
    logprobs = logits.gather(-1, target[:, None])[:, 0] - logits.logsumexp(-1)
    greedy = logits.argmax(-1) == target
    return TokenScores(logprobs.double().cpu().numpy(), greedy.cpu().numpy())


def score_token_ids(
    model,
    pairs: Sequence[tuple[list[int], list[int]]],
    batch_size: int = 8,
    max_length: int | None = None,
    desc: str = "scoring",
) -> list[TokenScores]:
    """Score continuation tokens given context tokens, one :class:`TokenScores` per pair.

    Requests that share their context token ids are scored from one context pass; the others
    one sequence each (see module docstring; sources: lm-evaluation-harness
    ``HFLM._loglikelihood_tokens``).

    Args:
        model: a Hugging Face causal LM returning ``logits`` of shape (batch, length, vocab)
            and, for shared contexts, a ``Cache`` in ``past_key_values``.
        pairs: ``(context_ids, continuation_ids)``; the continuation must be non-empty.
        batch_size: sequences per forward pass (contexts in a context pass, continuations
            in a continuation pass, requests in the per-request path).
        max_length: model window (default ``model.config.max_position_embeddings``, else
            2048); longer inputs keep their last ``max_length`` tokens.

    Returns:
        one :class:`TokenScores` per pair, in order, each of length ``len(continuation_ids)``
        (fewer only if the window cut into the continuation).

    Raises:
        ValueError: an empty continuation.
    """
    import torch

    max_length = max_length or getattr(model.config, "max_position_embeddings", 2048)
    if any(not continuation_ids for _, continuation_ids in pairs):
        raise ValueError("empty continuation: nothing to score")
    by_context: dict[tuple[int, ...], list[int]] = {}
    for i, (context_ids, continuation_ids) in enumerate(pairs):
        if context_ids and len(context_ids) + len(continuation_ids) - 1 <= max_length:
            by_context.setdefault(tuple(context_ids), []).append(i)
    shared = {context: owners for context, owners in by_context.items() if len(owners) > 1}
    in_shared = {i for owners in shared.values() for i in owners}
    alone = [i for i in range(len(pairs)) if i not in in_shared]
    results: dict[int, TokenScores] = {}
    with torch.inference_mode():
        if shared:
            results.update(_score_shared(model, pairs, shared, batch_size, desc))
        scores = _score_alone(model, [pairs[i] for i in alone], batch_size, max_length, desc)
        results.update(zip(alone, scores))
    return [results[i] for i in range(len(pairs))]


def _score_shared(
    model, pairs: Sequence[tuple[list[int], list[int]]], shared: dict[tuple[int, ...], list[int]], batch_size: int, desc: str
) -> dict[int, TokenScores]:
    """Scores of the requests ``shared[context]`` (indices into ``pairs``), one pass per context.

    Contexts of equal token length are batched together: a context pass returns the last
    position's logits, shape (contexts, 1, vocab), and the KV cache; each continuation pass
    feeds ``continuation[:-1]`` (right-padded, shape (rows, longest - 1)) on a copy of that
    cache holding each row's context.
    """
    import torch

    device = next(model.parameters()).device
    by_length: dict[int, list[tuple[int, ...]]] = {}
    for context in shared:
        by_length.setdefault(len(context), []).append(context)
    chunks = [
        contexts[start : start + batch_size]
        for length in sorted(by_length, reverse=True)
        for contexts in [by_length[length]]
        for start in range(0, len(contexts), batch_size)
    ]
    results = {}
    for chunk in tqdm(chunks, desc=desc, leave=False, mininterval=5):
        out = model(input_ids=torch.tensor(chunk, device=device), use_cache=True, logits_to_keep=1)
        last, cache = out.logits[:, -1], out.past_key_values
        rows = [(row, i) for row, context in enumerate(chunk) for i in shared[context]]
        # every continuation's first token, from its context's last position
        heads = _token_scores(last[[row for row, _ in rows]], [pairs[i][1][0] for _, i in rows])
        for k, (_, i) in enumerate(rows):
            results[i] = TokenScores(heads.logprobs[k : k + 1], heads.greedy[k : k + 1])
        # the other tokens: continuation[:-1] as input, on a copy of the cache with each row's context
        rest = sorted((ri for ri in rows if len(pairs[ri[1]][1]) > 1), key=lambda ri: -len(pairs[ri[1]][1]))
        for start in range(0, len(rest), batch_size):
            batch = rest[start : start + batch_size]
            ids = torch.zeros((len(batch), len(pairs[batch[0][1]][1]) - 1), dtype=torch.long)
            for k, (_, i) in enumerate(batch):
                ids[k, : len(pairs[i][1]) - 1] = torch.tensor(pairs[i][1][:-1])
            past = copy.deepcopy(cache)
            past.batch_select_indices(torch.tensor([row for row, _ in batch], device=device))
            logits = model(input_ids=ids.to(device), past_key_values=past, use_cache=True).logits
            for k, (_, i) in enumerate(batch):
                continuation, head = pairs[i][1], results[i]
                tail = _token_scores(logits[k, : len(continuation) - 1], continuation[1:])
                results[i] = TokenScores(
                    np.concatenate([head.logprobs, tail.logprobs]), np.concatenate([head.greedy, tail.greedy])
                )
    return results


def _score_alone(
    model, pairs: Sequence[tuple[list[int], list[int]]], batch_size: int, max_length: int, desc: str
) -> list[TokenScores]:
    """Scores of each pair from its own sequence ``(context + continuation)[:-1]``, cut to the window."""
    import torch

    inputs = []
    for context_ids, continuation_ids in pairs:
        full = (list(context_ids) + list(continuation_ids))[-(max_length + 1) :]
        inputs.append((full[:-1], full[1:], len(continuation_ids)))
    order = sorted(range(len(inputs)), key=lambda i: -len(inputs[i][0]))
    results: list[TokenScores | None] = [None] * len(inputs)
    device = next(model.parameters()).device
    for start in tqdm(range(0, len(order), batch_size), desc=desc, leave=False, mininterval=5):
        batch = order[start : start + batch_size]
        width = max(len(inputs[i][0]) for i in batch)
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, i in enumerate(batch):
            seq = inputs[i][0]
            ids[row, : len(seq)] = torch.tensor(seq)
            mask[row, : len(seq)] = 1
        # logits only from the first scored position of the batch on (logits_to_keep),
        # and log-probabilities only at scored positions: no full-vocabulary log_softmax
        starts = [len(inputs[i][0]) - min(inputs[i][2], len(inputs[i][1])) for i in batch]
        first = min(starts)
        logits = model(input_ids=ids.to(device), attention_mask=mask.to(device), logits_to_keep=width - first).logits
        for row, i in enumerate(batch):
            _, targets, _ = inputs[i]
            results[i] = _token_scores(logits[row, starts[row] - first : len(targets) - first], targets[starts[row] :])
    return results  # type: ignore[return-value]


def loglikelihood(
    model, tokenizer, requests: Sequence[tuple[str, str]], batch_size: int = 8, desc: str = "loglikelihood"
) -> list[tuple[float, int, bool]]:
    """``(sum log-likelihood, n tokens, is_greedy)`` of each ``(context, continuation)`` request."""
    pairs = [encode_pair(tokenizer, c, x) for c, x in requests]
    scores = score_token_ids(model, pairs, batch_size=batch_size, desc=desc)
    return [(float(s.logprobs.sum()), len(s.logprobs), bool(s.greedy.all())) for s in scores]


def next_token_logprobs(
    model,
    tokenizer,
    contexts: Sequence[str],
    continuations: Sequence[str],
    batch_size: int = 8,
    desc: str = "next token",
) -> np.ndarray:
    """``log p(continuation | context)`` (nats) of single-token continuations, one forward pass per context.

    Equals :func:`loglikelihood` on every ``(context, continuation)`` request (same pairing by
    :func:`encode_pair`, window cut and batching), but scores all continuations of a context from
    the logits at its last position, so ``n_contexts`` sequences are run instead of
    ``n_contexts * n_continuations``.

    Returns:
        float64 array of shape ``(len(contexts), len(continuations))``.

    Raises:
        ValueError: no continuations; or a continuation that, after some context, is not exactly
            one token or changes the context's tokens: the message names it (then use
            :func:`loglikelihood`).
    """
    import torch

    if not continuations:
        raise ValueError("no continuations to score")
    max_length = getattr(model.config, "max_position_embeddings", 2048)
    inputs, targets = [], []
    for context in contexts:
        pairs = [encode_pair(tokenizer, context, x) for x in continuations]
        for x, (context_ids, continuation_ids) in zip(continuations, pairs):
            if len(continuation_ids) != 1 or context_ids != pairs[0][0]:
                raise ValueError(f"continuation {x!r} is not a single token after context ...{context[-40:]!r}")
        inputs.append(pairs[0][0][-max_length:])
        targets.append([ids[0] for _, ids in pairs])
    order = sorted(range(len(inputs)), key=lambda i: -len(inputs[i]))
    out = np.zeros((len(inputs), len(continuations)))
    device = next(model.parameters()).device
    with torch.inference_mode():
        for start in tqdm(range(0, len(order), batch_size), desc=desc, leave=False, mininterval=5):
            batch = order[start : start + batch_size]
            lengths = [len(inputs[i]) for i in batch]
            ids = torch.zeros((len(batch), lengths[0]), dtype=torch.long)
            mask = torch.zeros((len(batch), lengths[0]), dtype=torch.long)
            for row, i in enumerate(batch):
                ids[row, : lengths[row]] = torch.tensor(inputs[i])
                mask[row, : lengths[row]] = 1
            # keep logits from the shortest sequence's last position on; row r's last is lengths[r] - 1
            keep = lengths[0] - lengths[-1] + 1
            logits = model(input_ids=ids.to(device), attention_mask=mask.to(device), logits_to_keep=keep).logits
            rows = torch.arange(len(batch), device=logits.device)
            last = logits[rows, torch.tensor(lengths, device=logits.device) - lengths[-1]].float()
            target = torch.tensor([targets[i] for i in batch], device=last.device)
            token_lp = last.gather(-1, target) - last.logsumexp(-1, keepdim=True)
            out[batch] = token_lp.double().cpu().numpy()
    return out
