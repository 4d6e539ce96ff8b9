"""The API reference's formulas as a reader writes them: the docstrings state each formula in ASCII inside a code
literal (````sigma^2 [(A^T A)^-1]_kk````), which reads well in ``help()`` and a terminal; on the book's page this
extension shows it as ``σ² [(AᵀA)⁻¹]ₖₖ``.  Only literals that hold an operator (``^``, ``||``, ``<=``, ``sqrt``,
`` - `` ...) are rewritten, and names with a dot or two underscores in a row never are, so a literal that names a
parameter, a function or a setting (``noise_multiplier``, ``cfg.seed``) is left as the code spells it.

Connected to autodoc's ``autodoc-process-docstring`` event (``_config.yml``: ``local_extensions``), together with
:func:`parameters_as_descriptions`, which lets napoleon read the docstrings' parameter lists; the docstrings themselves
are not changed.
"""
from __future__ import annotations

import re

GREEK = {"alpha": "α", "beta": "β", "gamma": "γ", "Gamma": "Γ", "delta": "δ", "Delta": "Δ", "epsilon": "ε",
         "eps": "ε", "zeta": "ζ", "eta": "η", "theta": "θ", "Theta": "Θ", "kappa": "κ", "lambda": "λ",
         "Lambda": "Λ", "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ", "Sigma": "Σ",
         "tau": "τ", "phi": "φ", "Phi": "Φ", "chi": "χ", "psi": "ψ", "omega": "ω", "Omega": "Ω"}
WORDS = {**GREEK, "abar": "ᾱ", "sqrt": "√", "sum": "∑", "grad": "∇", "infinity": "∞", "inf": "∞"}
SYMBOLS = {"||": "‖", "<=": "≤", ">=": "≥", "!=": "≠", "->": "→", "<-": "←", "+-": "±"}
SUPERSCRIPT = dict(zip("0123456789+-=()nijkTtdx", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱʲᵏᵀᵗᵈˣ"))
SUBSCRIPT = dict(zip("0123456789aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ"))

#: A literal is a formula when it holds one of these.
FORMULA = re.compile(r"\^|\|\||<=|>=|!=|->|\bsqrt\b|\bsum_| [-+*/=] ")
#: ... and not code: a dotted name (``cfg.seed``, ``torch.float64``) or a double underscore.
CODE = re.compile(r"[A-Za-z_]\.[A-Za-z_]|__")
LITERAL = re.compile(r"``([^`]+)``")
WORD = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(sorted(WORDS, key=len, reverse=True)) + r")(?![A-Za-z])")
POWER = re.compile(r"\^(\(([^()\s]+)\)|\{([^{}\s]+)\}|-?[0-9]+(?![.0-9])|-?[A-Za-z](?![A-Za-z0-9])|\+)")
NUMBERED = re.compile(r"(?<=[A-Za-zα-ωΑ-Ω])([0-9])(?![0-9A-Za-z])")  # x0, sigma1, H0
ROOT = re.compile(r"√\((\w+)\)")  # √(T) -> √T
ANGLE = re.compile(r"<(\S[^<>]*,[^<>]*\S)>")  # an inner product <g, t>
INDEX = re.compile(r"(?<=[A-Za-z0-9)\]α-ωΑ-Ωᾱ‖∑∇])_([a-z0-9]{1,2})(?![A-Za-z0-9_])")


def _word(match: re.Match) -> str:
    """A name's symbol, unless the name sits between underscores, inside an identifier (``max_grad_norm``)."""
    text, start, end = match.string, match.start(), match.end()
    inside = start > 0 and text[start - 1] == "_" and end < len(text) and text[end] == "_"
    return match.group(0) if inside else WORDS[match.group(1)]


def _script(text: str, table: dict[str, str]) -> str | None:
    return "".join(table[c] for c in text) if all(c in table for c in text) else None


def _power(match: re.Match) -> str:
    exponent = match.group(2) or match.group(3) or match.group(1)
    return _script(exponent, SUPERSCRIPT) or match.group(0)


def _index(match: re.Match) -> str:
    return _script(match.group(1), SUBSCRIPT) or match.group(0)


def formula(text: str) -> str:
    """``text`` with Greek names, ``sqrt``, ``sum``, ``grad``, ``||``, ``<=``, ``>=``, ``!=``, ``->``, ``<-``, ``+-``,
    powers (``^2``, ``^T``, ``^-1``, ``^(-1)``, ``^{-1}``, ``^+``), one- or two-character indices (``_k``, ``_kk``,
    ``_0``), a digit after a name (``x0``, ``sigma1``) and inner products ``<g, t>`` in Unicode; a power or index
    with a character Unicode cannot raise or lower (``^(-d/2)``, ``_g``) is left as it is."""
    for ascii_symbol, symbol in SYMBOLS.items():
        text = text.replace(ascii_symbol, symbol)
    text = WORD.sub(_word, text)
    text = POWER.sub(_power, text)
    text = NUMBERED.sub(lambda m: SUBSCRIPT[m.group(1)], text)
    text = ROOT.sub(r"√\1", ANGLE.sub(r"⟨\1⟩", text))
    return INDEX.sub(_index, text)


def literal(match: re.Match) -> str:
    """A code literal rewritten by :func:`formula` when it is a formula (:data:`FORMULA`, not :data:`CODE`)."""
    body = match.group(1)
    if not FORMULA.search(body) or CODE.search(body):
        return match.group(0)
    return f"``{formula(body)}``"


PARAMETER = re.compile(r"^(\s*)([\w*]+(?:, [\w*]+)*) : (.*)$")


def parameters_as_descriptions(lines: list[str]) -> list[str]:
    """The docstrings' NumPy-style "Parameters" sections write ``name : what it is`` on one line, which napoleon
    would read as ``name : type``: each becomes ``name`` with ``what it is`` under it.  A paragraph after the
    parameters that does not start with a name (``Returns ...``, a closing remark) would be read as one more
    parameter: it moves before the section."""
    out, i = [], 0
    while i < len(lines):
        if not (lines[i].strip() == "Parameters" and i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}):
            out.append(lines[i])
            i += 1
            continue
        end = i + 2
        while end < len(lines) and not (end + 1 < len(lines) and lines[end].strip()
                                        and set(lines[end + 1].strip()) == {"-"}):
            end += 1
        body = lines[i + 2:end]
        indent = min((len(line) - len(line.lstrip()) for line in body if line.strip()), default=0)
        fields, trailing = [], []
        for k, line in enumerate(body):
            starts = line.strip() and len(line) - len(line.lstrip()) == indent
            if trailing or (starts and k and not body[k - 1].strip() and not PARAMETER.match(line)):
                trailing.append(line[indent:] if line.strip() else "")
                continue
            match = PARAMETER.match(line) if starts else None
            fields += [f"{match[1]}{match[2]}", f"{match[1]}    {match[3]}"] if match else [line]
        out += [*trailing, *([""] if trailing else []), lines[i], lines[i + 1], *fields]
        i = end
    return out


def process_parameters(app, what, name, obj, options, lines: list[str]) -> None:
    """autodoc's hook, before napoleon's: :func:`parameters_as_descriptions`."""
    lines[:] = parameters_as_descriptions(lines)


def process_docstring(app, what, name, obj, options, lines: list[str]) -> None:
    """autodoc's hook: the docstring's lines with their formulas rewritten (a literal may span lines)."""
    lines[:] = LITERAL.sub(literal, "\n".join(lines)).split("\n")


def setup(app):
    app.connect("autodoc-process-docstring", process_parameters, priority=400)  # napoleon's runs at 500
    app.connect("autodoc-process-docstring", process_docstring)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
