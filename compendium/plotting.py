"""One figure style for the whole book: theory as dashed lines, experiment as points or box plots.

Colours follow the papers where they name them (Ziller et al.: bounds dashed orange, dimension-aware NCC bound
dashed purple); our exact or corrected curves are dotted black.  Functions return figures; notebooks show them.
"""
from __future__ import annotations

import os
import re

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
import torch
from IPython.display import display
from myst_nb import glue

from compendium.base import BOOK_BUILD

BOUND = "#ff7f0e"  # the paper's bound on the expectation
DIM_BOUND = "#9467bd"  # the dimension-aware NCC bound
EXACT = "black"  # our exact / corrected theory
EMPIRICAL = "#1f77b4"


#: The book's column shows a figure about 676 px wide; a figure saved wider is scaled down, and its text with it.
#: Figures are at most WIDTH inches wide (110 dpi: 770 px, scaled by 0.88) with text of FONT points, so that tick
#: and axis labels appear at least at the body text's 16 px; at most three panels a row.
WIDTH = 7.0
FONT = 12.0


def set_style() -> None:
    """The book's figure style: seaborn whitegrid, text of :data:`FONT` points (legends one point smaller), compact
    layout.  Size figures at most :data:`WIDTH` inches wide."""
    sns.set_theme(style="whitegrid", context="notebook")
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 110, "figure.constrained_layout.use": True,
                         "font.size": FONT, "axes.labelsize": FONT, "axes.titlesize": FONT, "xtick.labelsize": FONT,
                         "ytick.labelsize": FONT, "legend.fontsize": FONT - 1, "legend.title_fontsize": FONT - 1,
                         "figure.titlesize": FONT + 1})


def hue_colours(values) -> dict:
    """The colour of each value of a hue (Figure 3: the resolutions), shared by the points and the theory lines."""
    values = list(values)
    return dict(zip(values, sns.color_palette("viridis", len(values))))


def metric_grid(frame, metrics, row: str, *, hue: str | None = None, theory=None, logy=(),
                units=None, title=None, row_label=None, hue_unit="", row_height: float = 2.1):
    """Experiments as points (mean over samples, bars from the 10 % to the 90 % quantile) against ``sigma``, theory
    as lines: one row of panels per value of ``row``, one column per metric (at most three), :data:`WIDTH` wide.

    ``theory`` maps ``(metric, row_value)`` to ``(x, y, label, colour, linestyle)`` curves; the legend lists every
    label once.  With ``hue`` the points of each value are coloured by :func:`hue_colours` and offset slightly
    along the (log) axis so that their bars do not overlap."""
    if len(metrics) > 3:
        raise ValueError(f"metrics={metrics!r}; allowed: at most three panels per row")
    rows = sorted(frame[row].unique())
    hues = [None] if hue is None else sorted(frame[hue].unique())
    colours = hue_colours(hues) if hue else {None: EMPIRICAL}
    offsets = dict(zip(hues, 10 ** (0.045 * (np.arange(len(hues)) - (len(hues) - 1) / 2))))
    fig, axes = plt.subplots(len(rows), len(metrics), figsize=(WIDTH, row_height * len(rows) + 1.2), sharex=True,
                             squeeze=False, layout="constrained")
    for i, rv in enumerate(rows):
        for j, m in enumerate(metrics):
            ax = axes[i, j]
            for xs, ys, label, colour, style in (theory or {}).get((m, rv), []):
                ax.plot(xs, ys, color=colour, linestyle=style, lw=1.6, label=label)
            for h in hues:
                sub = frame[frame[row] == rv] if h is None else frame[(frame[row] == rv) & (frame[hue] == h)]
                q = sub.groupby("sigma")[m].agg(mean="mean", lo=lambda s: s.quantile(0.1), hi=lambda s: s.quantile(0.9))
                label = "experiment: mean, 10–90 %" if h is None else f"experiment, {h}{hue_unit}"
                ax.errorbar(q.index * offsets[h], q["mean"], yerr=[q["mean"] - q.lo, q.hi - q["mean"]], fmt="o", ms=3.5,
                            elinewidth=1, capsize=0, color=colours[h], label=label, zorder=3)
            ax.set_xscale("log")
            if m in logy:
                ax.set_yscale("log")
            if i == 0:
                ax.set_title(m)
            if i == len(rows) - 1:
                ax.set_xlabel(r"noise multiplier $\sigma$")
            unit = f" [{units[m]}]" if units and m in units else ""
            ax.set_ylabel(f"{row_label or row} = {sci(rv)}\n{m}{unit}" if j == 0 else f"{m}{unit}")
    handles = {}
    for ax in axes.flat:
        for hd, lb in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lb, hd)
    order = sorted(handles, key=lambda lb: not lb.startswith("experiment"))  # experiments first, then the theory
    fig.legend([handles[lb] for lb in order], order, loc="outside lower center", ncol=3 if hue else 2)
    if title:
        fig.suptitle(title)
    return fig


def image_grid(images: torch.Tensor, row_labels, col_labels, title=None, size=1.6, frames=None):
    """Show a (rows, cols, C, H, W) tensor of images (C = 3 colour or 1 gray) clamped to [0, 1], with labels.
    ``frames``, a (rows, cols) boolean array, draws a green frame around the images where it is true (a successful
    reconstruction) and sets the row labels horizontally, as short labels beside small images read best."""
    rows, cols = images.shape[:2]
    fig, axes = plt.subplots(rows, cols, figsize=(size * cols, size * rows), squeeze=False)
    for i in range(rows):
        for j in range(cols):
            ax = axes[i, j]
            img = np.moveaxis(images[i, j].clamp(0, 1).cpu().numpy(), 0, -1)
            if img.shape[-1] == 1:
                ax.imshow(img[..., 0], cmap="gray", vmin=0, vmax=1, interpolation="nearest")
            else:
                ax.imshow(img, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
            if i == 0:
                ax.set_title(col_labels[j], fontsize="medium")
            if j == 0:
                ax.set_ylabel(row_labels[i], fontsize="medium")
                if frames is not None:
                    ax.yaxis.label.set(rotation=0, ha="right", va="center")
            if frames is not None and frames[i][j]:
                ax.spines[:].set_visible(True)
                ax.spines[:].set(edgecolor="tab:green", linewidth=3)
    if title:
        fig.suptitle(title)
    return fig


def bound_histograms(panels: dict, xlabel: str, title=None, xlims=None, bins: int = 256, size=(4.4, 2.8)):
    """The HCR chapter's histograms (the paper's Figures 1, 3, 5 and 6): one panel per ``{title: values}`` entry,
    laid out in rows of two, each a ``bins``-bin histogram over the full range of its values (as the paper's
    ``np.histogram(values, bins=256)``), drawn black like the paper's; ``xlims`` (``{title: (lo, hi)}``) clips the
    display window only, and the panel then says how many values lie off-plot."""
    keys = list(panels)
    cols = min(2, len(keys))
    rows = -(-len(keys) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(size[0] * cols, size[1] * rows), squeeze=False,
                             layout="constrained")
    for ax, key in zip(axes.flat, keys):
        values = np.ravel(panels[key])
        ax.hist(values, bins=bins, color="black", histtype="stepfilled", edgecolor="black", linewidth=0.5)
        ax.set_title(key, fontsize="small")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("number of modes")
        if xlims and key in xlims:
            lo, hi = xlims[key]
            ax.set_xlim(lo, hi)
            off = int(np.sum((values < lo) | (values > hi)))
            if off:
                ax.text(0.98, 0.95, f"{off} off-plot", transform=ax.transAxes, ha="right", va="top",
                        fontsize="x-small")
    for ax in list(axes.flat)[len(keys):]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    return fig


#: Columns whose name starts with one of these hold a paper's own numbers; :func:`table` shades them, so the reader
#: finds the paper's value next to ours.
PAPER_PREFIXES = ("paper", "Paper")


#: digits and minus sign as superscripts, for the exponents of :func:`sci`
SUPERSCRIPTS = str.maketrans("0123456789-", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b")


#: A number in Python's exponent notation inside a text: ``1.2e-05``, ``-3e+07``, ``1e-9``.
EXPONENT_NOTATION = re.compile(r"(?<![\w.])(-?)(\d+(?:\.\d+)?)e([+-]?\d+)(?!\w|\.\d)")


#: A hyphen-minus standing as a minus sign: before a number, at the start or after a space, a bracket, a sign of
#: relation or a separator (``-0.04``, ``(-40.0)``, ``= -1``), not inside a word or a range (``CIFAR-10``, ``2-4``).
HYPHEN_MINUS = re.compile(r"(?<![^\s(\[=≈<>≤≥:,;])-(?=\.?\d)")


def written_numbers(text: str) -> str:
    """``text`` with every number in exponent notation written as a reader writes it (``1.2e-05`` ->
    ``1.2 × 10⁻⁵``, ``1e-9`` -> ``10⁻⁹``, ``-3e+07`` -> ``−3 × 10⁷``), its digits kept, and a minus sign (−) for the
    hyphen before a negative number (:data:`HYPHEN_MINUS`); :func:`sci` formats with it."""
    def written(match: re.Match) -> str:
        sign, mantissa, exponent = match.groups()
        power = "10" + str(int(exponent)).translate(SUPERSCRIPTS)
        number = power if float(mantissa) == 1 else f"{mantissa}\u00a0×\u00a0{power}"
        return ("\u2212" if sign else "") + number

    return HYPHEN_MINUS.sub("\u2212", EXPONENT_NOTATION.sub(written, text))


def plain_log_ticks(ax, axis: str = "x") -> None:
    """Label a log axis at 1, 2 and 5 times the powers of ten, as plain numbers (``5``, ``10``, ``20``), with no
    labelled minor ticks: over about a decade matplotlib's default labels either one power of ten alone or every
    minor tick in crowded ``4×10⁰``-style labels."""
    from matplotlib import ticker

    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    target.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    target.set_minor_formatter(ticker.NullFormatter())


def sci(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits as a reader writes it: ``0.0123``, ``4.5 × 10⁻¹²`` (never
    ``4.5e-12``; non-breaking spaces keep it on one line, :func:`written_numbers`), ``10⁻⁵`` for ``1e-05``, a minus
    sign (−) before a negative one, ``∞`` for infinity."""
    text = written_numbers(f"{value:.{digits}g}".replace("inf", "∞"))
    return "\u2212" + text[1:] if text.startswith("-") else text


#: ASCII spellings in a result table's column names and the symbols its page shows instead (a frame's own column
#: names, which code indexes, are left as they are).
HEADER_SYMBOLS = tuple((re.compile(pattern), symbol) for pattern, symbol in (
    (r"\bsigma\b", "σ"), (r"\bkappa\b", "κ"), (r"\bdelta\b", "δ"), (r"\bepsilon\b", "ε"), (r"\bzeta\b", "ζ"),
    (r"\btau\b", "τ"), (r"\bmu\b", "μ"), (r"\brho\b", "ρ"), (r"\bgamma\b", "γ"), (r"\balpha\b", "α"),
    (r"\bbeta\b", "β"), (r"\beta\b", "η"), (r"\|\|", "‖"), (r"\|X\|", "‖X‖"), (r"<=", "≤"), (r">=", "≥"),
    (r"->", "→"), (r"\blog10\b", "log₁₀"), (r"\bm_r\b", "mᵣ"), (r"^-", "−"), (r"\(N-1\)", "(N − 1)")))


def header(name) -> str:
    """A column name as a result table shows it: :data:`HEADER_SYMBOLS` replaced (``"sigma"`` -> ``"σ"``)."""
    text = str(name)
    for pattern, symbol in HEADER_SYMBOLS:
        text = pattern.sub(symbol, text)
    return text


#: The number of columns from which a result table becomes one card per row on a phone (three or fewer wrap to the
#: screen's width).
CARDS_FROM_COLUMNS = 4

#: A cell of pandas' HTML table: its opening tag, its content (text, perhaps an unescaped "<", perhaps markup) and
#: its closing tag; in the content, a tag (kept as it is) or an underscore (:meth:`Table._repr_html_`).
_CELL = re.compile(r"(<td\b[^>]*>)(.*?)(</td>)", re.DOTALL)
_BREAKABLE = re.compile(r"(<[A-Za-z/][^>]*>)|_")


class Table:
    """A result table for a notebook: shown as the styled HTML table, with a plain-text form that is the table's
    content as displayed, rounded as in the HTML (a pandas ``Styler``'s own text form holds a memory address, which
    differs on every run and would break nbval's comparison of the cell).  ``styler`` is the pandas ``Styler``."""

    def __init__(self, styler, frame):
        self.styler, self.frame = styler, frame

    def _repr_html_(self) -> str:
        """The styled table, a cell's name such as ``worst_case_success_subsampled_numerical_error`` free to break
        after its underscores (``<wbr>``), so that on a phone it wraps instead of pushing the values off the screen;
        its text, copied, is unchanged."""
        return _CELL.sub(lambda m: m[1] + _BREAKABLE.sub(lambda b: b[1] or "_<wbr>", m[2]) + m[3],
                         self.styler.to_html())

    def __repr__(self) -> str:
        return self.styler.to_string(delimiter="  ")


def table(frame, *, digits: int = 4, formats: dict | None = None, caption: str | None = None,
          errors: bool = False) -> Table:
    """The book's one table style: a result table as an HTML table that wraps to the page (see :class:`Table`).

    Numbers are shown with ``digits`` significant digits (whole numbers below 10^7 in full), truth values as "yes"
    and "no", never broken across lines (``formats`` maps a column to a format string or callable instead), missing
    values as "—", the index hidden; columns named ``paper...`` are shaded so that a paper's value reads as the
    neighbour of ours (put them next to each other in ``frame``). With ``errors`` a column ``"X SE"`` (a standard
    error) joins its column ``"X"`` as ``mean ± SE`` (the SE to two significant digits, the mean to the same decimal
    place). A table of :data:`CARDS_FROM_COLUMNS` columns or more is shown on a phone as one card per row, each cell
    under its column's name (the class ``cards-on-phone``): scrolled sideways in its box, it hid the columns that the
    prose compares. Cell padding and the page width come from ``book/_static/custom.css``. The table's HTML id is
    derived from its content, so a re-executed notebook produces the same output (nbval compares it)."""
    import hashlib

    def number(value, d=digits):
        if float(value).is_integer() and abs(value) < 1e7:  # a count: 20000, not 2e+04
            return f"{int(value)}"
        return sci(value, d)

    def with_error(mean, se):  # the SE to two significant digits and the mean to the same decimal place
        if not np.isfinite(mean):
            return "—"
        if not np.isfinite(se) or se <= 0:
            return number(mean)
        decimals = max(0, 1 - int(np.floor(np.log10(se))))
        return f"{mean:.{decimals}f}\u00a0±\u00a0{se:.{decimals}f}".replace("-", "\u2212")

    joined = []
    if errors:
        frame = frame.copy()
        for column in [c for c in frame.columns if f"{c} SE" in frame.columns]:
            frame[column] = [with_error(m, e) for m, e in zip(frame[column], frame.pop(f"{column} SE"))]
            joined.append(column)
    formats = dict(formats or {})
    for column in frame.columns:
        if column not in formats and frame[column].dtype.kind in "fc":
            formats[column] = number
        elif column not in formats and frame[column].dtype.kind == "b":
            formats[column] = lambda value: "yes" if value else "no"
    styler = frame.style.format(formats, na_rep="—").hide(axis="index")
    text = [c for c in frame.columns if frame[c].dtype.kind in "OSU" and c not in joined]
    if text:  # words read from the left, numbers line up on the right
        styler = styler.set_properties(subset=text, **{"text-align": "left"})
    paper = [c for c in frame.columns if str(c).startswith(PAPER_PREFIXES)]
    if paper:
        styler = styler.set_properties(subset=paper, **{"background-color": "#f1f1f4", "font-style": "italic"})
    styler = styler.relabel_index([header(c) for c in frame.columns], axis="columns")
    if caption:
        styler = styler.set_caption(caption)
    digest = hashlib.sha256(frame.to_csv().encode() + (caption or "").encode()).hexdigest()[:10]
    classes = "compendium-table cards-on-phone" if len(frame.columns) >= CARDS_FROM_COLUMNS else "compendium-table"
    return Table(styler.set_uuid(f"t{digest}").set_table_attributes(f'class="{classes}"'), frame)


def show_figure(key: str, fig) -> None:
    """A chapter's figure: glued under ``key`` (myst-nb) for the ``{glue:figure}`` directive under its cell, which
    numbers and captions it on the book's page, and also shown inline in a live kernel (Jupyter, Binder, Colab), but
    not while the book's build executes the chapter (:data:`compendium.base.BOOK_BUILD`), so that the page shows it
    once.  The figure is closed afterwards."""
    glue(key, fig, display=False)
    if not os.environ.get(BOOK_BUILD):
        display(fig)
    plt.close(fig)
