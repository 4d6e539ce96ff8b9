"""Wall-clock timings of the test suite, of each chapter at each scale and of the whole book, against the budgets.

    python benchmarks/bench.py [--skip-tests] [--scales ci,book]

Budgets: the test suite (``python -m pytest -q``, printed with its 25 slowest tests) under 360 s (the house's 6
minutes) with all six chapters, of which each chapter's ``ci`` execution (printed per chapter) is a part; one exact
subsampled ReRo bound for T = 1000 steps under 2 s; batched shadow-head training at least 50 times faster per head
than a loop over heads (the row's time is for 5,000 heads); two of the transfer-learning chapter's attacks side by
side against one after another (the ratio, and the same tables: the row fails if they differ); five of its
reconstructors as one stacked model against one after another (the ratio; the row fails if their losses differ by
more than float rounding); the transfer-learning chapter within 60 s at ``ci`` and 6 min at ``book`` scale, the
diffusion chapter within 60 s and 8 min (with its prior's training time and the time of one DPS and one DSG
reconstruction printed); the whole book at ``book`` scale (every chapter executed afresh, as many at once as ``make
book`` runs them, ``book.default_jobs``, then rendered) under 900 s, with its speed-up over the chapters' own times
one after the other (the ``book`` rows above, measured in the same run). Chapters are executed with ``force`` into a
temporary folder, so the timings never come from the cache and ``_build`` is left alone. Exits 1 when anything fails
or is over budget.
"""
from __future__ import annotations

import argparse
import functools
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compendium import book, chapters
from compendium.base import repository_root
from compendium.chapters import hcr as hcr_chapter

TEST_BUDGET_S = 360  # the house's 6 minutes on 2 cores
BOOK_BUDGET_S = 900  # the 15 minutes on 2 cores (the house's budget is 30)
SUBSAMPLED_BUDGET_S = 2
SHADOW_SPEEDUP_MIN = 50  # batched shadow-head training against a loop over heads
STACKED_TOLERANCE = 1e-4  # stacked and separate reconstructors' mean losses: the same up to float rounding
#: The issues' budgets for the two training-heavy chapters (2 CPU cores).
CHAPTER_BUDGETS_S = {("transfer_learned", "ci"): 60, ("transfer_learned", "book"): 360,
                     ("diffusion", "ci"): 60, ("diffusion", "book"): 480}


def timed(action) -> tuple[float, bool]:
    """Seconds ``action()`` took and whether it succeeded (returned something other than False, raised nothing)."""
    start = time.perf_counter()
    try:
        ok = action() is not False
    except (book.ChapterExecutionError, book.BookBuildError) as err:
        print(f"FAILED: {err}", file=sys.stderr)
        ok = False
    return time.perf_counter() - start, ok


def _hcr_digits_task(scale: str):
    """The HCR chapter's grayscale task at ``scale``: its settings, the trained MLP (eval mode, frozen), the evaluated
    test images and the feature-noise sigma of the chapter's kappa."""
    import torch

    from compendium import models, train
    from compendium.bounds import hcr

    cfg = hcr_chapter.settings(scale, device="cpu")
    datasets = hcr_chapter.load_data(cfg)  # the chapter's own data: 8x8 digits at ci, real MNIST at book
    (x_train, y_train), (x_test, _), (mean, sd) = datasets.gray_train, datasets.gray_test, datasets.gray_norm
    model = models.MnistMLP(1, x_train.shape[-1], 10, hidden=cfg.gray_hidden,
                            generator=torch.Generator().manual_seed(cfg.seed))
    train.train_classifier(model, ((x_train - mean) / sd, y_train), cfg.gray_epochs,
                           generator=torch.Generator().manual_seed(cfg.seed), progress=False)
    model.eval().requires_grad_(False)
    x = ((x_test - mean) / sd)[:cfg.gray_examples]
    sigma = hcr.noise_sigma(model.features((x_test - mean) / sd), cfg.gray_kappa)
    return cfg, model, x, sigma


def hcr_timings(scale: str = "book") -> dict[str, float]:
    """The HCR chapter's main bound (Algorithm 1 with the paper's MNIST settings, s = 1/200, i = 10, R draws) on the
    scale's grayscale task, solved both ways of :func:`compendium.bounds.hcr.hcr_bound`: the default joint solve (one
    LSQR recursion per restart block, batched products) and the authors' per-restart solve, side by side.  Returns
    the number of images, seconds per image of the joint solve, the speed-up (per-restart seconds / joint seconds)
    and the largest relative difference of the two solves' bounds over all modes."""
    import numpy as np
    import torch

    from compendium.bounds import hcr

    cfg, model, x, sigma = _hcr_digits_task(scale)
    exact = hcr.float64_copy(model).features
    seconds, bounds, iterations = {}, {}, {}
    for solve in ("joint", "per_restart"):
        start = time.perf_counter()
        res = hcr.hcr_bound(model.features, x, sigma, cfg.num_restarts, max(cfg.power_iterations),
                            cfg.gray_diffdivs[0], torch.Generator().manual_seed(cfg.seed), solve=solve, exact_map=exact)
        seconds[solve], bounds[solve] = time.perf_counter() - start, res.bound_dct
        iterations[solve] = int(res.lsqr_iterations.sum())
    # The floor of the joint solve: every LSQR iteration applies J and J^T to each example of its restart's block,
    # one JVP (primal and tangent: 2 x 2 W flops for W weights) and one VJP (primal and cotangent: 2 x 2 W), so
    # 8 W flops per example and iteration, at the machine's dense float32 GEMM rate.
    weights = sum(p.numel() for p in model.features.parameters())
    flops = 8 * weights * len(x) * iterations["joint"]
    floor = flops / gemm_flops_per_second()
    return {"images": len(x), "seconds_per_image": seconds["joint"] / len(x),
            "speedup": seconds["per_restart"] / seconds["joint"],
            "max_rel_diff": float(np.abs(bounds["joint"] / bounds["per_restart"] - 1).max()),
            "seconds": seconds["joint"], "iterations": iterations["joint"], "gflop": flops / 1e9, "floor": floor}


def gemm_flops_per_second(size: int = 2048, repeats: int = 5) -> float:
    """The machine's dense float32 matrix-multiply rate (flop/s) with torch's threads as they are set: the best of
    ``repeats`` products of two ``size x size`` matrices (``2 size^3`` flops each)."""
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b  # warm-up
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * size ** 3 / best


def shadow_heads_speedup(batched: int = 5000, looped: int = 200, repeats: int = 5) -> dict[str, float]:
    """Algorithm 1 of the transfer-learning chapter (N = 10, Table 3's MNIST recipe, on the chapter's digits
    features): ``batched`` heads trained at once by :func:`compendium.train.fit_linear_heads` against ``looped`` heads
    trained one at a time through the same function in a Python loop, side by side, each the best of ``repeats``
    runs.  Returns the seconds per head of each and their ratio (budget: at least 50)."""
    import torch

    from compendium import train
    from compendium.attacks import shadow_reconstructor as attack
    from compendium.chapters import transfer_learned as tl

    cfg = tl.settings("ci", device="cpu")
    pool = tl.pools(cfg)
    features, labels = tl.feature_extractor(cfg, pool).features(pool.train[0]), pool.train[1]
    recipe = tl.HeadRecipe(10)
    sets = attack.balanced_sets(labels, per_class=1, count=batched, num_classes=10,
                                generator=torch.Generator().manual_seed(0)).flatten(1)
    options = dict(num_classes=10, steps=recipe.epochs, lr=recipe.lr, weight_decay=recipe.weight_decay,
                   init_std=recipe.init_std, device="cpu")
    per_head_batched = math.inf
    for _ in range(repeats):  # the best of a few runs: the first pays the allocator's first touch of its memory
        start = time.perf_counter()
        train.fit_linear_heads(features[sets], labels[sets], generator=torch.Generator().manual_seed(0), **options)
        per_head_batched = min(per_head_batched, (time.perf_counter() - start) / batched)
    per_head_looped = math.inf
    for _ in range(repeats):  # the best of as many runs, for a fair ratio
        generator = torch.Generator().manual_seed(0)
        start = time.perf_counter()
        for k in range(looped):
            train.fit_linear_heads(features[sets[k:k + 1]], labels[sets[k:k + 1]], generator=generator, **options)
        per_head_looped = min(per_head_looped, (time.perf_counter() - start) / looped)
    return {"batched": per_head_batched, "looped": per_head_looped, "speedup": per_head_looped / per_head_batched}


def reconstructor_step_speedup(steps: int = 300) -> dict[str, float]:
    """One Adam step of the transfer-learning chapter's book-scale reconstructor (the 660 -> 512 -> 512 -> 64 MLP),
    PyTorch's default multi-tensor update against the fused one that :func:`compendium.train.fit` takes with
    ``fused=True``, side by side on the same gradients: milliseconds per step of each and their ratio."""
    import torch

    from compendium import models

    seconds = {}
    for name, fused in (("default", None), ("fused", True)):
        model = models.MLPReconstructor(660, (1, 8, 8), 512, generator=torch.Generator().manual_seed(0))
        for p in model.parameters():
            p.grad = torch.randn(p.shape, generator=torch.Generator().manual_seed(1))
        optimizer = torch.optim.Adam(model.parameters(), lr=2e-4, fused=fused)
        for _ in range(20):  # warm-up
            optimizer.step()
        start = time.perf_counter()
        for _ in range(steps):
            optimizer.step()
        seconds[name] = (time.perf_counter() - start) / steps
    return {"default_ms": 1e3 * seconds["default"], "fused_ms": 1e3 * seconds["fused"],
            "speedup": seconds["default"] / seconds["fused"]}


def side_by_side_speedup(steps: int = 1500) -> dict[str, float]:
    """The transfer-learning chapter's attacks at N = 10 and N = 40 (its ``ci`` settings with ``steps`` reconstructor
    steps each), one after another on torch's threads as they are set, and side by side by
    :func:`~compendium.chapters.transfer_learned.experiments.run_attacks` (one thread each): milliseconds per step
    of each, their ratio, and the largest difference of the two runs' H0 tables (0: the same attacks)."""
    import torch

    from compendium.chapters import transfer_learned as tl

    cfg = tl.settings("ci", "cpu", reconstructor_steps=steps)
    pool = tl.pools(cfg)
    extractor = tl.feature_extractor(cfg, pool)
    specs = [tl.Attack(10), tl.Attack(40)]
    seconds, results = {}, {}
    for name, workers in (("one after another", 1), ("side by side", 2)):
        start = time.perf_counter()
        results[name] = tl.run_attacks(cfg, pool, extractor, specs, workers=workers)
        seconds[name] = time.perf_counter() - start
    total_steps = sum(len(r.history["loss"]) * math.ceil(cfg.shadow_train / 32) for r in results["side by side"])
    difference = max(float((a.h0 - b.h0).abs().max()) for a, b in zip(*results.values()))
    return {"sequential_ms": 1e3 * seconds["one after another"] / total_steps,
            "threads": torch.get_num_threads(),
            "side_by_side_ms": 1e3 * seconds["side by side"] / total_steps,
            "speedup": seconds["one after another"] / seconds["side by side"], "difference": difference}


def stacked_speedup(models: int = 5, steps: int = 300) -> dict[str, float]:
    """``models`` of the transfer-learning chapter's book-scale reconstructors (the 660 -> 512 -> 512 -> 64 MLP) for
    ``steps`` Adam steps each, one after another and as one stacked model, side by side in one run
    (``gpu_check.stacked_timing``, which the GPU check runs with Table 2's generator): milliseconds per step of all
    ``models``, the ratio and the largest relative difference of a model's mean training loss."""
    from gpu_check import stacked_timing

    from compendium import models as networks

    found = stacked_timing("cpu", build=lambda g: networks.MLPReconstructor(660, (1, 8, 8), 512, generator=g),
                           inputs=660, image=(1, 8, 8), models=models, steps=steps)
    return {**found, "separate_ms": 1e3 * found["separate_s"] / steps, "stacked_ms": 1e3 * found["stacked_s"] / steps}


def paper_heads_minutes(heads: int = 20_000, features: int = 256) -> dict[int, float]:
    """Minutes to train the paper's 2.56 million MNIST heads per ``N`` (Table 3's recipe on 256 VGGtiny-sized
    features; random non-negative features stand in for them), extrapolated from ``heads`` heads trained at once.
    The authors' README: 3.2 CPU hours at N = 10, 6.1 at N = 40, one head at a time."""
    import torch

    from compendium import train
    from compendium.chapters import transfer_learned as tl

    minutes = {}
    for n in (10, 40):
        recipe = tl.HeadRecipe.of("mnist", n)
        g = torch.Generator().manual_seed(0)
        x, y = torch.randn(heads, n, features, generator=g).relu(), (torch.arange(n) % 10).repeat(heads, 1)
        start = time.perf_counter()
        train.fit_linear_heads(x, y, num_classes=10, steps=recipe.epochs, lr=recipe.lr,
                               weight_decay=recipe.weight_decay, init_std=recipe.init_std, generator=g, device="cpu")
        minutes[n] = (time.perf_counter() - start) / heads * 2.56e6 / 60
    return minutes


def diffusion_timings(scale: str = "book") -> dict[str, float]:
    """The diffusion chapter at ``scale``: seconds to train its prior, and per reconstruction from the CNN's
    noiseless gradient by DPS (``dps_steps`` DDPM steps) and by DSG (``dsg_steps`` DDIM steps), all the targets in
    one batch and, side by side, one target at a time (batches of one): their ratio is the batching's speed-up."""
    from compendium.chapters import diffusion

    cfg = diffusion.settings(scale, device="cpu")
    data = diffusion.load_data(cfg)
    prior = diffusion.prior(cfg, data, progress=False)
    model = diffusion.attacked_model(cfg)
    out = {"prior": prior.seconds, "dps_steps": cfg.dps_steps, "dsg_steps": cfg.dsg_steps, "targets": cfg.targets}
    targets = list(range(cfg.targets))
    for method in diffusion.METHODS:
        def attack(chosen):
            return diffusion.attack(cfg, prior, model, data, method=method, targets=chosen)

        batched = attack(targets)[0].seconds
        alone = sum(attack([i])[0].seconds for i in targets) / len(targets)
        out |= {method: batched, f"{method}_alone": alone}
    return out


def subsampled_rero_seconds() -> tuple[float, float, float]:
    """Seconds for one exact ReRo bound of DP-SGD with Poisson sampling (q = 0.01, T = 1000 steps, sigma = 1,
    kappa = 0.01; budget 2 s), the certified value and its numerical error (certified - estimate)."""
    from compendium.bounds import rero

    rero.rero_bound_subsampled(0.01, noise_multiplier=1.0, sample_rate=0.01, steps=10)  # imports, warm-up
    start = time.perf_counter()
    estimate, certified = rero.rero_bound_subsampled(0.01, noise_multiplier=1.0, sample_rate=0.01, steps=1000)
    return time.perf_counter() - start, float(certified), float(certified - estimate)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-tests", action="store_true", help="do not time the test suite")
    parser.add_argument("--scales", default="ci,book", help="comma-separated scales to time each chapter at")
    args = parser.parse_args(argv)
    try:
        chosen = [chapters.check_scale(s) for s in args.scales.split(",")]
    except ValueError as err:
        parser.error(str(err))

    rows: list[tuple[str, float, int | None, bool]] = []  # (what, seconds, budget, succeeded)
    if not args.skip_tests:
        # --durations: where the suite's time goes (the slowest tests, the chapters' ci executions among them).
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=25"]
        seconds, ok = timed(lambda: subprocess.run(command, cwd=repository_root()).returncode == 0)
        rows.append(("test suite", seconds, TEST_BUDGET_S, ok))
    heads = shadow_heads_speedup()
    rows.append((f"shadow heads: x{heads['speedup']:.0f} per head batched vs looped "
                 f"({1e6 * heads['batched']:.0f} vs {1e6 * heads['looped']:.0f} us)", heads["batched"] * 5000, None,
                 heads["speedup"] >= SHADOW_SPEEDUP_MIN))
    adam = reconstructor_step_speedup()
    rows.append((f"reconstructor Adam step: fused x{adam['speedup']:.1f} ({adam['fused_ms']:.2f} vs "
                 f"{adam['default_ms']:.2f} ms)", adam["fused_ms"] / 1e3, None, True))
    both = side_by_side_speedup()
    rows.append((f"two reconstructors side by side: x{both['speedup']:.2f} ({both['side_by_side_ms']:.2f} vs "
                 f"{both['sequential_ms']:.2f} ms/step on {both['threads']} threads; "
                 f"max |H0 diff| {both['difference']:.0e})", both["side_by_side_ms"] / 1e3, None,
                 both["difference"] == 0))
    stacked = stacked_speedup()
    rows.append((f"{stacked['models']} reconstructors stacked: x{stacked['speedup']:.2f} ({stacked['stacked_ms']:.2f} "
                 f"vs {stacked['separate_ms']:.2f} ms a step of all; losses within "
                 f"{stacked['loss_rel_diff']:.0e})", stacked["stacked_s"], None,
                 stacked["loss_rel_diff"] < STACKED_TOLERANCE))
    minutes = paper_heads_minutes()
    rows.append((f"2.56e6 MNIST-sized heads: N=10 {minutes[10]:.1f} min, N=40 {minutes[40]:.1f} min "
                 "(authors: 3.2 / 6.1 CPU h)", 60 * minutes[40], None, True))
    seconds, bound, error = subsampled_rero_seconds()
    rows.append((f"exact subsampled ReRo, T=1000 ({bound:.5f} +- {error:.1e})", seconds, SUBSAMPLED_BUDGET_S, True))
    for scale in chosen:
        hcr_row = hcr_timings(scale)
        rows.append((f"HCR bound per image @ {scale} ({hcr_row['images']} images; joint solve "
                     f"x{hcr_row['speedup']:.1f} faster than per-restart, "
                     f"max |rel diff| {hcr_row['max_rel_diff']:.1e})",
                     hcr_row["seconds_per_image"], None, True))
        rows.append((f"HCR joint solve @ {scale}: {hcr_row['iterations']} LSQR iterations, "
                     f"{hcr_row['gflop']:.2f} GFLOP, floor {hcr_row['floor']:.2f} s at the GEMM rate, "
                     f"x{hcr_row['seconds'] / hcr_row['floor']:.0f} above it", hcr_row["seconds"], None, True))
    for scale in chosen:
        times = diffusion_timings(scale)
        rows.append((f"diffusion prior training @ {scale}", times["prior"], None, True))
        for method in ("DPS", "DSG"):
            rows.append((f"{method}, {times[method.lower() + '_steps']} steps @ {scale}: {times['targets']} targets "
                         f"batched x{times[method + '_alone'] / times[method]:.1f} faster than one at a time",
                         times[method], None, True))
    with tempfile.TemporaryDirectory() as tmp:
        for scale in chosen:
            for key in chapters.registry():
                run = functools.partial(book.execute_chapter, key, scale=scale, out_dir=Path(tmp) / scale, force=True)
                seconds, ok = timed(run)
                rows.append((f"chapter {key} @ {scale}", seconds, CHAPTER_BUDGETS_S.get((key, scale)), ok))
        jobs = book.default_jobs()
        seconds, ok = timed(lambda: book.build_book(scale="book", force=True, out=Path(tmp) / "site", jobs=jobs))
        rows.append((f"whole book @ book (execute + render, {jobs} at once)", seconds, BOOK_BUDGET_S, ok))
        one_by_one = [s for what, s, _, _ in rows if what.startswith("chapter ") and what.endswith("@ book")]
        if len(one_by_one) == len(chapters.registry()):
            rows.append((f"whole book: x{sum(one_by_one) / seconds:.2f} faster than its chapters one after the "
                         f"other ({sum(one_by_one):.0f} s)", seconds, None, ok))

    print(f"\n{'what':<52}{'seconds':>10}{'budget':>10}  status")
    failed = False
    for what, seconds, budget, ok in rows:
        passed = ok and (budget is None or seconds < budget)
        failed |= not passed
        print(f"{what:<52}{seconds:>10.1f}{budget if budget is not None else '-':>10}  {'PASS' if passed else 'FAIL'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
