"""The transfer-learning chapter (Maciazek & Allison 2025, "Vulnerability of transfer-learned neural networks to
data reconstruction attacks in the small-data regime"): its settings at each scale and the pipelines its notebook
calls.

The chapter module is a package of five modules: :mod:`~compendium.chapters.transfer_learned.settings` (the
scales and the paper's numbers), :mod:`~compendium.chapters.transfer_learned.experiments` (data, one attack, the
sweeps), :mod:`~compendium.chapters.transfer_learned.jobs` (the sweeps' trainings as separate jobs, ``python -m
compendium jobs``), :mod:`~compendium.chapters.transfer_learned.results` (tables, figures, quoted numbers) and
:mod:`~compendium.chapters.transfer_learned.claims` (the scorecard's records); all their names are this module's.

At ``book`` scale the paper's MNIST pipeline runs offline on real 28x28 MNIST digits shipped with the package
(``dataset="mnist_digits"``, :func:`compendium.data.mnist_digits`): the adversary draws its shadow sets from the 8,000
training digits (the paper's MNIST-train), the victims' heads are trained on the 2,000 test digits (MNIST-test), and
the feature extractor, an MLP, is pre-trained on the shipped Fashion-MNIST subset
(:func:`compendium.data.fashion_mnist_subset`), a 28x28 domain other than the digits as the paper's EMNIST letters
are.  At ``ci`` scale (``dataset="digits"``) scikit-learn's bundled 8x8 digits are split once
(``numpy.random.default_rng(0)`` permutation) into three disjoint pools: 500 to pre-train the extractor, 800 for the
adversary and 497 for the victims.  The heads, their recipe (Table 3, MNIST row), Algorithms 1 and 3, the loss Eq. (3)
and the thresholds are the paper's; the reconstructor is a small MLP in place of Table 2's generator.

At ``paper`` scale (``dataset="mnist"`` or ``"cifar10"``) the pools are the paper's (Appendix D): EMNIST letters or
CIFAR-100 to pre-train, the training split for the adversary, the test split for the victims; the extractor is the
paper's (VGGtiny trained here on EMNIST letters; EfficientNet-B0 from TorchVision, ideally with the authors'
CIFAR-100 fine-tuned checkpoint); the 2.56 million training heads per ``N`` are written to disk
(:mod:`compendium.attacks.shadow_store`); the reconstructor is Table 2's generator, trained with LPIPS for CIFAR.
``dataset="digits"`` keeps the digits at the paper's counts (no download).
"""
from compendium.attacks.transfer_heads import code_epsilon  # noqa: F401 (the exercises' epsilon)
from compendium.chapters.transfer_learned.claims import *  # noqa: F403
from compendium.chapters.transfer_learned.experiments import *  # noqa: F403
from compendium.chapters.transfer_learned.jobs import *  # noqa: F403
from compendium.chapters.transfer_learned.results import *  # noqa: F403
from compendium.chapters.transfer_learned.settings import *  # noqa: F403

TITLE = "Vulnerability of transfer-learned networks to data reconstruction in the small-data regime"
#: CPU seconds of its kernel at each scale (`book`: in a build on 2 cores, one thread); a recorded run replaces them
SECONDS = {"ci": 47, "book": 345}
