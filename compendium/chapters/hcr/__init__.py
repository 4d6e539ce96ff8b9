"""The HCR chapter (Chaudhuri, Guo, van der Maaten, Mahloujifar and Tygert 2024, "Guarantees of confidentiality via
Hammersley-Chapman-Robbins bounds"): its settings at each scale and the pipelines its notebook calls.

Each pipeline computes one step of the chapter and returns a table (``pandas.DataFrame``) or a small dataclass; the
notebook shows the result and checks it.  Equation, section, algorithm and figure numbers are the paper's; "the
authors' code" is github.com/facebookresearch/hcrbounds.

The chapter module is a package of five modules: :mod:`~compendium.chapters.hcr.settings` (the scales, the plans
and the paper's numbers), :mod:`~compendium.chapters.hcr.theory` (the checks against closed forms),
:mod:`~compendium.chapters.hcr.experiments` (data, training, the bounds, the null space, the attacks, ImageNet),
:mod:`~compendium.chapters.hcr.results` (tables and quoted numbers) and :mod:`~compendium.chapters.hcr.claims`
(the scorecard's records); all their names are this module's.
"""
from compendium.chapters.hcr.claims import *  # noqa: F403
from compendium.chapters.hcr.experiments import *  # noqa: F403
from compendium.chapters.hcr.results import *  # noqa: F403
from compendium.chapters.hcr.settings import *  # noqa: F403
from compendium.chapters.hcr.theory import *  # noqa: F403

TITLE = "Guarantees of confidentiality via Hammersley-Chapman-Robbins bounds"
#: CPU seconds of its kernel at each scale (`book`: in a build on 2 cores, one thread); a recorded run replaces them
SECONDS = {"ci": 18, "book": 417}
