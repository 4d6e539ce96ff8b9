"""What every chapter module shares: the named scales, the chapter registry and the resolution of settings.

A chapter is registered in one place, the book's table of contents: every ``notebooks/<key>`` entry of ``_toc.yml``
is a chapter, and its settings and pipelines live in the module ``compendium.chapters.<key>`` (a module, or a
package whose ``__init__`` holds ``TITLE`` and imports its modules' names), which defines

* ``TITLE``: the chapter's title;
* ``SECONDS``: ``{"ci": ..., "book": ...}``, about how long its notebook runs at each scale on one core of a quiet
  2-core machine (a run's own time, when one is recorded, takes its place): the build starts the longest first;
* ``SCALES``: ``{"ci": {...}, "book": {...}, "paper": {...}}``, the values of every setting at each scale;
* ``Settings``: a frozen dataclass derived from :class:`Settings` whose ``validate`` checks the values;
* ``settings(scale="book", device="auto", seed=0, **overrides)``, which returns ``resolve(Settings, SCALES, ...)``;
* the pipelines its notebook calls (build the tasks, run a sweep, return a table).
* ``paper_shape(folder)``: writes into ``folder`` the stand-in files its paper scale reads
  (:mod:`compendium.standin`) and returns the notebook's parameters for a run at the papers' shapes and models with
  the counts cut to seconds (``scale="paper"`` and overrides), run by :func:`compendium.book.execute_paper_shape`.

Scales:

* ``ci``    seconds per notebook on 2 CPU cores; used by the tests.
* ``book``  the default and what the rendered book shows; minutes on a CPU.
* ``paper`` the paper's own settings for a GPU user; may need downloaded data (the chapter says which).
"""
from __future__ import annotations

import ast
import functools
import importlib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from types import ModuleType

import yaml

from compendium import validation
from compendium.base import repository_root, resolve_device

SCALES = ("ci", "book", "paper")


def check_scale(scale: str) -> str:
    """``scale`` if it is one of :data:`SCALES`; a clear error otherwise."""
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r}; allowed: one of {', '.join(map(repr, SCALES))} (valid scales)")
    return scale


# ---------------------------------------------------------------------------------------------------------------
# the registry
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Chapter:
    """A chapter of the book: its key (used on the command line), notebook and title; :attr:`module` is its settings
    module, imported when it is first asked for (reading the registry imports no chapter)."""

    key: str
    notebook: str  # path relative to the repository root
    title: str
    seconds: dict[str, float]  # scale -> the module's SECONDS

    @property
    def module(self) -> ModuleType:
        return importlib.import_module(f"compendium.chapters.{self.key}")


def _constant(source: Path, name: str, example: str):
    """The ``name = <literal>`` assignment of a chapter module, read from its source without importing it."""
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name]:
            return ast.literal_eval(node.value)
    raise RuntimeError(f"{source} defines no {name} = {example}; every chapter module needs one")


def _toc_notebooks(node) -> list[str]:
    """Every ``file:`` entry under ``notebooks/`` in a parsed ``_toc.yml``, in the book's order."""
    found = []
    if isinstance(node, dict):
        file = node.get("file")
        if isinstance(file, str) and file.startswith("notebooks/"):
            found.append(file)
        for value in node.values():
            found += _toc_notebooks(value)
    elif isinstance(node, list):
        for item in node:
            found += _toc_notebooks(item)
    return found


@functools.cache
def registry() -> dict[str, Chapter]:
    """The chapters in the book's order, read from ``_toc.yml``; each must have its module in
    ``compendium.chapters``."""
    toc = yaml.safe_load((repository_root() / "_toc.yml").read_text())
    out = {}
    for file in _toc_notebooks(toc):
        key = file.removeprefix("notebooks/").removesuffix(".ipynb")
        module, package = Path(__file__).with_name(f"{key}.py"), Path(__file__).with_name(key) / "__init__.py"
        source = module if module.exists() else package
        if not source.exists():
            raise RuntimeError(f"_toc.yml lists {file}, but compendium/chapters/{key}.py does not exist (nor the "
                               f"package compendium/chapters/{key}/); every chapter needs its settings module")
        out[key] = Chapter(key, f"notebooks/{key}.ipynb", _constant(source, "TITLE", '"..."'),
                           _constant(source, "SECONDS", '{"ci": ..., "book": ...}'))
    return out


def chapter(key: str) -> Chapter:
    """The registered chapter called ``key``; a clear error lists the valid keys otherwise."""
    chapters = registry()
    if key not in chapters:
        raise ValueError(f"chapter={key!r}; allowed: one of {', '.join(map(repr, chapters))} (valid chapters)")
    return chapters[key]


# ---------------------------------------------------------------------------------------------------------------
# settings
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Settings:
    """Base of every chapter's settings: the scale, the device (``"auto"``, ``"cpu"``, ``"cuda[:k]"``) and the seed.
    Subclasses add their fields and check them in :meth:`validate`, which runs on construction."""

    scale: str
    device: str
    seed: int

    def __post_init__(self) -> None:
        check_scale(self.scale)
        resolve_device(self.device)
        validation.seed(self.seed)
        self.validate()

    def validate(self) -> None:
        """Check the chapter's own fields (raise ``ValueError``)."""


def resolve(config: type[Settings], table: dict, scale: str, device: str, seed: int, overrides: dict) -> Settings:
    """The scale's values of ``config``, replaced by every override that is not ``None``, validated."""
    check_scale(scale)
    resolve_device(device)
    known = {f.name for f in fields(config)}
    unknown = set(overrides) - known
    if unknown:
        valid = sorted(known - {"scale", "device", "seed"})
        raise ValueError(f"unknown parameter(s) {sorted(unknown)}; valid: {valid}")
    base = config(scale=scale, device=device, seed=int(seed), **table[scale])
    return replace(base, **{k: _as_tuple(v) for k, v in overrides.items() if v is not None})


def _as_tuple(value):
    """Lists and arrays given as overrides (e.g. by papermill) become tuples of Python numbers, so settings stay
    hashable."""
    if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        items = value.tolist() if hasattr(value, "tolist") else value
        return tuple(items) if isinstance(items, list) else items
    return value


#: How the prose names each ``image_source`` of the image chapters (Ziller et al., From Mean to Extreme).
IMAGE_SOURCES = {"photos": "crops of scikit-image's photographs", "imagenet": "ImageNet validation images"}


def image_run(cfg) -> str:
    """What an image chapter's checks (Ziller et al., From Mean to Extreme) ran on, for its scorecard card: the scale,
    the images (``cfg.n_images`` of ``cfg.image_source`` at ``cfg.resolution``) and the Monte-Carlo draws
    (``cfg.n_mc``) of the closed forms' checks."""
    side = f"{cfg.resolution}×{cfg.resolution}"
    return (f"`{cfg.scale}` scale: {cfg.n_images} {IMAGE_SOURCES[cfg.image_source]} at {side}, "
            f"and {cfg.n_mc:,} Monte-Carlo draws for the closed forms")


def check_image_source(source: str, folder: str | None) -> None:
    """The image chapters' ``image_source``: ``"photos"`` (bundled) or ``"imagenet"`` (which needs a folder)."""
    validation.choice("image_source", source, ("photos", "imagenet"))
    if source == "imagenet" and folder is None:
        raise ValueError("imagenet_dir=None; allowed: a folder of ImageNet validation JPEGs (image_source='imagenet' "
                         "needs one)")
