"""Reconstruction metrics, one definition each, batched over the first axis.

All functions take a ground truth ``x`` and a reconstruction ``y`` of shape (batch, ...) (images: (B, C, H, W)) on
any device and return one value per sample as a float64 tensor.  Where scikit-image defines the same metric the
numbers agree with it (tested): MSE, PSNR with the ground truth's dynamic range as the peak (Ziller et al. 2024,
Def. 2; scikit-image's ``data_range=x.max()-x.min()``), NMI (``normalized_mutual_information``, 100 bins) and SSIM
(``structural_similarity`` with its defaults: 7x7 uniform window, K1=0.01, K2=0.03, sample covariances,
``data_range=1``).  They are written in torch rather than called from scikit-image so that a whole grid of
reconstructions is scored in one batched call on the CPU or a GPU.
"""
from __future__ import annotations

import functools

import numpy as np

import torch
import torch.nn.functional as F

from compendium import validation


# Largest number of values scored in one go: float64 intermediates then stay near 128 MB, so that e.g. 50 images of
# 3 x 1024 x 1024 (the paper's Figure 3) are scored in slices instead of needing gigabytes at once.
MAX_VALUES_PER_CALL = 2**24


def _sliced(metric):
    """Apply a per-sample metric to slices of the batch of at most MAX_VALUES_PER_CALL values and concatenate."""

    @functools.wraps(metric)
    def wrapper(x: torch.Tensor, y: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        per_call = max(1, MAX_VALUES_PER_CALL // max(1, x[0].numel())) if x.ndim >= 2 else len(x)
        if x.ndim < 2 or x.shape[0] <= per_call or x.shape != y.shape:
            return metric(x, y, *args, **kwargs)
        return torch.cat([metric(x[i : i + per_call], y[i : i + per_call], *args, **kwargs)
                          for i in range(0, x.shape[0], per_call)])

    return wrapper


def _pair(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same shape; got {tuple(x.shape)} and {tuple(y.shape)}")
    if x.ndim < 2:
        raise ValueError(f"x and y must be batched, shape (batch, ...); got {tuple(x.shape)}")
    return x.double(), y.double()


@_sliced
def mse(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Ziller et al. (2024) Def. 1: ``MSE(X, Y) = 1/N sum_i (x_i - y_i)^2`` per sample."""
    x, y = _pair(x, y)
    return (x - y).flatten(1).pow(2).mean(1)


@_sliced
def psnr(x: torch.Tensor, y: torch.Tensor, data_range: float | None = None) -> torch.Tensor:
    """Ziller et al. (2024) Def. 2: ``PSNR = 10 log10(R^2 / MSE(X, Y))`` dB with ``R = max X - min X`` the ground
    truth's range; ``data_range`` instead fixes a nominal ``R`` (From Mean to Extreme, Props. 4-5, and its code)."""
    x, y = _pair(x, y)
    if data_range is None:
        xf = x.flatten(1)
        rng = xf.max(1).values - xf.min(1).values
    elif data_range > 0:
        rng = torch.as_tensor(float(data_range), dtype=x.dtype, device=x.device)
    else:
        raise ValueError(f"data_range must be > 0 (or None for the ground truth's range); got {data_range!r}")
    return 10.0 * torch.log10(rng**2 / mse(x, y))


@_sliced
def ncc(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Ziller et al. (2024) Def. 3: Pearson correlation of the flattened samples, ``Cov(X,Y)/(sigma_X sigma_Y)``.

    The same 1/N normalisation in numerator and denominator (the paper mixes them, see the chapter's errata).
    """
    x, y = _pair(x, y)
    a = x.flatten(1) - x.flatten(1).mean(1, keepdim=True)
    b = y.flatten(1) - y.flatten(1).mean(1, keepdim=True)
    return (a * b).sum(1) / torch.sqrt((a * a).sum(1) * (b * b).sum(1))


def _bin_index(v: torch.Tensor, bins: int) -> torch.Tensor:
    """numpy.histogramdd's bin of each value, edges ``linspace(min, max, bins + 1)`` per sample, last edge closed."""
    lo = v.min(1, keepdim=True).values
    hi = v.max(1, keepdim=True).values
    step = (hi - lo) / bins
    edges = lo + torch.arange(bins + 1, dtype=v.dtype, device=v.device) * step  # numpy's linspace
    edges[:, -1] = hi[:, 0]
    idx = torch.searchsorted(edges.contiguous(), v.contiguous(), right=True) - 1
    return idx.clamp_(0, bins - 1)


@_sliced
def nmi(x: torch.Tensor, y: torch.Tensor, bins: int = 100) -> torch.Tensor:
    """Ziller et al. (2024) Def. C.1 (Studholme et al. 1999): ``NMI = (H(X) + H(Y)) / H(X, Y)`` from a joint histogram.

    Values lie in [1, 2]: 2 for identical images; for independent ones a finite-sample floor above 1.
    """
    x, y = _pair(x, y)
    xf, yf = x.flatten(1), y.flatten(1)
    batch = xf.shape[0]
    joint_idx = _bin_index(xf, bins) * bins + _bin_index(yf, bins)
    offsets = torch.arange(batch, device=xf.device)[:, None] * bins * bins
    counts = torch.bincount((joint_idx + offsets).flatten(), minlength=batch * bins * bins)
    p = counts.reshape(batch, bins, bins).double()
    p = p / p.sum((1, 2), keepdim=True)

    def entropy(q: torch.Tensor) -> torch.Tensor:
        return -(q * torch.log(torch.where(q > 0, q, 1.0))).flatten(1).sum(1)

    return (entropy(p.sum(2)) + entropy(p.sum(1))) / entropy(p)


@_sliced
def ssim(x: torch.Tensor, y: torch.Tensor, data_range: float = 1.0, win_size: int = 7) -> torch.Tensor:
    """Structural similarity (Wang et al. 2004) with scikit-image's defaults, averaged over channels and pixels.

    Local means, variances and covariance over a ``win_size`` uniform window (sample covariances, factor
    ``w^2/(w^2-1)``), ``S = (2 mu_x mu_y + C1)(2 s_xy + C2) / ((mu_x^2 + mu_y^2 + C1)(s_x^2 + s_y^2 + C2))`` with
    ``C1 = (0.01 L)^2``, ``C2 = (0.03 L)^2``; mean over the window positions that fit inside the image.
    """
    x, y = _pair(x, y)
    if x.ndim != 4:
        raise ValueError(f"ssim expects images of shape (batch, channels, height, width); got {tuple(x.shape)}")
    if min(x.shape[-2:]) < win_size:
        raise ValueError(f"images must be at least win_size={win_size} pixels; got {tuple(x.shape[-2:])}")
    b, c = x.shape[:2]
    x = x.reshape(b * c, 1, *x.shape[2:])
    y = y.reshape(b * c, 1, *y.shape[2:])

    def f(z: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(z, win_size, stride=1)

    cov_norm = win_size**2 / (win_size**2 - 1)
    ux, uy = f(x), f(y)
    vx = cov_norm * (f(x * x) - ux * ux)
    vy = cov_norm * (f(y * y) - uy * uy)
    vxy = cov_norm * (f(x * y) - ux * uy)
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))
    return s.reshape(b, -1).mean(1)


class LPIPSUnavailable(RuntimeError):
    """LPIPS cannot be computed here: the optional extra or its downloaded backbone weights are missing."""


@functools.lru_cache(maxsize=2)
def _lpips_model(net: str, pretrained_backbone: bool):
    try:
        import lpips  # optional extra: pip install -e ".[lpips]"
    except ImportError as err:
        raise LPIPSUnavailable(
            "LPIPS is not installed here, so the perceptual-similarity column is left out; it is an optional "
            "extra of the package (see the README's Dependencies: it needs torchvision)"
        ) from err
    try:
        model = lpips.LPIPS(net=net, pretrained=True, pnet_rand=not pretrained_backbone, verbose=False)
    except Exception as err:  # the torchvision backbone download fails offline with URLError/OSError
        raise LPIPSUnavailable(
            f"LPIPS is installed but could not load its ImageNet {net} backbone weights (torchvision downloads "
            f"them on first use, which needs the network), so the perceptual-similarity column is left out"
        ) from err
    return model.eval()


#: LPIPS's memory per pair of images and per value of one image (the backbone's activations for both images, in
#: float32, with allocator slack): LPIPS-VGG on 100 pairs at 3 x 224 x 224 took 10-13 GB at once, about 860 bytes.
LPIPS_BYTES_PER_VALUE = 1024
#: The share of the free GPU memory one LPIPS call may fill.
LPIPS_GPU_MEMORY_SHARE = 0.5
#: The pairs per LPIPS call on the CPU (where a larger batch is no faster and only holds more memory).
LPIPS_CPU_PAIRS = 8


def lpips_pairs_per_call(values_per_image: int, free_bytes: int | None) -> int:
    """How many pairs of images one LPIPS call scores: ``LPIPS_GPU_MEMORY_SHARE * free_bytes /
    (LPIPS_BYTES_PER_VALUE * values_per_image)`` (at least 1) given the free GPU memory ``free_bytes``, and
    ``LPIPS_CPU_PAIRS`` on the CPU (``free_bytes=None``)."""
    if free_bytes is None:
        return LPIPS_CPU_PAIRS
    return max(1, int(LPIPS_GPU_MEMORY_SHARE * free_bytes // (LPIPS_BYTES_PER_VALUE * values_per_image)))


def lpips(x: torch.Tensor, y: torch.Tensor, net: str = "alex", pretrained_backbone: bool = True, *,
          pairs_per_call: int | None = None) -> torch.Tensor:
    """Learned perceptual image patch similarity (Zhang et al. 2018), images in [0, 1] rescaled to [-1, 1].

    Needs the ``lpips`` extra and its backbone weights; raises :class:`LPIPSUnavailable` with the reason otherwise.
    ``pretrained_backbone=False`` uses a random backbone with the real linear heads: only for testing the plumbing.
    The pairs are scored ``pairs_per_call`` at a time (default :func:`lpips_pairs_per_call`: sized from the free
    GPU memory on CUDA, a few on the CPU), which gives the same values as one batch, without holding the backbone's
    activations of every pair at once.
    """
    if x.shape != y.shape or x.ndim != 4 or x.shape[1] != 3:
        raise ValueError(f"lpips expects two RGB batches of the same shape (B, 3, H, W); "
                         f"got {tuple(x.shape)}, {tuple(y.shape)}")
    if pairs_per_call is None:
        free = torch.cuda.mem_get_info(x.device)[0] if x.device.type == "cuda" else None
        pairs_per_call = lpips_pairs_per_call(x[0].numel(), free)
    validation.integer("pairs_per_call", pairs_per_call)
    model = _lpips_model(net, pretrained_backbone).to(x.device)
    with torch.no_grad():
        d = [model(x[i : i + pairs_per_call].float() * 2 - 1, y[i : i + pairs_per_call].float() * 2 - 1).flatten()
             for i in range(0, len(x), pairs_per_call)]
    return torch.cat(d).double()


def lpips_network(net: str = "vgg", device: str | torch.device = "cpu") -> torch.nn.Module:
    """The LPIPS network itself, frozen, for a differentiable loss on images in [-1, 1] (the transfer-learning
    chapter's reconstructor loss for CIFAR and CelebA uses ``net="vgg"``); raises :class:`LPIPSUnavailable` with the
    reason when it cannot be built here."""
    return _lpips_model(net, True).to(device).requires_grad_(False)


def lpips_status(net: str = "alex") -> tuple[bool, str]:
    """Whether real LPIPS with the ``net`` backbone can be computed here, and why not."""
    try:
        _lpips_model(net, True)
    except LPIPSUnavailable as err:
        return False, str(err)
    return True, f"LPIPS ({net}) available"


ALL = {"MSE": mse, "PSNR": psnr, "NCC": ncc, "NMI": nmi, "SSIM": ssim}


def score(x: torch.Tensor, y: torch.Tensor, *, lpips_net: str | None = None) -> dict[str, np.ndarray]:
    """Every metric of :data:`ALL` for a batch of reconstructions ``y`` of ``x``, one array per metric (one value
    per sample, on the CPU), plus ``"LPIPS"`` (``y`` clamped to [0, 1]) when ``lpips_net`` (``"alex"`` or ``"vgg"``)
    is given.  Put it in a ``pandas.DataFrame`` to get one row per reconstruction."""
    row = {name: metric(x, y).cpu().numpy() for name, metric in ALL.items()}
    if lpips_net is not None:
        row["LPIPS"] = lpips(x, y.clamp(0, 1), net=lpips_net).cpu().numpy()
    return row
