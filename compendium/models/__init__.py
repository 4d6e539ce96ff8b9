"""Every network of the project: the small split classifiers and the feature decoder it trains, and the pretrained
TorchVision ImageNet models of the HCR chapter's ``paper`` scale (TorchVision is imported only when one is built)."""
from compendium.models.classifiers import (
    CIFAR_NORMALIZATION,
    MNIST_NORMALIZATION,
    CifarCNN,
    MnistMLP,
    SplitClassifier,
    init_parameters,
)
from compendium.models.decoders import FeatureDecoder
from compendium.models.denoisers import MLPDenoiser
from compendium.models.gradient_targets import gradient_target
from compendium.models.reconstructors import MLPReconstructor, ResidualReconstructor
from compendium.models.pretrained import (
    IMAGENET_NORMALIZATION,
    ImageNetTransform,
    PretrainedUnavailable,
    TorchvisionMissing,
    imagenet_split_model,
    imagenet_transform,
)

__all__ = ["CIFAR_NORMALIZATION", "IMAGENET_NORMALIZATION", "MNIST_NORMALIZATION", "CifarCNN", "FeatureDecoder",
           "ImageNetTransform", "MLPDenoiser", "MLPReconstructor", "MnistMLP", "PretrainedUnavailable", "SplitClassifier", "TorchvisionMissing", "imagenet_split_model",
           "gradient_target", "imagenet_transform", "init_parameters", "ResidualReconstructor"]
