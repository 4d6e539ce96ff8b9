"""compendium.validation: one rule per kind of input, one message format ``name=value; allowed: rule (what)``."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from compendium import validation


def test_integer():
    assert validation.integer("k", 3) == 3 and validation.integer("k", np.int64(0), minimum=0) == 0
    for bad in (0, 2.0, True, "3", None):
        with pytest.raises(ValueError, match=r"^k=.*; allowed: an integer >= 1$"):
            validation.integer("k", bad)
    assert np.array_equal(validation.integer("N", [1, 2.0, 3]), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"N=\[1, 2.5\]; allowed: an integer >= 1 \(data dimension\)"):
        validation.integer("N", [1, 2.5], what="data dimension")


def test_number_limits_and_message():
    assert validation.number("x", 0.5, above=0, below=1) == 0.5
    assert validation.positive("sigma", np.array([1.0, 2.0])).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match=r"^sigma=-1.0; allowed: a finite number > 0 \(noise multiplier\)$"):
        validation.positive("sigma", -1.0, what="noise multiplier")
    with pytest.raises(ValueError, match=r"allowed: a finite number >= 0 and < 1"):
        validation.number("momentum", 1.0, at_least=0, below=1)
    for bad in (float("nan"), float("inf"), None, True, "1", [1.0, float("nan")], []):
        with pytest.raises(ValueError, match="allowed: a finite number"):
            validation.number("x", bad)


def test_probability_open_and_closed():
    assert validation.probability("p", 0.3) == 0.3 and validation.probability("p", 0.0, closed=True) == 0.0
    for bad in (0.0, 1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match=r"p=.*; allowed: a probability in \(0, 1\)"):
            validation.probability("p", bad)
    with pytest.raises(ValueError, match=r"allowed: a probability in \[0, 1\]"):
        validation.probability("p", 1.5, closed=True)


def test_choice_grid_generator():
    assert validation.choice("scale", "ci", ("ci", "book")) == "ci"
    with pytest.raises(ValueError, match=r"scale='huge'; allowed: one of 'ci', 'book'"):
        validation.choice("scale", "huge", ("ci", "book"))
    assert validation.grid("sigmas", (0.1, 1)) == (0.1, 1)
    for bad in ((), 0.1, (0.1, 0.0), (1.0, float("inf")), ("a",)):
        with pytest.raises(ValueError, match="sigmas=.*; allowed: a non-empty list of finite numbers > 0"):
            validation.grid("sigmas", bad)
    g = torch.Generator()
    assert validation.generator("generator", g, cpu=True) is g and validation.generator("generator", None) is None
    with pytest.raises(ValueError, match="generator=.*allowed: None or a torch.Generator"):
        validation.generator("generator", np.random.default_rng(0))
