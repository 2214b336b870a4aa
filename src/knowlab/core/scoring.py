"""Log-likelihood scoring with lm-evaluation-harness semantics: the one scoring engine.

A request is a ``(context, continuation)`` pair of strings.  As in the harness
(lm-evaluation-harness ``TemplateLM._encode_pair``, used by ``HFLM``): trailing
whitespace of the context moves to the start of the continuation; the context's
tokens are those of the context alone and the continuation's tokens are the
tokens of ``context + continuation`` after as many tokens as the context has; a
non-empty context starts with the special tokens the tokenizer adds by default
(``HFLM.tok_encode`` leaves ``add_special_tokens`` to the tokenizer: a BOS on
Llama-3 and Gemma, none on SmolLM2; :data:`BOS_POLICIES` for the other choices); an
empty context is replaced by the model's prefix token (BOS if the tokenizer has
one, else EOS).  As in ``HFLM._loglikelihood_tokens``, the model sees
``(context + continuation)[:-1]``, cut from the left to its window, and each
continuation token is scored by the log-softmax at the position before it.

Outputs per request: summed log-likelihood (nats), number of continuation
tokens, and whether greedy (argmax) decoding reproduces every continuation
token under teacher forcing.

How requests are run (:func:`score_token_ids`):

- *Shared prefix* (packing): requests whose contexts are identical (the choices of one
  question, the labels after one prompt) or share their first ``min_shared_prefix`` (default
  32) or more tokens (one excerpt under several task prompts), and that fit the window
  uncut, may be packed into one sequence, ``prefix + [r_1 + c_11[:-1] + c_12[:-1] + ...] +
  [r_2 + c_21[:-1] + ...] + ...``: ``prefix`` is the packed contexts' longest common prefix,
  ``r_u`` the rest of the u-th distinct context (empty when that context is the prefix) and
  ``c_uk`` its continuations.  The prefix is encoded once per sequence, each distinct
  context once.  Positions: ``r_u`` continues after the prefix, each block ``c_uk[:-1]``
  after its context; a block attention mask lets ``r_u`` see the prefix and itself
  causally, and ``c_uk[:-1]`` the prefix, ``r_u`` and itself causally, nothing else: every
  token sees exactly what it sees in the request's own sequence.  The context's last token
  (the last of ``r_u``, or of the prefix when ``r_u`` is empty) scores every continuation's
  first token.  A packed sequence is at most the window long (one less than a sliding
  window), so a context with many continuations may get several.
- *Which requests share a sequence*: the distinct contexts are sorted by token ids; a packed
  sequence takes a run of consecutive ones that share at least ``min_shared_prefix`` tokens
  (or a single context), and the runs are chosen by dynamic programming to minimise the
  estimated compute, ``w * (1 + w / A)`` for a sequence of ``w`` tokens, summed.  ``A`` is
  the width at which a token's attention (dense over the sequence) costs as much as its
  other layers (about 3,000 tokens for SmolLM2-135M, from FLOPs; about 2,700 measured on
  CPU; see :func:`_attention_scale`).  So a request is packed only where that is cheaper
  than running it alone; contexts that share only a short head (a system prompt) before
  long different parts get a sequence per longer prefix rather than one wide sequence; long
  continuations of one short context (documents after the prefix token) run alone.
- *Only where exact*: before a model's first packed batch, :func:`packing_is_exact` scores
  several of its packed rows (every block, a padded batch, the widest row) both ways on a
  float32 copy of its first layers and packs only if they agree within 1e-4 nats per token; a
  family whose positions come from the attention mask (ALiBi: Bloom, MPT, Falcon-ALiBi) fails
  the check and has every request scored alone, with the reason logged.
- *Per request*: every other request (a unique context, an empty one, one that the window
  cuts) runs as its own right-padded sequence, as the harness runs every request
  (re-encoding a shared context for each choice).

In both, logits are kept only from the batch's first scored position on and the
log-softmax is taken only at scored positions, as ``logit - logsumexp(logits)`` in
float32 (about 5e-7 nats from float64 per token; ``torch.log_softmax``, which the
harness uses, is about 2e-5 off).  Sequences are sorted by length (longest first)
and batched; results return in request order and do not depend on the batch size
or on which path ran them (to float rounding, ~1e-5 nats in float32).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
from tqdm.auto import tqdm

from knowlab.core.device import cut_batches, place

log = logging.getLogger(__name__)

#: nats per token within which packed and one-at-a-time scores must agree, in float32
#: (:func:`packing_is_exact`): they differ by about 1e-6 there (SmolLM2-135M: 1.1e-5 at most); a
#: wrong mask or position moves scores by far more.  The check always runs in float32, as 16-bit
#: kernels alone differ between the two paths by up to 0.34 nats (SmolLM2-135M, bfloat16, CPU)
PACKING_TOLERANCE = 1e-4

#: packed rows :func:`packing_is_exact` scores in one padded batch: the widest row of the job,
#: the one with the most requests, and others of different widths
PACKING_CHECK_ROWS = 4


@dataclass(frozen=True)
class TokenScores:
    """Per-token scores of one request's continuation: log-probabilities (nats) and greedy matches."""

    logprobs: np.ndarray  # shape (n_continuation_tokens,), float64
    greedy: np.ndarray  # shape (n_continuation_tokens,), bool


def prefix_token_id(tokenizer) -> int:
    """The token that stands in for an empty context (harness ``HFLM.prefix_token_id``)."""
    return tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id


#: how a non-empty context starts (the ``bos`` argument of :func:`encode_pair`):
#: ``tokenizer``: with the special tokens the tokenizer puts before a text by default
#: (``add_bos_token`` or its post-processor template), as lm-evaluation-harness's ``HFLM`` encodes
#: (``tok_encode`` leaves ``add_special_tokens`` to the tokenizer): ``<|begin_of_text|>`` on
#: Llama-3, ``<bos>`` on Gemma, nothing on SmolLM2 or Qwen2.5;
#: ``double``: those and one more BOS token (the FictionalQA authors' released ranker, which
#: prepends a BOS to the tokenizer's own); ``none``: no special token
BOS_POLICIES = ("tokenizer", "double", "none")


def special_prefix(tokenizer, bos: str = "tokenizer", text: str = "a") -> list[int]:
    """Token ids put before the non-empty context ``text`` under policy ``bos`` (:data:`BOS_POLICIES`).

    ``tokenizer``: the ids ``tokenizer(text)`` puts before the text's own ids (special tokens a
    tokenizer would *append* are not used: no causal LM here appends one), none where ``text``
    already starts with the BOS token's text (``HFLM.tok_encode``'s check).

    Raises:
        ValueError: an unknown policy; ``double`` for a tokenizer without a BOS token; a tokenizer
            whose ids with special tokens do not contain the ids without.
    """
    if bos not in BOS_POLICIES:
        raise ValueError(f"bos must be one of {BOS_POLICIES}, got {bos!r}")
    if bos == "none":
        return []
    prefix: list[int] = []
    bos_text = tokenizer.decode([prefix_token_id(tokenizer)]) if hasattr(tokenizer, "decode") else ""
    if not (bos_text and text.startswith(bos_text)):
        plain = tokenizer(text, add_special_tokens=False)["input_ids"]
        full = tokenizer(text, add_special_tokens=True)["input_ids"]
        start = next((i for i in range(len(full) - len(plain) + 1) if full[i : i + len(plain)] == plain), None)
        if start is None:
            raise ValueError(f"{type(tokenizer).__name__}: its ids of {text[:40]!r} with special tokens, {full}, "
                             f"do not contain those without, {plain}")  # fmt: skip
        prefix = full[:start]
    if bos == "double":
        if tokenizer.bos_token_id is None:
            raise ValueError(f"bos: double needs a BOS token; {type(tokenizer).__name__} has none")
        return [tokenizer.bos_token_id, *prefix]
    return prefix


def encode_context(tokenizer, context: str, bos: str = "tokenizer") -> list[int]:
    """A context's token ids as :func:`encode_pair` makes them: trailing whitespace removed (it
    moves to the continuation), the special tokens of policy ``bos`` before the text, and an
    empty context replaced by the prefix token (:func:`prefix_token_id`)."""
    context = context.rstrip()
    if not context:
        return [prefix_token_id(tokenizer)]
    return special_prefix(tokenizer, bos, context) + tokenizer(context, add_special_tokens=False)["input_ids"]


def encode_pair(tokenizer, context: str, continuation: str, bos: str = "tokenizer") -> tuple[list[int], list[int]]:
    """Context and continuation token ids, harness semantics (see module docstring).

    The context starts with the special tokens of policy ``bos`` (:func:`encode_context`; the
    default is the harness's).  Where a token spans the context/continuation boundary, the
    context keeps its own tokens and the continuation starts after as many tokens of the whole,
    as in the harness.  An empty context is the prefix token; where the continuation itself
    starts with that token, its first token is the context instead (harness ``loglikelihood``).
    """
    n_space = len(context) - len(context.rstrip())
    if n_space:
        continuation = context[-n_space:] + continuation
        context = context[:-n_space]
    if not context:
        continuation_ids = tokenizer(continuation, add_special_tokens=False)["input_ids"]
        if continuation_ids and continuation_ids[0] == prefix_token_id(tokenizer):
            return continuation_ids[:1], continuation_ids[1:]
        return [prefix_token_id(tokenizer)], continuation_ids
    head = special_prefix(tokenizer, bos, context)
    context_ids = head + tokenizer(context, add_special_tokens=False)["input_ids"]
    whole = head + tokenizer(context + continuation, add_special_tokens=False)["input_ids"]
    return context_ids, whole[len(context_ids) :]


def _token_scores(logits, targets: Sequence[int]) -> TokenScores:
    """Scores of ``targets`` (length n) under ``logits`` of shape (n, vocab): log-softmax in float32."""
    # deferred: torch and transformers load only in jobs that run a model (seconds and GBs)
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
    min_shared_prefix: int = 32,
) -> list[TokenScores]:
    """Score continuation tokens given context tokens, one :class:`TokenScores` per pair.

    Identical pairs are scored once (the choices MCQ-4 shares with MCQ-10).  Requests whose
    contexts are identical or share a prefix of at least ``min_shared_prefix`` tokens are packed
    into shared rows where that saves compute; the others run one sequence each (see module
    docstring; sources: lm-evaluation-harness ``HFLM._loglikelihood_tokens``).

    Args:
        model: a Hugging Face causal LM returning ``logits`` of shape (batch, length, vocab).
            Packing needs ``eager`` or ``sdpa`` attention (a custom 4D mask); with any other
            implementation every request runs alone.
        pairs: ``(context_ids, continuation_ids)``; the continuation must be non-empty.
        batch_size: sequences per forward pass (a packed sequence holds one shared prefix, its
            context remainders and their continuations).
        max_length: model window (default ``model.config.max_position_embeddings``, else
            2048); longer inputs keep their last ``max_length`` tokens.
        min_shared_prefix: fewest common leading tokens for requests with *different* contexts
            to share a sequence (below 1 counts as 1); identical contexts may share one whatever
            their length.  Whether requests do share one is decided by estimated compute.

    Logs one line per call: ``<desc>: N requests scored, T tokens through the model in S sequences (P
    packed)``, T the non-padding input tokens of every sequence run (a packed prefix once): the tokens
    ``knowlab.tooling.measured`` counts at 2N FLOPs each.

    Returns:
        one :class:`TokenScores` per pair, in order, each of length ``len(continuation_ids)``
        (fewer only if the window cut into the continuation).

    Raises:
        ValueError: an empty continuation.
    """
    # deferred: torch and transformers load only in jobs that run a model (seconds and GBs)
    import torch

    max_length = max_length or getattr(model.config, "max_position_embeddings", 2048)
    if any(not continuation_ids for _, continuation_ids in pairs):
        raise ValueError("empty continuation: nothing to score")
    distinct: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = {}
    index = [distinct.setdefault((tuple(c), tuple(x)), len(distinct)) for c, x in pairs]
    if len(distinct) < len(pairs):
        scores = score_token_ids(
            model, [(list(c), list(x)) for c, x in distinct], batch_size, max_length, desc, min_shared_prefix
        )
        return [scores[i] for i in index]
    # a packed request must see exactly what it sees alone: uncut, and inside any sliding window
    limit = max_length if getattr(model.config, "_attn_implementation", None) in ("eager", "sdpa") else 0
    if getattr(model.config, "sliding_window", None):
        limit = min(limit, model.config.sliding_window - 1)
    candidates = [
        i
        for i, (context_ids, continuation_ids) in enumerate(pairs)
        if context_ids and len(context_ids) + len(continuation_ids) - 1 <= limit
    ]
    rows = _plan_rows(pairs, candidates, limit, max(min_shared_prefix, 1), _attention_scale(model))
    if rows and not packing_is_exact(model, pairs, rows, max_length):
        rows = []
    packed = {i for _, units in rows for _, owners in units for i in owners}
    alone = [i for i in range(len(pairs)) if i not in packed]
    results: dict[int, TokenScores] = {}
    with torch.inference_mode():
        if rows:
            results.update(_score_packed(model, pairs, rows, batch_size, desc))
        scores = _score_alone(model, [pairs[i] for i in alone], batch_size, max_length, desc)
        results.update(zip(alone, scores))
    alone_inputs = {tuple((list(pairs[i][0]) + list(pairs[i][1]))[-(max_length + 1) : -1]) for i in alone}
    packed_tokens = sum(_row_width(pairs, row) for row in rows)
    log.info(
        "%s: %d requests scored, %d tokens through the model in %d sequences (%d packed)",
        desc, len(pairs), packed_tokens + sum(map(len, alone_inputs)),
        len(rows) + len(alone_inputs), len(rows),
    )  # fmt: skip
    return [results[i] for i in range(len(pairs))]


def packing_is_exact(
    model, pairs: Sequence[tuple[list[int], list[int]]], rows: Sequence[_Row], max_length: int
) -> bool:
    """Whether packed scoring gives ``model`` the log-likelihoods it gives one request at a time.

    Packing is exact only where a model takes token positions from ``position_ids`` and
    attention from the 4D mask (RoPE and learned absolute positions: Llama, Gemma, Mistral,
    Qwen, GPT-2, OPT).  A family whose positions come from the mask itself (ALiBi: Bloom, MPT,
    Falcon-ALiBi) would be mis-scored, silently or with an error; so would a model that
    mishandles a mask block or padding.  So, once per model (the verdict is kept on the model
    object), up to :data:`PACKING_CHECK_ROWS` of the job's packed rows (the widest, the one with
    the most requests, and others of different widths) are scored together in one padded batch,
    and every request in them alone: every block of a row, whatever its place, and every row
    of a padded batch is compared.  The comparison runs in float32, where the two paths agree to
    rounding, on :func:`_float32_probe` (a float32 copy of a few of the model's layers, with its
    weights: the masks and positions are the architecture's, not the depth's).
    Packing is used only if every token's log-probability agrees within
    :data:`PACKING_TOLERANCE` nats; otherwise (or if the packed forward pass fails) every request
    runs alone, and the reason is logged.
    """
    verdict = getattr(model, "_knowlab_packing_exact", None)
    if verdict is not None:
        return verdict
    chosen = [rows[r] for r in _check_rows(pairs, rows)]
    sample = [i for _, units in chosen for _, owners in units for i in owners]
    # deferred: torch and transformers load only in jobs that run a model (seconds and GBs)
    import torch

    try:
        probe, what = _float32_probe(model)
        with torch.inference_mode():
            packed = _score_packed(probe, pairs, chosen, len(chosen), "packing check")
            alone = dict(zip(sample, _score_alone(probe, [pairs[i] for i in sample], 8, max_length, "packing check")))
        difference = max(float(np.abs(packed[i].logprobs - alone[i].logprobs).max()) for i in sample)
        widest = max(_row_width(pairs, row) for row in chosen)
        verdict = difference <= PACKING_TOLERANCE
        reason = (
            f"largest difference {difference:.1e} nats per token over {len(sample)} requests in {len(chosen)} "
            f"packed rows of up to {widest} tokens, {what}"
        )
    except Exception as err:  # a model whose forward pass refuses a 4D mask or position ids
        verdict, reason = False, f"the packed forward pass failed: {type(err).__name__}: {err}"
    if verdict:
        log.info("%s: packed scoring agrees with one-at-a-time scoring (%s)", type(model).__name__, reason)
    else:
        log.warning(
            "%s: packed and one-at-a-time log-likelihoods differ (%s, tolerance %.0e): scoring every request alone",
            type(model).__name__, reason, PACKING_TOLERANCE,
        )  # fmt: skip
    model._knowlab_packing_exact = verdict
    return verdict


def _check_rows(pairs: Sequence[tuple[list[int], list[int]]], rows: Sequence[_Row]) -> list[int]:
    """Indices of the rows :func:`packing_is_exact` checks: the widest, the one with the most requests, then
    rows of widths not yet taken (so the batch is padded), up to :data:`PACKING_CHECK_ROWS`."""
    widths = [_row_width(pairs, row) for row in rows]
    n_requests = [sum(len(owners) for _, owners in units) for _, units in rows]
    chosen = list(dict.fromkeys([int(np.argmax(widths)), int(np.argmax(n_requests))]))
    for r in range(len(rows)):
        if len(chosen) >= PACKING_CHECK_ROWS:
            break
        if widths[r] not in {widths[c] for c in chosen}:
            chosen.append(r)
    return chosen


def _float32_probe(model):
    """``(model, description)`` on which :func:`packing_is_exact` compares the two paths in float32.

    A float32 model of the same class and config but only a few layers (the first of each layer
    type the config lists, e.g. Gemma-3's sliding and global layers, and at least two), with the
    model's own weights for the embeddings, the kept layers and the head, on the model's device:
    the masks and positions are the architecture's, the same in every layer, so a few layers show
    what packing does to them, at a fraction of the time (SmolLM2-135M: 2 of 30 layers) and of
    the memory of a float32 copy.  A float32 model with no more layers than that, or a model
    that is not a ``transformers`` ``PreTrainedModel`` (a wrapper whose own forward pass is what
    must be checked), is its own probe.

    Raises:
        whatever the class's construction or ``load_state_dict`` raises (the caller counts it a
        failed check).
    """
    # deferred: torch and transformers load only in jobs that run a model (seconds and GBs)
    import copy
    import re

    import torch
    from transformers import AutoModelForCausalLM, PreTrainedModel

    if not isinstance(model, PreTrainedModel):
        return model, str(model.dtype).removeprefix("torch.")
    n_layers = model.config.num_hidden_layers
    types = getattr(model.config, "layer_types", None)
    first_of_type: dict[str, int] = {}
    for i, layer_type in enumerate(types or ()):
        first_of_type.setdefault(layer_type, i)
    keep = sorted({0, min(1, n_layers - 1), *first_of_type.values()})
    if model.dtype == torch.float32 and len(keep) == n_layers:
        return model, "float32"
    config = copy.deepcopy(model.config)
    config.num_hidden_layers = len(keep)
    if types:
        config.layer_types = [types[i] for i in keep]
    probe = AutoModelForCausalLM.from_config(
        config, torch_dtype=torch.float32, attn_implementation=model.config._attn_implementation
    )
    state = {}
    for key, value in model.state_dict().items():
        match = re.search(r"\.layers\.(\d+)\.", key)
        if match:
            layer = int(match.group(1))
            if layer not in keep:
                continue
            key = key.replace(match.group(0), f".layers.{keep.index(layer)}.", 1)
        state[key] = value
    probe.load_state_dict(state, strict=False)
    device = model.get_input_embeddings().weight.device
    return probe.to(device).eval(), f"float32 copy of layers {keep} of {n_layers}"


def _attention_scale(model) -> float:
    """Row width (tokens) at which a token's attention costs as much as its other layers: about 3,000 for SmolLM2-135M.

    Per token, the layers cost about ``2 * (parameters outside the embeddings)`` FLOPs (logits
    are taken at scored positions only) and attention about ``4 * layers * heads * head_dim``
    FLOPs per visible key; a packed row attends densely over its whole width.  Measured on CPU
    (SmolLM2-135M, float32, 1 thread, a 4D mask) the time per token of a row of ``w`` tokens
    fits ``1 + w / 2700``.  Infinity (count tokens only) when the config does not say.
    """
    config = model.config
    layers, heads = getattr(config, "num_hidden_layers", None), getattr(config, "num_attention_heads", None)
    head_dim = getattr(config, "head_dim", None) or (getattr(config, "hidden_size", 0) // (heads or 1))
    if not (layers and heads and head_dim):
        return math.inf
    embeddings = {
        id(p)
        for module in (model.get_input_embeddings(), model.get_output_embeddings())
        if module is not None
        for p in module.parameters()
    }
    per_token = 2 * sum(p.numel() for p in model.parameters() if id(p) not in embeddings)
    return per_token / (4 * layers * heads * head_dim)


def _common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Number of leading tokens ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    differ = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(differ[0]) if len(differ) else n


_Unit = tuple[tuple[int, ...], list[int]]  # (context ids, indices into pairs of requests with that context)
_Row = tuple[int, list[_Unit]]  # (length of the shared prefix, the units packed after it)


def _plan_rows(
    pairs: Sequence[tuple[list[int], list[int]]],
    candidates: Sequence[int],
    limit: int,
    min_shared_prefix: int,
    attention_scale: float,
) -> list[_Row]:
    """Packed rows ``(prefix length, units)`` for the requests ``candidates`` (indices into ``pairs``).

    Requests in no row run alone.  Units: the candidates grouped by identical context, in sorted context order, each split
    into several units if context + continuation blocks exceed ``limit`` tokens.  A row packs
    a run of consecutive units whose contexts share at least ``min_shared_prefix`` tokens (a
    single unit's whole context is its prefix); its width is ``prefix + sum over units of
    (remainder + continuation blocks)`` and must be at most ``limit``.  Cost of ``w`` tokens in
    one sequence: ``w * (1 + w / attention_scale)`` (layers + dense attention).  The partition
    of the units into rows and runs alone (every request in its own sequence) of least total
    cost is found by dynamic programming over the sorted units; ties keep requests alone.  A
    row thus always holds two or more requests.  Deterministic: independent of batch size.
    """

    def cost(width: int) -> float:
        return width * (1 + width / attention_scale)

    by_context: dict[tuple[int, ...], list[int]] = {}
    for i in candidates:
        by_context.setdefault(tuple(pairs[i][0]), []).append(i)
    units: list[_Unit] = []
    for context in sorted(by_context):
        chunk: list[int] = []
        width = len(context)
        for i in by_context[context]:
            if chunk and width + len(pairs[i][1]) - 1 > limit:
                units.append((context, chunk))
                chunk, width = [], len(context)
            chunk.append(i)
            width += len(pairs[i][1]) - 1
        units.append((context, chunk))
    sizes = [len(context) + sum(len(pairs[i][1]) - 1 for i in owners) for context, owners in units]
    alone = [sum(cost(len(context) + len(pairs[i][1]) - 1) for i in owners) for context, owners in units]
    common = [_common_prefix_length(a, b) for (a, _), (b, _) in pairwise(units)]
    # best[i]: least cost of units[:i]; start[i]: first unit of the row ending with unit i - 1
    # (None: unit i - 1 runs alone)
    best, start = [0.0], [None]
    for i in range(1, len(units) + 1):
        best_i, start_i = best[i - 1] + alone[i - 1], None
        total, shared = 0, math.inf
        for j in range(i - 1, -1, -1):  # row units[j:i]; its width only grows as j falls
            total += sizes[j]
            if j < i - 1:
                shared = min(shared, common[j])
                if shared < min_shared_prefix:
                    break
            width = total - (i - 1 - j) * shared if j < i - 1 else total
            if width > limit:
                break
            if best[j] + cost(width) < best_i:
                best_i, start_i = best[j] + cost(width), j
        best.append(best_i)
        start.append(start_i)
    rows: list[_Row] = []
    i = len(units)
    while i > 0:
        j = start[i]
        if j is None:
            i -= 1
            continue
        prefix = min(common[j : i - 1]) if i - j > 1 else len(units[j][0])
        rows.append((prefix, units[j:i]))
        i = j
    return rows[::-1]


def _row_layout(
    pairs: Sequence[tuple[list[int], list[int]]], prefix: int, units: Sequence[_Unit]
) -> tuple[list[tuple[Sequence[int], int, int, int]], list[tuple[int, list[int]]]]:
    """One packed row (see :func:`_score_packed`): its segments and where each request is scored.

    Returns:
        ``(segments, scored)``: segments ``(token ids, first position id, unit, block)`` in row
        order, unit 0 block 0 the prefix, unit u >= 1 block 0 its context remainder, block
        k >= 1 its k-th continuation block; ``scored``: ``(request, row indices whose logits
        score its continuation tokens)``.
    """
    segments = [(units[0][0][:prefix], 0, 0, 0)]
    scored = []
    offset = prefix
    for u, (context, owners) in enumerate(units, start=1):
        segments.append((context[prefix:], prefix, u, 0))
        offset += len(context) - prefix
        last = offset - 1  # the context's last token: it scores every continuation's first token
        for k, i in enumerate(owners, start=1):
            block = pairs[i][1][:-1]
            segments.append((block, len(context), u, k))
            scored.append((i, [last, *range(offset, offset + len(block))]))
            offset += len(block)
    return segments, scored


def _row_width(pairs: Sequence[tuple[list[int], list[int]]], row: _Row) -> int:
    """Tokens of one packed row (:func:`_row_layout`)."""
    return sum(len(tokens) for tokens, *_ in _row_layout(pairs, *row)[0])


def _score_packed(
    model,
    pairs: Sequence[tuple[list[int], list[int]]],
    rows: Sequence[_Row],
    batch_size: int,
    desc: str,
) -> dict[int, TokenScores]:
    """Scores of the requests packed in ``rows`` (see :func:`_plan_rows`), one sequence per row.

    A row with prefix length ``p`` and units ``(context_u, requests_u)`` is
    ``context_1[:p] + [context_1[p:] + c_11[:-1] + c_12[:-1] + ...] + [context_2[p:] + ...]``.
    Positions: the prefix ``0 .. p-1``; a remainder ``context_u[p:]`` continues at ``p``; a
    continuation block ``c[:-1]`` continues at ``len(context_u)``.  Attention, a 4D additive
    mask of shape (rows, 1, width, width), causal in row order: the prefix is seen by all; a
    remainder by itself and its unit's blocks; a block by itself only; padding by no real token.
    So every token sees exactly its own request's sequence.  A continuation's first token is
    scored at its context's last token (the remainder's last, or the prefix's last when the
    remainder is empty), its others in its block.
    """
    # deferred: torch and transformers load only in jobs that run a model (seconds and GBs)
    import torch

    width_of = [_row_width(pairs, row) for row in rows]
    order = sorted(range(len(rows)), key=lambda r: -width_of[r])
    results = {}
    for batch in tqdm(
        cut_batches(order, [width_of[r] for r in order], batch_size), desc=desc, leave=False, mininterval=5
    ):
        width = width_of[batch[0]]
        ids = np.zeros((len(batch), width), dtype=np.int64)
        positions = np.zeros((len(batch), width), dtype=np.int64)
        # (unit, block) of each token: (0, 0) prefix, (u, 0) remainder of unit u, (u, k) block k
        # of unit u (u, k >= 1), (-1, -1) padding
        unit_of = np.full((len(batch), width), -1)
        block_of = np.full((len(batch), width), -1)
        scored = []  # (request, batch row, input indices whose logits score it)
        for b, r in enumerate(batch):
            segments, row_scored = _row_layout(pairs, *rows[r])
            offset = 0
            for tokens, first_position, unit, block in segments:
                end = offset + len(tokens)
                ids[b, offset:end] = tokens
                positions[b, offset:end] = np.arange(first_position, first_position + len(tokens))
                unit_of[b, offset:end], block_of[b, offset:end] = unit, block
                offset = end
            scored += [(i, b, where) for i, where in row_scored]
        unit_of, block_of = torch.from_numpy(unit_of), torch.from_numpy(block_of)
        same_unit = unit_of[:, :, None] == unit_of[:, None, :]
        same_block = block_of[:, :, None] == block_of[:, None, :]
        causal = torch.ones((width, width), dtype=torch.bool).tril()
        visible = causal & ((unit_of[:, None, :] == 0) | (same_unit & ((block_of[:, None, :] == 0) | same_block)))
        mask = torch.zeros(visible.shape, dtype=model.dtype).masked_fill(~visible, torch.finfo(model.dtype).min)
        # logits only from the earliest scored position of the batch on
        first = min(where[0] for _, _, where in scored)
        logits = model(
            input_ids=place(torch.from_numpy(ids), model),
            attention_mask=place(mask[:, None], model),
            position_ids=place(torch.from_numpy(positions), model),
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
    """Scores of each pair from its own sequence ``(context + continuation)[:-1]``, cut to the window.

    Pairs whose sequences are identical (one context's single-token continuations: SORT's labels,
    the ranker's verdicts) share one forward pass: the same sequence gives the same logits.
    """
    # deferred: torch and transformers load only in jobs that run a model (seconds and GBs)
    import torch

    sequences: dict[tuple[int, ...], list[int]] = {}  # input sequence -> the pairs it scores
    targets, n_scored = [], []
    for i, (context_ids, continuation_ids) in enumerate(pairs):
        full = (list(context_ids) + list(continuation_ids))[-(max_length + 1) :]
        sequences.setdefault(tuple(full[:-1]), []).append(i)
        targets.append(full[1:])
        n_scored.append(min(len(continuation_ids), len(full) - 1))
    inputs = list(sequences)
    order = sorted(range(len(inputs)), key=lambda u: -len(inputs[u]))
    results: list[TokenScores | None] = [None] * len(pairs)
    widths = [len(inputs[u]) for u in order]
    for batch in tqdm(cut_batches(order, widths, batch_size), desc=desc, leave=False, mininterval=5):
        width = len(inputs[batch[0]])
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, u in enumerate(batch):
            ids[row, : len(inputs[u])] = torch.tensor(inputs[u])
            mask[row, : len(inputs[u])] = 1
        # logits only from the first scored position of the batch on (logits_to_keep),
        # and log-probabilities only at scored positions: no full-vocabulary log_softmax
        first = min(len(inputs[u]) - n_scored[i] for u in batch for i in sequences[inputs[u]])
        logits = model(
            input_ids=place(ids, model), attention_mask=place(mask, model), logits_to_keep=width - first
        ).logits
        for row, u in enumerate(batch):
            end = len(inputs[u])
            for i in sequences[inputs[u]]:
                start = end - n_scored[i]
                results[i] = _token_scores(logits[row, start - first : end - first], targets[i][start:])
    return results  # type: ignore[return-value]


def loglikelihood(
    model,
    tokenizer,
    requests: Sequence[tuple[str, str]],
    batch_size: int = 8,
    desc: str = "loglikelihood",
    min_shared_prefix: int = 32,
    bos: str = "tokenizer",
) -> list[tuple[float, int, bool]]:
    """``(sum log-likelihood, n tokens, is_greedy)`` of each ``(context, continuation)`` request
    (:func:`encode_pair` with policy ``bos``, then :func:`score_token_ids`)."""
    pairs = [encode_pair(tokenizer, c, x, bos) for c, x in requests]
    scores = score_token_ids(model, pairs, batch_size=batch_size, desc=desc, min_shared_prefix=min_shared_prefix)
    return [(float(s.logprobs.sum()), len(s.logprobs), bool(s.greedy.all())) for s in scores]


def next_token_logprobs(
    model,
    tokenizer,
    contexts: Sequence[str],
    continuations: Sequence[str],
    batch_size: int = 8,
    desc: str = "next token",
    min_shared_prefix: int = 32,
) -> np.ndarray:
    """``log p(continuation | context)`` (nats) of single-token continuations, one forward pass per context.

    :func:`loglikelihood` on every ``(context, continuation)`` request, checked to be single
    tokens: the engine packs each context's requests into one sequence of just the context
    (contexts with a long common prefix may share one), so at most ``n_contexts`` sequences
    are run instead of ``n_contexts * n_continuations``.

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
    scores = score_token_ids(model, pairs, batch_size=batch_size, desc=desc, min_shared_prefix=min_shared_prefix)
    return np.array([s.logprobs[0] for s in scores]).reshape(len(contexts), len(continuations))
