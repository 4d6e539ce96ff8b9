"""The calculator's prior-aware worst case against riskcal, side by side in one run, one thread each.

    OMP_NUM_THREADS=1 python benchmarks/riskcal_compare.py [--riskcal-path DIR] [--refinement] [--calibration]

For each setting of a fixed grid (the cases of the riskcal comparison issue: the saturated q = 0.2, T = 3000 runs,
q = 0.2, T = 300, the small-q, small-kappa cases, and a practitioner's q = 0.004, T = 2000), it times
``rero.rero_bound_subsampled`` (the value ``worst_case_success_subsampled`` reports) and riskcal's
``get_beta_for_dpsgd`` (``1 - beta(kappa)``, Kulynych & Gomez et al. 2024, Algorithm 1 on Google's
``dp_accounting`` PLD), each once after a warm-up, and prints both times, their ratio (riskcal / ours: above 1 means
the calculator is faster), both values, the relative difference of our estimate from riskcal's, our one-direction
estimates (``adjacency="add"``: f, ``"remove"``: f^{-1}) and our certified upper value (about a minute in all).
``--calibration`` adds the noise calibration (``minimal_noise_multiplier_subsampled`` against riskcal's
``find_noise_multiplier_for_err_rates``, searched over sigma in [0.3, 10]; riskcal takes minutes per target).
``--refinement`` adds riskcal's value at finer PLD grids for the case where the two differ most.

riskcal is not a dependency of the compendium: every ``dp_accounting`` release pins ``attrs < 24``, which cannot be
installed beside the tested set (``constraints.txt``).  Install it into a folder of its own and point at it:
``pip install --no-deps --target DIR riskcal==1.5.1 dp-accounting==0.6.0 absl-py dm-tree wrapt``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one thread each, before numpy loads
    os.environ.setdefault(_var, "1")


from compendium.bounds import rero  # noqa: E402

#: (sigma, q, T, kappa): the issue's cases first.
GRID = [
    (0.77, 0.2, 3000, 0.01), (0.82, 0.2, 3000, 0.01), (0.62, 0.2, 300, 0.01),
    (1.0, 0.001, 1000, 0.001), (0.8, 0.001, 1000, 0.001), (1.1, 0.004, 2000, 0.001),
    (2.5, 0.001, 100, 0.1), (0.6, 0.01, 3000, 0.01), (1.5, 0.05, 1000, 0.01), (0.9, 0.05, 3000, 0.01),
    (2.0, 0.01, 500, 0.1), (1.2, 0.1, 500, 0.001), (0.7, 0.002, 2000, 0.05), (1.0, 0.01, 1000, 0.01),
]
#: (target success, kappa, q, T) for the noise calibration.
CALIBRATION = [(0.05, 0.01, 0.01, 1000), (0.01, 0.001, 0.004, 2000)]


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--riskcal-path", default=None, help="folder riskcal and dp_accounting are installed in")
    parser.add_argument("--refinement", action="store_true", help="riskcal at finer grids for the largest difference")
    parser.add_argument("--calibration", action="store_true", help="also time the noise calibration (minutes)")
    args = parser.parse_args(argv)
    if args.riskcal_path:
        sys.path.insert(0, args.riskcal_path)
    warnings.simplefilter("ignore")
    import riskcal
    from riskcal.calibration.dpsgd import find_noise_multiplier_for_err_rates, get_beta_for_dpsgd

    get_beta_for_dpsgd(1.0, 0.01, 10, 0.01)  # warm-ups: imports, caches
    rero.rero_bound_subsampled(0.01, noise_multiplier=1.0, sample_rate=0.01, steps=10)
    print(f"riskcal {riskcal.__version__ if hasattr(riskcal, '__version__') else '1.5.1'}, "
          f"get_beta_for_dpsgd(sigma, q, T, kappa) (grid 1e-4) against rero.rero_bound_subsampled "
          f"(eps_error {rero.rero_bound_subsampled.__kwdefaults__['eps_error']}); one thread each\n")
    header = (f"{'sigma':>5} {'q':>6} {'T':>5} {'kappa':>6} | {'riskcal s':>9} {'ours s':>7} {'ratio':>7} | "
              f"{'riskcal':>10} {'ours est.':>10} {'rel.diff':>9} {'add (f)':>10} {'remove':>10} {'certified':>10}")
    print(header + "\n" + "-" * len(header))
    total_theirs = total_ours = 0.0
    slower = []
    for sigma, q, T, kappa in GRID:
        setting = dict(noise_multiplier=sigma, sample_rate=q, steps=T)
        beta, theirs = timed(lambda: get_beta_for_dpsgd(sigma, q, T, kappa))
        (estimate, certified), ours = timed(lambda: rero.rero_bound_subsampled(kappa, **setting))
        add = rero.rero_bound_subsampled(kappa, **setting, adjacency="add")[0]
        remove = rero.rero_bound_subsampled(kappa, **setting, adjacency="remove")[0]
        total_theirs, total_ours = total_theirs + theirs, total_ours + ours
        if ours > theirs:
            slower.append((sigma, q, T, kappa))
        reference = 1 - beta
        print(f"{sigma:5.2f} {q:6.3f} {T:5d} {kappa:6.3f} | {theirs:9.3f} {ours:7.3f} {theirs / ours:7.1f} | "
              f"{reference:10.6g} {float(estimate):10.6g} {float(estimate) / reference - 1:+9.2%} "
              f"{float(add):10.6g} {float(remove):10.6g} {float(certified):10.6g}")
    print(f"\ntotal: riskcal {total_theirs:.2f} s, ours {total_ours:.2f} s, ratio {total_theirs / total_ours:.1f}")

    if args.calibration:
        print("\nnoise calibration: riskcal find_noise_multiplier_for_err_rates(kappa, 1 - target) against "
              "rero.minimal_noise_multiplier_subsampled(target)")
    for target, kappa, q, T in CALIBRATION if args.calibration else ():
        theirs_sigma, theirs = timed(lambda: find_noise_multiplier_for_err_rates(kappa, 1 - target, q, T,
                                                                                 noise_min=0.3, noise_max=10.0))
        ours_sigma, ours = timed(lambda: rero.minimal_noise_multiplier_subsampled(target, kappa=kappa,
                                                                                   sample_rate=q, steps=T))
        if ours > theirs:
            slower.append(("calibration", target, kappa, q, T))
        print(f"target {target} kappa {kappa} q {q} T {T}: riskcal sigma {theirs_sigma:.4f} in {theirs:.2f} s, "
              f"ours {ours_sigma:.4f} (certified) in {ours:.2f} s, ratio {theirs / ours:.1f}")

    if args.refinement:
        from dp_accounting.pld import privacy_loss_distribution as pld
        from riskcal.analysis import get_beta_from_pld

        sigma, q, T, kappa = 0.8, 0.001, 1000, 0.001
        print(f"\nriskcal's value at finer grids (sigma {sigma}, q {q}, T {T}, kappa {kappa}):")
        for grid in (5e-4, 2e-4, 1e-4, 5e-5, 2e-5):
            curve = pld.from_gaussian_mechanism(sigma, sampling_prob=q, use_connect_dots=True,
                                                value_discretization_interval=grid).self_compose(T)
            print(f"  grid {grid:g}: 1 - beta = {1 - get_beta_from_pld(curve, alpha=kappa):.6g}")
        for eps_error in (1e-2, 1e-3):
            estimate, certified = rero.rero_bound_subsampled(kappa, noise_multiplier=sigma, sample_rate=q, steps=T,
                                                             eps_error=eps_error)
            print(f"  ours, eps_error {eps_error:g}: estimate {float(estimate):.6g}, certified {float(certified):.6g}")
    print("\nslower than riskcal: " + (", ".join(map(str, slower)) if slower else "none"))
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())
