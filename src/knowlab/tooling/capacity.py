"""Capacity plan of the paper-scale workflow: GPU memory, GPU-hours, storage and SLURM jobs per rule.

The plan answers "what does ``config/paper.yaml`` cost on a GPU cluster", rule by rule, summed
over the base models FictionalQA fine-tunes (``finetune.models``; Kirchenbauer et al. 2026,
Sec. 5, App. D.1), each at its shape (:data:`MODEL_SHAPES`, by Hub id: :data:`LLAMA_3_2_1B`,
:data:`LLAMA_3_2_3B`, :data:`LLAMA_3_1_8B`, :data:`GEMMA_2B`, :data:`GEMMA_2_2B`).
:data:`RULE_COSTS` holds, per rule, a cost function for its jobs of each base model (its
fine-tuning, the evaluations and probes of its checkpoints, its download), planned at that
model's shape and settings (:func:`model_plan`), and one for its jobs that run once, at the
project's base model's shape (:func:`shared_plan`); :func:`plans` gives both parts and
:func:`plan` their sum.  Fine-tuning jobs ask SLURM for what the config says per base
model (:func:`finetune_resources`), the other rules for what their kind of job gets in the config's
``cluster.resources`` (:data:`RULE_KINDS`, :func:`kind_resources`); both follow from the plan
(``tests/tooling/test_capacity.py`` checks them; ``benchmarks/capacity.py`` prints the plan).
The names the workflow expands the config with are the workflow's own, imported from where
``rules/common.smk`` takes them (:func:`knowlab.core.checkpoints.checkpoint_steps`,
:data:`knowlab.sort.runs.PARAMETRIC_RUNS`, the condition names of :mod:`knowlab.grounding.settings`,
:mod:`knowlab.sort.prompts`, :data:`knowlab.sort.build.N_BINS`).
Units: bytes, FLOPs, seconds in the functions; :class:`RuleCost` reports GiB (2**30 bytes)
and hours.  Every number comes from one of three kinds of source, named where it is used:

- **exact**: parameter counts, from ``transformers.LlamaForCausalLM`` built on the meta
  device (:func:`count_parameters`; no weights, no download); job counts, from the config the
  way ``rules/common.smk`` expands it (:func:`job_counts`, which the test compares with the
  DAG of a dry run);
- **published formulas**: model-state memory per GPU from DeepSpeed's own ZeRO estimators
  (:func:`model_state_memory`); activation memory after Korthikanti et al. 2022
  (:func:`activation_memory`); FLOPs per token after Kaplan et al. 2020 / Chowdhery et al.
  2022 (:func:`forward_flops_per_token`);
- **assumptions**, each a named field with its reason: the H100's utilisation
  (:class:`GPU`: model-FLOPs utilisation 0.35 training, 0.25 scoring, half the HBM
  bandwidth when decoding, until measured on a GPU), and the paper-scale corpus sizes
  (:class:`Corpus`: counts from the papers, token lengths measured on the shipped corpus or
  stated).

Throughput on this project's CPU is measured by ``benchmarks/capacity.py`` (not here: the
test must stay fast); it converts tokens/s into achieved FLOP/s with the same FLOP counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from knowlab.config import model_config
from knowlab.core.checkpoints import checkpoint_steps
from knowlab.fiction.release import RELEASE_EVENTS, RELEASE_QUESTIONS_PER_DOCUMENT, RELEASE_STYLES
from knowlab.grounding.kaist import KAIST_QUESTIONS
from knowlab.layout import Layout, finetune_models, training_seeds
from knowlab.grounding.settings import (
    FINETUNE_CONDITIONS,
    GroundingConditionSettings,
    condition_names,
    condition_spec,
)
from knowlab.sort.build import N_BINS
from knowlab.sort.runs import PARAMETRIC_RUNS
from knowlab.sort.prompts import DEFAULT_TEMPLATES, RAG_CONDITIONS, RAG_READINGS
from knowlab.sort.release import BOOKSORT_BOOKS

GIB = 2**30
#: bytes per value in bfloat16 (weights, activations, KV cache of a bf16 run)
BF16 = 2


# ----------------------------------------------------------------------------- model shapes


@dataclass(frozen=True)
class ModelShape:
    """A Llama-architecture decoder's shape (the ``transformers.LlamaConfig`` fields of the same names).

    The last three fields describe decoders that are Llama-shaped only approximately (Gemma):
    ``fixed_head_dim``, a head width other than ``hidden_size / num_attention_heads`` (0: that
    quotient; ``LlamaConfig.head_dim``); ``attention``, the attention implementation transformers
    trains the model with (``"sdpa"``, or ``"eager"`` for a model without SDPA support, which keeps
    its ``s x s`` scores); ``logit_softcapping``, Gemma 2's ``tanh`` caps on the attention scores
    and the output logits (:func:`layer_activation_bytes`, :func:`loss_bytes`).
    """

    name: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    max_position_embeddings: int
    fixed_head_dim: int = 0
    attention: str = "sdpa"
    logit_softcapping: bool = False

    @property
    def head_dim(self) -> int:
        return self.fixed_head_dim or self.hidden_size // self.num_attention_heads

    @property
    def attention_width(self) -> int:
        """Width of the queries (and of the attention output): heads x head width; ``hidden_size`` for Llama."""
        return self.num_attention_heads * self.head_dim

    def kv_bytes_per_token(self, bytes_per_value: int = BF16) -> int:
        """KV-cache bytes per token: keys and values of every layer (grouped-query heads)."""
        return 2 * self.num_hidden_layers * self.num_key_value_heads * self.head_dim * bytes_per_value


#: meta-llama/Llama-3.2-1B (its config.json)
LLAMA_3_2_1B = ModelShape("Llama-3.2-1B", 2048, 16, 32, 8, 8192, 128256, True, 131072)
#: meta-llama/Llama-3.2-3B (its config.json): 3,212,749,824 parameters
LLAMA_3_2_3B = ModelShape("Llama-3.2-3B", 3072, 28, 24, 8, 8192, 128256, True, 131072)
#: meta-llama/Llama-3.1-8B (its config.json)
LLAMA_3_1_8B = ModelShape("Llama-3.1-8B", 4096, 32, 32, 8, 14336, 128256, False, 131072)
#: google/gemma-2b, Gemma 1 (its config.json: head_dim 256, one KV head, tied embeddings), as a Llama
#: decoder of its widths.  Gemma's GeGLU MLP has the same three matrices as Llama's SwiGLU and its
#: RMSNorm one weight vector, so the count, 2,506,172,416, is the published one (Gemma Team 2024,
#: Table 2: 1,981,884,416 non-embedding parameters, plus 256,000 x 2,048 embeddings at the
#: config's vocabulary; the report counts 256,128 rows).  Not modelled: the embeddings' scaling by
#: sqrt(hidden) (one more ``s x h`` tensor a step) and GeLU in place of SiLU (the same FLOPs).
GEMMA_2B = ModelShape("gemma-2b", 2048, 18, 8, 1, 16384, 256000, True, 8192, fixed_head_dim=256)
#: google/gemma-2-2b, Gemma 2 (its config.json: head_dim 256, so 8 x 256 = 2,048-wide queries on a
#: 2,304-wide residual stream), as a Llama decoder of its widths: 2,614,222,080 parameters, 119,808
#: (0.005%) fewer than the published 2,614,341,888 (Gemma Team 2024b, Table 2: 2,024,517,888
#: non-embedding, plus 256,000 x 2,304 embeddings at the config's vocabulary): Gemma 2 normalises
#: each block's attention and MLP outputs too, two more 2,304-vectors a layer.  transformers trains it
#: with eager attention (``Gemma2PreTrainedModel._supports_sdpa`` is False: SDPA has no softcapping)
#: and caps attention scores and logits with ``tanh``; its sliding-window layers (4,096 tokens) are
#: planned as global (an upper bound for caches of longer sequences).
GEMMA_2_2B = ModelShape(
    "gemma-2-2b",
    2304,
    26,
    8,
    4,
    9216,
    256000,
    True,
    8192,
    fixed_head_dim=256,
    attention="eager",
    logit_softcapping=True,
)
#: HuggingFaceTB/SmolLM2-135M: the project's CPU model, measured by benchmarks/capacity.py
SMOLLM2_135M = ModelShape("SmolLM2-135M", 576, 30, 9, 3, 1536, 49152, True, 8192)

#: The shapes the plan knows, by Hub id (``model.hub.id`` and a base model's ``hub.id`` in
#: ``finetune.models``): the paper's base models (Kirchenbauer et al. 2026, Sec. 5, App. D.1).
MODEL_SHAPES: dict[str, ModelShape] = {
    "meta-llama/Llama-3.2-1B": LLAMA_3_2_1B,
    "meta-llama/Llama-3.2-3B": LLAMA_3_2_3B,
    "meta-llama/Llama-3.1-8B": LLAMA_3_1_8B,
    "google/gemma-2b": GEMMA_2B,
    "google/gemma-2-2b": GEMMA_2_2B,
}


def shape_of(cfg: Mapping[str, Any]) -> ModelShape:
    """The shape of a config's base model (its ``model`` block: for a base model of
    ``finetune.models``, :func:`knowlab.config.model_config`'s view), by its Hub id in :data:`MODEL_SHAPES`.

    Raises:
        ValueError: the model is not from the Hub, or its id has no shape here.
    """
    model = cfg["model"]
    hub_id = (model.get("hub") or {}).get("id") if model["source"] == "hub" else None
    if hub_id not in MODEL_SHAPES:
        raise ValueError(
            f"the capacity plan knows the shapes of {', '.join(MODEL_SHAPES)}, not model source "
            f"{model['source']!r} {hub_id or ''}: add its shape to knowlab.tooling.capacity.MODEL_SHAPES"
        )
    return MODEL_SHAPES[hub_id]


@dataclass(frozen=True)
class ParamCount:
    """Parameter counts of a shape (numbers of parameters, not bytes)."""

    total: int  #: every distinct parameter (tied embeddings once)
    largest_layer: int  #: the most parameters any one module holds itself (DeepSpeed's ``largest_layer_params``)
    embedding: int  #: the input embedding matrix
    matmul: int  #: parameters that multiply every token: total minus the input embedding, plus the
    #: output head when tied (a lookup costs no FLOPs, the head does)


def llama_config(shape: ModelShape):
    """The ``transformers.LlamaConfig`` of ``shape`` (nothing downloaded)."""
    # deferred: transformers loads only where parameters are counted
    from transformers import LlamaConfig

    return LlamaConfig(
        hidden_size=shape.hidden_size,
        num_hidden_layers=shape.num_hidden_layers,
        num_attention_heads=shape.num_attention_heads,
        num_key_value_heads=shape.num_key_value_heads,
        intermediate_size=shape.intermediate_size,
        vocab_size=shape.vocab_size,
        tie_word_embeddings=shape.tie_word_embeddings,
        max_position_embeddings=shape.max_position_embeddings,
        head_dim=shape.head_dim,
    )


@cache
def count_parameters(shape: ModelShape) -> ParamCount:
    """Exact parameter counts of ``shape``: ``LlamaForCausalLM`` built on the meta device (no memory, no weights).

    Shared parameters are counted once (``Module.parameters()`` yields a tied tensor once);
    DeepSpeed's own ``model_to_params`` cannot be used here, as it de-duplicates by
    ``data_ptr()``, which is 0 for every meta tensor.
    """
    # deferred: torch and transformers load only where a plan is computed (seconds)
    import torch
    from transformers import LlamaForCausalLM

    with torch.device("meta"):
        model = LlamaForCausalLM(llama_config(shape))
    total = sum(p.numel() for p in model.parameters())
    largest = max(sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules())
    embedding = model.get_input_embeddings().weight.numel()
    head = model.get_output_embeddings().weight.numel() if shape.tie_word_embeddings else 0
    return ParamCount(total=total, largest_layer=largest, embedding=embedding, matmul=total - embedding + head)


# ----------------------------------------------------------------------------- memory


def model_state_memory(
    params: ParamCount,
    zero_stage: int,
    *,
    offload_optimizer: bool = False,
    offload_parameters: bool = False,
    gpus_per_node: int = 1,
    nodes: int = 1,
    zero_init: bool = True,
    additional_buffer_factor: float = 1.5,
) -> tuple[int, int]:
    """``(bytes per GPU, bytes of CPU memory per node)`` for parameters, gradients and Adam state.

    Stages 2 and 3 are DeepSpeed's own estimators (``deepspeed.runtime.zero.stage_1_and_2.
    estimate_zero2_model_states_mem_needs`` and ``deepspeed.runtime.zero.stage3.
    estimate_zero3_model_states_mem_needs``, the functions behind the ``*_all_cold`` printers):
    16-bit parameters, 16- and 32-bit gradients, 32-bit master weights and Adam moments, sharded
    over ``gpus_per_node * nodes`` ranks, with the ``additional_buffer_factor`` they apply to CPU
    memory.  ``zero_init=True`` is stage 3 loading the model already partitioned, as
    ``knowlab.core.train`` does (transformers' ``HfDeepSpeedConfig``).  DeepSpeed has no
    estimator for stages 0 and 1: those follow the ZeRO paper (Rajbhandari et al. 2020, Sec. 3:
    mixed-precision Adam keeps 2 + 2 + 12 bytes per parameter; stage 1 shards the 12 bytes of
    optimizer state), with no CPU memory beyond the process.

    Raises:
        ValueError: ``zero_stage`` outside 0-3; parameter offload below stage 3; offload below stage 2.
    """
    if zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage}")
    if offload_parameters and zero_stage != 3:
        raise ValueError(f"parameter offload needs ZeRO stage 3, got stage {zero_stage}")
    if offload_optimizer and zero_stage < 2:
        raise ValueError(f"this plan models optimizer offload for ZeRO stages 2 and 3, got stage {zero_stage}")
    gpus = gpus_per_node * nodes
    if zero_stage == 0:
        return 16 * params.total, 0
    if zero_stage == 1:
        return 4 * params.total + math.ceil(12 * params.total / gpus), 0
    if zero_stage == 2:
        # deferred: deepspeed loads torch (seconds); only the plan's ZeRO stage needs it
        from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs

        cpu, gpu = estimate_zero2_model_states_mem_needs(
            total_params=params.total,
            num_gpus_per_node=gpus_per_node,
            num_nodes=nodes,
            cpu_offload=offload_optimizer,
            additional_buffer_factor=additional_buffer_factor,
        )
        return int(gpu), int(cpu)
    # deferred: deepspeed loads torch (seconds); only the plan's ZeRO stage needs it
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs

    cpu, gpu, _ = estimate_zero3_model_states_mem_needs(
        total_params=params.total,
        largest_layer_params=params.largest_layer,
        num_gpus_per_node=gpus_per_node,
        num_nodes=nodes,
        cpu_offload=offload_optimizer,
        cpu_offload_params=offload_parameters,
        zero_init=zero_init,
        additional_buffer_factor=additional_buffer_factor,
    )
    return int(gpu), int(cpu)


def layer_activation_bytes(shape: ModelShape, micro_batch: int, seq_len: int, attention: str | None = None) -> int:
    """Activations one decoder layer keeps for its backward pass, bf16 (bytes).

    Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
    Sec. 4.1, count ``s*b*h*(34 + 5*a*s/h)`` bytes per GPT layer: attention ``11*s*b*h +
    5*a*s^2*b``, MLP ``19*s*b*h``, two layer norms ``4*s*b*h``.  Adapted to the Llama block:
    no dropout (minus the two ``s*b*h`` masks), and the SwiGLU MLP keeps its input (``2*s*b*h``)
    and four ``s*b*I`` tensors (gate output, its SiLU, up output, their product: ``8*s*b*I``)
    in place of GeLU's ``16*s*b*h``; so ``16*s*b*h + 8*s*b*I`` bytes.  The ``5*a*s^2*b`` term
    (attention scores, softmax, its dropout) is kept only for ``attention="eager"`` (default: the
    shape's :attr:`ModelShape.attention`): the fine-tuning loads models with transformers' default
    ``sdpa`` attention, whose flash and memory-efficient kernels keep no ``s x s`` matrix; a model
    without SDPA support (Gemma 2) runs eager.  With ``logit_softcapping`` (Gemma 2's
    ``eager_attention_forward``: ``tanh(scores / cap) * cap``, then a float32 softmax) each score
    keeps 6 bytes more, the ``tanh`` output (2) that its backward reads and the float32 softmax
    output (4) in place of Korthikanti's bf16 one counted in the 5 (an upper bound: 11 bytes a score).

    Raises:
        ValueError: an unknown ``attention``.
    """
    attention = shape.attention if attention is None else attention
    if attention not in ("sdpa", "eager"):
        raise ValueError(f"attention must be 'sdpa' or 'eager', got {attention!r}")
    s, b, h = seq_len, micro_batch, shape.hidden_size
    nbytes = 16 * s * b * h + 8 * s * b * shape.intermediate_size
    if attention == "eager":
        per_score = 5 + (6 if shape.logit_softcapping else 0)
        nbytes += per_score * shape.num_attention_heads * s * s * b
    return nbytes


def loss_bytes(shape: ModelShape, tokens: int) -> int:
    """Peak memory of the output logits and the loss over ``tokens`` positions (bytes): ``14 * tokens * vocab``.

    transformers' ``ForCausalLMLoss`` (transformers/loss/loss_utils.py) upcasts the bf16 logits
    (2 bytes, kept as the model's output) to float32 and calls ``cross_entropy``, whose
    log-softmax output (4) is saved for backward; its backward adds the float32 gradient of
    that output and of the logits (4 + 4).  With a 128k vocabulary this is the largest
    activation of a Llama 3 step (Gemma's 256k: twice that).  ``logit_softcapping`` (Gemma 2's
    ``tanh(logits / cap) * cap``) keeps the bf16 ``tanh`` output too: 16 bytes a logit.
    """
    return (16 if shape.logit_softcapping else 14) * tokens * shape.vocab_size


def activation_memory(
    shape: ModelShape, micro_batch: int, seq_len: int, *, checkpointing: bool, attention: str | None = None
) -> int:
    """Activation memory of one micro-batch on one GPU, bf16, at the backward pass's peak (bytes).

    With full activation checkpointing (``finetune.gradient_checkpointing``, which recomputes
    every decoder layer) a layer keeps only its input, ``2*s*b*h`` bytes (Korthikanti et al.
    2022, Sec. 4.1, "full activation recomputation"), plus one layer's full activations while
    it is recomputed (:func:`layer_activation_bytes`); without it, every layer's.  The output
    logits and loss (:func:`loss_bytes`) come on top, in both cases.
    """
    layers = shape.num_hidden_layers
    full = layer_activation_bytes(shape, micro_batch, seq_len, attention)
    if checkpointing:
        kept = layers * 2 * seq_len * micro_batch * shape.hidden_size + full
    else:
        kept = layers * full
    return kept + loss_bytes(shape, micro_batch * seq_len)


def inference_memory(shape: ModelShape, rows: int, width: int, *, logit_positions: int, cache_tokens: int) -> int:
    """GPU memory of a forward pass without gradients (scoring, or a generation step), bf16 (bytes).

    Weights (``2 * params``), the KV cache of ``cache_tokens`` tokens
    (:meth:`ModelShape.kv_bytes_per_token`), one layer's transient activations over ``rows x
    width`` tokens (input, normed input, Q/K/V/attention output: ``4*h``; the MLP's three
    ``I``-wide tensors: ``3*I``; bf16), and the logits at ``logit_positions`` positions in bf16
    plus the float32 copy and log-sum-exp temporary that :mod:`knowlab.core.scoring` takes
    (``2 + 4 + 4`` bytes a logit).  Eager attention (:attr:`ModelShape.attention`) adds one
    layer's scores over the batch: bf16 scores, their float32 softmax and its bf16 copy, 8 bytes
    a score (``rows x heads x width^2``).
    """
    params = count_parameters(shape).total
    tokens = rows * width
    layer = tokens * (4 * shape.hidden_size + 3 * shape.intermediate_size) * BF16
    if shape.attention == "eager":
        layer += 8 * rows * shape.num_attention_heads * width * width
    return BF16 * params + cache_tokens * shape.kv_bytes_per_token() + layer + 10 * logit_positions * shape.vocab_size


# ----------------------------------------------------------------------------- FLOPs and time


def forward_flops_per_token(shape: ModelShape, context: int) -> float:
    """Forward FLOPs of one token that attends to ``context`` tokens.

    ``2 * N`` (Kaplan et al. 2020, Sec. 2.1: a multiply and an add per parameter; N =
    :attr:`ParamCount.matmul`, the parameters that multiply a token) plus the attention
    scores and weighted sum, ``4 * layers * width * context`` (Chowdhery et al. 2022, PaLM,
    App. B, per token of a ``context``-long sequence; the width is the queries',
    :attr:`ModelShape.attention_width`, the hidden size for Llama).
    """
    return 2 * count_parameters(shape).matmul + 4 * shape.num_hidden_layers * shape.attention_width * context


def training_flops_per_token(shape: ModelShape, seq_len: int, *, checkpointing: bool) -> float:
    """FLOPs executed per trained token: forward + backward = 3 forwards (``6N``), plus a
    second forward when activations are recomputed (``8N``; Korthikanti et al. 2022, Sec. 6)."""
    return (4 if checkpointing else 3) * forward_flops_per_token(shape, seq_len)


@dataclass(frozen=True)
class GPU:
    """The GPU the plan assumes, and its assumed efficiency (until measured on it).

    ``peak_flops``: NVIDIA H100 SXM datasheet, bf16 dense tensor core (989.4 TFLOP/s; 1979 is
    with 2:4 sparsity).  ``bandwidth``: its HBM3, 3.35 TB/s.  ``memory_gib``: "80 GB", which
    CUDA reports as 81,559 MiB; ``usable_fraction`` of it is planned (the rest: CUDA context,
    NCCL buffers, the caching allocator's fragmentation; ASSUMED 0.9).
    ``mfu_training`` / ``mfu_scoring``: the share of peak that the executed FLOPs reach,
    ASSUMED (0.35 is typical of DeepSpeed ZeRO-3 training with checkpointing at 1B-8B, 0.25
    of batched Hugging Face forward passes of short, padded sequences).
    ``bandwidth_efficiency``: the share of HBM bandwidth a decoding step reaches (assumed 0.5);
    ``decode_floor_per_layer_s``: the least time a decoding step takes per layer, the kernel
    launches of Hugging Face ``generate`` without CUDA graphs (assumed 0.2 ms: ~15 kernels at
    ~13 us).
    """

    name: str = "H100 SXM 80GB"
    peak_flops: float = 989e12
    bandwidth: float = 3.35e12
    memory_gib: float = 81559 / 1024
    usable_fraction: float = 0.9
    mfu_training: float = 0.35
    mfu_scoring: float = 0.25
    bandwidth_efficiency: float = 0.5
    decode_floor_per_layer_s: float = 2e-4

    @property
    def usable_memory_gib(self) -> float:
        return self.memory_gib * self.usable_fraction


H100 = GPU()


def training_seconds(
    shape: ModelShape, tokens: float, seq_len: int, gpus: int, *, checkpointing: bool, gpu: GPU = H100
) -> float:
    """Wall-clock seconds to train ``tokens`` tokens on ``gpus`` GPUs (data parallel, perfect scaling)."""
    flops = tokens * training_flops_per_token(shape, seq_len, checkpointing=checkpointing)
    return flops / (gpus * gpu.peak_flops * gpu.mfu_training)


def scoring_seconds(shape: ModelShape, tokens: float, context: int, *, gpu: GPU = H100) -> float:
    """Seconds of forward passes over ``tokens`` tokens, each attending to about ``context`` tokens, on one GPU."""
    return tokens * forward_flops_per_token(shape, context) / (gpu.peak_flops * gpu.mfu_scoring)


def generation_seconds(
    shape: ModelShape, sequences: int, rows: int, input_tokens: int, new_tokens: int, *, gpu: GPU = H100
) -> float:
    """Seconds to generate ``new_tokens`` after ``input_tokens`` for ``sequences`` prompts, ``rows`` at a time.

    Prefill: a forward pass over the prompts (:func:`scoring_seconds`).  Decoding, one step per
    new token and batch: a roofline, the longest of its FLOPs at ``mfu_scoring``, reading the
    weights and the batch's mean KV cache at ``bandwidth * bandwidth_efficiency``, and the
    launch floor ``layers * decode_floor_per_layer_s`` (decoding is bandwidth- or launch-bound:
    ``2 * N * tokens`` alone would make it look 10-100x cheaper than it is).
    """
    batches = math.ceil(sequences / rows)
    mean_context = input_tokens + new_tokens / 2
    params = count_parameters(shape).total
    step = max(
        rows * forward_flops_per_token(shape, int(mean_context)) / (gpu.peak_flops * gpu.mfu_scoring),
        (BF16 * params + rows * mean_context * shape.kv_bytes_per_token()) / (gpu.bandwidth * gpu.bandwidth_efficiency),
        shape.num_hidden_layers * gpu.decode_floor_per_layer_s,
    )
    prefill = scoring_seconds(shape, sequences * input_tokens, input_tokens, gpu=gpu)
    return prefill + batches * new_tokens * step


# ----------------------------------------------------------------------------- the paper-scale corpus


@dataclass(frozen=True)
class Corpus:
    """Sizes of the paper-scale data the rules read (counts, and tokens per item in the base model's tokenizer).

    Counts: the FictionalQA release (Kirchenbauer et al. 2026; ``n_documents``, ``n_questions``,
    ``n_fictsheets``: 100 events x 15 styled documents x about 5 questions), the KAIST
    grounding release (Lee et al. 2024: 480 questions), Book-SORT (Pink et al. 2024: 9 books; their length,
    ``book_words``, is ASSUMED at 100,000 words each).  ``answers_per_question`` (distinct
    answers of the corpus per question: 224 / 240 in the shipped corpus), ``qa_tokens`` (24.4)
    and ``tokens_per_word`` (1.61) are MEASURED on the shipped corpus with SmolLM2's tokenizer
    (benchmarks/capacity.py; Llama 3's 128k vocabulary needs fewer, so these are upper
    bounds).  ``ranker_prompt_tokens``: the App. C.6 ranker prompt, 68 SmolLM2 tokens measured,
    80 planned, the shared prefix that the scoring engine may pack not credited (an upper
    bound); ``ranker_prompt_host_bytes``: host memory of a prompt of the shard being ranked (the
    Python string, 365 bytes measured, plus its row tuple and list slots); ``ranking_row_host_bytes``:
    of a finished row (six 8-byte columns, twice while sorted, plus Arrow's copy of its strings
    when written; ASSUMED).  ``document_tokens`` and ``fictsheet_tokens`` are ASSUMED (1,024:
    the shipped CPU-demo documents average 428 and 649 tokens; the release's GPT-4o documents
    are longer), and so are ``webtext_tokens``, ``gold_context_tokens`` (a grounding item's
    gold context), ``question_tokens`` (a grounding question with its instructions),
    ``sort_prompt_overhead_tokens`` (a SORT prompt's system prompt, instructions and answer
    prefix), ``chars_per_token`` (SORT's RAG chunks are ``chunk_size`` characters) and
    ``output_chars_per_token`` (bytes of a generated response per token).  Every training
    sequence is planned at ``seq_len`` (an upper bound: a micro-batch is padded to its longest
    sequence, cut at ``seq_len``).
    """

    n_documents: int = RELEASE_EVENTS * sum(RELEASE_STYLES.values())
    n_questions: int = RELEASE_EVENTS * sum(RELEASE_STYLES.values()) * RELEASE_QUESTIONS_PER_DOCUMENT
    n_fictsheets: int = RELEASE_EVENTS
    answers_per_question: float = 224 / 240
    document_tokens: int = 1024
    fictsheet_tokens: int = 1024
    qa_tokens: int = 25
    webtext_tokens: int = 256
    ranker_prompt_tokens: int = 80
    ranker_prompt_host_bytes: int = 450
    ranking_row_host_bytes: int = 150
    kaist_questions: int = KAIST_QUESTIONS
    gold_context_tokens: int = 512
    question_tokens: int = 64
    sort_books: int = BOOKSORT_BOOKS
    book_words: int = 100_000
    tokens_per_word: float = 1.61
    chars_per_token: float = 4.0
    sort_prompt_overhead_tokens: int = 100
    output_chars_per_token: float = 4.0


PAPER_CORPUS = Corpus()

#: Python, torch, CUDA context and tokenizer of one model-running process (ASSUMED; GiB)
PROCESS_HOST_GIB = 6.0
#: bytes per row of the ranker's parquet output (question id and candidate dictionary-encoded, 3 floats, a rank)
RANKING_ROW_BYTES = 24
#: bytes per row of an item table (evaluate, SORT), compressed parquet
ITEM_ROW_BYTES = 100
#: margin of SLURM time limits over the plan's hours per job
RUNTIME_MARGIN = 1.5
#: seconds a model job spends before its first batch: interpreter, imports, CUDA and (fine-tuning)
#: process-group and DeepSpeed set-up (ASSUMED)
JOB_STARTUP_S = 120.0
#: bytes/s a job reads or writes checkpoints and training state on the cluster's shared file system (ASSUMED)
FILESYSTEM_BANDWIDTH = 1e9


def job_overhead_s(model_bytes: float, io_bytes: float = 0.0) -> float:
    """Seconds of a job outside its compute: :data:`JOB_STARTUP_S` plus loading the model's
    ``model_bytes`` and moving ``io_bytes`` (state, checkpoints) at :data:`FILESYSTEM_BANDWIDTH`."""
    return JOB_STARTUP_S + (model_bytes + io_bytes) / FILESYSTEM_BANDWIDTH


# ----------------------------------------------------------------------------- job counts


def job_counts(cfg: Mapping[str, Any]) -> dict[str, int]:
    """SLURM jobs per model-running rule of the workflow under ``cfg`` (a merged, validated config).

    Takes the names the rules expand over from :class:`knowlab.layout.Layout`, as
    ``rules/common.smk`` does (runs x checkpoints of every base model of ``finetune.models``,
    eval_models x conditions, datasets x models, the trainings and their checkpoints, a download
    per base model other than ``model``); ``tests/tooling/test_capacity.py`` checks the result
    against the DAG of ``snakemake -n``.  Rules that are not listed run on the submit host
    (``localrule: True``) or are CPU steps of seconds.
    """
    plan = Layout(cfg)
    models = len(plan.eval_models)
    checkpoints = plan.checkpoints
    trainings = plan.trainings
    rag = bool(set(RAG_CONDITIONS) & set(plan.sort_conditions))
    datasets = len(plan.grounding_datasets)
    counts = {
        "base_model": 1,
        "finetune_base_model": sum(spec != "base" for spec in finetune_models(cfg).values()),
        "eval_model": sum(spec != "base" for spec in cfg["eval_models"].values()),
        "finetune": sum(len(ckpts) - 1 for ckpts in trainings.values()),
        "finetune_last": len(trainings),
        "fictionalqa_evaluate": checkpoints,
        "fictionalqa_rank_distractors": int(cfg["mcq"]["distractors"] == "model_ranked"),
        "sort_prompt": models,
        "sort_rag_prompt": models if rag else 0,
        "sort_evaluate_base": models * len(plan.sort_conditions),
        "sort_fiction_evaluate": plan.probe_checkpoints if plan.fiction_runs else 0,
        "sort_parametric_evaluate": 1 + len(plan.parametric_runs) * plan.sort_epochs if plan.sort_epochs else 0,
        "grounding_generate": datasets * models,
        "grounding_score": datasets * models,
        "grounding_checkpoint_generate": plan.probe_checkpoints if plan.grounding_finetune else 0,
        "grounding_checkpoint_score": plan.probe_checkpoints if plan.grounding_finetune else 0,
    }
    return {rule: n for rule, n in counts.items() if n}


# ----------------------------------------------------------------------------- the plan


@dataclass
class RuleCost:
    """The plan of one rule (or one recipe of the ``finetune`` rules) for one base model.

    ``gpu_mem_gib``: per GPU at the job's peak (0 for CPU jobs); ``host_mem_gib``: per job (per
    node for multi-GPU jobs); ``hours_per_job``: wall clock of the longest job;
    ``gpu_hours``: all jobs together; ``storage_gib``: what the rule's outputs keep on disk;
    ``temp_gib``: temporary outputs at their peak (fine-tuning state); ``slurm_rules``: the rules whose
    SLURM request the row bounds (:func:`required_resources`).
    """

    rule: str
    jobs: int
    gpus_per_job: int
    gpu_mem_gib: float
    host_mem_gib: float
    hours_per_job: float
    gpu_hours: float
    storage_gib: float
    temp_gib: float = 0.0
    note: str = ""
    slurm_rules: tuple[str, ...] = field(default=())


def _gib(nbytes: float) -> float:
    return nbytes / GIB


def combine(parts: Sequence[RuleCost], note: str | None = None) -> RuleCost:
    """One row for jobs of the same rule (different models or conditions): jobs, GPU-hours and storage
    add up; GPUs, GPU and host memory and hours per job are the largest (the SLURM request covers every
    job); the note is ``note``, else the first part's."""
    first = parts[0]
    return RuleCost(
        rule=first.rule,
        jobs=sum(p.jobs for p in parts),
        gpus_per_job=max(p.gpus_per_job for p in parts),
        gpu_mem_gib=max(p.gpu_mem_gib for p in parts),
        host_mem_gib=max(p.host_mem_gib for p in parts),
        hours_per_job=max(p.hours_per_job for p in parts),
        gpu_hours=sum(p.gpu_hours for p in parts),
        storage_gib=sum(p.storage_gib for p in parts),
        temp_gib=sum(p.temp_gib for p in parts),
        note=first.note if note is None else note,
        slurm_rules=first.slurm_rules,
    )


@dataclass(frozen=True)
class PlanInputs:
    """What every rule's cost function (:data:`RULE_COSTS`) reads.

    ``cfg``: the merged, validated config, or for a base model of ``finetune.models`` its view
    (:func:`knowlab.config.model_config`); ``shape``: that base model's (:func:`shape_of`);
    ``counts``: :func:`job_counts` of ``cfg`` (of the one base model: :func:`model_job_counts`);
    ``corpus`` and ``gpu``: the plan's sizes and assumptions; ``eval_model_shape``: the shape of
    every model of ``eval_models`` other than the base model.
    """

    cfg: Mapping[str, Any]
    shape: ModelShape
    counts: Mapping[str, int]
    corpus: Corpus
    gpu: GPU
    eval_model_shape: ModelShape

    @property
    def compute(self) -> Mapping[str, Any]:
        """The ``compute`` section (``max_batch_tokens`` caps a batch's tokens)."""
        return self.cfg.get("compute", {})

    @property
    def other_models(self) -> int:
        """Models of ``eval_models`` other than the base model (each planned at ``eval_model_shape``)."""
        return sum(spec != "base" for spec in self.cfg["eval_models"].values())


def _scoring(
    p: PlanInputs,
    rule: str,
    jobs: int,
    tokens: float,
    context: int,
    rows: int,
    width: int,
    logit_positions: int,
    host_extra: float = 0.0,
    storage: float = 0.0,
    note: str = "",
    model: ModelShape | None = None,
) -> RuleCost:
    """``jobs`` jobs of a rule that scores ``tokens`` tokens with forward passes, each attending to about
    ``context`` tokens (:func:`scoring_seconds`, plus :func:`job_overhead_s`), at batches of ``rows x
    width`` tokens and ``logit_positions`` logits (:func:`inference_memory`), the rows cut to fit
    ``compute.max_batch_tokens`` as the scoring engine cuts them; ``model`` defaults to the base model."""
    model = p.shape if model is None else model
    budget = p.compute.get("max_batch_tokens")
    if budget:
        rows = max(1, min(rows, budget // max(width, 1)))
        logit_positions = min(logit_positions, rows * width)
    seconds = scoring_seconds(model, tokens, context, gpu=p.gpu)
    hours = (seconds + job_overhead_s(BF16 * count_parameters(model).total)) / 3600
    mem = inference_memory(model, rows, width, logit_positions=logit_positions, cache_tokens=rows * width)
    return RuleCost(
        rule,
        jobs,
        1,
        _gib(mem),
        PROCESS_HOST_GIB + _gib(host_extra),
        hours,
        hours * jobs,
        _gib(storage),
        note=note,
        slurm_rules=(rule,),
    )


# ---- fine-tuning


@dataclass(frozen=True)
class _Training:
    """What every fine-tuning job shares under the ``finetune`` section's ZeRO and launch settings."""

    gpus: int  #: GPUs a job: nodes x processes per node
    checkpointing: bool  #: finetune.gradient_checkpointing
    state_gpu: int  #: parameters, gradients and Adam state per GPU (:func:`model_state_memory`)
    host_node: float  #: host memory per node (bytes)
    state_bytes: int  #: the training state a job saves for the next one (bytes)
    overhead_s: float  #: a job's start-up and I/O (:func:`job_overhead_s`)


def _training(p: PlanInputs) -> _Training:
    ft = p.cfg["finetune"]
    params = count_parameters(p.shape)
    n = params.total
    dist = ft["distributed"]
    state_gpu, state_cpu = model_state_memory(
        params,
        ft["zero_stage"],
        offload_optimizer=ft["offload"]["optimizer"],
        offload_parameters=ft["offload"]["parameters"],
        gpus_per_node=dist["processes_per_node"],
        nodes=dist["nodes"],
    )
    # DeepSpeed state of one interval: fp32 master weights and Adam moments (12 bytes/param) + bf16 weights (2)
    state_bytes = 14 * n
    # per node: DeepSpeed's CPU estimate (per node), the bf16 weights that rank 0 gathers to save the
    # checkpoint under ZeRO-3 (node 0), and every process's own runtime
    host_node = (
        state_cpu + (BF16 * n if ft["zero_stage"] == 3 else 0) + dist["processes_per_node"] * PROCESS_HOST_GIB * GIB
    )
    # each interval loads the base model and the previous state, and saves its checkpoint and its state
    overhead = job_overhead_s(BF16 * n, 2 * state_bytes + BF16 * n)
    return _Training(
        gpus=dist["nodes"] * dist["processes_per_node"],
        checkpointing=bool(ft["gradient_checkpointing"]),
        state_gpu=state_gpu,
        host_node=host_node,
        state_bytes=state_bytes,
        overhead_s=overhead,
    )


def _finetune_fictionalqa(p: PlanInputs, t: _Training) -> RuleCost:
    """One job per checkpoint interval of every FictionalQA run and the control, once per training seed
    (``finetune.seeds``): ``checkpoint_every x global_batch_size x seq_len`` tokens each."""
    ft = p.cfg["finetune"]
    n = count_parameters(p.shape).total
    seeds = len(training_seeds(p.cfg))
    fiction_runs = (len(ft["runs"]) + bool(ft["control"])) * seeds
    intervals = len(checkpoint_steps(ft["max_steps"], ft["checkpoint_every"])) - 1
    interval_tokens = ft["checkpoint_every"] * ft["global_batch_size"] * ft["seq_len"]
    seconds = training_seconds(
        p.shape, interval_tokens, ft["seq_len"], t.gpus, checkpointing=t.checkpointing, gpu=p.gpu
    )
    hours = (seconds + t.overhead_s) / 3600
    return RuleCost(
        rule="finetune (FictionalQA interval)",
        jobs=fiction_runs * intervals,
        gpus_per_job=t.gpus,
        gpu_mem_gib=_gib(
            t.state_gpu
            + activation_memory(p.shape, ft["micro_batch_size"], ft["seq_len"], checkpointing=t.checkpointing)
        ),
        host_mem_gib=_gib(t.host_node),
        hours_per_job=hours,
        gpu_hours=hours * t.gpus * fiction_runs * intervals,
        storage_gib=_gib(BF16 * n * fiction_runs * intervals),
        temp_gib=_gib(t.state_bytes * 2 * fiction_runs),
        note=f"{ft['checkpoint_every']} steps x {ft['global_batch_size']} x {ft['seq_len']} tokens per job"
        + (f"; {seeds} training seeds" if seeds > 1 else ""),
        slurm_rules=("finetune", "finetune_last"),
    )


def _finetune_parametric(p: PlanInputs, t: _Training) -> RuleCost:
    """One job per epoch of every SORT parametric run: the books' ``chunk_words`` chunks and the
    instruction conversations, at ``sort.parametric.finetune`` merged over ``finetune``."""
    sort, corpus = p.cfg["sort"], p.corpus
    n = count_parameters(p.shape).total
    pft = {**p.cfg["finetune"], **sort["parametric"]["finetune"]}
    epochs = sort["parametric"]["epochs"]
    chunks = math.ceil(corpus.sort_books * corpus.book_words / sort["parametric"]["chunk_words"])
    sequences = chunks + sort["parametric"]["instructions"]["n"]
    steps = math.ceil(sequences / pft["global_batch_size"])
    epoch_tokens = steps * pft["global_batch_size"] * pft["seq_len"]
    seconds = training_seconds(p.shape, epoch_tokens, pft["seq_len"], t.gpus, checkpointing=t.checkpointing, gpu=p.gpu)
    hours = (seconds + t.overhead_s) / 3600
    jobs = len(PARAMETRIC_RUNS) * epochs
    return RuleCost(
        rule="finetune (SORT parametric epoch)",
        jobs=jobs,
        gpus_per_job=t.gpus,
        gpu_mem_gib=_gib(
            t.state_gpu
            + activation_memory(p.shape, pft["micro_batch_size"], pft["seq_len"], checkpointing=t.checkpointing)
        ),
        host_mem_gib=_gib(t.host_node),
        hours_per_job=hours,
        gpu_hours=hours * t.gpus * jobs,
        storage_gib=_gib(BF16 * n * jobs),
        temp_gib=_gib(t.state_bytes * 2 * len(PARAMETRIC_RUNS)),
        note=f"{steps} steps x {pft['global_batch_size']} x {pft['seq_len']} tokens per epoch ({chunks} book chunks)",
        slurm_rules=("finetune", "finetune_last"),
    )


def finetune_cost(p: PlanInputs) -> list[RuleCost]:
    """Rules ``finetune`` and ``finetune_last`` (rules/models.smk: ``knowlab.finetune_job``, which runs
    ``knowlab.core.train`` under DeepSpeed) on one base model of ``finetune.models``: its FictionalQA
    runs, by checkpoint interval, at its own ``finetune`` settings (:func:`knowlab.config.model_config`).

    GPU memory: DeepSpeed's ZeRO estimate of the model state (:func:`model_state_memory`) plus the
    activations of one micro-batch (:func:`activation_memory`, Korthikanti et al. 2022); time: the
    trained tokens' FLOPs at ``mfu_training`` (:func:`training_seconds`) plus loading the model and
    moving the training state (:func:`job_overhead_s`); storage: a bf16 checkpoint per job, and two
    training states per run kept temporarily.
    """
    return [_finetune_fictionalqa(p, _training(p))]


def finetune_parametric_cost(p: PlanInputs) -> list[RuleCost]:
    """Rules ``finetune`` and ``finetune_last`` for SORT's parametric runs (when ``sort.parametric.enabled``),
    by epoch, on the project's base model (``model``) at the top-level ``finetune`` settings; as
    :func:`finetune_cost`."""
    if not p.cfg["sort"]["parametric"]["enabled"]:
        return []
    return [_finetune_parametric(p, _training(p))]


# ---- FictionalQA


def fictionalqa_rank_distractors_cost(p: PlanInputs) -> list[RuleCost]:
    """Rule ``fictionalqa_rank_distractors`` (rules/fictionalqa.smk: scripts/fictionalqa_rank_distractors.py,
    the ranker of ``knowlab.fictionalqa.corpus.mcq``), when ``mcq.distractors`` is ``model_ranked``: the
    base model scores one prompt of ``ranker_prompt_tokens`` per question and candidate answer (every answer of the
    corpus, or ``mcq.ranker.max_candidates``), ``mcq.ranker.batch_size`` at a time.

    Host memory: one shard's prompts (``mcq.ranker.shard_questions``) and every finished row until
    written; storage: :data:`RANKING_ROW_BYTES` a ranked row.
    """
    if not p.counts.get("fictionalqa_rank_distractors"):
        return []
    cfg, corpus = p.cfg, p.corpus
    n_answers = round(corpus.n_questions * corpus.answers_per_question)
    ranker_max = cfg["mcq"]["ranker"]["max_candidates"]
    prompts = corpus.n_questions * (n_answers if ranker_max is None else min(ranker_max, n_answers))
    rb = cfg["mcq"]["ranker"]["batch_size"]
    # one shard's prompts at a time (mcq.ranker.shard_questions), every finished row until written
    shard = min(cfg["mcq"]["ranker"].get("shard_questions", 64), corpus.n_questions) * prompts / corpus.n_questions
    host = shard * corpus.ranker_prompt_host_bytes + prompts * corpus.ranking_row_host_bytes
    return [
        _scoring(
            p,
            "fictionalqa_rank_distractors",
            1,
            prompts * corpus.ranker_prompt_tokens,
            corpus.ranker_prompt_tokens,
            rb,
            corpus.ranker_prompt_tokens,
            rb,
            host_extra=host,
            storage=prompts * RANKING_ROW_BYTES,
            note=f"{prompts:,} prompts of {corpus.ranker_prompt_tokens} tokens",
        )
    ]


def fictionalqa_evaluate_cost(p: PlanInputs) -> list[RuleCost]:
    """Rule ``fictionalqa_evaluate`` (rules/fictionalqa.smk: scripts/fictionalqa_evaluate.py), one job per
    checkpoint (the base model once): the losses of the fiction documents, fictsheets, held-out webtext,
    fiction and real Q&A, and every choice of every multiple-choice suite, ``evaluate.batch_size`` rows of
    the longest document at a time; storage: :data:`ITEM_ROW_BYTES` an item row."""
    cfg, corpus = p.cfg, p.corpus
    choices = sum(cfg["mcq"]["n_choices"])
    eval_tokens = (
        corpus.n_documents * corpus.document_tokens
        + corpus.n_fictsheets * corpus.fictsheet_tokens
        + cfg["webtext"]["heldout_size"] * corpus.webtext_tokens
        + (corpus.n_questions + cfg["real_qa"]["triviaqa"]["n"]) * corpus.qa_tokens
        + corpus.n_questions * choices * corpus.qa_tokens
    )
    eb = cfg["evaluate"]["batch_size"]
    width = max(corpus.document_tokens, corpus.fictsheet_tokens)
    eval_rows = corpus.n_documents + corpus.n_fictsheets + corpus.n_questions * (2 + len(cfg["mcq"]["n_choices"]))
    return [
        _scoring(
            p,
            "fictionalqa_evaluate",
            p.counts["fictionalqa_evaluate"],
            eval_tokens,
            corpus.document_tokens,
            eb,
            width,
            eb * width,
            storage=p.counts["fictionalqa_evaluate"] * eval_rows * ITEM_ROW_BYTES,
            note=f"{eval_tokens / 1e6:.1f}M tokens per checkpoint",
        )
    ]


# ---- SORT


def _sort_counts(sort: Mapping[str, Any], corpus: Corpus) -> tuple[int, int]:
    """(validation items, test items) of Book-SORT under ``sort``: books x excerpt lengths x segment lengths
    x the distance bins of :data:`knowlab.sort.build.N_BINS`, ``n_validation`` and the rest of ``n_excerpts``."""
    books = {"gutenberg": len(sort["gutenberg"]["ids"]), "shakespeare": len(sort["shakespeare"]["texts"])}.get(
        sort["source"], corpus.sort_books
    )
    cells = books * len(sort["excerpt_lengths"]) * len(sort["segment_lengths"]) * N_BINS
    return cells * sort["n_validation"], cells * (sort["n_excerpts"] - sort["n_validation"])


def _sort_prompt_tokens(sort: Mapping[str, Any], condition: str, corpus: Corpus, excerpt: int | None = None) -> int:
    """Tokens of a SORT prompt: overhead, two segments, and the condition's context (longest excerpt by default)."""
    tokens = corpus.sort_prompt_overhead_tokens + 2 * max(sort["segment_lengths"]) * corpus.tokens_per_word
    if condition == "in_context":
        tokens += (excerpt or max(sort["excerpt_lengths"])) * corpus.tokens_per_word
    elif condition in RAG_CONDITIONS:
        tokens += sort["rag"]["k"] * sort["rag"]["chunk_size"] / corpus.chars_per_token
    return int(tokens)


def _mean_sort_tokens(sort: Mapping[str, Any], condition: str, corpus: Corpus) -> float:
    lengths = sort["excerpt_lengths"]
    return sum(_sort_prompt_tokens(sort, condition, corpus, e) for e in lengths) / len(lengths)


def _sort_per_model(
    p: PlanInputs,
    rule: str,
    jobs_per_model: int,
    tokens: float,
    context: int,
    width: int,
    note: str,
    storage_per_job: float = 0.0,
) -> list[RuleCost]:
    """The jobs of a SORT rule over ``eval_models``: the base model's (at ``shape``) and every other
    model's (at ``eval_model_shape``), ``sort.batch_size`` prompts a batch."""
    sb = p.cfg["sort"]["batch_size"]
    parts = [
        _scoring(
            p, rule, jobs_per_model, tokens, context, sb, width, sb, note=note, storage=storage_per_job * jobs_per_model
        )
    ]
    if p.other_models:
        parts.append(
            _scoring(
                p,
                rule,
                jobs_per_model * p.other_models,
                tokens,
                context,
                sb,
                width,
                sb,
                note=note,
                storage=storage_per_job * jobs_per_model * p.other_models,
                model=p.eval_model_shape,
            )
        )
    return parts


def sort_prompt_cost(p: PlanInputs) -> list[RuleCost]:
    """Rule ``sort_prompt`` (rules/sort.smk: scripts/sort_prompt.py), one job per model of ``eval_models``:
    every prompt template (``sort.templates``, or the 12 of :data:`knowlab.sort.prompts.DEFAULT_TEMPLATES`)
    on every validation item, in context; each prompt up to the longest excerpt."""
    sort, corpus = p.cfg["sort"], p.corpus
    validation, _ = _sort_counts(sort, corpus)
    templates = len(sort["templates"] or DEFAULT_TEMPLATES)
    in_context = _mean_sort_tokens(sort, "in_context", corpus)
    longest = _sort_prompt_tokens(sort, "in_context", corpus)
    note = f"{templates} templates x {validation:,} validation items, in context"
    return [combine(_sort_per_model(p, "sort_prompt", 1, templates * validation * in_context, longest, longest, note))]


def sort_rag_prompt_cost(p: PlanInputs) -> list[RuleCost]:
    """Rule ``sort_rag_prompt`` (rules/sort.smk: scripts/sort_rag_prompt.py), one job per model of
    ``eval_models`` when a RAG condition (:data:`knowlab.sort.prompts.RAG_CONDITIONS`) is run: every RAG
    reading instruction (``sort.rag_readings``, or the 10 of :data:`knowlab.sort.prompts.RAG_READINGS`)
    on every validation item, with ``sort.rag.k`` retrieved chunks."""
    if not p.counts.get("sort_rag_prompt"):
        return []
    sort, corpus = p.cfg["sort"], p.corpus
    validation, _ = _sort_counts(sort, corpus)
    readings = len(sort.get("rag_readings") or RAG_READINGS)
    rag_tokens = _sort_prompt_tokens(sort, "rag", corpus)
    note = f"{readings} RAG readings x {validation:,} validation items"
    return [
        combine(
            _sort_per_model(p, "sort_rag_prompt", 1, readings * validation * rag_tokens, rag_tokens, rag_tokens, note)
        )
    ]


def sort_evaluate_base_cost(p: PlanInputs) -> list[RuleCost]:
    """Rule ``sort_evaluate_base`` (rules/sort.smk: scripts/sort_evaluate.py), one job per model of
    ``eval_models`` and condition of ``sort.conditions``: every test item under the condition's context;
    storage: :data:`ITEM_ROW_BYTES` an item row."""
    sort, corpus = p.cfg["sort"], p.corpus
    _, test = _sort_counts(sort, corpus)
    parts = []
    for condition in sort["conditions"]:
        width = _sort_prompt_tokens(sort, condition, corpus)
        parts += _sort_per_model(
            p,
            "sort_evaluate_base",
            1,
            test * _mean_sort_tokens(sort, condition, corpus),
            width,
            width,
            f"{test:,} test items x {len(sort['conditions'])} conditions",
            storage_per_job=test * ITEM_ROW_BYTES,
        )
    return [combine(parts)]


def sort_fiction_evaluate_cost(p: PlanInputs) -> list[RuleCost]:
    """Rule ``sort_fiction_evaluate`` (rules/sort.smk: scripts/sort_evaluate.py on the FictionalQA
    documents), one job per checkpoint: SORT items of the fiction documents (``sort.fiction``: documents
    x excerpt lengths x segment lengths x :data:`knowlab.sort.build.N_BINS` x ``n_excerpts``), without
    context."""
    if not p.counts.get("sort_fiction_evaluate"):
        return []
    sort, corpus = p.cfg["sort"], p.corpus
    sb = sort["batch_size"]
    fsort = sort["fiction"]
    documents = (
        corpus.n_documents if fsort["max_documents"] is None else min(fsort["max_documents"], corpus.n_documents)
    )
    items = documents * len(fsort["excerpt_lengths"]) * len(fsort["segment_lengths"]) * N_BINS * fsort["n_excerpts"]
    tokens = int(corpus.sort_prompt_overhead_tokens + 2 * max(fsort["segment_lengths"]) * corpus.tokens_per_word)
    jobs = p.counts["sort_fiction_evaluate"]
    return [
        _scoring(
            p,
            "sort_fiction_evaluate",
            jobs,
            items * tokens,
            tokens,
            sb,
            tokens,
            sb,
            storage=jobs * items * ITEM_ROW_BYTES,
            note=f"{items:,} items without context per checkpoint",
        )
    ]


def sort_parametric_evaluate_cost(p: PlanInputs) -> list[RuleCost]:
    """Rule ``sort_parametric_evaluate`` (rules/sort.smk: scripts/sort_parametric_evaluate.py), one job per
    epoch of every parametric run (:data:`knowlab.sort.runs.PARAMETRIC_RUNS`) and the base model: the
    test items without context and the perplexity of their segments, and after the last epoch in context."""
    if not p.counts.get("sort_parametric_evaluate"):
        return []
    sort, corpus = p.cfg["sort"], p.corpus
    _, test = _sort_counts(sort, corpus)
    in_context = _mean_sort_tokens(sort, "in_context", corpus)
    longest = _sort_prompt_tokens(sort, "in_context", corpus)
    baseline = _sort_prompt_tokens(sort, "baseline", corpus)
    segment = int(max(sort["segment_lengths"]) * corpus.tokens_per_word)
    tokens = test * (baseline + 2 * segment + in_context)  # the last epoch adds in context
    jobs = p.counts["sort_parametric_evaluate"]
    sb = sort["batch_size"]
    return [
        _scoring(
            p,
            "sort_parametric_evaluate",
            jobs,
            tokens,
            longest,
            sb,
            longest,
            sb,
            storage=jobs * 3 * test * ITEM_ROW_BYTES,
            note="no context and segment perplexity per epoch, in context after the last",
        )
    ]


# ---- grounding


def _condition_tokens(condition: str, budget: int | None, position: str | None, corpus: Corpus) -> int:
    """Input tokens of a grounding prompt under ``condition``, as
    :func:`knowlab.grounding.settings.condition_spec` reads it with the ``*_dist`` ``budget`` and
    ``position``: the question alone, with its gold contexts, or with gold contexts and distractors
    packed to the condition's budget."""
    spec = condition_spec(condition, budget, position)
    if spec["version"] is None:
        return corpus.question_tokens
    if spec["budget"] is None:
        return corpus.gold_context_tokens + corpus.question_tokens
    return spec["budget"] + corpus.question_tokens


def _grounding_inputs(cfg: Mapping[str, Any], corpus: Corpus) -> list[int]:
    """Input tokens of a grounding prompt under each condition the config asks for
    (:func:`knowlab.grounding.settings.condition_names` of
    :class:`knowlab.grounding.settings.GroundingConditionSettings`), capped at
    ``grounding.generation.max_input_tokens``."""
    settings = GroundingConditionSettings.from_config(cfg)
    cap = cfg["grounding"]["generation"]["max_input_tokens"]
    return [
        min(_condition_tokens(c, settings.budget, settings.position, corpus), cap) for c in condition_names(settings)
    ]


def _generation(p: PlanInputs, items: int, inputs: Sequence[int], model: ModelShape) -> tuple[float, float]:
    """(seconds, peak GPU bytes) of one job generating ``items`` x ``inputs`` responses
    (:func:`generation_seconds`, :func:`inference_memory`).

    A batch holds ``generation.batch_size`` prompts and, when ``compute.max_batch_tokens`` is
    set, at most that many tokens counting every row as prompt + ``max_new_tokens``
    (knowlab.core.llm.local)."""
    gen = p.cfg["grounding"]["generation"]
    gb, new = gen["batch_size"], gen["max_new_tokens"]
    budget = p.compute.get("max_batch_tokens")

    def rows(i: int) -> int:
        return max(1, min(gb, budget // (i + new))) if budget else gb

    seconds = sum(generation_seconds(model, items, rows(i), i, new, gpu=p.gpu) for i in inputs)
    seconds += job_overhead_s(BF16 * count_parameters(model).total)
    mem = max(
        inference_memory(model, rows(i), i, logit_positions=rows(i), cache_tokens=rows(i) * (i + new)) for i in inputs
    )
    return seconds, mem


def _grounding_datasets(corpus: Corpus) -> dict[str, int]:
    """Questions of each grounding dataset: the KAIST release's and the fiction set's (one per FictionalQA question)."""
    return {"kaist": corpus.kaist_questions, "fiction": corpus.n_questions}


def _grounding_jobs(p: PlanInputs) -> list[tuple[int, ModelShape]]:
    """(questions, model shape) of every grounding job: ``grounding.datasets`` x ``eval_models``, each dataset
    cut to ``grounding.max_items``."""
    grounding = p.cfg["grounding"]
    datasets = _grounding_datasets(p.corpus)
    max_items = grounding["max_items"]
    jobs = []
    for dataset in grounding["datasets"]:
        items = datasets[dataset] if max_items is None else min(max_items, datasets[dataset])
        for spec in p.cfg["eval_models"].values():
            jobs.append((items, p.shape if spec == "base" else p.eval_model_shape))
    return jobs


def grounding_generate_cost(p: PlanInputs) -> list[RuleCost]:
    """Rule ``grounding_generate`` (rules/grounding.smk: scripts/grounding_generate.py, backend
    ``transformers``), one job per dataset and model of ``eval_models``: a response of up to
    ``generation.max_new_tokens`` to every question under every condition (:func:`_grounding_inputs`),
    prefill and decoding as :func:`generation_seconds`; storage: the responses' text."""
    grounding, corpus = p.cfg["grounding"], p.corpus
    new = grounding["generation"]["max_new_tokens"]
    conditions = _grounding_inputs(p.cfg, corpus)
    datasets = _grounding_datasets(corpus)
    models = list(p.cfg["eval_models"].values())
    jobs = [(items, *_generation(p, items, conditions, model)) for items, model in _grounding_jobs(p)]
    responses = sum(items for items, _, _ in jobs) * len(conditions)
    response_bytes = new * corpus.output_chars_per_token
    return [
        RuleCost(
            "grounding_generate",
            len(jobs),
            1,
            _gib(max(m for _, _, m in jobs)),
            PROCESS_HOST_GIB,
            max(s for _, s, _ in jobs) / 3600,
            sum(s for _, s, _ in jobs) / 3600,
            _gib(responses * response_bytes),
            note=f"{' + '.join(f'{datasets[d]:,}' for d in grounding['datasets'])} questions x "
            f"{len(conditions)} conditions x "
            f"{len(models)} models, up to {max(conditions)} + {new} tokens",
            slurm_rules=("grounding_generate",),
        )
    ]


#: cross-encoder/ms-marco-MiniLM-L-12-v2: parameters and window (the grounding evaluator; grounding_score)
CROSS_ENCODER_PARAMS, CROSS_ENCODER_WINDOW = 33_400_000, 512


def _grounding_score(
    rule: str, jobs: int, responses_per_job: int, responses: int, new_tokens: int, gpu: GPU
) -> RuleCost:
    """Atomic facts (pysbd sentences, ~25 tokens) of responses and gold facts, each scored by the cross-encoder
    against every 512-token passage of the other side (knowlab.grounding.evaluator): about
    ``facts x passages`` pairs of 512 tokens, ``2 * 33M`` FLOPs a token, at ``mfu_scoring``."""
    facts = new_tokens / 25 + 20
    passages = math.ceil(new_tokens / CROSS_ENCODER_WINDOW) + 2
    flops_per_response = facts * passages * CROSS_ENCODER_WINDOW * 2 * CROSS_ENCODER_PARAMS
    seconds = responses_per_job * flops_per_response / (gpu.peak_flops * gpu.mfu_scoring) + JOB_STARTUP_S
    total = responses * flops_per_response / (gpu.peak_flops * gpu.mfu_scoring) + jobs * JOB_STARTUP_S
    # GPU memory ASSUMED: a 33M-parameter model and batches of 512-token pairs take well under 2 GiB
    return RuleCost(
        rule,
        jobs,
        1,
        2.0,
        PROCESS_HOST_GIB,
        seconds / 3600,
        total / 3600,
        _gib(responses * facts * 64),
        note="cross-encoder on fact x passage pairs",
        slurm_rules=(rule,),
    )


def grounding_score_cost(p: PlanInputs) -> list[RuleCost]:
    """Rule ``grounding_score`` (rules/grounding.smk: scripts/grounding_score.py), one job per
    ``grounding_generate`` job: the cross-encoder on the fact x passage pairs of its responses
    (:func:`_grounding_score`)."""
    grounding = p.cfg["grounding"]
    conditions = _grounding_inputs(p.cfg, p.corpus)
    jobs = _grounding_jobs(p)
    responses = sum(items for items, _ in jobs) * len(conditions)
    most = max(items for items, _ in jobs) * len(conditions)
    new = grounding["generation"]["max_new_tokens"]
    return [_grounding_score("grounding_score", len(jobs), most, responses, new, p.gpu)]


def _checkpoint_items(p: PlanInputs) -> int:
    """Fiction questions a checkpoint answers: every one, or ``grounding.finetune.max_items``."""
    fmax = p.cfg["grounding"]["finetune"]["max_items"]
    return p.corpus.n_questions if fmax is None else min(fmax, p.corpus.n_questions)


def grounding_checkpoint_generate_cost(p: PlanInputs) -> list[RuleCost]:
    """Rule ``grounding_checkpoint_generate`` (rules/grounding.smk: scripts/grounding_generate.py), one job
    per checkpoint when ``grounding.finetune.enabled``: the base model's shape answering the fiction
    questions under :data:`knowlab.grounding.settings.FINETUNE_CONDITIONS` (gold contexts), as
    :func:`grounding_generate_cost`."""
    if not p.counts.get("grounding_checkpoint_generate"):
        return []
    grounding, corpus = p.cfg["grounding"], p.corpus
    new = grounding["generation"]["max_new_tokens"]
    items = _checkpoint_items(p)
    conditions = len(FINETUNE_CONDITIONS)
    # the workflow's fine-tuning conditions read no distractor setting (gold contexts only)
    gold = [_condition_tokens(c, None, None, corpus) for c in FINETUNE_CONDITIONS]
    seconds, mem = _generation(p, items, gold, p.shape)
    jobs = p.counts["grounding_checkpoint_generate"]
    response_bytes = new * corpus.output_chars_per_token
    return [
        RuleCost(
            "grounding_checkpoint_generate",
            jobs,
            1,
            _gib(mem),
            PROCESS_HOST_GIB,
            seconds / 3600,
            seconds * jobs / 3600,
            _gib(jobs * items * conditions * response_bytes),
            note=f"{items:,} fiction questions x {conditions} conditions, up to {new} new tokens",
            slurm_rules=("grounding_checkpoint_generate",),
        )
    ]


def grounding_checkpoint_score_cost(p: PlanInputs) -> list[RuleCost]:
    """Rule ``grounding_checkpoint_score`` (rules/grounding.smk: scripts/grounding_score.py), one job per
    ``grounding_checkpoint_generate`` job: the cross-encoder on its responses (:func:`_grounding_score`)."""
    if not p.counts.get("grounding_checkpoint_score"):
        return []
    jobs = p.counts["grounding_checkpoint_score"]
    per_job = _checkpoint_items(p) * len(FINETUNE_CONDITIONS)
    new = p.cfg["grounding"]["generation"]["max_new_tokens"]
    return [_grounding_score("grounding_checkpoint_score", jobs, per_job, jobs * per_job, new, p.gpu)]


# ---- models: downloads and conversions on CPU nodes


def base_model_cost(p: PlanInputs) -> list[RuleCost]:
    """Rule ``base_model`` (rules/models.smk: scripts/base_model.py), one CPU job: download the base model
    and save it as bf16 safetensors; host memory for two copies of the weights."""
    n = count_parameters(p.shape).total
    return [
        RuleCost(
            "base_model",
            1,
            0,
            0.0,
            PROCESS_HOST_GIB + _gib(2 * BF16 * n),
            0.0,
            0.0,
            _gib(BF16 * n),
            note="download, save as safetensors",
            slurm_rules=("base_model",),
        )
    ]


def finetune_base_model_cost(p: PlanInputs) -> list[RuleCost]:
    """Rule ``finetune_base_model`` (rules/models.smk: scripts/base_model.py), one CPU job per base model of
    ``finetune.models`` other than ``model`` (the project's is rule ``base_model``): as :func:`base_model_cost`."""
    if not p.counts.get("finetune_base_model"):
        return []
    n = count_parameters(p.shape).total
    return [
        RuleCost(
            "finetune_base_model",
            p.counts["finetune_base_model"],
            0,
            0.0,
            PROCESS_HOST_GIB + _gib(2 * BF16 * n),
            0.0,
            0.0,
            _gib(p.counts["finetune_base_model"] * BF16 * n),
            note="download, save as safetensors",
            slurm_rules=("finetune_base_model",),
        )
    ]


def eval_model_cost(p: PlanInputs) -> list[RuleCost]:
    """Rule ``eval_model`` (rules/models.smk: scripts/eval_model.py), one CPU job per model of
    ``eval_models`` other than the base model, each at ``eval_model_shape``: as :func:`base_model_cost`."""
    if not p.other_models:
        return []
    other = count_parameters(p.eval_model_shape).total
    return [
        RuleCost(
            "eval_model",
            p.other_models,
            0,
            0.0,
            PROCESS_HOST_GIB + _gib(2 * BF16 * other),
            0.0,
            0.0,
            _gib(p.other_models * BF16 * other),
            note=f"{p.other_models} open models at the {p.eval_model_shape.name} shape",
            slurm_rules=("eval_model",),
        )
    ]


@dataclass(frozen=True)
class RulePlan:
    """The cost functions of one rule (each takes the :class:`PlanInputs` and returns the rule's rows,
    none when the config runs no job of it).

    ``per_model``: its jobs of each base model of ``finetune.models`` (Kirchenbauer et al. 2026 fine-tune
    several), at that model's shape (:func:`shape_of`) and with its own ``finetune`` and ``compute``
    settings (:func:`knowlab.config.model_config`); ``shared``: its jobs that run once, on the project's
    base model (``model``) or the models of ``eval_models``.  The fine-tuning rule has both: each base
    model's FictionalQA runs, and SORT's parametric runs.
    """

    per_model: Callable[[PlanInputs], list[RuleCost]] | None = None
    shared: Callable[[PlanInputs], list[RuleCost]] | None = None


#: The plan's cost functions, one entry per rule that runs a model, in the plan's row order (the
#: FictionalQA fine-tuning before SORT's): each base model's fine-tuning and the evaluations and probes of
#: its checkpoints; SORT (its parametric fine-tuning among them), grounding, the MCQ ranker, the
#: cross-encoder over every checkpoint's responses, and the downloads.
RULE_COSTS: dict[str, RulePlan] = {
    "finetune": RulePlan(per_model=finetune_cost, shared=finetune_parametric_cost),
    "fictionalqa_rank_distractors": RulePlan(shared=fictionalqa_rank_distractors_cost),
    "fictionalqa_evaluate": RulePlan(per_model=fictionalqa_evaluate_cost),
    "sort_prompt": RulePlan(shared=sort_prompt_cost),
    "sort_rag_prompt": RulePlan(shared=sort_rag_prompt_cost),
    "sort_evaluate_base": RulePlan(shared=sort_evaluate_base_cost),
    "sort_fiction_evaluate": RulePlan(per_model=sort_fiction_evaluate_cost),
    "sort_parametric_evaluate": RulePlan(shared=sort_parametric_evaluate_cost),
    "grounding_generate": RulePlan(shared=grounding_generate_cost),
    "grounding_score": RulePlan(shared=grounding_score_cost),
    "grounding_checkpoint_generate": RulePlan(per_model=grounding_checkpoint_generate_cost),
    "grounding_checkpoint_score": RulePlan(shared=grounding_checkpoint_score_cost),
    "base_model": RulePlan(shared=base_model_cost),
    "finetune_base_model": RulePlan(per_model=finetune_base_model_cost),
    "eval_model": RulePlan(shared=eval_model_cost),
}


def model_job_counts(cfg: Mapping[str, Any], name: str) -> dict[str, int]:
    """:func:`job_counts` of base model ``name`` alone: ``cfg`` with ``finetune.models`` cut to its entry."""
    models = finetune_models(cfg)
    if name not in models:
        raise ValueError(f"{name!r} is not a base model of finetune.models ({', '.join(models)})")
    return job_counts({**cfg, "finetune": {**cfg["finetune"], "models": {name: models[name]}}})


def model_plan(
    cfg: Mapping[str, Any],
    name: str,
    *,
    corpus: Corpus = PAPER_CORPUS,
    gpu: GPU = H100,
    eval_model_shape: ModelShape = LLAMA_3_1_8B,
) -> list[RuleCost]:
    """The per-model rows of :data:`RULE_COSTS` for base model ``name`` of ``finetune.models``: its jobs
    (:func:`model_job_counts`) at its shape (:func:`shape_of` of :func:`knowlab.config.model_config`)."""
    view = model_config(cfg, name)
    inputs = PlanInputs(view, shape_of(view), model_job_counts(cfg, name), corpus, gpu, eval_model_shape)
    return [cost for rule in RULE_COSTS.values() if rule.per_model for cost in rule.per_model(inputs)]


def shared_plan(
    cfg: Mapping[str, Any],
    *,
    corpus: Corpus = PAPER_CORPUS,
    gpu: GPU = H100,
    eval_model_shape: ModelShape = LLAMA_3_1_8B,
) -> list[RuleCost]:
    """The shared rows of :data:`RULE_COSTS`: every job of ``cfg`` (:func:`job_counts`) at the shape of
    the project's base model (``model``; rules over ``eval_models`` run every other model at
    ``eval_model_shape``)."""
    inputs = PlanInputs(cfg, shape_of(cfg), job_counts(cfg), corpus, gpu, eval_model_shape)
    return [cost for rule in RULE_COSTS.values() if rule.shared for cost in rule.shared(inputs)]


def plans(
    cfg: Mapping[str, Any],
    *,
    corpus: Corpus = PAPER_CORPUS,
    gpu: GPU = H100,
    eval_model_shape: ModelShape = LLAMA_3_1_8B,
) -> dict[str, list[RuleCost]]:
    """The plan by part: every base model of ``finetune.models`` (:func:`model_plan`), in config order,
    and :data:`SHARED` (:func:`shared_plan`)."""
    kwargs = {"corpus": corpus, "gpu": gpu, "eval_model_shape": eval_model_shape}
    parts = {name: model_plan(cfg, name, **kwargs) for name in finetune_models(cfg)}
    return {**parts, SHARED: shared_plan(cfg, **kwargs)}


#: the key of :func:`plans`'s rows that run once
SHARED = "shared"


def plan(
    cfg: Mapping[str, Any],
    *,
    corpus: Corpus = PAPER_CORPUS,
    gpu: GPU = H100,
    eval_model_shape: ModelShape = LLAMA_3_1_8B,
) -> list[RuleCost]:
    """The capacity plan of the workflow under ``cfg`` (paper.yaml merged over config.yaml), summed over its
    base models: the rows of :func:`plans`, one per row name (the fine-tuning rules split by recipe:
    FictionalQA runs and SORT parametric runs), in the order of :data:`RULE_COSTS`, each the :func:`combine` of
    the base models' rows (jobs, GPU-hours and storage add up; the largest GPUs, memory and hours a job).

    Raises:
        KeyError: ``cfg`` lacks a key of the schema (pass a validated config).
        ValueError: a base model has no known shape (:func:`shape_of`); the ZeRO settings are invalid
            (:func:`model_state_memory`).
    """
    parts = plans(cfg, corpus=corpus, gpu=gpu, eval_model_shape=eval_model_shape)
    rows: dict[str, list[RuleCost]] = {}
    for cost in (c for costs in parts.values() for c in costs):
        rows.setdefault(cost.rule, []).append(cost)
    summed = []
    for same in rows.values():
        # a row name that several parts have is a per-model rule's: say over how many base models it sums
        summed.append(combine(same, note=f"{same[0].note}; {len(same)} base models" if len(same) > 1 else None))
    order = list(RULE_COSTS)
    return sorted(summed, key=lambda c: order.index(c.rule.split(" ")[0]))


# ----------------------------------------------------------------------------- SLURM resources


#: The kind of cluster job (``cluster.resources``, :mod:`knowlab.cluster`) each rule of the plan's rows
#: names in rules/*.smk (``tests/tooling/test_capacity.py`` checks it on the paper dry run): what a kind
#: gives must cover the plan of every rule of that kind (:func:`kind_resources`).
RULE_KINDS = {
    "finetune": "finetune",
    "finetune_last": "finetune",
    "fictionalqa_rank_distractors": "ranking",
    "fictionalqa_evaluate": "checkpoint_evaluation",
    "sort_prompt": "model_evaluation",
    "sort_rag_prompt": "model_evaluation",
    "sort_evaluate_base": "model_evaluation",
    "sort_fiction_evaluate": "checkpoint_sort",
    "sort_parametric_evaluate": "checkpoint_evaluation",
    "grounding_generate": "long_generation",
    "grounding_score": "model_evaluation",
    "grounding_checkpoint_generate": "checkpoint_generation",
    "grounding_checkpoint_score": "checkpoint_evaluation",
    "base_model": "model_conversion",
    "finetune_base_model": "model_conversion",
    "eval_model": "eval_model_conversion",
}


def required_resources(costs: Sequence[RuleCost], margin: float = RUNTIME_MARGIN) -> dict[str, dict[str, float]]:
    """What SLURM must give each rule: ``{rule: {"runtime": minutes, "mem_mb": MB, "gpu_mem_gib": GiB}}``.

    ``runtime`` is the plan's longest job times ``margin``; ``mem_mb`` its host memory (MB =
    10**6 bytes, as Snakemake's ``mem_mb``); ``gpu_mem_gib`` the peak per GPU.  A rule that
    several plan rows share (the ``finetune`` rules of both recipes) gets the largest of each.
    """
    out: dict[str, dict[str, float]] = {}
    for cost in costs:
        for rule in cost.slurm_rules:
            need = out.setdefault(rule, {"runtime": 0.0, "mem_mb": 0.0, "gpu_mem_gib": 0.0})
            need["runtime"] = max(need["runtime"], cost.hours_per_job * 60 * margin)  # 0: not planned (downloads)
            need["mem_mb"] = max(need["mem_mb"], cost.host_mem_gib * GIB / 1e6)
            need["gpu_mem_gib"] = max(need["gpu_mem_gib"], cost.gpu_mem_gib)
    return out


def kind_resources(costs: Sequence[RuleCost], margin: float = RUNTIME_MARGIN) -> dict[str, dict[str, float]]:
    """:func:`required_resources` by kind of job (:data:`RULE_KINDS`): each the largest over its rules."""
    out: dict[str, dict[str, float]] = {}
    for rule, need in required_resources(costs, margin).items():
        kind = out.setdefault(RULE_KINDS[rule], dict.fromkeys(need, 0.0))
        for key, value in need.items():
            kind[key] = max(kind[key], value)
    return out


def finetune_resources(cfg: Mapping[str, Any], name: str | None = None) -> dict[str, int]:
    """What the config asks SLURM for a fine-tuning job of base model ``name`` of ``finetune.models``:
    ``finetune.resources`` (``mem_mb``: MB per node; ``runtime``: minutes) with the entry's own
    ``resources`` over it; ``None``: SORT's parametric runs, on the project's base model (``finetune.resources``).

    Raises:
        ValueError: ``name`` is not a base model of ``finetune.models``.
    """
    own: Mapping[str, Any] = {}
    if name is not None:
        models = finetune_models(cfg)
        if name not in models:
            raise ValueError(f"{name!r} is not a base model of finetune.models ({', '.join(models)})")
        own = (models[name] if models[name] != "base" else {}).get("resources") or {}
    return {**cfg["finetune"]["resources"], **own}


def over_memory(costs: Sequence[RuleCost], gpu: GPU = H100) -> list[str]:
    """Plan rows whose GPU memory per GPU exceeds ``gpu.usable_memory_gib``, as ``"rule: X GiB"``."""
    return [f"{c.rule}: {c.gpu_mem_gib:.1f} GiB" for c in costs if c.gpu_mem_gib > gpu.usable_memory_gib]


# ----------------------------------------------------------------------------- report


def markdown_table(costs: Sequence[RuleCost]) -> str:
    """The plan as a Markdown table, one row per rule and a total row."""
    lines = [
        "| rule | SLURM jobs | GPUs/job | GPU mem GiB/GPU | host mem GiB/job | h/job | GPU-h | storage GiB | what |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]

    def num(x: float) -> str:
        return "-" if x == 0 else f"{x:,.0f}" if x >= 100 else f"{x:.1f}" if x >= 1 else f"{x:.2f}"

    for c in costs:
        storage = num(c.storage_gib) + (f" (+{num(c.temp_gib)} temp)" if c.temp_gib else "")
        lines.append(
            f"| {c.rule} | {c.jobs} | {c.gpus_per_job or '-'} | {num(c.gpu_mem_gib)} | {num(c.host_mem_gib)} | "
            f"{num(c.hours_per_job)} | {num(c.gpu_hours)} | {storage} | {c.note} |"
        )
    total_h = sum(c.gpu_hours for c in costs)
    total_s = sum(c.storage_gib for c in costs)
    total_t = sum(c.temp_gib for c in costs)
    lines.append(
        f"| **total** | {sum(c.jobs for c in costs)} | | | | | **{num(total_h)}** | "
        f"**{num(total_s)}** (+{num(total_t)} temp) | |"
    )
    return "\n".join(lines)
