"""Hugging Face Hub repositories downloaded on the submit host and read from a local folder by every job.

A cluster's compute nodes often have no network, and its login (submit) nodes must not do heavy work.
So the workflow splits every read of a Hub repository in two (docs/cluster.md, "Downloads: on the
submit host"):

- the local rule ``hub_download`` (``localrule: True``: its jobs run where Snakemake runs, never as
  cluster jobs) downloads the repository at its revision as it is, files only, no model loaded
  (:func:`knowlab.core.models.download_snapshot`), into the workflow's Hub folder: :attr:`HubSnapshot.folder`,
  ``resources/hub/<models|datasets>/<hub id>/<revision>``;
- every job that reads the repository (a base model of ``source: hub``, an ``eval_models`` entry, an
  embedder, the cross-encoder, OpenHermes) lists that folder among its inputs, and the loaders
  (:func:`knowlab.core.models.resolve_model`, ``knowlab.sort.instructions.load_openhermes``) read a Hub
  id from its folder when it is there (:func:`local_snapshot`): no network, while the heavy part (loading,
  converting to safetensors, scoring) stays a cluster job.

Which jobs read which repository is :mod:`knowlab.downloads`.  Outside the workflow (a library call,
a test) a Hub id without a folder under the working directory is fetched from the Hub as before.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from knowlab.core.settings import StepSettings

#: the workflow's Hub folder, from its working directory (``knowlab.layout.HUB_SNAPSHOT`` is under it)
FOLDER = "resources/hub"
#: the folder name of a repository's default branch (no revision given: unpinned)
UNPINNED = "unpinned"
REPO_TYPES = ("model", "dataset")
#: files of a model repository that no loader of the workflow reads: the original (non-transformers)
#: checkpoints, other frameworks' weights and exports (Llama's ``original/``: 2.5-16 GB; Gemma's GGUF: 10 GB)
MODEL_IGNORE = (
    "original/*",
    "*.pth",
    "*.pt",
    "*.gguf",
    "*.onnx",
    "onnx/*",
    "openvino/*",
    "coreml/*",
    "*.tflite",
    "*.h5",
    "*.msgpack",
    "*.ot",
    "flax_model*",
    "tf_model*",
    "rust_model*",
)
#: PyTorch's pickled weights: left out where the repository also has safetensors (which transformers prefers)
PICKLED_WEIGHTS = "*.bin"
_SAFE_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class HubSnapshot(StepSettings):
    """Rule ``hub_download``: one Hub repository at one revision, and the folder it is downloaded into."""

    repo_id: str
    """The Hub id, ``owner/name`` (or a bare ``name``)."""
    revision: str | None = None
    """The revision, a commit sha (a branch or tag moves); None: the default branch, unpinned."""
    repo_type: str = "model"
    """``model`` or ``dataset``."""

    def __post_init__(self) -> None:
        if self.repo_type not in REPO_TYPES:
            raise ValueError(f"Hub repository type must be one of {REPO_TYPES}, got {self.repo_type!r}")
        parts = str(self.repo_id).split("/")
        if len(parts) > 2 or not all(_SAFE_PART.fullmatch(part) for part in parts):
            raise ValueError(f"not a Hub id: {self.repo_id!r} (owner/name)")
        if self.revision is not None and (not self.revision or ".." in self.revision):
            raise ValueError(f"{self.repo_id}: not a revision: {self.revision!r}")

    @property
    def key(self) -> str:
        """Its folder under :data:`FOLDER` (rule ``hub_download``'s wildcard ``{snapshot}``):
        ``<repo type>s/<hub id>/<revision>``, the revision :data:`UNPINNED` when none is given and
        a ``/`` in it written ``--``."""
        revision = self.revision.replace("/", "--") if self.revision else UNPINNED
        return f"{self.repo_type}s/{self.repo_id}/{revision}"

    @property
    def folder(self) -> str:
        """The folder it is downloaded into, from the workflow's working directory."""
        return f"{FOLDER}/{self.key}"


def local_snapshot(repo_id: str, revision: str | None, repo_type: str = "model") -> Path | None:
    """The folder rule ``hub_download`` downloaded ``repo_id`` at ``revision`` into
    (:attr:`HubSnapshot.folder`, from the working directory), or None when there is none."""
    try:
        folder = Path(HubSnapshot(repo_id, revision, repo_type).folder)
    except ValueError:  # not a Hub id this module names (the Hub's own error follows)
        return None
    return folder if folder.is_dir() else None


def ignore_patterns(repo_type: str, files: Iterable[str]) -> list[str]:
    """The files of a repository (``files``: its file names) that
    :func:`knowlab.core.models.download_snapshot` leaves out: none
    of a dataset; of a model :data:`MODEL_IGNORE`, and :data:`PICKLED_WEIGHTS` where it also has
    ``*.safetensors`` weights."""
    if repo_type != "model":
        return []
    names = list(files)
    safetensors = any(fnmatch.fnmatch(name, "*.safetensors") for name in names)
    return list(MODEL_IGNORE) + ([PICKLED_WEIGHTS] if safetensors else [])
