"""compendium.plotting: the book's one table style and figure style."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from compendium import plotting  # noqa: E402


def test_table_numbers_stay_on_one_line_and_paper_columns_are_shaded():
    frame = pd.DataFrame({"N": [4, 10], "ours": [8.3216e-07, np.nan], "paper ours": [8.3e-07, 0.1],
                          "label": ["a", "b"]})
    table = plotting.table(frame, digits=4)
    html = table._repr_html_()
    assert "8.322\u00a0×\u00a010⁻⁷" in html and "—" in html  # one line; missing values as a dash
    assert "background-color: #f1f1f4" in html and html.count("_col2") >= 2  # the paper's column is shaded
    assert 'class="compendium-table cards-on-phone"' in html


def test_table_cells_may_break_after_underscores_and_only_there():
    table = plotting.table(pd.DataFrame({"key": ["worst_case_success", "for q < 1 see a_b"], "value": [0.5, 1]}))
    html = table._repr_html_()
    assert ">worst_<wbr>case_<wbr>success<" in html and "<wbr>" not in repr(table)
    assert ">for q < 1 see a_<wbr>b<" in html  # a cell's unescaped "<" is text
    assert html.count("<wbr>") == 3  # not in the ids and class names of the cells and the style sheet
    link = plotting.table(pd.DataFrame({"see": ['<a href="x_y.html">x_y</a>']}))._repr_html_()
    assert '<a href="x_y.html">x_<wbr>y</a>' in link  # markup in a cell is kept as it is


def test_a_table_of_four_columns_or_more_is_cards_on_a_phone():
    frame = pd.DataFrame({"σ": [0.5, 1.0], "ours": [0.1, 0.2], "paper": [0.1, 0.3], "gap": [0.0, 0.1]})
    cards = plotting.table(frame)._repr_html_()
    assert 'class="compendium-table cards-on-phone"' in cards and cards.count("<th ") == 4  # the labels' names
    assert 'class="compendium-table"' in plotting.table(frame.drop(columns="gap"))._repr_html_()  # wraps instead


def test_table_writes_truth_values_as_words():
    html = plotting.table(pd.DataFrame({"holds": [True, False]}))._repr_html_()
    assert ">yes<" in html and ">no<" in html and "True" not in html


def test_table_shows_whole_numbers_in_full_and_others_to_the_digits():
    frame = pd.DataFrame({"value": [1000.0, 20000.0, 0.2, 98.25, 3e7]})
    html = plotting.table(frame, digits=3)._repr_html_()
    assert all(f">{text}<" in html for text in ("1000", "20000", "0.2", "98.2", "3\u00a0×\u00a010⁷"))


@pytest.mark.parametrize("value, digits, text", [
    (1e-5, 3, "10⁻⁵"), (4.5e-12, 3, "4.5\u00a0×\u00a010⁻¹²"), (0.0123, 3, "0.0123"),
    (-3.04e-7, 2, "−3\u00a0×\u00a010⁻⁷"), (-1e-5, 3, "−10⁻⁵"), (1.5e300, 2, "1.5\u00a0×\u00a010³⁰⁰"),
    (np.inf, 3, "∞"), (-np.inf, 3, "−∞"), (-0.1421, 4, "−0.1421")])
def test_sci_writes_powers_of_ten_as_a_reader_does(value: float, digits: int, text: str):
    assert plotting.sci(value, digits) == text


@pytest.mark.parametrize("text, written", [
    ("to 1e-9", "to 10⁻⁹"),
    ("ratio 3.77e+07, p 3.54e-63.", "ratio 3.77\u00a0×\u00a010⁷, p 3.54\u00a0×\u00a010⁻⁶³."),
    ("MSE -1.2e-05", "MSE −1.2\u00a0×\u00a010⁻⁵"),
    ("x1e-5, model.e5, 1e-5.3, 0.25", "x1e-5, model.e5, 1e-5.3, 0.25"),  # names and other numbers stay
    ("gap -0.0397, slope (-0.502), = -1 and -.5", "gap −0.0397, slope (−0.502), = −1 and −.5"),  # minus signs
    ("CIFAR-10, 2-4, N-1, x-1, --steps 10, a - 3", "CIFAR-10, 2-4, N-1, x-1, --steps 10, a - 3"),  # hyphens stay
])
def test_written_numbers_as_sci_writes_them(text: str, written: str):
    assert plotting.written_numbers(text) == written


def test_table_joins_a_standard_error_to_its_mean():
    frame = pd.DataFrame({"PSNR": [40.7611, np.nan, 25.0], "PSNR SE": [1.1096, 0.5, np.nan], "SE": [1.0, 2.0, 3.0]})
    shown = plotting.table(frame, digits=3, errors=True).frame
    assert list(shown.columns) == ["PSNR", "SE"]  # a bare "SE" column has no mean to join
    assert shown["PSNR"].tolist() == ["40.8\u00a0±\u00a01.1", "—", "25"]
    assert list(frame.columns) == ["PSNR", "PSNR SE", "SE"]  # the caller's frame is left as it was
    # the mean to the SE's last digit
    rates = pd.DataFrame({"r": [21.04, 0.53214, 467.3, -0.0123], "r SE": [1.1, 0.01634, 12.4, 0.004]})
    assert plotting.table(rates, errors=True).frame["r"].tolist() == [
        "21.0\u00a0±\u00a01.1", "0.532\u00a0±\u00a00.016", "467\u00a0±\u00a012", "\u22120.0123\u00a0±\u00a00.0040"]


def test_table_output_is_the_same_on_every_run():
    frame = pd.DataFrame({"x": [1.23456789, 2.0]})
    first, second = plotting.table(frame, digits=3), plotting.table(frame.copy(), digits=3)
    assert first._repr_html_() == second._repr_html_()  # content-derived ids: nbval compares the HTML
    assert repr(first) == repr(second) and "1.23" in repr(first) and "0x" not in repr(first)


def test_set_style_gives_page_readable_text():
    plotting.set_style()
    assert matplotlib.rcParams["xtick.labelsize"] == plotting.FONT == matplotlib.rcParams["axes.labelsize"]
    assert plotting.WIDTH <= 7.5


def test_image_grid_frames_the_marked_images():
    import torch

    images = torch.rand(2, 3, 1, 4, 4, generator=torch.Generator().manual_seed(0))
    frames = [[True, False, False], [False, False, True]]
    fig = plotting.image_grid(images, ["a", "b"], ["0", "1", "2"], frames=frames)
    framed = [ax.spines["top"].get_visible() and ax.spines["top"].get_linewidth() == 3 for ax in fig.axes]
    assert framed == [True, False, False, False, False, True]
    assert fig.axes[0].yaxis.label.get_rotation() == 0  # row labels read horizontally


def test_plain_log_ticks_label_one_two_five_as_plain_numbers():
    """Over about a decade the log axis reads 5, 10, 20 (not one lone power of ten, nor crowded minor labels)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([4.1, 11.0, 31.0], [1, 2, 3])
    ax.set_xscale("log")
    plotting.plain_log_ticks(ax)
    fig.canvas.draw()
    shown = [t.get_text() for t in ax.get_xticklabels() if t.get_text() and 4.1 <= t.get_position()[0] <= 31]
    assert shown == ["5", "10", "20"]
    assert not any(t.get_text() for t in ax.get_xticklabels(minor=True))
    plt.close(fig)
