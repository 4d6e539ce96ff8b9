"""The diffusion chapter's tables from runs and from the paper: means over the targets, Table 1's counterpart and
its consistency, the privacy labels, the rank correlations, the numbers the prose quotes, and the run's own findings
(:class:`Findings`)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
from scipy import stats

from compendium import validation
from compendium.bounds import diffusion as theory
from compendium.chapters.diffusion.settings import (
    DELTA,
    FLOOR_MARGIN,
    PAPER_IMAGE,
    PAPER_TABLE1,
    PAPER_TABLE2,
    TABLE6_VARIANCE,
)
from compendium.models.gradient_targets import NAMES as MODEL_NAMES
from compendium.models.gradient_targets import gradient_target

#: Fewest targets for a finding stated beyond k standard errors of the mean over the targets (fewer: not checked).
SE_TARGETS = 3


class Findings:
    """The run's own findings that no claim of the paper decides (an ordering of two means, the sign of a
    correlation, a plateau): each is recorded with whether it held and what was measured, and never stops the run;
    :meth:`table` lists them for the notebook (the paper's claims go on the scorecard card instead).  ``targets``
    is the number of targets a mean is taken over: an ordering by standard errors needs :data:`SE_TARGETS`."""

    def __init__(self, targets: int):
        self.targets = validation.integer("targets", targets)
        self.rows: list[dict] = []

    def check(self, what: str, *, holds, found: str) -> bool:
        """Record the finding ``what`` (a sentence), whether it ``holds``, and ``found`` (the numbers behind it)."""
        self.rows.append({"finding": what, "holds": "yes" if bool(holds) else "no", "found": found})
        return bool(holds)

    def _by_se(self, what: str, holds: bool, found: str) -> bool:
        if self.targets < SE_TARGETS:
            self.rows.append({"finding": what, "holds": "not run", "found": f"{self.targets} targets; {found}"})
            return False
        return self.check(what, holds=holds, found=found)

    def greater(self, what: str, high: float, low: float, se: float, *, k: float = 3.0, margin: float = 0.0
                ) -> bool:
        """``high - (low + margin) > k se``: an ordering that the noise of the means cannot explain (``se`` the
        standard error of the difference), recorded as ``"not run"`` with fewer than :data:`SE_TARGETS` targets; the
        numbers name the margin where there is one."""
        against = f"{low:.2f}" if margin == 0 else f"{low:.2f} + {margin:g} = {low + margin:.2f}"
        return self._by_se(what, high - (low + margin) > k * se,
                           f"{high:.2f} against {against} dB, {k:g} SE = {k * se:.2f} dB")

    def at_most(self, what: str, value: float, bound: float, se: float, *, k: float = 3.0) -> bool:
        """``value <= bound + k se``: ``value`` not above ``bound`` beyond the noise (``se`` of the difference),
        recorded as ``"not run"`` with fewer than :data:`SE_TARGETS` targets."""
        return self._by_se(what, value <= bound + k * se,
                           f"{value:.2f} against {bound:.2f} dB, {k:g} SE = {k * se:.2f} dB")

    def not_run(self, what: str, *, why: str) -> str:
        """Record that the finding ``what`` was not checked in this run, and ``why`` (a step the scale skips); returns
        the phrase the prose pastes for it."""
        self.rows.append({"finding": what, "holds": "not run", "found": why, "said": f"was not run ({why})"})
        return self.outcome()

    #: What the prose pastes for each outcome of a finding (:meth:`outcome`).
    OUTCOMES = {"yes": "held", "no": "did not hold", "not run": "was not run (too few targets for a standard error)"}

    def outcome(self, index: int = -1) -> str:
        """How the finding recorded at ``index`` (the last by default) came out, as the phrase the prose pastes: a
        finding skipped with :meth:`not_run` pastes its reason."""
        row = self.rows[index]
        return row.get("said", self.OUTCOMES[row["holds"]])

    def table(self) -> pd.DataFrame:
        """One row per finding, in the order they were recorded."""
        return pd.DataFrame(self.rows, columns=["finding", "holds", "found"])



def outcome(holds: bool) -> str:
    """The phrase the prose pastes for the check of a claim of the paper that the run decides (the card's verdict is
    decided by the same ``holds``): as :meth:`Findings.outcome` pastes a finding's."""
    return Findings.OUTCOMES["yes" if bool(holds) else "no"]


def baseline_findings(findings: Findings, table: pd.DataFrame | None) -> dict[str, str]:
    """Tables 5-6's orderings as the run's findings, each beyond three standard errors of the difference of the mean
    final PSNR (:meth:`Findings.greater`): without noise DPS more than :data:`FLOOR_MARGIN` dB above the prior-only
    floor (``dps_floor``) and Inverting Gradients above DPS (``ig_dps``); at ``sigma^2 =`` :data:`TABLE6_VARIANCE`
    the best method above the next (``noisy_best``), and DSG the best (``dsg_best``, :meth:`Findings.check`).
    ``table`` is :func:`~compendium.chapters.diffusion.experiments.baselines`' table, or ``None`` where the run skips
    the baselines (each finding recorded as not run).  Returns the phrase the prose pastes for each key."""
    what = {"dps_floor": f"without noise DPS ends more than {FLOOR_MARGIN:g} dB above the prior-only floor",
            "ig_dps": "without noise the prior-free IG ends above DPS",
            "noisy_best": "under noise the best method ends above the next",
            "dsg_best": "under noise DSG is the best method"}
    if table is None:
        return {key: findings.not_run(text, why="the baselines are skipped at this run's settings")
                for key, text in what.items()}
    rows = table.set_index(["method", "σ²"])
    floor = table[table["method"] == "prior only"].iloc[0]
    noisy = table[table["σ²"] == TABLE6_VARIANCE].sort_values("final PSNR")  # worst first
    pairs = {"dps_floor": (rows.loc[("DPS", 0.0)], floor, FLOOR_MARGIN),
             "ig_dps": (rows.loc[("IG", 0.0)], rows.loc[("DPS", 0.0)], 0.0),
             "noisy_best": (noisy.iloc[-1], noisy.iloc[-2], 0.0)}
    said = {}
    for key, (high, low, margin) in pairs.items():
        text = what[key] if key != "noisy_best" else (f"under noise the best method ({noisy['method'].iloc[-1]}) "
                                                      f"ends above the next ({noisy['method'].iloc[-2]})")
        findings.greater(text, high["final PSNR"], low["final PSNR"],
                         math.hypot(high["final PSNR SE"], low["final PSNR SE"]), margin=margin)
        said[key] = findings.outcome()
    findings.check(what["dsg_best"], holds=noisy["method"].iloc[-1] == "DSG",
                   found=", ".join(noisy["method"]) + " (worst to best)")
    said["dsg_best"] = findings.outcome()
    return said


def epsilon_table(variances=theory.TABLE1_VARIANCES, *, delta=1e-5, sensitivity=1.0) -> pd.DataFrame:
    """Table 1's epsilons against exact ones: one row per noise variance ``sigma^2``.

    Columns: ``variance``, ``sigma``, ``eps_printed`` (Table 1, where the variance is one of the paper's; else NaN),
    ``eps_lemma1`` (:func:`~compendium.bounds.diffusion.gaussian_mechanism_epsilon`), ``lemma1_applies``
    (``eps_lemma1 < 1``), ``eps_exact`` (:func:`~compendium.bounds.diffusion.gaussian_mechanism_epsilon_exact`) and
    ``exact_over_lemma1``.
    """
    var = validation.grid("variances", list(variances), what="noise variances sigma^2")
    printed = dict(zip(theory.TABLE1_VARIANCES, theory.TABLE1_EPSILONS))
    rows = []
    for v in var:
        s = float(np.sqrt(v))
        e1 = theory.gaussian_mechanism_epsilon(s, delta=delta, sensitivity=sensitivity)
        ex = theory.gaussian_mechanism_epsilon_exact(s, delta=delta, sensitivity=sensitivity)
        rows.append({"variance": float(v), "sigma": s, "eps_printed": printed.get(v, np.nan), "eps_lemma1": e1,
                     "lemma1_applies": bool(e1 < 1.0), "eps_exact": ex, "exact_over_lemma1": ex / e1})
    return pd.DataFrame(rows)



def over_targets(runs: pd.DataFrame, by: list[str], columns: tuple[str, ...] = ("final PSNR", "peak PSNR"),
                 *, extra: tuple[str, ...] = ()) -> pd.DataFrame:
    """Per group of ``by``: the mean over the targets of each of ``columns`` with its standard error (``std / sqrt(n)``,
    ddof 1; NaN for a single target) in a column ``"... SE"`` after it, and the mean of each of ``extra``."""
    groups = runs.groupby(by, sort=False)
    out = groups[list(columns) + list(extra)].mean()
    for column in columns:
        se = groups[column].agg(lambda x: x.std(ddof=1) / math.sqrt(len(x)) if len(x) > 1 else math.nan)
        out.insert(out.columns.get_loc(column) + 1, f"{column} SE", se)
    return out.reset_index()



def table1(grid: pd.DataFrame) -> pd.DataFrame:
    """Table 1's counterpart: per method, gradient and sigma^2, the mean over targets of the final and the oracle-peak
    PSNR with their standard errors, the peak's timestep and the final SSIM; epsilon of the normalised release
    (sensitivity 1, delta = 1e-5) by Lemma 1 and exactly; the paper's (peak) PSNR beside."""
    out = over_targets(grid, ["method", "gradient", "σ²"], extra=("peak t", "final SSIM"))
    normalised = out["gradient"] == "normalised"
    sigma = np.sqrt(out["σ²"].where(normalised & (out["σ²"] > 0)))
    out["ε (Lemma 1)"] = [theory.gaussian_mechanism_epsilon(s, delta=DELTA) if np.isfinite(s) else np.nan
                          for s in sigma]
    out["ε (exact)"] = [theory.gaussian_mechanism_epsilon_exact(s, delta=DELTA) if np.isfinite(s) else np.nan
                        for s in sigma]
    out["paper PSNR"] = [PAPER_TABLE1.get((m, g == "normalised", v), (np.nan,))[0]
                         for m, g, v in zip(out["method"], out["gradient"], out["σ²"])]
    return out


def paper_table1_consistency() -> pd.DataFrame:
    """Table 1 against itself: the printed PSNR beside ``-10 log10(MSE)`` of the printed MSE (images in [0, 1])."""
    rows = [{"method": m, "gradient": "normalised" if n else "raw", "σ²": v, "MSE": mse, "PSNR printed": psnr,
             "-10 log10 MSE": -10 * math.log10(mse)} for (m, n, v), (psnr, mse) in PAPER_TABLE1.items()]
    out = pd.DataFrame(rows)
    out["difference (dB)"] = out["PSNR printed"] - out["-10 log10 MSE"]
    return out



def paper_rank_correlations(models: tuple[str, ...] = tuple(PAPER_TABLE2)) -> dict[str, float]:
    """Spearman's rank correlation of RV and PSNR over the ``models`` rows of the paper's Table 2 (which prints
    none), for DPS and DSG."""
    rv, dps, dsg = np.array([PAPER_TABLE2[m] for m in models]).T
    return {"DPS": float(stats.spearmanr(rv, dps).statistic), "DSG": float(stats.spearmanr(rv, dsg).statistic)}


def rv_column(table2: pd.DataFrame) -> pd.Series:
    """RV per model from :func:`rv_table`: Definition 3's exact maximum, or Eq. (17) where the exact Jacobian was
    skipped (above :data:`EXACT_RV_PIXELS` pixels)."""
    column = "RV (Def. 3, max)" if table2["RV (Def. 3, max)"].notna().all() else "Eq. (17)"
    return table2.set_index("model")[column]



def sweep_table(runs: pd.DataFrame, column: str) -> pd.DataFrame:
    """A sweep's runs (:func:`sweep`) as Table 3 or 4: per value (named ``column``) the mean final and peak PSNR over
    the targets with their standard errors."""
    return over_targets(runs, ["parameter"]).rename(columns={"parameter": column})


def paper_parameter_counts() -> dict[str, int]:
    """The weights of each attacked network at the paper's 3x256x256 input, counted on the ``meta`` device (no memory
    is allocated): the size of one gradient, the vector every sampler step differentiates twice."""
    with torch.device("meta"):
        return {name: sum(p.numel() for p in gradient_target(name, in_channels=PAPER_IMAGE[0],
                                                            image_size=PAPER_IMAGE[1]).parameters())
                for name in MODEL_NAMES}


def quoted_numbers() -> dict[str, float]:
    """The numbers the prose quotes that no step of the pipeline computes (the exercise solutions', and the
    paper-scale section's), keyed for ``glue``.

    Exercise 1: the exact epsilon (delta = 1e-5) of ``sigma^2 = 1e-2`` at sensitivity 1 (add/remove) and 2 (replace,
    which equals sensitivity 1 at ``sigma = 0.05``), Table 1's Lemma 1 label and Lemma 1 at sensitivity 2 (keys
    ``df_ex1_*``: the notebook glues them in a cell tagged ``answers``).  And the smallest and the largest network of
    the paper's (ResMini aside) with their gradient sizes in GB (float32).
    """
    sigma = math.sqrt(TABLE6_VARIANCE)
    exact_1 = theory.gaussian_mechanism_epsilon_exact(sigma, delta=1e-5, sensitivity=1.0)
    exact_2 = theory.gaussian_mechanism_epsilon_exact(sigma, delta=1e-5, sensitivity=2.0)
    if not math.isclose(exact_2, theory.gaussian_mechanism_epsilon_exact(sigma / 2, delta=1e-5), rel_tol=1e-9):
        raise AssertionError("sensitivity 2 at sigma must equal sensitivity 1 at sigma / 2")
    counts = paper_parameter_counts()
    large = {name: n for name, n in counts.items() if name != "ResMini"}
    printed = dict(zip(theory.TABLE1_VARIANCES, theory.TABLE1_EPSILONS))[TABLE6_VARIANCE]
    return {"df_ex1_exact_1": exact_1, "df_ex1_exact_2": exact_2, "df_ex1_printed": printed,
            "df_ex1_ratio": exact_2 / printed,
            "df_ex1_lemma1_2": theory.gaussian_mechanism_epsilon(sigma, delta=1e-5, sensitivity=2.0),
            "df_paper_weights_min": float(min(large.values())), "df_paper_weights_max": float(max(large.values())),
            "df_paper_gradient_gb_min": 4 * min(large.values()) / 1e9,
            "df_paper_gradient_gb_max": 4 * max(large.values()) / 1e9}


