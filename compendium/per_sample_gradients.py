"""Per-sample weight gradients of a batch, compared with one given vector per sample without forming them.

For a batch ``x_1, ..., x_B`` with labels ``y_b`` and a network whose samples do not interact (``eval()`` mode), let
``g_b = flatten(grad_W CE(f_W(x_b), y_b))`` be the weight gradient of sample ``b`` alone and ``t_b`` a vector of the
same length.  :class:`GradientProducts` returns ``||g_b||^2`` and ``<g_b, t_b>`` for every ``b`` from one forward and
one backward pass of the batch, differentiable in ``x`` (the guided samplers and gradient-matching attacks of the
diffusion chapter differentiate them once more).  A layer ``z = W a`` has the per-sample gradient ``g = delta a^T``
(``delta = dCE/dz``), so

* Linear: ``||g||^2 = ||delta||^2 ||a||^2`` and ``<g, T> = delta^T T a``;
* Conv2d: ``g = D U^T`` with ``U`` the unfolded input patches (``C k k x P``) and ``D`` the output gradients
  (``O x P``) over the ``P`` positions, so ``||g||^2 = sum (D^T D) * (U^T U)`` (two ``P x P`` Gram matrices: the
  "ghost norm" of Goodfellow 2015, Li et al. 2022) where ``P^2`` is below ``O C k^2``, else ``g`` is formed;
  ``<g, T> = sum (T U) * D``;
* BatchNorm2d (``eval()``): ``g_weight = sum_p delta x_hat``, ``g_bias = sum_p delta``, formed (one number per
  channel).

Why not ``torch.func.vmap(torch.func.grad(...))`` or opacus' grad samplers: both form every ``g_b``, and the guided
sampler's step is then dominated by element-wise work on ``B x m`` numbers (with ``vmap`` a step for 8 images took
about 2.5 times as long on the diffusion chapter's CNN and ResMini, 2 CPU cores); opacus' hooks are not
differentiable a second time.  The price is float cancellation in
``||g - t||^2 = ||g||^2 - 2 <g, t> + ||t||^2`` when ``g`` is within about ``1e-3 ||t||`` of ``t``: pass float64
inputs and networks where that matters.
"""
from __future__ import annotations

import torch
from torch import nn

SUPPORTED = (nn.Linear, nn.Conv2d, nn.BatchNorm2d)


def _layers(model: nn.Module) -> list[nn.Module]:
    """The modules that own trainable weights; a clear error for any this module cannot differentiate per sample."""
    layers = []
    for name, module in model.named_modules():
        own = [p for p in module.parameters(recurse=False) if p.requires_grad]
        if not own:
            continue
        if not isinstance(module, SUPPORTED):
            raise ValueError(f"layer {name!r} is a {type(module).__name__}; allowed: trainable weights only in "
                             f"{', '.join(t.__name__ for t in SUPPORTED)}")
        if isinstance(module, nn.Conv2d) and (module.groups != 1 or module.padding_mode != "zeros"
                                              or isinstance(module.padding, str)):
            raise ValueError(f"layer {name!r}: allowed: Conv2d with groups=1, numeric zero padding")
        if isinstance(module, nn.BatchNorm2d) and (module.training or not module.track_running_stats):
            raise ValueError(f"layer {name!r} is a BatchNorm2d in training mode: samples interact; allowed: eval()")
        layers.append(module)
    return layers


def _slices(model: nn.Module, targets: torch.Tensor) -> dict[int, torch.Tensor]:
    """Each trainable parameter's block of ``targets`` (B, m), in ``model.parameters()`` order, shaped like it."""
    params = [p for p in model.parameters() if p.requires_grad]
    size = sum(p.numel() for p in params)
    if targets.ndim != 2 or targets.shape[1] != size:
        raise ValueError(f"targets of shape {tuple(targets.shape)}; allowed: (B, {size}), one flat weight gradient "
                         "per sample in model.parameters() order")
    out, start = {}, 0
    for p in params:
        out[id(p)] = targets[:, start:start + p.numel()].reshape(len(targets), *p.shape)
        start += p.numel()
    return out


class GradientProducts:
    """``(||g_b||^2, <g_b, t_b>)`` per sample, two tensors of shape (B,), for ``g_b`` the weight gradient of the
    cross-entropy of sample ``b`` alone and ``t_b = targets[b]`` (the module docstring gives the formulas),
    differentiable in ``x``: ``GradientProducts(model, targets)(x, labels)``.  The layers and the targets' blocks are
    found once, since a sampler calls it at every step."""

    def __init__(self, model: nn.Module, targets: torch.Tensor):
        self.model, self.layers, self.blocks, self.count = model, _layers(model), _slices(model, targets), len(targets)

    def __call__(self, x: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if len(x) != len(labels) or len(x) != self.count:
            raise ValueError(f"x, labels and targets hold {len(x)}, {len(labels)} and {self.count} samples; "
                             "allowed: one label and one target per sample")
        inputs, outputs = {}, {}

        def keep(module, args, output):
            if module in outputs:
                raise ValueError(f"a {type(module).__name__} is called twice in one forward pass; allowed: each "
                                 "layer once (shared weights have no per-call gradient)")
            inputs[module], outputs[module] = args[0], output

        handles = [layer.register_forward_hook(keep) for layer in self.layers]
        try:
            logits = self.model(x)
        finally:
            for handle in handles:
                handle.remove()
        used = [layer for layer in self.layers if layer in outputs]
        deltas = torch.autograd.grad(nn.functional.cross_entropy(logits, labels, reduction="sum"),
                                     [outputs[layer] for layer in used], create_graph=True, allow_unused=True)
        square = x.new_zeros(len(x))
        dot = x.new_zeros(len(x))
        for layer, delta in zip(used, deltas):
            if delta is None:
                continue
            for layer_square, layer_dot in _layer_gradient(layer, inputs[layer], delta, self.blocks):
                square, dot = square + layer_square, dot + layer_dot
        return square, dot


def _formed(g: torch.Tensor, block: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(||g_b||^2, <g_b, t_b>)`` of a formed per-sample gradient ``g`` (B, ...) and its target block."""
    g, block = g.flatten(1), block.flatten(1)
    return (g * g).sum(1), (g * block).sum(1)


def _layer_gradient(layer: nn.Module, a: torch.Tensor, delta: torch.Tensor, blocks: dict) -> list:
    """``[(||g||^2, <g, t>), ...]`` of the layer's weight and its bias, each per sample (B,)."""
    weight = blocks[id(layer.weight)] if layer.weight is not None and layer.weight.requires_grad else None
    bias = blocks[id(layer.bias)] if layer.bias is not None and layer.bias.requires_grad else None
    out = []
    if isinstance(layer, nn.Linear):
        if a.ndim != 2:
            raise ValueError(f"a Linear layer's input of shape {tuple(a.shape)}; allowed: (B, features)")
        if weight is not None:
            dot = (torch.bmm(weight, a.unsqueeze(2)).squeeze(2) * delta).sum(1)
            out.append(((delta * delta).sum(1) * (a * a).sum(1), dot))
        if bias is not None:
            out.append(_formed(delta, bias))
    elif isinstance(layer, nn.Conv2d):
        u = nn.functional.unfold(a, layer.kernel_size, dilation=layer.dilation, padding=layer.padding,
                                 stride=layer.stride)  # (B, C k k, P)
        d = delta.flatten(2)  # (B, O, P)
        if weight is not None:
            positions, size = u.shape[2], weight[0].numel()
            if positions * positions <= size:  # the ghost norm: two P x P Gram matrices
                square = (torch.bmm(d.transpose(1, 2), d) * torch.bmm(u.transpose(1, 2), u)).sum((1, 2))
                dot = (torch.bmm(weight.flatten(2), u) * d).sum((1, 2))
                out.append((square, dot))
            else:
                out.append(_formed(torch.bmm(d, u.transpose(1, 2)), weight))
        if bias is not None:
            out.append(_formed(d.sum(2), bias))
    else:  # BatchNorm2d in eval(): a per-channel affine map of the normalised input
        shape = (1, -1, 1, 1)
        x_hat = (a - layer.running_mean.reshape(shape)) / torch.sqrt(layer.running_var.reshape(shape) + layer.eps)
        if weight is not None:
            out.append(_formed((delta * x_hat).sum((2, 3)), weight))
        if bias is not None:
            out.append(_formed(delta.sum((2, 3)), bias))
    return out
