"""The networks of the HCR chapter (see ``DESIGN.md``): the small split classifiers the project trains, and the
pretrained TorchVision ImageNet models of its ``paper`` scale (TorchVision is imported only when one is built)."""
from compendium.models.classifiers import (
    CIFAR_NORMALIZATION,
    MNIST_NORMALIZATION,
    CifarCNN,
    MnistMLP,
    SplitClassifier,
    init_parameters,
)
from compendium.models.pretrained import (
    IMAGENET_NORMALIZATION,
    ImageNetTransform,
    PretrainedUnavailable,
    TorchvisionMissing,
    imagenet_split_model,
    imagenet_transform,
)

__all__ = ["CIFAR_NORMALIZATION", "IMAGENET_NORMALIZATION", "MNIST_NORMALIZATION", "CifarCNN", "ImageNetTransform",
           "MnistMLP", "PretrainedUnavailable", "SplitClassifier", "TorchvisionMissing", "imagenet_split_model",
           "imagenet_transform", "init_parameters"]
