"""A plan's parts: a costly :class:`Step`, a memory or disk :class:`Need`, the :class:`Plan` that holds them, and the
registry of the chapters' planners (:func:`planner`)."""
from __future__ import annotations

import math
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from compendium.plan.machines import CARDS, COLAB, Card, GB, HOUR


# ---------------------------------------------------------------------------------------------------------------
# a plan
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    """One costly step of a run: ``count`` units of ``unit``, ``seconds`` each on the reference card (on the CPU
    when ``on_cpu``: NumPy / SciPy work that no GPU speeds up), where those seconds come from (``basis``), and the
    settings that set the count (``parameter``)."""

    name: str
    count: float
    unit: str
    seconds: float
    basis: str
    parameter: str
    on_cpu: bool = False

    @property
    def hours(self) -> float:
        """Hours on the reference card: ``count * seconds / 3600``."""
        return self.count * self.seconds / HOUR

    def hours_on(self, card: Card) -> float:
        """Hours on ``card``: :attr:`hours` over its relative :attr:`Card.speed` (CPU steps: unchanged)."""
        return self.hours if self.on_cpu else self.hours / card.speed


@dataclass(frozen=True)
class Need:
    """A peak resource need in bytes, the largest of its ``parts`` (``(what, bytes)``) or their sum (``summed``),
    and the advice a refusal gives: the setting to change."""

    parts: tuple[tuple[str, float], ...]
    advice: str
    summed: bool = False

    @property
    def bytes(self) -> float:
        values = [b for _, b in self.parts] or [0.0]
        return sum(values) if self.summed else max(values)

    def describe(self) -> str:
        """The parts, largest first, and how they combine."""
        parts = [f"{what} {size(b)}" for what, b in sorted(self.parts, key=lambda p: -p[1]) if b > 0]
        if len(parts) < 2:
            return "".join(parts)
        return " + ".join(parts) if self.summed else "the largest of: " + ", ".join(parts)


def size(nbytes: float) -> str:
    """``nbytes`` with three significant digits in GB (10^9 bytes), TB from 1,000 GB, MB below 1 GB, kB below 1 MB;
    ``0 MB`` for nothing."""
    if nbytes >= 1000 * GB:
        return f"{nbytes / 1000 / GB:.3g} TB"
    if nbytes >= GB:
        return f"{nbytes / GB:.3g} GB"
    return f"{nbytes / 1e3:.3g} kB" if 0 < nbytes < 1e6 else f"{nbytes / 1e6:.3g} MB"


def hours_text(hours: float) -> str:
    """Hours for a table: minutes below one hour, seconds below one minute, days above 48 hours."""
    if hours < 1 / 60:
        return f"{hours * HOUR:.2g} s"
    if hours < 1:
        return f"{hours * 60:.2g} min"
    return f"{hours:.3g} h" if hours < 48 else f"{hours / 24:.3g} d"


@dataclass(frozen=True)
class Plan:
    """A chapter run's cost: its steps (``Step``) and its peak GPU memory, host RAM and disk (``Need``, disk in
    ``folder``).  ``device`` is the machine the plan was made on, as a ``Card`` (``None``: a CUDA card
    not in :data:`CARDS`), ``torch_device`` the run's (``"cpu"``, ``"cuda:1"``); ``measured`` the chapter's
    measured seconds for this very run on 2 CPU cores (its ``SECONDS``, at a scale's default settings on the CPU),
    which then replace the CPU's stated speed."""

    chapter: str
    scale: str
    steps: tuple[Step, ...]
    gpu: Need
    ram: Need
    disk: Need
    folder: str
    device: Card | None
    on_gpu: bool
    measured: float | None = None
    torch_device: str = "cpu"

    @property
    def hours(self) -> float:
        """Hours on the reference card, every step together."""
        return sum(s.hours for s in self.steps)

    def hours_on(self, card: Card) -> float:
        return sum(s.hours_on(card) for s in self.steps)

    def hours_here(self) -> float:
        """Hours on the machine the plan was made on: :attr:`measured` where there is one, else :meth:`hours_on`
        its card (NaN for a CUDA card not in :data:`CARDS`)."""
        if self.measured is not None:
            return self.measured / HOUR
        return self.hours_on(self.device) if self.device else math.nan

    def on_card(self, card: Card) -> str:
        """The hours on ``card`` as text, or that its memory cannot hold the run's peak GPU memory."""
        if self.gpu.bytes > card.memory_gb * GB:
            return f"does not fit ({card.memory_gb:g} GB)"
        return hours_text(self.hours_on(card))

    def runtimes(self) -> str:
        """The Colab runtimes (:data:`COLAB`) whose host RAM and disk hold the run, or what is short on the largest."""
        fits = [r.name for r in COLAB if self.ram.bytes <= r.ram_gb * GB and self.disk.bytes <= r.disk_gb * GB]
        if fits:
            return fits[0] if len(fits) == 1 else f"{fits[0]} and up"
        largest = COLAB[-1]
        short = [what for what, need, have in (("RAM", self.ram.bytes, largest.ram_gb), ("disk", self.disk.bytes,
                                                                                       largest.disk_gb))
                 if need > have * GB]
        return "none: too little " + " and ".join(short)

    def table(self):
        """A ``pandas.DataFrame``: one row per step (and a total row) with the count, the unit, the seconds per
        unit on the reference card and their basis, the hours on the device seen and on every card of
        :data:`CARDS`; the peak GPU memory, RAM and disk in ``attrs``."""
        import pandas as pd  # not at import: a notebook's first cell calls show() without pandas' import time

        seen = "hours, this machine" + (" (measured)" if self.measured is not None else
                                         f" ({self.device.name})" if self.device else "")
        rows = [{"step": s.name, "count": s.count, "unit": s.unit, "seconds per unit (H200)": s.seconds,
                 "basis": s.basis, seen: s.hours_on(self.device) if self.device and self.measured is None else math.nan,
                 **{f"hours, {c.name}": s.hours_on(c) for c in CARDS}} for s in self.steps]
        rows.append({"step": "total", seen: self.hours_here(), **{f"hours, {c.name}": self.hours_on(c) for c in CARDS}})
        frame = pd.DataFrame(rows)
        frame.attrs.update(gpu_bytes=self.gpu.bytes, ram_bytes=self.ram.bytes, disk_bytes=self.disk.bytes)
        return frame

    def to_dict(self) -> dict:
        """Everything as plain JSON types: the steps with their hours per card, the needs in bytes with their parts."""
        steps = [asdict(s) | {"hours": {c.name: s.hours_on(c) for c in CARDS}} for s in self.steps]
        needs = {name: {"bytes": need.bytes, "parts": [list(p) for p in need.parts], "advice": need.advice}
                 for name, need in (("gpu_memory", self.gpu), ("ram", self.ram), ("disk", self.disk))}
        return {"chapter": self.chapter, "scale": self.scale, "steps": steps,
                "hours": {c.name: self.hours_on(c) for c in CARDS}, **needs, "disk_folder": self.folder,
                "device": None if self.device is None else self.device.name, "hours_here": self.hours_here()}

    def text(self) -> str:
        """The plan as plain text: the steps, the total hours per card, and the memory and disk it needs."""
        width = max(len(s.name) for s in self.steps) if self.steps else 10
        lines = [f"{self.chapter} at {self.scale!r} scale: the run's costly steps"]
        for s in self.steps:
            if self.scale != "paper":  # the steps' costs were timed at the papers' sizes: only the counts apply here
                lines.append(f"  {s.name:<{width}}  {s.count:>12,.0f} {s.unit}")
                continue
            lines.append(f"  {s.name:<{width}}  {s.count:>12,.0f} {s.unit}, {s.seconds:.3g} s each: "
                         f"{hours_text(s.hours)} {'on the CPU' if s.on_cpu else 'on the H200'} ({s.basis})")
        if self.measured is not None:
            lines.append(f"  total on 2 CPU cores: about {hours_text(self.hours_here())} (its kernel's CPU time in "
                         "an earlier build, one thread, as the chapter records it; the book's build runs the chapters "
                         "side by side on the same cores, and the reproduce page gives the times of the build you "
                         "read)")
        elif self.device is not None:
            lines.append(f"  total on this machine ({self.device.name}): {hours_text(self.hours_here())}")
        if self.scale == "paper":
            lines.append("  total: " + ", ".join(f"{c.name} {self.on_card(c)}" for c in CARDS)
                         + " (speed factors from FP32 and bandwidth: approximate)")
        else:  # the per-step GPU costs were timed at the papers' sizes: they do not shrink to these small networks
            lines.append("  on a GPU: not costed at this scale, whose small networks gain little from one (the "
                         "reproduce page's GPU run); the cards' hours are planned at 'paper' scale")
        def parts(need: Need) -> str:
            return f" ({need.describe()})" if need.bytes else ""

        ram = (f"  host RAM {size(self.ram.bytes)}{parts(self.ram)}" if self.on_gpu else
               f"  host RAM {size(self.ram.bytes + self.gpu.bytes)} (on the CPU it holds the GPU memory's share too)")
        lines += [f"  GPU memory {size(self.gpu.bytes)}{parts(self.gpu)}", ram,
                  f"  disk {size(self.disk.bytes)} in {self.folder}{parts(self.disk)}" if self.disk.bytes else
                  "  disk: nothing written",
                  f"  Colab runtimes (RAM and disk) that hold it: {self.runtimes()}"]
        return "\n".join(lines)

    def check_fits(self, *, ram_bytes: float | None = None, disk_bytes: float | None = None,
                   gpu_bytes: float | None = None) -> None:
        """Raise a ``ValueError`` naming the setting to change when the run needs more host RAM, free disk (in
        ``folder``) or GPU memory than the machine has.  Each capacity not given is read from this machine:
        the available RAM (psutil), the free disk of the folder or of its nearest existing parent
        (``shutil.disk_usage``) and the free memory of the CUDA device (``torch.cuda.mem_get_info``; a run on the CPU
        holds its tensors in RAM, so they count there)."""
        ram_need = self.ram.bytes + (0.0 if self.on_gpu else self.gpu.bytes)
        if ram_bytes is None:
            import psutil

            ram_bytes = psutil.virtual_memory().available
        if disk_bytes is None:
            folder = Path(self.folder).absolute()
            while not folder.exists():
                folder = folder.parent
            disk_bytes = shutil.disk_usage(folder).free
        if gpu_bytes is None and self.on_gpu:
            import torch

            gpu_bytes = torch.cuda.mem_get_info(torch.device(self.torch_device))[0]
        ram_text, ram_advice = self.ram.describe(), self.ram.advice
        if not self.on_gpu and self.gpu.bytes > 0:
            ram_text += f"; and the device's tensors, on this CPU: {self.gpu.describe()}"
            ram_advice += f"; {self.gpu.advice}"
        problems = []
        for what, text, advice, needed, have in (
                ("host RAM", ram_text, ram_advice, ram_need, ram_bytes),
                ("free disk in " + self.folder, self.disk.describe(), self.disk.advice, self.disk.bytes, disk_bytes),
                ("GPU memory", self.gpu.describe(), self.gpu.advice, self.gpu.bytes,
                 gpu_bytes if self.on_gpu else None)):
            if have is not None and needed > have:
                problems.append(f"{what}: the run needs {size(needed)} ({text}), the machine has {size(have)}; "
                                f"{advice}")
        if problems:
            raise ValueError(f"{self.chapter} at scale={self.scale!r} does not fit this machine:\n  "
                             + "\n  ".join(problems))


# ---------------------------------------------------------------------------------------------------------------
# the chapters
# ---------------------------------------------------------------------------------------------------------------
PLANNERS: dict = {}


def planner(key: str):
    """Register the function that plans chapter ``key`` (settings -> steps, GPU, RAM, disk needs, folder)."""
    def register(function):
        PLANNERS[key] = function
        return function
    return register

