"""The HCR chapter's tables and quoted numbers, computed from the experiments' results
(:mod:`~compendium.chapters.hcr.experiments`) and from the exercises' closed forms."""
from __future__ import annotations

import numpy as np
import pandas as pd

from compendium import metrics
from compendium.bounds import hcr
from compendium.chapters.hcr.experiments import Attacks, ImagenetRun, Releases, Task
from compendium.chapters.hcr.settings import IMAGENET_MODELS, PAPER_ACCURACY
from compendium.chapters.hcr.theory import cumulative_sum_map

def bound_summary(runs: dict, tasks: dict[str, Task]) -> pd.DataFrame:
    """One row per HCR run: size ``1/s``, repetitions ``i``, total LSQR iterations, the 10/50/90 % quantiles of the
    per-mode bound over all modes and examples, the median over the lowest ``L x L`` modes (the paper's filtered
    histograms), the median ``||z_eps|| / ||eps||`` and the seconds per example."""
    rows = []
    for (key, label), res in runs.items():
        task, b = tasks[key], res.bound_dct
        q10, q50, q90 = np.quantile(b, [0.1, 0.5, 0.9])
        rows.append({"task": task.title, "run": label, "1/s": res.diffdiv,
                     "i": res.lsqr_iterations.shape[1], "LSQR its": int(res.lsqr_iterations.sum()),
                     "q10": q10, "median": q50, "q90": q90,
                     "median low L×L": np.median(hcr.low_frequency(b, task.low)), "L": task.low,
                     "median ‖z_ε‖/‖ε‖": np.median(res.ratio), "s per example": res.seconds / task.examples})
    return pd.DataFrame(rows)


def histogram_mode(values, bins: int = 256) -> float:
    """The centre of the fullest of ``bins`` equal bins over the range of ``values`` (the authors' code histograms
    the bounds with ``np.histogram(values, bins=256)``)."""
    counts, edges = np.histogram(np.ravel(values), bins=bins)
    return 0.5 * (edges[counts.argmax()] + edges[counts.argmax() + 1])


def histogram_modes(tasks: dict[str, Task], runs: dict):
    """The counterparts of Figures 1 and 3: for each task the histogram panels (all modes and the lowest ``L x L``,
    for the main and the limit run) and a table of their modes, in normalised units and in 8-bit gray levels, next
    to the modes of the paper's figures.  Returns ``(table, {task: panels})``."""
    mode_rows, panels = [], {}
    for key, task in tasks.items():
        panels[key] = {}
        for label in ("main", "limit"):
            res = runs[key, label]
            name = f"s = 1/{res.diffdiv:g}, i = {res.lsqr_iterations.shape[1]}"
            panels[key][f"{name}: all modes"] = res.bound_dct
            panels[key][f"{name}: lowest {task.low}×{task.low}"] = hcr.low_frequency(res.bound_dct, task.low)
            paper = task.paper_modes[label] if task.paper_modes else (np.nan, np.nan)
            for part, values, paper_value in (("all", res.bound_dct, paper[0]),
                                              ("low", hcr.low_frequency(res.bound_dct, task.low), paper[1])):
                mode_rows.append({"task": task.title, "run": name, "modes": part,
                                  "histogram mode": histogram_mode(values),
                                  "in 8-bit levels": histogram_mode(values) * task.norm[1] * 255,
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
    Exercise 5: the cumulative-sum map of 64 pixels at ``sigma = 1``: the paper's eq. (18)
    (:func:`~compendium.bounds.hcr.fisher_diagonal_bound_eq18`, ``1 / ||A e_k||^2``) against the Cramér-Rao bound
    on the first pixel (CRB 1, eq. (18) 1/64: all 64 features see it) and on the last (CRB 2, eq. (18) 1: it is
    the difference of the last two features).
    """
    J = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    pixel, pair, third = hcr.cramer_rao_bound(J, 1.0, directions=np.array([[1.0, 0, 0], [1, 1, 0], [0, 0, 1]]))
    assert np.isinf(pixel) and np.isclose(pair, 1.0) and np.isclose(third, 1.0), (pixel, pair, third)
    A, _ = cumulative_sum_map(64)
    crb, eq18 = hcr.cramer_rao_bound(A, 1.0), hcr.fisher_diagonal_bound_eq18(A, 1.0)
    assert np.allclose([crb[0], eq18[0], crb[-1], eq18[-1]], [1.0, 1 / 64, 2.0, 1.0]), (crb, eq18)
    return {"hcr_ex4_pair": float(pair), "hcr_ex4_third": float(third), "hcr_ex5_crb_first": float(crb[0]),
            "hcr_ex5_eq18_first": float(eq18[0]), "hcr_ex5_ratio_first": float(crb[0] / eq18[0]),
            "hcr_ex5_crb_last": float(crb[-1]), "hcr_ex5_eq18_last": float(eq18[-1])}


