"""The reconstruction-risk calculator's page: its settings (the page has no scale-dependent work; the scale, device
and seed are accepted so that it builds with the chapters) and the pipelines it calls."""
from __future__ import annotations

from dataclasses import dataclass

from compendium.chapters.base import Settings as _Settings
from compendium.chapters.base import resolve

TITLE = "The reconstruction-risk calculator"

SCALES = {"ci": {}, "book": {}, "paper": {}}


@dataclass(frozen=True)
class Settings(_Settings):
    """The calculator page's settings: only the scale, device and seed."""


def settings(scale: str = "book", device: str = "auto", seed: int = 0, **overrides) -> Settings:
    """The page's settings (no chapter knobs)."""
    return resolve(Settings, SCALES, scale, device, seed, overrides)
