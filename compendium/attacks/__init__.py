"""Reconstruction attacks, one module per attack family."""
