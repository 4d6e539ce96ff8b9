"""Every network of the project: the small split classifiers and the feature decoder it trains, the transfer-learning
chapter's reconstructors, the diffusion chapter's attacked networks, and the pretrained TorchVision ImageNet models of
the HCR chapter's ``paper`` scale and the transfer-learning chapter's paper-scale extractors (``VGGTiny``,
``transfer_extractor``; TorchVision is imported only when one is built).  The diffusion denoisers live in
:mod:`compendium.models.denoisers`, imported on its own: it needs ``diffusers``, which the other chapters do not
load."""
from compendium.models.classifiers import (
    CIFAR_NORMALIZATION,
    MNIST_NORMALIZATION,
    CifarCNN,
    MnistMLP,
    SplitClassifier,
    VGGTiny,
    init_parameters,
)
from compendium.models.decoders import FeatureDecoder
from compendium.models.gradient_targets import gradient_target
from compendium.models.reconstructors import MLPReconstructor, ResidualReconstructor
from compendium.models.pretrained import (
    IMAGENET_NORMALIZATION,
    ImageNetTransform,
    PretrainedUnavailable,
    TorchvisionMissing,
    TransferTransform,
    imagenet_split_model,
    imagenet_transform,
    transfer_extractor,
    transfer_transform,
)

__all__ = ["CIFAR_NORMALIZATION", "IMAGENET_NORMALIZATION", "MNIST_NORMALIZATION", "CifarCNN", "FeatureDecoder",
           "ImageNetTransform", "MLPReconstructor", "MnistMLP", "PretrainedUnavailable", "SplitClassifier",
           "TorchvisionMissing", "imagenet_split_model",
           "gradient_target", "imagenet_transform", "init_parameters", "ResidualReconstructor", "TransferTransform",
           "VGGTiny", "transfer_extractor", "transfer_transform"]
