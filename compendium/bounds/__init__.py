"""Closed forms, one module per paper (formula and the paper's equation number in each docstring)."""
