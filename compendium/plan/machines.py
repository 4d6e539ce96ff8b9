"""The machines a plan is stated for: GPU cards with their relative speeds, hosted runtimes, this machine's CPU, and
the seconds per unit of work measured on the reference card (:data:`MEASURED`)."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

GB = 1e9
HOUR = 3600.0


# ---------------------------------------------------------------------------------------------------------------
# the machines
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Card:
    """A GPU: its memory and the two vendor figures its relative speed rests on (FP32 dense TFLOPs without tensor
    cores, memory bandwidth in TB/s)."""

    name: str
    memory_gb: float
    fp32_tflops: float
    bandwidth_tbs: float

    @property
    def speed(self) -> float:
        """Speed relative to the reference card :data:`REFERENCE`: the geometric mean of the FP32 and the bandwidth
        ratios, ``sqrt(F / F_ref * B / B_ref)``.  Approximate: a compute-bound loop moves with the first ratio, a
        memory-bound one with the second, and a loop bound by kernel launches (the reconstructor's batches of 32) by
        neither, which shrinks the gaps between cards (the authors' V100 took 9.5 h for the reconstructor's 1e6
        steps, against 5.8 h on the H200 and the 27 h this factor would give)."""
        return math.sqrt(self.fp32_tflops / REFERENCE.fp32_tflops * self.bandwidth_tbs / REFERENCE.bandwidth_tbs)


#: The reference card, on which every "measured" item was timed (benchmarks/results/gpu_check.json's "device").
REFERENCE = Card("H200 141 GB", 141, 67.0, 4.8)
#: GPU cards a reader is likely to have (Colab: T4, L4, A100; clusters: A100, H100, H200); vendors' data sheets:
#: FP32 dense TFLOPs (no tensor cores; the book turns TF32 off) and memory bandwidth (SXM versions).
CARDS = (
    Card("T4 16 GB", 16, 8.1, 0.32),
    Card("L4 24 GB", 24, 30.3, 0.30),
    Card("A100 40 GB", 40, 19.5, 1.555),
    Card("A100 80 GB", 80, 19.5, 2.039),
    Card("H100 80 GB", 80, 67.0, 3.35),
    REFERENCE,
)


@dataclass(frozen=True)
class Runtime:
    """A hosted runtime's host RAM and disk (GB, approximate: as Colab shows them in 2025; they change)."""

    name: str
    ram_gb: float
    disk_gb: float


COLAB = (Runtime("Colab standard", 12.7, 100), Runtime("Colab high-RAM / A100", 83.0, 100))

#: Estimate for a CPU: FP32 TFLOPs per core (AVX2: 2 FMA units x 8 lanes x 2 FLOPs at about 3 GHz) and the memory
#: bandwidth (TB/s) of a cloud machine's share, for :func:`cpu_card`; stated figures, not measured.
CPU_CORE_TFLOPS, CPU_BANDWIDTH_TBS = 0.096, 0.02


def cpu_card(cores: int | None = None) -> Card:
    """This machine's CPU as a :class:`Card` (an estimate, :data:`CPU_CORE_TFLOPS`), so that the GPU steps' hours
    can be stated for a run on it."""
    cores = cores or os.cpu_count() or 1
    return Card(f"CPU, {cores} cores (estimate)", 0.0, cores * CPU_CORE_TFLOPS, CPU_BANDWIDTH_TBS)


def card_named(name: str) -> Card | None:
    """The card of :data:`CARDS` whose model (``T4``, ``A100``, ...) is in ``name`` (e.g. torch's device name), the
    one with the most memory on a tie (``A100``: the 80 GB one unless ``40GB`` is in the name); ``None`` if none."""
    flat = name.upper().replace(" ", "").replace("-", "")
    found = [c for c in CARDS if c.name.split()[0] in flat]
    if len(found) > 1:
        found = [c for c in found if f"{c.memory_gb:g}GB" in flat] or found[-1:]
    return found[-1] if found else None


# ---------------------------------------------------------------------------------------------------------------
# where the seconds come from
# ---------------------------------------------------------------------------------------------------------------
#: benchmarks/results/gpu_check.json's ``paper_sizes``: seconds per unit on one NVIDIA H200 (3 significant digits),
#: keyed by the item's name there.
MEASURED = {
    "transfer: 2.56e6 training heads, N = 10": 2.20e-07,
    "transfer: 2.56e6 training heads, N = 40": 7.75e-07,
    "transfer: reconstructor, 1e6 Adam steps (Table 2, MNIST, batch 32)": 2.09e-02,
    "diffusion: DPS, one 256x256 reconstruction (1000 steps)": 7.67e-02,
    "diffusion: DSG, one 256x256 reconstruction (100 steps)": 8.46e-02,
    "HCR: one ImageNet bound, ResNet-18 (R = 25, i = 10)": 12.4,
    "Ziller: 15,000 DP-SGD steps on 224x224 images": 1.72e-03,
}
#: The share of a card's FP32 peak a large dense network reaches in the estimates from FLOPs (an assumption).
FLOPS_EFFICIENCY = 0.5


def flops_seconds(flops: float) -> float:
    """Seconds for ``flops`` FP32 operations on the reference card at :data:`FLOPS_EFFICIENCY` of its peak."""
    return flops / (FLOPS_EFFICIENCY * REFERENCE.fp32_tflops * 1e12)


def measured(item: str) -> tuple[float, str]:
    return MEASURED[item], f"measured on the H200 (gpu_check.json: {item})"

