"""One definition of each input rule of the package, and one message format.

Every check raises :class:`ValueError` before any computation, with the message

    ``<name>=<value>; allowed: <rule>[ (<what the parameter is>)]``

for example ``sigma=-1.0; allowed: a finite number > 0 (noise multiplier)``.  Scalars come back as Python numbers;
array-likes (the closed-form bounds are vectorised) come back as float ``numpy`` arrays, checked elementwise.
Imports nothing from the package (see :mod:`compendium.base`).
"""
from __future__ import annotations

import math
from typing import Iterable

import numpy as np
import torch

__all__ = ["choice", "generator", "grid", "integer", "number", "positive", "probability"]


def _fail(name: str, value, rule: str, what: str | None) -> ValueError:
    return ValueError(f"{name}={value!r}; allowed: {rule}" + (f" ({what})" if what else ""))


def _is_scalar(value) -> bool:
    return np.ndim(value) == 0 and not isinstance(value, (str, bytes))


def seed(value) -> int:
    """The one rule for a run's seed (chapter settings, ``book``, the command line): an integer ``>= 0``."""
    return integer("seed", value, minimum=0)


def integer(name: str, value, *, minimum: int = 1, what: str | None = None):
    """An integer ``>= minimum``: a Python or NumPy integer (``bool`` is refused), returned as ``int``; or an
    array-like of integral values, returned as a float array."""
    rule = f"an integer >= {minimum}"
    if isinstance(value, (str, bytes)):
        raise _fail(name, value, rule, what)
    if _is_scalar(value):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
            raise _fail(name, value, rule, what)
        return int(value)
    try:
        v = np.asarray(value, float)
    except (TypeError, ValueError) as err:
        raise _fail(name, value, rule, what) from err
    if v.size == 0 or not np.all(np.isfinite(v) & (v == np.round(v)) & (v >= minimum)):
        raise _fail(name, value, rule, what)
    return v


def number(name: str, value, *, above: float | None = None, at_least: float | None = None,
           below: float | None = None, at_most: float | None = None, what: str | None = None):
    """A finite real number within the given limits (``above``/``below`` strict, ``at_least``/``at_most`` not):
    a Python ``float`` for a scalar, a float array (checked elementwise) for an array-like."""
    limits = [f"> {above:g}" if above is not None else None, f">= {at_least:g}" if at_least is not None else None,
              f"< {below:g}" if below is not None else None, f"<= {at_most:g}" if at_most is not None else None]
    rule = "a finite number" + "".join(f" {part}" if i == 0 else f" and {part}"
                                       for i, part in enumerate(p for p in limits if p))
    if isinstance(value, (bool, np.bool_, str, bytes)) or value is None:
        raise _fail(name, value, rule, what)
    try:
        v = np.asarray(value, float)
    except (TypeError, ValueError) as err:
        raise _fail(name, value, rule, what) from err
    ok = np.isfinite(v)
    if above is not None:
        ok &= v > above
    if at_least is not None:
        ok &= v >= at_least
    if below is not None:
        ok &= v < below
    if at_most is not None:
        ok &= v <= at_most
    if v.size == 0 or not np.all(ok):
        raise _fail(name, value, rule, what)
    return float(v) if v.ndim == 0 else v


def positive(name: str, value, *, what: str | None = None):
    """A finite number ``> 0`` (scalar or elementwise); see :func:`number`."""
    return number(name, value, above=0.0, what=what)


def probability(name: str, value, *, closed: bool = False, what: str | None = None):
    """A probability: in the open interval ``(0, 1)``, or in ``[0, 1]`` when ``closed``."""
    rule = "a probability in [0, 1]" if closed else "a probability in (0, 1)"
    try:
        v = np.asarray(value, float)
    except (TypeError, ValueError) as err:
        raise _fail(name, value, rule, what) from err
    inside = (v >= 0) & (v <= 1) if closed else (v > 0) & (v < 1)
    if isinstance(value, (bool, np.bool_)) or v.size == 0 or not np.all(inside):
        raise _fail(name, value, rule, what)
    return float(v) if v.ndim == 0 else v


def choice(name: str, value, allowed: Iterable):
    """One of ``allowed``."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise _fail(name, value, "one of " + ", ".join(map(repr, allowed)), None)
    return value


def grid(name: str, values, *, what: str | None = None) -> tuple[float, ...]:
    """A non-empty tuple of finite numbers ``> 0`` (a grid of noise multipliers, norms, sizes)."""
    rule = "a non-empty list of finite numbers > 0"
    if not isinstance(values, (tuple, list)) or not values:
        raise _fail(name, values, rule, what)
    for v in values:
        if isinstance(v, (bool, str)) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not (math.isfinite(v) and v > 0):
            raise _fail(name, values, rule, what)
    return tuple(values)


def generator(name: str, value, *, cpu: bool = False):
    """``None`` or a ``torch.Generator`` (on the CPU when ``cpu``)."""
    if value is None:
        return value
    if not isinstance(value, torch.Generator):
        raise _fail(name, type(value).__name__, "None or a torch.Generator", None)
    if cpu and value.device.type != "cpu":
        raise _fail(name, f"a generator on {value.device}", "a CPU torch.Generator (noise is drawn on the CPU)",
                    None)
    return value
