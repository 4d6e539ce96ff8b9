"""The reference compendium on data reconstruction attacks and differential privacy.

Closed-form bounds (:mod:`compendium.bounds`), the attacks that test them (:mod:`compendium.attacks`), the metrics,
data, DP-SGD glue and the build pipeline of the Jupyter Book that puts them side by side.
"""
__version__ = "0.1.0"
