"""The reconstruction-risk calculator: what every bound of the book says about one DP-SGD configuration.

Given the noise multiplier sigma, the clipping bound C, the data dimension N and the number of steps T (optionally
the sampling rate q, delta, the smallest data norm m, the data range R, success thresholds and a prior success
kappa), :func:`assess` returns one flat dictionary: the privacy guarantee (epsilon from opacus' RDP and PRV
accountants, and the exact one when q = 1) and every applicable reconstruction bound, each with a ``*_source`` key
naming the chapter and equation it comes from.  ``python -m compendium risk`` prints it (``--json`` for machines).

Conventions.  The adversary has no data prior and links all T releases of the target (averaging them:
sigma^2 -> sigma^2 / T).  With q < 1 the target is in only B ~ Binomial(T, q) of the T steps (about qT), and the
rows that describe the training come first: epsilon, the prior-aware worst case ``worst_case_success_subsampled``
(exact, from the trade-off function of the subsampled mechanism: :mod:`compendium.bounds.rero`) and the ``*_subsampled``
MSE rows, which average the full-batch bound with B in place of T over B (sound for an adversary who even knows which
steps held the target; B = 0 counted as a success).  The full-batch rows follow, labelled "if the target were in every
step".  Without the smallest data norm m the
probabilities are the data-independent ones of Ziller et al. (2024) (noise C sigma per coordinate: the
linear-layer attack on unclipped data).  With m they are those of "From Mean to Extreme" (the optimal attack
rescales the clipped gradient, so the noise is sigma ||X|| >= sigma m per coordinate); when m < C this attack is
stronger than the first chapter's, which is why the data norm matters.

Inference-time dithering (the HCR chapter, Chaudhuri et al. 2024).  :func:`assess_dithering` answers a different
question: a client releases features ``X = a(theta) + Z``, ``Z ~ N(0, sigma^2 I_n)``, of its input ``theta``, T times
independently.  Given the noise sigma and the feature map's gain (its largest singular value, or the whole matrix of a
linear map) it returns the smallest standard deviation that any *unbiased* estimator of the input can have, a
per-input guarantee that is not differential privacy.  ``python -m compendium dithering`` prints it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np
from scipy import stats

from compendium import validation
from compendium.bounds import hcr
from compendium.bounds import mean_to_extreme as mte
from compendium.bounds import rero
from compendium.bounds import ziller2024 as zb

ZILLER = "Ziller et al. 2024"
MTE = "From Mean to Extreme"
HCR = "Chaudhuri et al. 2024 (HCR chapter)"


@dataclass(frozen=True)
class RiskQuery:
    """One DP-SGD configuration and the questions asked about it (see the module docstring)."""

    noise_multiplier: float
    clip: float
    dim: int
    steps: int = 1
    sample_rate: float = 1.0
    delta: float = 1e-5
    min_norm: float | None = None
    data_range: float = 1.0
    eta_mse: float | None = None
    eta_psnr: float | None = None
    kappa: float | None = None
    target_probability: float | None = None
    target_success: float | None = None

    def __post_init__(self) -> None:
        validation.positive("noise_multiplier", self.noise_multiplier)
        validation.positive("clip", self.clip)
        validation.integer("dim", self.dim)
        validation.integer("steps", self.steps)
        validation.number("sample_rate", self.sample_rate, above=0.0, at_most=1.0, what="Poisson sampling rate q")
        validation.probability("delta", self.delta)
        if self.min_norm is not None:
            validation.positive("min_norm", self.min_norm)
        validation.positive("data_range", self.data_range)
        if self.eta_mse is not None:
            validation.positive("eta_mse", self.eta_mse)
        if self.eta_psnr is not None:
            validation.number("eta_psnr", self.eta_psnr, what="dB")
        if self.kappa is not None:
            validation.probability("kappa", self.kappa)
        if self.target_probability is not None:
            validation.probability("target_probability", self.target_probability)
            if self.eta_mse is None:
                raise ValueError("target_probability needs eta_mse: the smallest noise multiplier keeps "
                                 "P(MSE <= eta_mse) below target_probability")
        if self.target_success is not None:
            validation.probability("target_success", self.target_success)
            if self.kappa is None or self.target_success <= self.kappa:
                raise ValueError(f"target_success={self.target_success!r}; allowed: a success probability above "
                                 f"kappa={self.kappa!r} (give --kappa; the prior alone already succeeds with kappa)")


def assess(query: RiskQuery) -> dict:
    """Every applicable number for ``query`` as a flat dictionary (keys documented in the book's calculator page)."""
    from compendium import dp  # imported here: opacus' accountants take seconds to load and assess_dithering needs none

    q = query
    sigma, C, N, T, m = q.noise_multiplier, q.clip, q.dim, q.steps, q.min_norm
    out: dict = {"input_" + k: v for k, v in asdict(q).items()}

    # Privacy: opacus' accountants, and the exact GDP epsilon where there is no subsampling.
    out["epsilon_rdp"] = dp.epsilon(sigma, T, q.delta, q.sample_rate, accountant="rdp")
    try:
        out["epsilon_prv"] = dp.epsilon(sigma, T, q.delta, q.sample_rate, accountant="prv")
        out["epsilon_prv_note"] = None
    except ValueError as err:
        out["epsilon_prv"], out["epsilon_prv_note"] = None, str(err)
    out["epsilon_exact"] = dp.epsilon_exact(sigma, T, q.delta) if q.sample_rate == 1 else None
    if q.sample_rate < 1:
        out.update(_subsampled_rows(q))

    # Expected-value bounds.
    if m is None:
        out["expected_mse_lower_bound"] = float(zb.mse_lower_bound(C, sigma=sigma, T=T))
        out["expected_mse_lower_bound_source"] = f"{ZILLER}, Prop. 1 eq. (5) with Prop. 4 (σ² → σ²/T)"
        out["psnr_upper_bound_db"] = float(zb.psnr_upper_bound(C, sigma=sigma, T=T, mean_sq_range=q.data_range**2))
        out["psnr_upper_bound_db_source"] = f"{ZILLER}, Prop. 2 eq. (6), data range R"
        out["psnr_upper_bound_corrected_db"] = out["psnr_upper_bound_db"] + float(zb.psnr_jensen_gap(N))
        out["psnr_upper_bound_corrected_db_source"] = f"{ZILLER}, eq. (6) + Jensen gap Δ_N (the book's correction)"
    else:
        out["expected_mse_lower_bound"] = float(mte.expected_mse(sigma=sigma, norm=m, T=T))
        out["expected_mse_lower_bound_source"] = f"{MTE}, Prop. 2 eq. (21) at the smallest norm, with Prop. 7"
        out["psnr_upper_bound_db"] = float(mte.psnr_mean(N, sigma=sigma, norm=m, data_range=q.data_range, T=T))
        out["psnr_upper_bound_db_source"] = f"{MTE}, exact mean of the PSNR law (Prop. 4) at the smallest norm"
    out["ncc_upper_bound"] = float(zb.ncc_bound_dim(N, sigma=sigma, T=T))
    out["ncc_upper_bound_source"] = f"{ZILLER}, Prop. 3 eq. (8); {MTE}, Prop. 6 eq. (28)"
    out["ncc_upper_bound_dimension_free"] = float(zb.ncc_bound_free(sigma, T=T))
    out["ncc_upper_bound_dimension_free_source"] = f"{ZILLER}, Prop. 3 eq. (9)"
    if N >= 3:
        out["ncc_exact_maximum_mean"] = float(zb.ncc_mean_exact(N, a=np.sqrt(T) / sigma))
        out["ncc_exact_maximum_mean_source"] = f"{ZILLER}, exact non-central-t law (the book's correction of (7)-(8))"

    # Probabilities of a successful reconstruction.
    if q.eta_mse is not None:
        out["mse_success_probability"] = float(_mse_probability(q.eta_mse, q))
        out["mse_success_probability_source"] = (f"{ZILLER}, Prop. 6 (P(MSE ≤ η))" if m is None
                                                 else f"{MTE}, Prop. 3 eq. (24) (P(MSE ≤ η))")
    if q.eta_psnr is not None:
        eta_hat = q.data_range**2 * 10 ** (-q.eta_psnr / 10)  # PSNR >= eta  <=>  MSE <= R^2 10^(-eta/10)
        out["psnr_success_probability"] = float(_mse_probability(eta_hat, q))
        out["psnr_success_probability_source"] = (f"{ZILLER}, Prop. 7 (P(PSNR ≥ η))" if m is None
                                                  else f"{MTE}, Props. 4-5 eq. (25) (P(PSNR ≥ η))")
    if q.kappa is not None:
        out.update(_prior_aware_rows(q))
    if q.target_probability is not None:
        out["minimal_noise_multiplier"] = minimal_noise_multiplier(q.target_probability, q.eta_mse, N, C, T, m)
        out["minimal_noise_multiplier_source"] = (f"{ZILLER}, Prop. 6 inverted" if m is None
                                                  else f"{MTE}, Theorem 2 / Prop. 3 inverted")
        out["minimal_noise_multiplier_epsilon_rdp"] = dp.epsilon(out["minimal_noise_multiplier"], T, q.delta,
                                                                 q.sample_rate, accountant="rdp")
    if q.sample_rate < 1:  # the rows that describe the training that ran first, the full-batch ones labelled after
        for key in [k for k in out if k.endswith("_source") and _is_full_batch(k)]:
            out[key] = f"{IF_EVERY_STEP}: {out[key]}"
        out = {k: out[k] for k in sorted(out, key=lambda k: (not k.startswith("input_"), _is_full_batch(k)))}
    return out


def _is_full_batch(key: str) -> bool:
    return key.removesuffix("_source") in FULL_BATCH_KEYS


#: The rows of :func:`assess` that assume the target in every one of the T steps (full batch).
FULL_BATCH_KEYS = ("expected_mse_lower_bound", "psnr_upper_bound_db", "psnr_upper_bound_corrected_db",
                   "ncc_upper_bound", "ncc_upper_bound_dimension_free", "ncc_exact_maximum_mean",
                   "mse_success_probability", "psnr_success_probability", "worst_case_success", "glrt_success",
                   "minimal_noise_multiplier", "minimal_noise_multiplier_epsilon_rdp")
IF_EVERY_STEP = "if the target were in every step (q = 1)"


def _batches_holding_target(q: RiskQuery) -> tuple[np.ndarray, np.ndarray]:
    """The numbers ``b >= 1`` of batches that may hold the target (binomial mass above 1e-16) and their
    probabilities under ``B ~ Binomial(T, q)``."""
    b = np.arange(1, q.steps + 1)
    weight = stats.binom.pmf(b, q.steps, q.sample_rate)
    keep = weight > 1e-16
    return b[keep], weight[keep]


def _subsampled_rows(q: RiskQuery) -> dict:
    """The expected-MSE and P(MSE <= eta) rows under Poisson subsampling: the full-batch bound with B steps in place
    of T, averaged over ``B ~ Binomial(T, q)`` (``E[MSE] >= sum_b P(B = b) s^2 / b``, dropping B = 0;
    ``P(MSE <= eta) <= P(B = 0) + sum_b P(B = b) gamma(eta; T = b)``)."""
    b, weight = _batches_holding_target(q)
    scale = q.clip if q.min_norm is None else q.min_norm
    source = (f"{ZILLER if q.min_norm is None else MTE}, the full-batch bound with B ~ Binomial(T, q) steps in "
              "place of T, averaged over B (an adversary who knows which steps held the target)")
    out = {"expected_mse_lower_bound_subsampled": float(weight @ ((scale * q.noise_multiplier) ** 2 / b)),
           "expected_mse_lower_bound_subsampled_source": source + "; B = 0 counted as MSE 0"}
    for key, eta in (("mse", q.eta_mse),
                     ("psnr", None if q.eta_psnr is None else q.data_range**2 * 10 ** (-q.eta_psnr / 10))):
        if eta is not None:
            gamma = np.array([_mse_probability(eta, replace(q, steps=int(steps))) for steps in b])
            out[f"{key}_success_probability_subsampled"] = float(
                min(1.0, (1 - q.sample_rate) ** q.steps + weight @ gamma))
            out[f"{key}_success_probability_subsampled_source"] = source + "; B = 0 counted as a success"
    return out


def _prior_aware_rows(q: RiskQuery) -> dict:
    """The prior-aware worst case (ReRo, Hayes et al. 2023): full batch, exact under Poisson subsampling, the
    Edgeworth approximation of From Mean to Extreme's code, the GLRT adversary, and the inverse."""
    sigma, T, kappa = q.noise_multiplier, q.steps, q.kappa
    out = {"worst_case_success": float(zb.worst_case_success(sigma, kappa=kappa, T=T)),
           "worst_case_success_source": (f"{ZILLER}, Table 1 (ReRo bound of μ-GDP, μ = √T/σ: full-batch "
                                         "training; for q < 1 see worst_case_success_subsampled)")}
    if q.sample_rate < 1:
        estimate, certified = rero.rero_bound_subsampled(kappa, noise_multiplier=sigma, sample_rate=q.sample_rate,
                                                         steps=T)
        out["worst_case_success_subsampled"] = float(certified)
        out["worst_case_success_subsampled_numerical_error"] = float(certified - estimate)
        out["worst_case_success_subsampled_source"] = (
            "ReRo bound 1 − f(κ) (Hayes et al. 2023) with the exact trade-off function of the Poisson-subsampled "
            "Gaussian mechanism composed T times (privacy-loss distribution, opacus PRV; certified upper value, "
            "numerical error below worst_case_success_subsampled_numerical_error)")
        if T >= 30:
            out["worst_case_success_edgeworth"] = float(rero.rero_bound_edgeworth(
                kappa, noise_multiplier=sigma, sample_rate=q.sample_rate, steps=T))
            out["worst_case_success_edgeworth_source"] = (f"{MTE}, the authors' code (rero_bound_sgm): Edgeworth "
                                                          "approximation, not a bound")
        if q.target_success is not None:
            out["minimal_noise_multiplier_subsampled"] = rero.minimal_noise_multiplier_subsampled(
                q.target_success, kappa=kappa, sample_rate=q.sample_rate, steps=T)
            out["minimal_noise_multiplier_subsampled_source"] = ("smallest σ whose exact subsampled ReRo bound "
                                                                 "is at most target_success (bracketing, rel. 10⁻³)")
    elif q.target_success is not None:
        mu = stats.norm.ppf(q.target_success) - stats.norm.ppf(kappa)  # gamma = Phi(Phi^-1(kappa) + sqrt(T)/sigma)
        out["minimal_noise_multiplier_subsampled"] = float(np.sqrt(T) / mu)
        out["minimal_noise_multiplier_subsampled_source"] = f"{ZILLER}, Table 1's worst case inverted (q = 1)"
    out["glrt_success"] = float(rero.rero_bound_glrt(kappa, dim=q.dim, sensitivity=q.clip,
                                                     noise_sd=sigma * q.clip / np.sqrt(T)))
    out["glrt_success_source"] = ("GLRT adversary against the d-dimensional Gaussian mechanism (Kaissis et al. "
                                  f"2023; {MTE}'s code), full batch, T releases averaged")
    return out


def worst_case_curve(query: RiskQuery, kappas=None) -> dict:
    """The prior-aware worst case against the prior's own success kappa for ``query``'s training: ``kappa`` (by
    default 60 points from 1e-4 to 0.9, log-spaced, with ``query.kappa``), ``full_batch`` (Ziller et al. 2024,
    Table 1: ``Phi(Phi^{-1}(kappa) + sqrt(T) / sigma)``, the target in every step) and, when q < 1, ``estimate`` and
    ``certified`` of the subsampled bound (:func:`compendium.bounds.rero.rero_bound_subsampled`: one privacy-loss
    composition for the whole curve)."""
    if kappas is None:
        kappas = np.geomspace(1e-4, 0.9, 60)
        kappas = np.unique(np.append(kappas, [] if query.kappa is None else [query.kappa]))
    k = np.sort(validation.grid("kappas", [float(v) for v in np.ravel(kappas)], what="prior successes in (0, 1)"))
    for value in k:
        validation.probability("kappas", value)
    out = {"kappa": k, "full_batch": np.asarray(zb.worst_case_success(query.noise_multiplier, kappa=k,
                                                                         T=query.steps), float)}
    if query.sample_rate < 1:
        out["estimate"], out["certified"] = rero.rero_bound_subsampled(
            k, noise_multiplier=query.noise_multiplier, sample_rate=query.sample_rate, steps=query.steps)
    return out


def plot_worst_case(query: RiskQuery, kappas=None):
    """A matplotlib figure of :func:`worst_case_curve` on log-log axes: the certified worst case of the training
    (q < 1), the full-batch curve (dashed: "if the target were in every step"), and the prior alone (the diagonal
    ``gamma = kappa``), with ``query.kappa`` marked.  The caller saves it (``python -m compendium risk --plot``)."""
    import matplotlib.pyplot as plt  # matplotlib only for the figure: the calculator's command line starts without

    from compendium import plotting

    curve = worst_case_curve(query, kappas)
    plotting.set_style()
    fig, ax = plt.subplots(figsize=(plotting.WIDTH, plotting.WIDTH * 0.62))
    k = curve["kappa"]
    ax.plot(k, k, color="grey", lw=1, label="prior alone (γ = κ)")
    if "certified" in curve:
        ax.plot(k, curve["certified"], color=plotting.EXACT,
                label=f"your training (q = {query.sample_rate:g}, certified)")
    ax.plot(k, curve["full_batch"], color=plotting.BOUND, ls="--", label="if the target were in every step")
    if query.kappa is not None:
        at = curve["certified" if "certified" in curve else "full_batch"][np.searchsorted(k, query.kappa)]
        ax.plot([query.kappa], [at], "o", color=plotting.EXACT, label=f"κ = {query.kappa:g}: γ ≤ {at:.3g}")
    ax.set(xscale="log", yscale="log", xlabel="prior success κ (probability)",
           ylabel="worst-case success γ (probability)", ylim=(k[0] * 0.8, 1.1),
           title=f"σ = {query.noise_multiplier:g}, T = {query.steps}: ReRo bound (Hayes et al. 2023)")
    ax.legend(loc="lower right")
    return fig


def _mse_probability(eta: float, q: RiskQuery) -> float:
    if q.min_norm is None:
        return zb.rero_gamma_mse(eta, N=q.dim, C=q.clip, sigma=q.noise_multiplier, T=q.steps)
    return mte.rero_gamma_mse(eta, N=q.dim, sigma=q.noise_multiplier, min_norm=q.min_norm, T=q.steps)


def minimal_noise_multiplier(target_probability: float, eta_mse: float, dim: int, clip: float, steps: int = 1,
                             min_norm: float | None = None) -> float:
    """The smallest sigma with ``P(MSE <= eta_mse) <= target_probability`` for every target.

    Without ``min_norm``: Ziller et al. Prop. 6 inverted, ``sigma^2 = N eta T / (C^2 F^{-1}_{chi^2_N}(gamma))``;
    with it: the same with the smallest norm m in place of C (From Mean to Extreme, Theorem 2).
    """
    validation.probability("target_probability", target_probability)
    validation.positive("eta_mse", eta_mse)
    scale = clip if min_norm is None else min_norm
    return float(mte.minimal_noise_multiplier(target_probability, eta=eta_mse, N=dim, norm=scale, T=steps))


@dataclass(frozen=True, eq=False)
class DitheringQuery:
    """A client's dithered feature release, for :func:`assess_dithering` (queries compare by identity: one may hold
    an array).

    ``feature_noise`` is sigma, the standard deviation of the Gaussian noise added to each feature; exactly one of
    ``gain`` (the feature map's largest singular value, or any upper bound on its Lipschitz constant) or ``matrix``
    (the ``n x p`` matrix ``A`` of a linear feature map ``a(theta) = A theta``, or the Jacobian of a nonlinear one at
    the input) describes the map; ``releases`` is the number T of independent releases of the same input that the
    adversary averages.  The matrix is stored as a read-only float copy.
    """

    feature_noise: float
    gain: float | None = None
    matrix: np.ndarray | None = None
    releases: int = 1

    def __post_init__(self) -> None:
        validation.positive("feature_noise", self.feature_noise)
        validation.integer("releases", self.releases)
        if (self.gain is None) == (self.matrix is None):
            raise ValueError("give exactly one of gain (the feature map's largest singular value) or matrix "
                             f"(the n x p matrix of a linear feature map); got gain={self.gain!r} and "
                             f"matrix={'None' if self.matrix is None else 'an array'}")
        if self.gain is not None:
            validation.positive("gain", self.gain)
        else:
            try:
                matrix = np.array(self.matrix, dtype=float)
            except (TypeError, ValueError) as err:
                raise ValueError(f"matrix must be a 2-D array of numbers; got {type(self.matrix).__name__}") from err
            if matrix.ndim != 2 or matrix.size == 0:
                raise ValueError(f"matrix must be a non-empty 2-D (n x p) array; got shape {matrix.shape}")
            if not np.all(np.isfinite(matrix)):
                raise ValueError(f"matrix must hold finite numbers; got {np.sum(~np.isfinite(matrix))} NaN or inf")
            matrix.flags.writeable = False
            object.__setattr__(self, "matrix", matrix)


def assess_dithering(query: DitheringQuery) -> dict:
    """What an unbiased estimator of the client's input can achieve from its dithered features, as a flat dictionary.

    A per-input guarantee for *unbiased* estimators, not differential privacy: an attacker with a prior (a biased
    estimator such as the data mean) is not bound by it (see the HCR chapter).  With ``s = feature_noise /
    sqrt(releases)`` (averaging T independent releases) and ``J`` the Jacobian (``A`` for a linear map):

    * ``dithering_sd_floor = s / ||J||_op``: the HCR bound (Chaudhuri et al. 2024, eqs. 5, 12) is at least its
      small-perturbation limit, the multivariate Cramer-Rao bound ``s^2 d^T (J^T J)^{-1} d`` on any linear functional
      ``d^T theta``, and ``(J^T J)^{-1} >= I / ||J||^2``, so every unit-norm functional (a pixel, a DCT mode) has
      ``sd >= s / ||J||``;
    * ``dithering_mse_lower_bound``: the limit of the paper's MSE bound (6), ``s^2 / gain^2`` from the gain alone,
      ``s^2 tr((A^T A)^{-1}) / p`` (``inf`` when ``A`` has rank < p) from a matrix;
    * with a matrix only, the exact per-coordinate bounds ``sqrt(s^2 [(A^T A)^{-1}]_kk)`` (attained by least squares
      for a linear map) as their minimum, median and maximum, and the number of coordinates outside the row space of
      ``A`` (infinite bound: no unbiased estimator of them exists).
    """
    q = query
    s = q.feature_noise / np.sqrt(q.releases)
    out: dict = {"input_feature_noise": q.feature_noise, "input_gain": q.gain,
                 "input_matrix_shape": None if q.matrix is None else tuple(int(v) for v in q.matrix.shape),
                 "input_releases": q.releases}
    if q.matrix is None:
        gain, gain_source = float(q.gain), "input (largest singular value or Lipschitz constant of the feature map)"
    else:
        gain, gain_source = float(np.linalg.norm(q.matrix, 2)), "largest singular value of the matrix"
    out["dithering_gain"], out["dithering_gain_source"] = gain, gain_source
    out["dithering_sd_floor"] = float(s / gain)
    out["dithering_sd_floor_source"] = (f"{HCR}, HCR ≥ Cramér–Rao limit σ²[(JᵀJ)⁻¹]ₖₖ ≥ σ²/‖J‖² "
                                        "(σ² → σ²/T); unbiased estimators of any unit-norm functional "
                                        "(pixel, DCT mode)")
    if q.matrix is None:
        out["dithering_mse_lower_bound"] = float(s**2 / gain**2)
        out["dithering_mse_lower_bound_source"] = (f"{HCR}, limit of the MSE bound (6) from the gain alone: "
                                                   "σ²/(‖J‖² T)")
        return out
    crb = hcr.cramer_rao_bound(q.matrix, s)  # s^2 [(A^T A)^-1]_kk per coordinate, inf outside the row space
    sd = np.sqrt(crb)
    out["dithering_mse_lower_bound"] = float(np.mean(crb))
    out["dithering_mse_lower_bound_source"] = (f"{HCR}, limit of the MSE bound (6): σ² tr((AᵀA)⁻¹)/(p T), "
                                               "inf when A has rank < p")
    crb_source = (f"{HCR}, multivariate Cramér–Rao bound √(σ²[(AᵀA)⁻¹]ₖₖ/T) per coordinate "
                  "(the book's correction of eq. (18)), attained by least squares")
    for name, value in (("min", np.min(sd)), ("median", np.median(sd)), ("max", np.max(sd))):
        out[f"dithering_sd_per_coordinate_{name}"] = float(value)
        out[f"dithering_sd_per_coordinate_{name}_source"] = crb_source
    out["dithering_unidentifiable_coordinates"] = int(np.sum(np.isinf(crb)))
    out["dithering_unidentifiable_coordinates_source"] = (f"{HCR}, coordinates outside the row space of A: infinite "
                                                          "Cramer-Rao bound, no unbiased estimator exists")
    return out


def report_rows(result: dict) -> list[tuple[str, object, str | None]]:
    """``(key, value, source)`` for every number of :func:`assess`'s or :func:`assess_dithering`'s result (the echoed
    inputs and the empty values left out), in order."""
    return [(key, value, result.get(f"{key}_source")) for key, value in result.items()
            if not (key.endswith("_source") or key.startswith("input_") or value is None)]


def format_report(result: dict) -> str:
    """A human-readable report of :func:`assess`'s or :func:`assess_dithering`'s result: the inputs (delta among
    them) on the first line, then one line per number (an infinite bound prints as ``inf``) with its source; under
    subsampling (q < 1) the rows of the training that ran under one heading, the full-batch rows under another."""
    inputs = ", ".join(f"{key.removeprefix('input_')}={value:g}" if isinstance(value, float)
                       else f"{key.removeprefix('input_')}={value}"
                       for key, value in result.items() if key.startswith("input_") and value is not None)
    lines = [f"inputs: {inputs}"]
    q, steps = result.get("input_sample_rate", 1.0), result.get("input_steps")
    if q < 1:
        lines.append(f"-- your training: the target is in each step with probability q = {q:g}, in about "
                     f"{q * steps:.3g} of the {steps} steps --")
    heading_done = False
    for key, value, source in report_rows(result):
        if q < 1 and _is_full_batch(key) and not heading_done:
            lines.append(f"-- {IF_EVERY_STEP}: not the training that ran --")
            heading_done = True
        shown = f"{value:.6g}" if isinstance(value, float) else str(value)
        lines.append(f"{key:38s} {shown:>14s}" + (f"   [{source}]" if source else ""))
    return "\n".join(lines)


#: The exact bound's discretisation in :func:`edgeworth_comparison`, ten times finer than the calculator's default,
#: so that the table tells an approximation error of a tenth of a per cent from the exact bound's own error.
EDGEWORTH_EPS_ERROR = 1e-3


def edgeworth_comparison(*, sigmas, sample_rates, steps, kappas=(0.001, 0.01, 0.1)):
    """From Mean to Extreme's Edgeworth approximation (the authors' ``rero_bound_sgm``,
    :func:`~compendium.bounds.rero.rero_bound_edgeworth`) against the exact bound
    (:func:`~compendium.bounds.rero.subsampled_gaussian_tradeoff`) on a grid of settings: a pandas DataFrame with one
    row per (sigma, q, T, kappa), both values, the exact bound's numerical error, and the approximation's relative
    error (negative: it under-states the risk).  Used by the From Mean to Extreme and the calculator chapters."""
    import pandas as pd  # pandas only for this table: the calculator's command line starts without it

    rows = []
    for sigma in sigmas:
        for q in sample_rates:
            for T in steps:
                curve = rero.subsampled_gaussian_tradeoff(noise_multiplier=sigma, sample_rate=q, steps=T,
                                                          eps_error=EDGEWORTH_EPS_ERROR)
                k = np.asarray(kappas, float)
                estimate, certified = 1 - curve.estimate(k), 1 - curve.certified(k)
                approx = rero.rero_bound_edgeworth(k, noise_multiplier=sigma, sample_rate=q, steps=T)
                for i, kappa in enumerate(kappas):
                    rows.append({"sigma": sigma, "q": q, "T": T, "kappa": kappa, "exact": float(estimate[i]),
                                 "numerical error": float(certified[i] - estimate[i]),
                                 "Edgeworth (authors' code)": float(approx[i]),
                                 "relative error": float(approx[i] / estimate[i] - 1)})
    return pd.DataFrame(rows)
