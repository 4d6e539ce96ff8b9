"""The small networks the project trains (see ``DESIGN.md``): the HCR chapter's split classifiers."""
from compendium.models.classifiers import (
    CIFAR_NORMALIZATION,
    MNIST_NORMALIZATION,
    CifarCNN,
    MnistMLP,
    SplitClassifier,
    init_parameters,
)

__all__ = ["CIFAR_NORMALIZATION", "MNIST_NORMALIZATION", "CifarCNN", "MnistMLP", "SplitClassifier",
           "init_parameters"]
