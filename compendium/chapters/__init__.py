"""One module per chapter of the book: its settings at each scale and the pipelines its notebook calls.

The chapters are registered once, in ``_toc.yml`` (see :mod:`compendium.chapters.base`); only the build pipeline, the
student edition, the command line and the notebooks import this package (the layers contract in ``pyproject.toml``).
Reading the registry imports no chapter module: a chapter's module is imported when it is used.
"""
from compendium.chapters.base import SCALES, Chapter, Settings, chapter, check_scale, registry

__all__ = ["SCALES", "Chapter", "Settings", "chapter", "check_scale", "registry"]
