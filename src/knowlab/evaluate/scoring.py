"""Log-likelihood scoring with lm-evaluation-harness semantics.

A request is a ``(context, continuation)`` pair of strings.  As in the harness
(``HFLM._encode_pair``): trailing whitespace of the context moves to the start
of the continuation; the continuation's tokens are the tokens of
``context + continuation`` after the context's own tokens; an empty context is
replaced by the model's prefix token (BOS if the tokenizer has one, else EOS).
The model sees ``(context + continuation)[:-1]``, cut from the left to its
window, and each continuation token is scored by the log-softmax at the
position before it.

Outputs per request: summed log-likelihood (nats), number of continuation
tokens, and whether greedy (argmax) decoding reproduces every continuation
token under teacher forcing.  Requests are sorted by length (longest first)
and batched with right padding; results return in request order and do not
depend on the batch size.
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
    """The token that stands in for an empty context (harness ``prefix_token_id``)."""
    return tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id


def encode_pair(tokenizer, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """Context and continuation token ids, harness semantics (see module docstring)."""
    n_space = len(context) - len(context.rstrip())
    if n_space:
        continuation = context[-n_space:] + continuation
        context = context[:-n_space]
    if not context:
        return [prefix_token_id(tokenizer)], tokenizer(continuation, add_special_tokens=False)["input_ids"]
    whole = tokenizer(context + continuation, add_special_tokens=False)["input_ids"]
    context_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
    return whole[: len(context_ids)], whole[len(context_ids) :]


def score_token_ids(
    model,
    pairs: Sequence[tuple[list[int], list[int]]],
    batch_size: int = 8,
    max_length: int | None = None,
    desc: str = "scoring",
) -> list[TokenScores]:
    """Score continuation tokens given context tokens, one :class:`TokenScores` per pair.

    Args:
        model: a causal LM returning ``logits`` of shape (batch, length, vocab).
        pairs: ``(context_ids, continuation_ids)``; the continuation must be non-empty.
        batch_size: sequences per forward pass.
        max_length: model window; longer inputs keep their last ``max_length`` tokens.

    Raises:
        ValueError: an empty continuation.
    """
    import torch

    max_length = max_length or getattr(model.config, "max_position_embeddings", 2048)
    inputs = []
    for context_ids, continuation_ids in pairs:
        if not continuation_ids:
            raise ValueError("empty continuation: nothing to score")
        full = (list(context_ids) + list(continuation_ids))[-(max_length + 1) :]
        inputs.append((full[:-1], full[1:], len(continuation_ids)))
    order = sorted(range(len(inputs)), key=lambda i: -len(inputs[i][0]))
    results: list[TokenScores | None] = [None] * len(inputs)
    device = next(model.parameters()).device
    with torch.inference_mode():
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
                span = logits[row, starts[row] - first : len(targets) - first].float()
                target = torch.tensor(targets[starts[row] :], device=span.device)
                token_lp = span.gather(-1, target[:, None])[:, 0] - span.logsumexp(-1)
                greedy = span.argmax(-1) == target
                results[i] = TokenScores(token_lp.double().cpu().numpy(), greedy.cpu().numpy())
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
