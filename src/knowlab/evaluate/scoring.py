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

- *Shared context* (packing): requests whose context token ids are identical
  (the choices of one question, the answers to one prompt) and that fit the
  window uncut are packed into one sequence, ``context + c_1[:-1] + c_2[:-1] +
  ...``: the context is encoded once.  Each block ``c_k[:-1]`` gets the
  positions that follow the context and a block attention mask (it sees the
  context and itself causally, no other block), so every token sees exactly
  what it sees in the request's own sequence.  The context's last position
  scores every continuation's first token.  The harness instead runs one
  sequence per request, re-encoding the context for each choice.
- *Per request*: every other request (a unique context such as a document, an
  empty context, one that the window cuts) runs as its own right-padded sequence.

In both, logits are kept only from the batch's first scored position on and the
log-softmax is taken only at scored positions, as ``logit - logsumexp(logits)`` in
float32 (about 5e-7 nats from float64 per token; ``torch.log_softmax``, which the
harness uses, is about 2e-5 off).  Sequences are sorted by length (longest first)
and batched; results return in request order and do not depend on the batch size
or on which path ran them (to float rounding, ~1e-5 nats in float32).
"""

from __future__ import annotations

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

    Requests that share their context token ids are packed into one sequence per context; the
    others run one sequence each (see module docstring; sources: lm-evaluation-harness
    ``HFLM._loglikelihood_tokens``).

    Args:
        model: a Hugging Face causal LM returning ``logits`` of shape (batch, length, vocab).
            Packing needs ``eager`` or ``sdpa`` attention (a custom 4D mask); with any other
            implementation every request runs alone.
        pairs: ``(context_ids, continuation_ids)``; the continuation must be non-empty.
        batch_size: sequences per forward pass (a packed sequence holds one context and
            several continuations).
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
    # a packed request must see exactly what it sees alone: uncut, and inside any sliding window
    limit = max_length if getattr(model.config, "_attn_implementation", None) in ("eager", "sdpa") else 0
    if getattr(model.config, "sliding_window", None):
        limit = min(limit, model.config.sliding_window - 1)
    by_context: dict[tuple[int, ...], list[int]] = {}
    for i, (context_ids, continuation_ids) in enumerate(pairs):
        if context_ids and len(context_ids) + len(continuation_ids) - 1 <= limit:
            by_context.setdefault(tuple(context_ids), []).append(i)
    shared = {context: owners for context, owners in by_context.items() if len(owners) > 1}
    in_shared = {i for owners in shared.values() for i in owners}
    alone = [i for i in range(len(pairs)) if i not in in_shared]
    results: dict[int, TokenScores] = {}
    with torch.inference_mode():
        if shared:
            results.update(_score_packed(model, pairs, shared, batch_size, limit, desc))
        scores = _score_alone(model, [pairs[i] for i in alone], batch_size, max_length, desc)
        results.update(zip(alone, scores))
    return [results[i] for i in range(len(pairs))]


def _score_packed(
    model,
    pairs: Sequence[tuple[list[int], list[int]]],
    shared: dict[tuple[int, ...], list[int]],
    batch_size: int,
    row_limit: int,
    desc: str,
) -> dict[int, TokenScores]:
    """Scores of the requests ``shared[context]`` (indices into ``pairs``), one packed row per context.

    A row is ``context + c_1[:-1] + c_2[:-1] + ...`` (at most ``row_limit`` tokens; a context
    with more continuations gets several rows).  Block ``k`` (``c_k[:-1]``) has positions
    ``len(context) ...`` and attends to the context and causally to itself, never to another
    block or to padding: a 4D additive mask of shape (rows, 1, width, width).  Continuation
    ``k``'s first token is scored at the context's last position, its others in block ``k``.
    """
    import torch

    rows = []  # (context, request indices), each row within row_limit tokens
    for context, owners in shared.items():
        row: list[int] = []
        length = len(context)
        for i in owners:
            if row and length + len(pairs[i][1]) - 1 > row_limit:
                rows.append((context, row))
                row, length = [], len(context)
            row.append(i)
            length += len(pairs[i][1]) - 1
        rows.append((context, row))
    width_of = [len(context) + sum(len(pairs[i][1]) - 1 for i in row) for context, row in rows]
    order = sorted(range(len(rows)), key=lambda r: -width_of[r])
    device = next(model.parameters()).device
    results = {}
    for start in tqdm(range(0, len(order), batch_size), desc=desc, leave=False, mininterval=5):
        batch = order[start : start + batch_size]
        width = width_of[batch[0]]
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        positions = torch.zeros((len(batch), width), dtype=torch.long)
        blocks = torch.full((len(batch), width), -1)  # -1 padding, 0 context, k continuation k
        scored = []  # (request, batch row, input indices whose logits score it)
        for b, r in enumerate(batch):
            context, owners = rows[r]
            n = len(context)
            ids[b, :n] = torch.tensor(context)
            positions[b, :n] = torch.arange(n)
            blocks[b, :n] = 0
            offset = n
            for k, i in enumerate(owners, start=1):
                block = pairs[i][1][:-1]
                ids[b, offset : offset + len(block)] = torch.tensor(block, dtype=torch.long)
                positions[b, offset : offset + len(block)] = torch.arange(n, n + len(block))
                blocks[b, offset : offset + len(block)] = k
                scored.append((i, b, [n - 1, *range(offset, offset + len(block))]))
                offset += len(block)
        causal = torch.ones((width, width), dtype=torch.bool).tril()
        visible = causal & ((blocks[:, None, :] == 0) | (blocks[:, :, None] == blocks[:, None, :]))
        mask = torch.zeros(visible.shape, dtype=model.dtype).masked_fill(~visible, torch.finfo(model.dtype).min)
        # logits only from the earliest scored position of the batch on
        first = min(len(rows[r][0]) for r in batch) - 1
        logits = model(
            input_ids=ids.to(device),
            attention_mask=mask[:, None].to(device),
            position_ids=positions.to(device),
            logits_to_keep=width - first,
            use_cache=False,
        ).logits
        flat_rows = torch.tensor([b for _, b, where in scored for _ in where], device=logits.device)
        flat_positions = torch.tensor([p - first for _, _, where in scored for p in where], device=logits.device)
        scores = _token_scores(logits[flat_rows, flat_positions], [t for i, _, _ in scored for t in pairs[i][1]])
        offset = 0
        for i, _, where in scored:
            results[i] = TokenScores(
                scores.logprobs[offset : offset + len(where)], scores.greedy[offset : offset + len(where)]
            )
            offset += len(where)
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

    :func:`loglikelihood` on every ``(context, continuation)`` request, checked to be single
    tokens: the engine packs each context's requests into one sequence of just the context,
    so ``n_contexts`` sequences are run instead of ``n_contexts * n_continuations``.

    Returns:
        float64 array of shape ``(len(contexts), len(continuations))``.

    Raises:
        ValueError: no continuations; or a continuation that, after some context, is not exactly
            one token: the message names it (then use :func:`loglikelihood`).
    """
    if not continuations:
        raise ValueError("no continuations to score")
    pairs = []
    for context in contexts:
        for x in continuations:
            pairs.append(encode_pair(tokenizer, context, x))
            if len(pairs[-1][1]) != 1:
                raise ValueError(f"continuation {x!r} is not a single token after context ...{context[-40:]!r}")
    scores = score_token_ids(model, pairs, batch_size=batch_size, desc=desc)
    return np.array([s.logprobs[0] for s in scores]).reshape(len(contexts), len(continuations))
