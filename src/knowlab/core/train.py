"""Fine-tuning through DeepSpeed, on CPU (gloo) or GPUs (NCCL), one code path.

Reads top to bottom like a nanoGPT/litgpt script: set up the process group,
load the base model (optionally wrap it in LoRA adapters with peft), tokenize
fiction documents and webtext paragraphs into one sequence each, let the
:class:`~knowlab.core.mixture.MixtureSampler` pick every sequence of every
optimizer step, and train with AdamW, a cosine schedule from ``lr`` to
``min_lr`` (seed 004, App. D.1: 5e-5 to 5e-6) after ``lr_warmup_steps``,
gradient clipping, and bf16 where the accelerator supports it.

Checkpoints (step 0 = the base model, then every ``checkpoint_every`` steps and
the last step) are folders ``step-<N>`` that ``AutoModelForCausalLM.from_pretrained``
loads: full fine-tuning saves the whole model in safetensors; LoRA saves the
PEFT adapter (``adapter_config.json`` naming the base folder), which transformers
loads on top of the base model when peft is installed.

On CPU, DeepSpeed needs ``DS_ACCELERATOR=cpu`` and the launcher variables
RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT; :func:`init_distributed`
sets them for a single process (with a free port) when no launcher did.  The first CPU run
compiles DeepSpeed's small ``deepspeed_shm_comm`` C++ op (about a minute),
cached under ``~/.cache/torch_extensions`` (``TORCH_EXTENSIONS_DIR`` overrides).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from pathlib import Path
from typing import Any

import pandas as pd

from knowlab.core.checkpoints import checkpoint_steps
from knowlab.core.io import atomic_dir, write_json
from knowlab.core.mixture import MixtureSampler
from knowlab.core.models import check_model_dir

log = logging.getLogger(__name__)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def init_distributed() -> str:
    """Initialise the process group once; return the device type (``cuda`` or ``cpu``).

    Under a launcher (``deepspeed``, ``torchrun``, SLURM with ``WORLD_SIZE`` set) its
    variables are used as they are; otherwise this process is rank 0 of 1.
    """
    # deferred: torch and transformers load only in jobs that run a model (seconds and GBs)
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
    if "WORLD_SIZE" not in os.environ:
        # no launcher: a single process with a port of its own, so that parallel
        # jobs on one machine never share a rendezvous port
        single = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1"}
        os.environ.update(single, MASTER_PORT=str(_free_port()))
    import deepspeed

    if not torch.distributed.is_initialized():
        deepspeed.init_distributed(dist_backend="nccl" if device == "cuda" else "gloo")
    return device


def use_bf16(precision: str, device: str) -> bool:
    """``precision``: ``bf16``, ``fp32`` or ``auto`` (bf16 on a GPU that supports it, else fp32)."""
    # deferred: torch and transformers load only in jobs that run a model (seconds and GBs)
    import torch

    if precision == "fp32":
        return False
    supported = device == "cuda" and torch.cuda.is_bf16_supported()
    if precision == "bf16" and not supported:
        log.warning("bf16 requested but not supported on %s; training in fp32", device)
    return supported


def tokenize_sequences(tokenizer, texts: list[str], seq_len: int) -> list[list[int]]:
    """One training sequence per text: [BOS or EOS] + tokens (+ EOS), cut to ``seq_len`` tokens.

    A text that already starts with that token (a chat-formatted text whose template opens
    with the BOS token, as SmolLM2's ``<|im_start|>``) does not get it twice.
    """
    prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    out = []
    for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]:
        head = [] if ids[:1] == [prefix] else [prefix]
        out.append([*head, *ids, tokenizer.eos_token_id][:seq_len])
    return out


def collate(sequences: list[list[int]], pad_id: int):
    """Right-pad to the longest sequence; padded labels are -100 (ignored by the loss)."""
    # deferred: torch and transformers load only in jobs that run a model (seconds and GBs)
    import torch

    width = max(len(s) for s in sequences)
    input_ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    labels = torch.full((len(sequences), width), -100, dtype=torch.long)
    attention = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        input_ids[row, : len(seq)] = torch.tensor(seq)
        labels[row, : len(seq)] = torch.tensor(seq)
        attention[row, : len(seq)] = 1
    return input_ids, attention, labels


def finetune(
    *,
    base_model: str | os.PathLike,
    out_dir: str | os.PathLike,
    run: str,
    fiction_texts: list[str],
    webtext_texts: list[str],
    cfg: dict[str, Any],
    seed: int,
) -> pd.DataFrame:
    """Train one run and save its checkpoints under ``out_dir/step-<N>``.

    ``fiction_texts`` is empty and ``cfg["fiction_rate"]`` ignored for the webtext-only
    control.  Returns the training log: one row per optimizer step with ``run, step,
    loss, lr, tokens, wall_s`` and the sampler counters (samples seen, epochs per source).
    """
    # deferred: deepspeed and peft load only in fine-tuning jobs (the train env)
    import deepspeed
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, get_cosine_with_min_lr_schedule_with_warmup

    device = init_distributed()
    torch.manual_seed(seed)
    base_model = check_model_dir(base_model).resolve()
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    model = AutoModelForCausalLM.from_pretrained(base_model, dtype=torch.float32)
    lora = cfg["lora"]
    if lora["enabled"]:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(
            model,
            LoraConfig(
                r=lora["r"],
                lora_alpha=lora["alpha"],
                lora_dropout=lora["dropout"],
                target_modules=lora["target_modules"],
                task_type="CAUSAL_LM",
            ),
        )
    bf16 = use_bf16(cfg["precision"], device)
    world = int(os.environ["WORLD_SIZE"])
    micro, accum = cfg["micro_batch_size"], cfg["gradient_accumulation_steps"]
    ds_config = {
        "train_micro_batch_size_per_gpu": micro,
        "gradient_accumulation_steps": accum,
        "gradient_clipping": cfg["gradient_clipping"],
        "bf16": {"enabled": bf16},
        "zero_optimization": {"stage": cfg["zero_stage"]},
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }
    params = [p for p in model.parameters() if p.requires_grad]
    # the fused kernel: one pass over the parameters per step (7x faster than foreach on CPU)
    optimizer = torch.optim.AdamW(params, lr=cfg["lr"], weight_decay=cfg["weight_decay"], fused=True)
    scheduler = get_cosine_with_min_lr_schedule_with_warmup(
        optimizer,
        num_warmup_steps=cfg["lr_warmup_steps"],
        num_training_steps=cfg["max_steps"],
        min_lr=cfg["min_lr"],
    )
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, lr_scheduler=scheduler, config=ds_config)
    if world == 1:
        # averaging gradients over one process is the identity: skip the flatten/all-reduce/copy-back
        engine.enable_backward_allreduce = False

    fiction = tokenize_sequences(tokenizer, fiction_texts, cfg["seq_len"]) if fiction_texts else []
    webtext = tokenize_sequences(tokenizer, webtext_texts, cfg["seq_len"])
    pools = {"fiction": fiction, "webtext": webtext}
    rate = cfg["fiction_rate"] if fiction else 0.0
    sampler = MixtureSampler(len(fiction), len(webtext), rate, cfg["fiction_warmup_steps"], micro * accum * world, seed)
    rank = int(os.environ["RANK"])
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    save_at = set(checkpoint_steps(cfg["max_steps"], cfg["checkpoint_every"]))
    out_dir = Path(out_dir)
    log.info(
        "run %s: %d fiction and %d webtext sequences, p=%.3f after %d fiction-free steps, %d steps of %d sequences, "
        "device=%s bf16=%s lora=%s",
        run, len(fiction), len(webtext), rate, cfg["fiction_warmup_steps"], cfg["max_steps"],
        micro * accum * world, device, bf16, lora["enabled"],
    )  # fmt: skip

    rows: list[dict[str, Any]] = []
    start = time.time()
    engine.train()
    for step in range(cfg["max_steps"] + 1):
        if step in save_at:
            _save_checkpoint(engine.module, tokenizer, out_dir / f"step-{step}", step, run, sampler.counters(), seed)
        if step == cfg["max_steps"]:
            break
        picks = sampler.step(step)[rank * micro * accum : (rank + 1) * micro * accum]
        losses, tokens = [], 0
        for m in range(accum):
            chunk = [pools[src][i] for src, i in picks[m * micro : (m + 1) * micro]]
            input_ids, attention, labels = (t.to(engine.device) for t in collate(chunk, pad_id))
            loss = engine(input_ids=input_ids, attention_mask=attention, labels=labels, use_cache=False).loss
            engine.backward(loss)
            engine.step()
            losses.append(loss.item())
            tokens += int(attention.sum())
        row = {
            "run": run,
            "step": step + 1,
            "loss": sum(losses) / len(losses),
            "lr": scheduler.get_last_lr()[0],
            "tokens": tokens,
            "fiction_in_step": sum(src == "fiction" for src, _ in picks),
            "wall_s": time.time() - start,
            **sampler.counters(),
        }
        rows.append(row)
        log.info(
            "step %d/%d loss %.4f lr %.2e fiction %d/%d seen %d (%.2f epochs) webtext seen %d (%.2f epochs)",
            row["step"], cfg["max_steps"], row["loss"], row["lr"], row["fiction_in_step"], len(picks),
            row["fiction_samples_seen"], row["fiction_epochs"], row["webtext_samples_seen"], row["webtext_epochs"],
        )  # fmt: skip
    return pd.DataFrame(rows)


def _save_checkpoint(model, tokenizer, path: Path, step: int, run: str, counters: dict, seed: int) -> None:
    with atomic_dir(path) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        write_json(tmp / "trainer_state.json", {"run": run, "step": step, "seed": seed, **counters})
    log.info("checkpoint step %d saved to %s", step, path)
