"""The transfer-learning chapter's tables, figures and quoted numbers, computed from the attacks' results
(:class:`compendium.attacks.transfer_heads.AttackResult`)."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
import numpy as np
import pandas as pd
import torch

from compendium import plotting, validation
from compendium.attacks import shadow_reconstructor as attack
from compendium.attacks.transfer_heads import (
    NUM_CLASSES,
    RESTART_LOSS,
    AttackResult,
    HeadRecipe,
    phi_fits,
)
from compendium.bounds import transfer_learned as roc
from compendium.chapters.transfer_learned.settings import (
    GAMMA,
    PAPER_EXTRACTOR_FEATURES,
    PAPER_HEAD_ACCURACY,
    PAPER_ROW,
    PAPER_TABLE1,
    PAPER_TABLE5,
    SIGNIFICANT_SE,
)
from compendium.data import Pools


def data_phrase(dataset: str, pool: Pools) -> str:
    """The data a run attacks, as a phrase for the prose (pasted with ``glue``, so that it names what ran): the
    victims' and the adversary's pools and what pre-trained the extractor, with their sizes and image size."""
    side = pool.train[0].shape[-1]
    sizes = {name: f"{len(getattr(pool, name)[1]):,}" for name in ("pretrain", "train", "validation")}
    if dataset == "mnist_digits":
        return (f"real MNIST digits at {side}×{side}, {sizes['train']} for the adversary's shadow sets and "
                f"{sizes['validation']} for the victims, on a feature extractor pre-trained on {sizes['pretrain']} "
                "Fashion-MNIST images")
    if dataset == "digits":
        return (f"scikit-learn's digits at {side}×{side}, {sizes['train']} for the adversary's shadow sets and "
                f"{sizes['validation']} for the victims, on a feature extractor pre-trained on {sizes['pretrain']} "
                "other digits")
    return (f"{dataset} at {side}×{side}, {sizes['train']} images for the adversary's shadow sets and "
            f"{sizes['validation']} for the victims")


def table1(results: list[AttackResult], dataset: str = "digits") -> pd.DataFrame:
    """Table 1's counterpart, one row per ``N`` and rate: TPR and FPR at ``tau_NN`` and TPR at FPR = 0.01 with
    binomial standard errors, beside the paper's values for ``dataset`` (its :data:`PAPER_ROW`: MNIST beside the
    digits; CelebA beside attacks on the CelebA task, ``Attack(N, task="identity")``); and the heads' test accuracy
    beside Table 4's (Table 5's for CelebA)."""
    experiment = PAPER_ROW[validation.choice("dataset", dataset, tuple(PAPER_ROW))]
    if any(r.identity for r in results):
        if not all(r.identity for r in results):
            raise ValueError("results of the CelebA task mixed with others; allowed: one experiment per table")
        experiment = "CelebA"
    column = f"paper ({experiment})"
    rows = []
    for r in results:
        s = r.summary()
        paper = PAPER_TABLE1[experiment].get(r.set_size, (np.nan,) * 3)
        for (name, key), value in zip((("TPR at τ_NN", "TPR*"), ("FPR at τ_NN", "FPR*"),
                                       ("TPR at FPR = 0.01", "TPR@FPR=0.01")), paper):
            rows.append({"N": r.set_size, "rate": name, "ours": s[key], "± SE": s[f"{key} SE"], column: value})
        rows.append({"N": r.set_size, "rate": "head test accuracy", "ours": s["head accuracy"], "± SE": np.nan,
                     column: PAPER_HEAD_ACCURACY[experiment].get(r.set_size, np.nan)})
    return pd.DataFrame(rows)


def per_class_rates(results: list[AttackResult], fpr: float = 0.01) -> pd.DataFrame:
    """The TPR at FPR = ``fpr`` two ways, one row per ``N``: pooled over every class column of ``H0`` and ``H1`` (the
    chapter's Table 1), and per class column, as the authors' ``compute_roc.py`` reads its ROC off one column
    (``--class_ind``, by default the last class): that column's value, and the mean, smallest and largest over the
    classes.  (Their TPR and FPR at ``tau_NN`` are pooled, as ours.)"""
    rows = []
    for r in results:
        per_class = np.array([attack.tpr_at_fpr(r.h0[:, c], r.h1[:, c], fpr) for c in range(r.h0.shape[1])])
        pooled, last = attack.tpr_at_fpr(r.h0, r.h1, fpr), per_class[-1]
        rows.append({"N": r.set_size, "pooled": pooled, "pooled SE": math.sqrt(pooled * (1 - pooled) / r.h0.numel()),
                     "last class (the authors')": last, "last class SE": math.sqrt(last * (1 - last) / r.h0.shape[0]),
                     "class mean": per_class.mean(), "class min": per_class.min(), "class max": per_class.max()})
    return pd.DataFrame(rows)


def table5(results: list[AttackResult]) -> pd.DataFrame:
    """Table 5's counterpart for attacks on the CelebA task (``Attack(N, task="identity")``): per ``N``, the mean and
    standard deviation over the validation heads of the test accuracy, the classification TPR (the identity's
    held-out images) and TNR (the others'), beside the paper's (5,000 CelebA heads); and the share of heads whose
    training loss reached the restart rule's ``< 0.05`` (:func:`identity_head_scores`)."""
    rows = []
    for r in results:
        if not r.identity:
            raise ValueError(f"the run at N = {r.set_size} is not on the CelebA task; allowed: "
                             "Attack(N, task='identity')")
        paper = PAPER_TABLE5.get(r.set_size, {})
        for rate in ("accuracy", "TPR", "TNR"):
            values = r.head_scores[rate]
            mean, sd = paper.get(rate, (np.nan, np.nan))
            rows.append({"N": r.set_size, "rate": f"classification {rate}" if rate != "accuracy" else "accuracy",
                         "mean": float(values.mean()), "sd": float(values.std()), "paper mean": mean,
                         "paper sd": sd})
        rows.append({"N": r.set_size, "rate": f"training loss < {RESTART_LOSS:g}",
                     "mean": float((r.head_scores["training loss"] < RESTART_LOSS).double().mean()), "sd": np.nan,
                     "paper mean": np.nan, "paper sd": np.nan})
    return pd.DataFrame(rows)


SCORING_HEADS = 1024  # identity_scoring gathers the sets' images this many heads at a time (10^4 sets of 40 CelebA


#                       faces would be 20 GB at once)


@torch.no_grad()
def identity_scoring(result: AttackResult, pool: Pools) -> pd.DataFrame:
    """The CelebA rates scored two ways for one attack on the CelebA task: against the identity's ``M`` images, as
    the authors' code does and as the reconstructor is trained (Section 3.1: "for CelebA we always take c = 1"), and
    against all ``N`` images of the set, as Algorithm 2 states for an unconditional reconstructor; one row each with
    TPR and FPR at ``tau_NN`` and the TPR at FPR = 0.01 with its binomial standard error (same reconstructions, same
    surrogate draws)."""
    if not result.identity:
        raise ValueError("identity_scoring needs an attack on the CelebA task (Attack(N, task='identity'))")
    h0, h1 = [], []
    for heads in torch.arange(len(result.val_sets)).split(SCORING_HEADS):
        whole = pool.validation[0][result.val_sets[heads]]
        h0.append(attack.min_mse_table(result.reconstructor, result.val_weights[heads], whole, conditional=False))
        h1.append(attack.min_mse_table(result.reconstructor, result.surrogate_weights[heads], whole,
                                       conditional=False))
    h0, h1 = torch.cat(h0), torch.cat(h1)
    rows = []
    for name, (t0, t1) in {"the identity's M images (the authors' code)": (result.h0, result.h1),
                           "all N images (Algorithm 2 as printed)": (h0, h1)}.items():
        tpr, fpr = attack.rates(t0, t1, result.tau)
        tpr01 = attack.tpr_at_fpr(t0, t1)
        rows.append({"N": result.set_size, "compared with": name, "TPR*": tpr, "FPR*": fpr, "TPR@FPR=0.01": tpr01,
                     "TPR@FPR=0.01 SE": math.sqrt(tpr01 * (1 - tpr01) / t0.numel())})
    return pd.DataFrame(rows)


def identity_numbers(results: list[AttackResult], scoring: pd.DataFrame, table: pd.DataFrame) -> dict[str, float]:
    """The numbers the CelebA section's prose (and the errata page) pastes, keyed for ``glue``: per set size of
    Table 1's CelebA row (10 and 40; ``nan`` for one not run at this scale) the TPR and FPR at ``tau_NN`` and the
    TPR at FPR = 0.01, each scored the code's way and Algorithm 2's printed way (``scoring``, from
    :func:`identity_scoring`), the heads' classification TPR and share below the restart loss (``table``, from
    :func:`table5`), and the paper's values beside them (:data:`PAPER_TABLE1`, :data:`PAPER_TABLE5`); the relative
    fall of our TPR at FPR = 0.01 from N = 10 to 40 and the paper's factor."""
    numbers = {}
    by_size = {r.set_size: r.summary() for r in results}
    for n in PAPER_TABLE1["CelebA"]:
        s = by_size.get(n)
        numbers |= {f"tl_id_{key}_{n}": (s[name] if s else math.nan)
                    for key, name in (("tpr01", "TPR@FPR=0.01"), ("tprstar", "TPR*"), ("fprstar", "FPR*"))}
        printed = scoring[(scoring["N"] == n) & scoring["compared with"].str.startswith("all N")]
        numbers |= {f"tl_id_printed_{key}_{n}": float(printed[name].iloc[0]) if len(printed) else math.nan
                    for key, name in (("tpr01", "TPR@FPR=0.01"), ("tprstar", "TPR*"), ("fprstar", "FPR*"))}
        rows = table[table["N"] == n].set_index("rate")["mean"]
        numbers[f"tl_id_classtpr_{n}"] = float(rows.get("classification TPR", math.nan))
        numbers[f"tl_id_restart_{n}"] = float(rows.get(f"training loss < {RESTART_LOSS:g}", math.nan))
        _, paper_fpr, paper_tpr01 = PAPER_TABLE1["CelebA"][n]
        numbers |= {f"tl_id_paper_tpr01_{n}": paper_tpr01, f"tl_id_paper_fprstar_{n}": paper_fpr,
                    f"tl_id_paper_classtpr_{n}": PAPER_TABLE5[n]["TPR"][0]}
    base = numbers["tl_id_tpr01_10"]  # the relative fall is undefined (nan) where N = 10 succeeds never
    numbers["tl_id_drop"] = 1 - numbers["tl_id_tpr01_40"] / base if base > 0 else math.nan
    numbers["tl_id_paper_factor"] = numbers["tl_id_paper_tpr01_10"] / numbers["tl_id_paper_tpr01_40"]
    return {key: float(value) for key, value in numbers.items()}


def training_curves(results: list[AttackResult]) -> pd.DataFrame:
    """Fig. 3c's counterpart: one row per ``N`` and pass over the training heads of a run made with ``curves=True``,
    with the reconstructor's Adam steps so far, its training loss (Eq. (3), the mean over the pass while the weights
    changed), the validation heads' loss and their TPR at FPR = 0.01."""
    frames = []
    for r in results:
        if "validation loss" not in r.history:
            raise ValueError(f"the run at N = {r.set_size} has no validation curves; allowed: runs made with "
                             "Attack(N, curves=True)")
        frames.append(pd.DataFrame({"N": r.set_size, "steps": r.history["steps"], "training loss": r.history["loss"],
                                    "validation loss": r.history["validation loss"],
                                    "TPR@FPR=0.01": r.history["TPR@FPR=0.01"]}))
    return pd.concat(frames, ignore_index=True)


def training_curves_figure(curves: pd.DataFrame, title: str | None = None):
    """Fig. 3c's layout for a :func:`training_curves` table, one colour per ``N``: Eq. (3) on the training batches
    (dashed) and on the validation heads (solid) against the reconstructor's steps, and beside it the validation
    heads' TPR at FPR = 0.01 with chance (TPR = FPR); one legend below both panels, where it covers no curve."""
    fig, axes = plt.subplots(1, 2, figsize=(plotting.WIDTH, 3.6), layout="constrained")
    colours = plotting.hue_colours(sorted(curves["N"].unique()))
    for N, run in curves.groupby("N"):
        axes[0].plot(run["steps"], run["training loss"], "--", color=colours[N])
        axes[0].plot(run["steps"], run["validation loss"], "-", color=colours[N])
        axes[1].plot(run["steps"], run["TPR@FPR=0.01"], "o-", ms=3, color=colours[N])
    axes[0].set(xlabel="reconstructor steps (batches of 32 heads)", ylabel="soft-min loss")
    axes[1].axhline(0.01, color=plotting.BOUND, lw=1)
    axes[1].set(xlabel="reconstructor steps", ylabel="TPR at FPR = 0.01")
    keys = [Line2D([], [], color=colour, label=f"N = {N}") for N, colour in colours.items()]
    keys += [Line2D([], [], color="grey", ls="--", label="training loss"),
             Line2D([], [], color="grey", label="validation loss"),
             Line2D([], [], color=plotting.BOUND, lw=1, label="chance (TPR = FPR)")]
    fig.legend(handles=keys, loc="outside lower center", ncol=len(keys), fontsize="small")
    if title is not None:
        fig.suptitle(title)
    return fig


@torch.no_grad()
def reconstruction_examples(result: AttackResult, pool: Pools, *, heads: int | torch.Tensor, surrogate: bool = False
                            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Figures 1, 2, 11, 12 and 15: for the first ``heads`` validation heads (or the heads of an index tensor
    ``heads``), the reconstruction (from the head's
    weights, or from its surrogate draw when ``surrogate``; the latter are the false-positive candidates) of every
    class (one per head for an unconditional reconstructor), the nearest of the images it is compared with (the
    set's class-``c`` images; all of the set's, or the identity's for the CelebA task), and whether the min-MSE is at
    most ``tau_NN``.  Returns images (reconstructions, C, H, W) in [0, 1] (reconstruction, nearest) and the success
    flags, ``heads * 10`` of each (``heads`` when unconditional)."""
    rows = torch.arange(heads) if isinstance(heads, int) else heads
    model = result.reconstructor.eval()
    device = next(model.parameters()).device
    weights = (result.surrogate_weights if surrogate else result.val_weights)[rows]
    targets = result.targets(pool, rows)
    if result.conditional:
        theta = weights.repeat_interleave(NUM_CLASSES, 0).to(device)
        classes = torch.arange(NUM_CLASSES).repeat(len(weights)).to(device)
        out = model(attack.condition(theta, classes, NUM_CLASSES)).cpu()
    else:
        out = model(weights.to(device)).cpu()
    members = targets.flatten(0, 1)  # (reconstructions, M, C, H, W)
    errors = attack.mse_matrix(out, members)
    nearest = members[torch.arange(len(out)), errors.argmin(1)]
    return (out + 1) / 2, (nearest + 1) / 2, errors.min(1).values <= result.tau


@torch.no_grad()
def reconstructed_classes(result: AttackResult, pool: Pools) -> np.ndarray:
    """Section 3.2, point 3's mode collapse: for the unconditional reconstructor, the share of validation heads whose
    reconstruction is nearest (in MSE) to a set image of each class, shape (10,); a reconstructor that used the whole
    set would spread over all classes."""
    if result.conditional:
        raise ValueError("reconstructed_classes is for the unconditional reconstructor (conditional=False)")
    images, labels = (part[result.val_sets] for part in pool.validation)
    nearest = []
    for rows, _, out, targets in attack.reconstructions(result.reconstructor, result.val_weights, images,
                                                        conditional=False, batch_size=1024):
        nearest.append(labels[rows].flatten(1)[torch.arange(len(out)), attack.mse_matrix(out, targets).argmin(1)])
    return np.bincount(torch.cat(nearest).numpy(), minlength=NUM_CLASSES) / len(result.val_weights)


def roc_curves(result: AttackResult) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The three ROC curves of Figures 8-9 for one attack: the cumulative ROC (the rule ``min-MSE <= tau``), the
    Neyman-Pearson ROC of the fitted Gaussians' log-likelihood ratio applied to the samples, and Eq. (6)."""
    fits = phi_fits(result)
    phi0 = roc.min_mse_logit(result.h0.numpy().ravel())
    phi1 = roc.min_mse_logit(result.h1.numpy().ravel())
    llr0, llr1 = roc.log_likelihood_ratio(phi0, **fits), roc.log_likelihood_ratio(phi1, **fits)

    # the N-P rule accepts H0 when llr > C: as a "min-MSE <= tau" rule on -llr, empirical_roc traces it
    np_fpr, np_tpr = attack.empirical_roc(torch.from_numpy(-llr0), torch.from_numpy(-llr1))
    fpr, tpr = attack.empirical_roc(result.h0, result.h1)
    grid = np.logspace(-4, 0, 200)
    return {"cumulative": (fpr, tpr), "Neyman-Pearson (fitted Gaussians)": (np_fpr, np_tpr),
            "Eq. (6)": (grid, roc.analytic_tpr(grid, **fits))}


def baseline_check(pool: Pools, tau: float, *, set_sizes: tuple[int, ...], draws: int,
                   generator: torch.Generator) -> pd.DataFrame:
    """Section 2's constant attack ``R0(theta) = Z0``.  The adversary picks ``Z0`` from its own pool: the training-pool
    image with the most other training-pool images within ``tau``.  ``kappa`` is then measured on the validation pool
    (the victims' prior), and for each ``N`` the success rate over ``draws`` sets of ``N`` images drawn i.i.d. from the
    validation pool (the prior ``pi_N``) is put beside ``1 - (1 - kappa)^N``.  TPR and FPR coincide because ``R0``
    ignores the weights.  One row per ``N``."""
    train_x, val_x = pool.train[0].flatten(1).double(), pool.validation[0].flatten(1).double()
    neighbours = torch.cat([(torch.cdist(rows, train_x) ** 2 / train_x.shape[1] <= tau).sum(1)
                            for rows in train_x.split(1024)])  # 1,024 rows at a time: MNIST has 60,000
    z0 = train_x[neighbours.argmax()]
    hit = ((val_x - z0) ** 2).mean(1) <= tau  # which validation images R0 reconstructs
    kappa = float(hit.double().mean())
    rows = []
    for n in set_sizes:
        sets = torch.randint(len(val_x), (draws, n), generator=generator)
        rate = float(hit[sets].any(1).double().mean())
        rows.append({"N": n, "kappa": kappa, "simulated TPR = FPR": rate,
                     "± SE": math.sqrt(max(rate * (1 - rate), 1e-12) / draws),
                     "1 − (1 − κ)ᴺ": float(roc.baseline_tpr(kappa, n))})
    return pd.DataFrame(rows)


def defended_epsilon(sweep: pd.DataFrame, gamma: float = GAMMA) -> float:
    """The largest epsilon at which the attack is defended (TPR at FPR = 0.01 at most ``gamma``), by linear
    interpolation in ``log epsilon`` between the two sweep points that bracket ``gamma`` (Section 4 does not state
    its interpolation); ``nan`` when no finite-epsilon point is defended, ``inf`` when every point is."""
    finite = sweep[np.isfinite(sweep["eps_prv"])].sort_values("eps_prv")
    eps, tpr = finite["eps_prv"].to_numpy(), finite["TPR@FPR=0.01"].to_numpy()
    if not len(eps) or tpr[0] > gamma:
        return math.nan
    for i in range(1, len(eps)):
        if tpr[i] > gamma:
            t = (gamma - tpr[i - 1]) / (tpr[i] - tpr[i - 1])
            return float(np.exp(np.log(eps[i - 1]) + t * (np.log(eps[i]) - np.log(eps[i - 1]))))
    return math.inf


def defence_statement(sweep: pd.DataFrame, gamma: float = GAMMA) -> str:
    """Where the sweep defends the attack, as a phrase for the prose: by the paper's rule (TPR at FPR = 0.01 at most
    ``gamma``, :func:`defended_epsilon`), with the noise levels whose TPR lies within :data:`SIGNIFICANT_SE` standard
    errors of ``gamma`` named: there the run cannot tell defended from not."""
    defended = defended_epsilon(sweep, gamma)
    where = ("at every ε of the sweep" if defended == math.inf else "at no ε of the sweep" if math.isnan(defended)
             else f"for ε ≤ {defended:.3g} (log-linear interpolation)")
    finite = sweep[np.isfinite(sweep["eps_prv"])]
    close = finite[(finite["TPR@FPR=0.01"] - gamma).abs() <= SIGNIFICANT_SE * finite["TPR@FPR=0.01 SE"]]
    if len(close):
        where += ", but at " + " and ".join(
            f"σ = {row['noise multiplier']:g} (ε = {row['eps_prv']:.3g}, TPR {row['TPR@FPR=0.01']:.4f} ± "
            f"{row['TPR@FPR=0.01 SE']:.4f})" for _, row in close.iterrows()
        ) + f" the TPR is within {SIGNIFICANT_SE:g} standard errors of γ, too close to tell"
    return where


def identity_grid(result: AttackResult, pool: Pools, *, heads: int | torch.Tensor, title: str, label: str = "head",
                  surrogate: bool = False):
    """Figures 2, 11 and 12 for an attack on the CelebA task: one row ``label`` of :func:`reconstruction_examples`
    for ``heads`` (the first ones, or an index tensor), each column labelled with its head's identity (class)."""
    rows = torch.arange(heads) if isinstance(heads, int) else heads
    classes = pool.validation[1][result.val_sets[rows, 0, 0]]
    return reconstruction_grid({label: reconstruction_examples(result, pool, heads=rows, surrogate=surrogate)},
                               title, columns=[str(int(c)) for c in classes])


def reconstruction_grid(rows: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]], title: str,
                        columns: list[str] | None = None):
    """The layout of Figures 1, 2, 5, 11-13, 15 and 16: for every labelled row of :func:`reconstruction_examples` (one
    head's 10 classes, or 10 heads of an unconditional reconstructor), the reconstructions above the nearest of the
    compared images, a green frame on each success; ``columns`` labels the columns (default: the classes 0-9)."""
    images, labels, frames = [], [], []
    for label, (recon, nearest, hit) in rows.items():
        images += [recon, nearest]
        labels += [label, "nearest"]
        frames += [hit.tolist(), [False] * len(hit)]
    columns = [str(c) for c in range(NUM_CLASSES)] if columns is None else columns
    # the page's width for ten images: a 28x28 digit at about 0.7 inch, its strokes legible
    return plotting.image_grid(torch.stack(images), labels, columns, title=title, size=plotting.WIDTH / NUM_CLASSES,
                               frames=frames)


def quoted_numbers() -> dict[str, float]:
    """The numbers the exercises' solutions quote that no step of the pipeline computes, keyed for ``glue`` (the
    notebook's ``answers`` cell): Exercise 1's constant attack, ``1 - (1 - kappa)^N`` at ``kappa = 0.01`` for
    ``N = 10, 40, 100`` (:func:`roc.baseline_tpr`), and the largest ``kappa = 1 - (1 - gamma)^(1/40)`` that keeps it
    at the paper's ``gamma`` for ``N = 40``."""
    numbers = {f"tl_ex1_tpr_{n}": float(roc.baseline_tpr(0.01, n)) for n in (10, 40, 100)}
    return numbers | {"tl_ex1_kappa_max": 1 - (1 - GAMMA) ** (1 / 40)}


def identity_findings(numbers: dict[str, float]) -> str:
    """The CelebA section's findings as Markdown, from :func:`identity_numbers`: the rates at each set size against
    Table 1's CelebA row and Table 5's, each comparison worded as this run found it (the checks that decide the
    paper's claims are the scorecard's rows).  A scale that runs one set size (``ci``) gets the sentences about that
    size only: the comparison across sizes needs both."""
    n = numbers
    both = not math.isnan(n["tl_id_tpr01_40"])
    better = n["tl_id_tpr01_10"] > n["tl_id_paper_tpr01_10"]
    text = (f"The attack's TPR at FPR = 0.01 is {n['tl_id_tpr01_10']:.2f} at $N=10$, "
            f"{'above' if better else 'below'} the paper's {n['tl_id_paper_tpr01_10']:.3f}")
    if both:
        falls, rises = n["tl_id_drop"] > 0, n["tl_id_tprstar_40"] > n["tl_id_tprstar_10"]
        compared = " where the paper's falls" if rises else ", as the paper's does"
        text += (f", and {n['tl_id_tpr01_40']:.2f} at $N=40$ against {n['tl_id_paper_tpr01_40']:.3f}. "
                 + (f"It falls from $N=10$ to $N=40$, the direction of Table 1's CelebA row, but by "
                    f"{n['tl_id_drop']:.0%}, not by the paper's factor {n['tl_id_paper_factor']:.1f}. " if falls else
                    "It does not fall from $N=10$ to $N=40$, where Table 1's CelebA row does. ")
                 + f"The TPR at $\\tau_{{NN}}$ {'rises' if rises else 'falls'} with $N$ "
                 f"({n['tl_id_tprstar_10']:.2f} to {n['tl_id_tprstar_40']:.2f}){compared}, "
                 f"and the FPR at $\\tau_{{NN}}$ is {n['tl_id_fprstar_40']:.1%} at $N=40$, against the "
                 f"paper's {n['tl_id_paper_fprstar_40']:.1%}.")
        if rises:
            text += (" The reason is the number of persons. With ten, the reconstructor does not have to draw a "
                     "person, only a typical image of the head's class (the first figure below). At $N=40$ a set "
                     "holds four images of that class, so such an image is more often within $\\tau_{NN}$ of one "
                     "of them.")
    else:
        text += (". This scale runs $N=10$ only; the `book` scale also runs $N=40$ and compares the two sizes with "
                 "the paper's.")
    text += ("\n\nTable 5's pattern, the heads recognising the other classes better than their own, is checked per "
             "head (the scorecard's row of Table 5). Our heads recognise their own class "
             f"{'more' if n['tl_id_classtpr_10'] > n['tl_id_paper_classtpr_10'] else 'less'} often than the "
             f"paper's ({n['tl_id_classtpr_10']:.0%} of its held-out images at $N=10$, against the paper's "
             f"{n['tl_id_paper_classtpr_10']:.0%} of a person's photos). After the trainings the restart rule "
             f"allows, {n['tl_id_restart_10']:.0%} of the heads are below the loss of {RESTART_LOSS:g} at $N=10$")
    if both:
        text += (f" and {n['tl_id_restart_40']:.0%} at $N=40$, where the heads recognise "
                 f"{n['tl_id_classtpr_40']:.0%} of their class's images (the paper: "
                 f"{n['tl_id_paper_classtpr_40']:.0%})")
    return text + (". The others keep their last training. The rule favours heads that fit their set closely, so "
                   "the victims the paper attacks are not those of Table 3's recipe alone; the paper does not "
                   "mention it.")


def scoring_findings(numbers: dict[str, float]) -> str:
    """The two scoring rules of the CelebA experiment compared, as Markdown from :func:`identity_numbers`."""
    n = numbers
    falls = n["tl_id_printed_tpr01_10"] < n["tl_id_tpr01_10"]
    text = ("Scored the printed way, the random weights come closer to one of the $9M$ other images, so the "
            f"threshold for FPR = 0.01 tightens: the TPR at FPR = 0.01 {'falls' if falls else 'moves'} from "
            f"{n['tl_id_tpr01_10']:.3f} to {n['tl_id_printed_tpr01_10']:.3f} at $N=10$")
    if not math.isnan(n["tl_id_tpr01_40"]):
        text += (f" and from {n['tl_id_tpr01_40']:.3f} to {n['tl_id_printed_tpr01_40']:.3f} at $N=40$, where the "
                 f"FPR at $\\tau_{{NN}}$ rises from {n['tl_id_fprstar_40']:.3f} to "
                 f"{n['tl_id_printed_fprstar_40']:.3f}")
    return text + (" (the scorecard's row of Table 1's CelebA rule records whether the fall exceeds three standard "
                   "errors at some $N$). The paper's CelebA rates belong to the code's rule; the printed algorithm "
                   "would give other numbers. The rule also changes what \"success\" means: a reconstruction of the "
                   "person, not of any image in the set.")


def table2_dims() -> dict[str, int]:
    """Table 2's ``D_Theta`` per experiment, from the heads of Table 3 (and of the CelebA task) on the paper's feature
    widths (:data:`PAPER_EXTRACTOR_FEATURES`, :meth:`HeadRecipe.dim`)."""
    return {experiment: HeadRecipe.of(dataset, NUM_CLASSES, identity=identity).dim(features)
            for experiment, (features, dataset, identity) in PAPER_EXTRACTOR_FEATURES.items()}


def signed(value: float) -> str:
    """``value`` (standard errors) with one decimal and its sign, a minus sign (−) for a negative one
    (:func:`plotting.written_numbers`) and never ``−0.0``."""
    return plotting.written_numbers(f"{round(value, 1) + 0.0:+.1f}")


def standard_errors(difference: float, se: float) -> float:
    """``difference / se``, a difference in standard errors; where the standard error is 0 (a rate of 0 or 1 in a
    small run), infinite with the difference's sign, or 0 for no difference."""
    if se > 0:
        return float(difference / se)
    return math.copysign(math.inf, difference) if difference else 0.0


def variant_findings(variants: pd.DataFrame) -> str:
    """What :func:`variant_sweep`'s table says of each change, for the line under it: the TPR and FPR at ``tau_NN``
    of each row and its shift from the first row (Table 3's recipe) in standard errors of the difference, and which
    change lowers the TPR the most and which moves it least."""
    rows = variants.set_index("change")
    reference = rows.iloc[0]
    shifts = {name: standard_errors(row["TPR*"] - reference["TPR*"], math.hypot(row["TPR* SE"], reference["TPR* SE"]))
              for name, row in rows.iloc[1:].iterrows()}
    lines = [f"{name}: TPR / FPR at τ_NN {rows.loc[name, 'TPR*']:.3f} / {rows.loc[name, 'FPR*']:.3f}, TPR "
             f"{signed(shift)} standard errors from Table 3's recipe" for name, shift in shifts.items()]
    lines.append(f"the largest drop: {min(shifts, key=shifts.get)}; the smallest change: "
                 f"{min(shifts, key=lambda name: abs(shifts[name]))}")
    return "\n".join(lines)
