"""The book's own Sphinx extensions (``book/_ext``), as functions."""
import importlib.util

import pytest

from compendium.base import repository_root


def _extension(name: str):
    spec = importlib.util.spec_from_file_location(name, repository_root() / "book" / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


docmath = _extension("docmath")
written = _extension("written_numbers")


@pytest.mark.parametrize("ascii_text, shown", [
    ("sigma^2 [(A^T A)^-1]_kk", "σ² [(Aᵀ A)⁻¹]ₖₖ"),
    ("||g||^2 = ||delta||^2 ||a||^2", "‖g‖² = ‖δ‖² ‖a‖²"),
    ("sigma >= Delta sqrt(2 ln(1.25/delta)) / eps", "σ ≥ Δ √(2 ln(1.25/δ)) / ε"),
    ("1/2 (beta lambda_min(J_g^T J_g)) sum_i sigma_i^2", "1/2 (β λ_min(J_gᵀ J_g)) ∑ᵢ σᵢ²"),
    ("C(K,k)|D|^-k -> x^(-1)", "C(K,k)|D|⁻ᵏ → x⁻¹"),
    ("w = (J^T J)^{-1} e_k", "w = (Jᵀ J)⁻¹ eₖ"),
    ("g = g0(x0) + N(0, sigma1^2), a = sqrt(T) / sigma", "g = g₀(x₀) + N(0, σ₁²), a = √T / σ"),
    ("<g, T> = sum (T U) * D, 1 < 2, 3 > 2", "⟨g, T⟩ = ∑ (T U) * D, 1 < 2, 3 > 2"),
    ("10^(-eta/10) log10", "10^(-η/10) log10"),
    ("x <- A^+ X, E_theta[phi_sigma] >= 0", "x ← A⁺ X, E_θ[φ_σ] ≥ 0"),
    # what Unicode cannot raise or lower stays; names are not split
    ("(2 pi sigma^2)^(-d/2)", "(2 π σ²)^(-d/2)"),
    ("noise_multiplier = sigma / C_g, mu_hat", "noise_multiplier = σ / C_g, μ_hat"),
    ("beta + zeta + eta + mu", "β + ζ + η + μ"),
    ("max_grad_norm >= ||X||, sqrt(abar_t)", "max_grad_norm ≥ ‖X‖, √ᾱₜ"),
    ("delta = N^-1.1", "δ = N^-1.1"),  # a decimal exponent Unicode cannot raise
])
def test_formula_in_unicode(ascii_text: str, shown: str) -> None:
    assert docmath.formula(ascii_text) == shown


def test_only_formula_literals_are_rewritten_in_a_docstring() -> None:
    lines = ["The bound ``sigma^2 [(A^T A)^-1]_kk`` with ``sigma`` the noise (``cfg.seed``,",
             "``torch.float64``, ``x.grad = None``) and ``eps`` for ``eps <=", "1``, ``x0 - theta``."]
    docmath.process_docstring(None, "function", "f", None, {}, lines)
    assert lines == ["The bound ``σ² [(Aᵀ A)⁻¹]ₖₖ`` with ``sigma`` the noise (``cfg.seed``,",
                     "``torch.float64``, ``x.grad = None``) and ``eps`` for ``ε ≤", "1``, ``x₀ - θ``."]


def test_parameter_lines_become_descriptions_and_closing_prose_moves_up() -> None:
    lines = ["Invert it.", "", "Parameters", "----------", "steps : number of Adam steps (at least 1).",
             "lsqr_btol, iter_lim : scipy's ``btol`` and cap; a long", "    description.", "",
             "Returns an :class:`InversionResult`.", "Deterministic.", "", "Notes", "-----", "text"]
    assert docmath.parameters_as_descriptions(lines) == [
        "Invert it.", "", "Returns an :class:`InversionResult`.", "Deterministic.", "", "", "Parameters",
        "----------", "steps", "    number of Adam steps (at least 1).", "lsqr_btol, iter_lim",
        "    scipy's ``btol`` and cap; a long", "    description.", "", "Notes", "-----", "text"]


def test_numbers_in_text_are_written_and_code_keeps_its_spelling() -> None:
    from docutils import nodes

    paragraph = nodes.paragraph("", "", nodes.Text("MSE 3.6552e-02, "), nodes.literal("", "delta=1e-5"),
                                nodes.inline("", "", nodes.Text("residual 8.0e-04")))
    document = nodes.section("", paragraph)
    written.write_numbers(None, document, "page")
    assert paragraph.astext() == "MSE 3.6552\u00a0×\u00a010⁻², delta=1e-5residual 8.0\u00a0×\u00a010⁻⁴"
