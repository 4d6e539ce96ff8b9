"""The HCR chapter's tables and quoted numbers, computed from the experiments' results
(:mod:`~compendium.chapters.hcr.experiments`) and from the exercises' closed forms."""
from __future__ import annotations

import numpy as np
import pandas as pd

from compendium import metrics
from compendium.bounds import hcr
from compendium.chapters.hcr.experiments import Attacks, ImagenetRun, Releases, Task
from compendium.chapters.hcr.settings import (
    IMAGENET_MODELS,
    MIN_MODE_IMAGES,
    PAPER_ACCURACY,
    PAPER_DIFFDIVS,
    PAPER_FIGURE_MODES,
    PAPER_MNIST_TRAIN,
    Settings,
)
from compendium.chapters.hcr.theory import cumulative_sum_map


def bound_summary(runs: dict, tasks: dict[str, Task]) -> pd.DataFrame:
    """One row per HCR run: size ``1/s``, repetitions ``i``, the images bounded, total LSQR iterations, the 10/50/90 %
    quantiles of the per-mode bound over all modes and examples, the median over the lowest ``L x L`` modes (the
    paper's filtered histograms), the median ``||z_eps|| / ||eps||`` and the seconds per example."""
    rows = []
    for (key, label), res in runs.items():
        task, b = tasks[key], res.bound_dct
        q10, q50, q90 = np.quantile(b, [0.1, 0.5, 0.9])
        rows.append({"task": task.title, "run": label, "1/s": res.diffdiv,
                     "i": res.lsqr_iterations.shape[1], "images": len(b), "LSQR its": int(res.lsqr_iterations.sum()),
                     "q10": q10, "median": q50, "q90": q90,
                     "median low L×L": np.median(hcr.low_frequency(b, task.low)), "L": task.low,
                     "median ‖z_ε‖/‖ε‖": np.median(res.ratio), "s per example": res.seconds / len(b)})
    return pd.DataFrame(rows)


def histogram_mode(values, bins: int = 256) -> float:
    """The centre of the fullest of ``bins`` equal bins over the range of ``values`` (the authors' code histograms
    the bounds with ``np.histogram(values, bins=256)``)."""
    counts, edges = np.histogram(np.ravel(values), bins=bins)
    return 0.5 * (edges[counts.argmax()] + edges[counts.argmax() + 1])


def mode_standard_error(bounds, *, low: int | None = None, draws: int = 200, seed: int = 0) -> float:
    """The bootstrap standard error of :func:`histogram_mode` over the images: ``draws`` resamples of the ``B``
    images of ``bounds`` (``(B, ...)`` per-mode bounds; restricted to the lowest ``low x low`` modes when ``low`` is
    given) with replacement (``numpy.random.default_rng(seed)``), the standard deviation of their modes."""
    values = np.asarray(bounds if low is None else hcr.low_frequency(bounds, low)).reshape(len(bounds), -1)
    rng = np.random.default_rng(seed)
    modes = [histogram_mode(values[rng.integers(0, len(values), len(values))]) for _ in range(draws)]
    return float(np.std(modes, ddof=1))


def median_shift(first, second, *, low: int | None = None) -> tuple[float, float]:
    """How much larger the per-image median bound of ``second`` is than that of ``first``, both (images, ..., H, W)
    DCT modes, paired over the first images that both ran: ``(mean difference, its standard error sd / sqrt(n))``,
    the error 0 for one image.  With ``low`` only the lowest ``low x low`` modes of ``second`` count, so that
    ``median_shift(run, run, low=L)`` compares a run's lowest modes with all of its modes (Figure 3)."""
    n = min(len(first), len(second))
    second = second if low is None else hcr.low_frequency(second, low)
    diff = (np.median(np.asarray(second[:n]).reshape(n, -1), axis=1)
            - np.median(np.asarray(first[:n]).reshape(n, -1), axis=1))
    return float(diff.mean()), float(diff.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0


def histogram_modes(tasks: dict[str, Task], runs: dict, *, seed: int = 0):
    """The counterparts of Figures 1 and 3: for each task the histogram panels (all modes and the lowest ``L x L``,
    for the main and the limit run) and a table of their modes with their bootstrap standard errors over the
    images (:func:`mode_standard_error`; no mode where fewer than :data:`MIN_MODE_IMAGES` images were bounded), in
    normalised units and in 8-bit gray levels, next to the modes of the paper's figures.  Returns ``(table, {task:
    panels})``."""
    mode_rows, panels = [], {}
    for key, task in tasks.items():
        panels[key] = {}
        for label in ("main", "limit"):
            res = runs[key, label]
            name = f"s = 1/{res.diffdiv:g}, i = {res.lsqr_iterations.shape[1]}"
            panels[key][f"{name}: all modes"] = res.bound_dct
            panels[key][f"{name}: lowest {task.low}×{task.low}"] = hcr.low_frequency(res.bound_dct, task.low)
            paper = task.paper_modes[label] if task.paper_modes else (np.nan, np.nan)
            enough = len(res.bound_dct) >= MIN_MODE_IMAGES
            for part, low, paper_value in (("all", None, paper[0]), ("low", task.low, paper[1])):
                values = res.bound_dct if low is None else hcr.low_frequency(res.bound_dct, low)
                mode = histogram_mode(values) if enough else np.nan
                mode_rows.append({"task": task.title, "run": name, "modes": part, "images": len(res.bound_dct),
                                  "histogram mode": mode,
                                  "histogram mode SE": mode_standard_error(res.bound_dct, low=low, seed=seed)
                                  if enough else np.nan,
                                  "in 8-bit levels": mode * task.norm[1] * 255,
                                  "paper": paper_value, "paper's data": task.paper_name or "—",
                                  "paper in 8-bit levels": paper_value * (task.paper_sd or np.nan) * 255})
    return pd.DataFrame(mode_rows), panels




def attack_errors(task: Task, releases: Releases, attacks: Attacks, bound: np.ndarray):
    """Each attack's error against the HCR bound of Algorithm 1 (``bound``, ``(n, ...)`` per DCT mode): the mean
    squared error, the PSNR (pixels in [0, 1]), and per DCT mode the root-mean-square error over the ``K`` releases
    divided by the bound on that mode (an unbiased attacker cannot go below 1, eq. 5).  Returns ``(table,
    {attack: DCT errors (K, n, ...)})``."""
    shape = releases.theta.shape[1:]
    err_dct = {name: hcr.dct2((rec - releases.truth).reshape(releases.K, releases.n, *shape).double().cpu().numpy())
               for name, rec in attacks.reconstructions.items()}
    rows = []
    sd = task.norm[1]
    for name, e in err_dct.items():
        rmse_mode = np.sqrt(np.mean(e**2, axis=0))  # per example and mode, over the K releases
        rows.append({"attack": name, "MSE [normalised²]": float(np.mean(e**2)),
                     "PSNR [dB]": float(metrics.psnr(releases.truth * sd, attacks.reconstructions[name] * sd,
                                                     data_range=1.0).mean()),
                     "median RMSE / HCR bound": float(np.median(rmse_mode / bound)),
                     "modes below the bound [%]": float(100 * np.mean(rmse_mode < bound))})
    return pd.DataFrame(rows), err_dct




def imagenet_table(runs: dict[str, ImagenetRun]) -> pd.DataFrame:
    """The accuracy of each ImageNet model without and with dithering beside the paper's (Sec. 3.3), one row per
    model with labelled images; a one-row table saying why when there is none."""
    rows = [{"model": name, "clean [%]": round(100 * run.accuracy[0], 1),
             "dithered [%]": round(100 * run.accuracy[1], 1),
             "paper [%]": "{:g} → {:g}".format(*PAPER_ACCURACY[IMAGENET_MODELS[name]])}
            for name, run in runs.items() if run.accuracy is not None]
    if rows:
        return pd.DataFrame(rows)
    why = "not run (needs imagenet_dir at paper scale)" if not runs else "the images carry no labels"
    return pd.DataFrame({"model": [why]})




def quoted_numbers() -> dict[str, float]:
    """The coding exercises' solutions, keyed for ``glue``, each checked here.

    Exercise 4: the feature map ``a = (theta_1 + theta_2, theta_3)`` (a 2 x 3 Jacobian of rank 2) at ``sigma = 1``:
    :func:`~compendium.bounds.hcr.cramer_rao_bound` on the first pixel is infinite (``e_1`` is not in the row space:
    no unbiased estimator exists), on the sum of the first two pixels ``sigma^2``, and on the third ``sigma^2``.
    Exercise 5: the first-difference map ``D`` (the inverse of :func:`cumulative_sum_map`) of 64 pixels at
    ``sigma = 1``: its CRB ``[(D^T D)^{-1}]_kk = [A A^T]_kk = k + 1`` against the paper's eq. (18)
    (:func:`~compendium.bounds.hcr.fisher_diagonal_bound_eq18`, ``1 / ||D e_k||^2``: 1/2, and 1 on the last pixel);
    the ratio is largest, 126, on pixel 62.
    """
    J = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    pixel, pair, third = hcr.cramer_rao_bound(J, 1.0, directions=np.array([[1.0, 0, 0], [1, 1, 0], [0, 0, 1]]))
    assert np.isinf(pixel) and np.isclose(pair, 1.0) and np.isclose(third, 1.0), (pixel, pair, third)
    A, _ = cumulative_sum_map(64)
    D = np.linalg.inv(A)
    ratio = hcr.cramer_rao_bound(D, 1.0) / hcr.fisher_diagonal_bound_eq18(D, 1.0)
    worst = int(np.argmax(ratio))
    assert worst == 62 and np.isclose(ratio[worst], 126.0), (worst, ratio[worst])
    return {"hcr_ex4_pair": float(pair), "hcr_ex4_third": float(third), "hcr_ex5_worst_pixel": worst,
            "hcr_ex5_worst_factor": float(ratio[worst])}


def imagenet_status(runs: dict[str, ImagenetRun], cfg: Settings) -> str:
    """One sentence on the ImageNet runs of Sec. 3.3 at ``cfg``: that they ran (on how many images, their results
    under the cell), or why not."""
    if not runs:
        return (f"ImageNet is not run at `{cfg.scale}` scale: it needs ImageNet validation images, torchvision's "
                "pretrained weights and a GPU (the `paper` scale with `imagenet_dir`), so the paper's Figures 5 and 6 "
                "and its ImageNet accuracies have no counterpart here").replace("`", "")
    return (f"ImageNet ran on {cfg.imagenet_examples} validation images; the histograms of both models' bounds and "
            "their accuracy table are under the cell below")


def paper_sizes_text() -> str:
    """How the modes of the paper's histograms move from its main size to ``s = 1/1000``, read off its figures
    (:data:`PAPER_FIGURE_MODES`): e.g. ``"MNIST (Figure 1) rises from 0.16 and 0.42 at s = 1/200 to 0.2 and 0.47;
    CIFAR-10 (Figure 3) falls from ..."`` (all modes, then the lowest 8x8)."""
    parts = []
    for (name, figure) in (("MNIST", 1), ("CIFAR-10", 3)):
        (main, limit), modes = PAPER_DIFFDIVS[name], PAPER_FIGURE_MODES[name]
        before, after = tuple(modes[main].values()), tuple(modes[limit].values())
        rises = all(b > a for a, b in zip(before, after))
        falls = all(b < a for a, b in zip(before, after))
        way = "rises" if rises else "falls" if falls else "moves"
        parts.append(f"{name} (Figure {figure}) {way} from {before[0]:g} and {before[1]:g} at s = 1/{main:g} to "
                     f"{after[0]:g} and {after[1]:g} at s = 1/{limit:g}")
    return "; ".join(parts)


def gray_setup_text(cfg: Settings) -> str:
    """The grayscale task's data and network at ``cfg``, for the chapter's table of tasks: e.g. ``"real MNIST digits
    28×28 (8,000 to train, 2,000 to test), MLP 784-784-784"``."""
    side = 8 if cfg.gray_data == "digits" else 28
    data_set = {"digits": "scikit-learn digits", "mnist_digits": "real MNIST digits shipped with the package",
                "mnist": "MNIST"}[cfg.gray_data]
    pool = " (8,000 to train, 2,000 to test)" if cfg.gray_data == "mnist_digits" else ""
    return f"{data_set} {side}×{side}{pool}, MLP {side * side}-{cfg.gray_hidden}-{cfg.gray_hidden}"


def mnist_comparison(task: Task, mode_table: pd.DataFrame, cfg: Settings) -> str:
    """The grayscale MLP's accuracy and histogram modes beside the paper's MNIST numbers (Sec. 3.1, Figure 1), as one
    sentence naming the data, its training pool (against the paper's 60,000) and the scale; where the grayscale task
    is not MNIST, a sentence saying that nothing is compared."""
    if cfg.gray_data == "digits":
        return (f"At `{cfg.scale}` scale the grayscale task is scikit-learn's 8×8 digits, not MNIST, so neither its "
                "accuracy nor its histogram modes are set beside the paper's")
    pool = len(task.train[1])
    clean, dithered = (100 * a for a in task.accuracy)
    rows = mode_table[mode_table["task"] == task.title]
    modes = "; ".join(
        f"at s = 1/{s_inv:g} " + " and ".join(
            f"{r['histogram mode']:.3f} ± {r['histogram mode SE']:.3f}" for _, r in rows[rows["run"].str.startswith(
                f"s = 1/{s_inv:g},")].iterrows())
        + " against the paper's " + " and ".join(f"{v:g}" for v in PAPER_FIGURE_MODES["MNIST"][s_inv].values())
        for s_inv in task.diffdivs)
    images = int(rows["images"].iloc[0])
    if images < MIN_MODE_IMAGES:
        modes = f"not read: {images} test digits are too few for a histogram mode"
    return (f"At `{cfg.scale}` scale the MLP, trained on {pool:,} real MNIST digits where the paper trains on "
            f"{PAPER_MNIST_TRAIN:,}, reaches {clean:.1f} % test accuracy without dithering and {dithered:.1f} % with "
            f"it at κ = {task.kappa:g}, against the paper's {task.paper_acc[0]:g} % and {task.paper_acc[1]:g} %; the "
            f"histogram modes of its bounds (all modes, then the lowest {task.low}×{task.low}, normalised units, ± a "
            f"bootstrap standard error over the {images} test digits) are {modes}")


def bound_findings(runs: dict, tasks: dict[str, Task], cfg: Settings) -> dict:
    """What the prose reads off :func:`compendium.chapters.hcr.experiments.run_bounds`' runs: ``medians`` (the
    median per-mode bound of the main and the limit run of the grayscale MLP and the colour CNN, keyed
    ``"gray_main"``, ...), on the first ``sweep_images`` images the grayscale MLP's median bound for each number of
    repetitions ``i`` (``by_i``; the largest is the main run's), whether it ``falls`` with every further repetition
    and as text (``repetitions``), ``sizes`` (the medians of the main and the limit run, all images) and ``fixed``
    (of the two fixed-tolerance runs)."""
    medians = {f"{key}_{label}": float(np.median(runs[key, label].bound_dct))
               for key in ("gray", "colour") for label in ("main", "limit")}
    k = cfg.sweep_images(tasks["gray"].examples)
    repetitions = sorted(cfg.power_iterations)
    by_i = {i: float(np.median(runs["gray", "main" if i == repetitions[-1] else f"i={i}"].bound_dct[:k]))
            for i in repetitions}
    return {"medians": medians, "by_i": by_i, "sweep_images": k,
            "falls": bool(np.all(np.diff(list(by_i.values())) < 0)),
            "repetitions": " → ".join(f"{m:.3g}" for m in by_i.values()) + " for i = " + ", ".join(map(str, by_i))
                           + f" (the first {k} images)",
            "sizes": [medians["gray_main"], medians["gray_limit"]],
            "fixed": [float(np.median(runs["gray", f"fixed atol, {s} s"].bound_dct)) for s in ("main", "limit")]}


def rank_finding(tasks: dict[str, Task], data: str) -> tuple[str, bool] | None:
    """The null-space finding of :func:`compendium.chapters.hcr.experiments.jacobian_ranks`: ``(text, deficient)``,
    ``deficient`` whether every task's Jacobian is rank-deficient (its largest rank below the pixels) with a clean gap
    (every "zero" singular value below ``1e-12`` of the largest) at every image examined, and the text saying so with
    the grayscale MLP's median rank and the data ``data`` it ran on; ``None`` where the ranks were not computed."""
    if any(t.jacobian_rank is None for t in tasks.values()):
        return None
    deficient = {t.title: bool(t.jacobian_rank.rank.max() < t.x_eval[0].numel() and t.jacobian_rank.gap.max() < 1e-12)
                 for t in tasks.values()}
    gray = tasks["gray"]
    text = (("every" if all(deficient.values()) else "not every")
            + " task's Jacobian is rank-deficient with a clean gap at every image examined; the "
            f"{gray.title}'s median rank is {int(np.median(gray.jacobian_rank.rank))} of {gray.x_eval[0].numel()} "
            f"pixels, on {data}")
    return text, all(deficient.values())
