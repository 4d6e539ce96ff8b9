"""The diffusion chapter (Huang, Meng et al. 2024, "Gradient-guided conditional diffusion models for private image
reconstruction"): its settings at each scale and the pipelines its notebook calls.

At ``ci`` and ``book`` scale everything runs on scikit-learn's bundled 8x8 digits, offline: images 0-1499 (in
scikit-learn's order) train the diffusion prior from scratch, the next ones are the private targets, which the prior
never sees (the paper's FFHQ-trained prior and CelebA-HQ targets); a target's label is its digit's parity, the
two classes of the paper's attacked models, known to the attacker.  The attacked networks are the paper's
(:func:`compendium.models.gradient_targets.gradient_target`) at 1x8x8 with fixed random weights.  At ``paper`` scale
the prior is a pretrained ``diffusers.UNet2DModel`` from the Hugging Face hub and the targets are CelebA-HQ faces
from a folder the user fills, at 3x256x256.

The chapter module is a package of four modules: :mod:`~compendium.chapters.diffusion.settings` (the scales and
the paper's numbers), :mod:`~compendium.chapters.diffusion.experiments` (data, prior, one attack, the sweeps),
:mod:`~compendium.chapters.diffusion.results` (tables, findings, quoted numbers) and
:mod:`~compendium.chapters.diffusion.claims` (the scorecard's records); all their names are this module's.
"""
from compendium.chapters.diffusion.claims import *  # noqa: F403
from compendium.chapters.diffusion.experiments import *  # noqa: F403
from compendium.chapters.diffusion.results import *  # noqa: F403
from compendium.chapters.diffusion.settings import *  # noqa: F403

TITLE = "Gradient-guided conditional diffusion models for private image reconstruction"
#: CPU seconds of its kernel at each scale (`book`: in a build on 2 cores, one thread); a recorded run replaces them
SECONDS = {"ci": 25, "book": 607}
