"""The results Maciazek & Allison (2025) state, as scorecard records (:mod:`compendium.scorecard`): one
:class:`~compendium.scorecard.Claim` per theorem, table, figure and headline claim, with the errata table's label."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from compendium.attacks.transfer_heads import (
    NUM_CLASSES,
    TRAINING_VARIANTS,
)
from compendium.base import plural
from compendium.chapters.transfer_learned.results import signed, standard_errors
from compendium.chapters.transfer_learned.settings import (
    CHANCE_SE,
    GAMMA,
    OOD,
    PAPER_BINARY,
    PAPER_DEFENCE_ACCURACY_COST,
    PAPER_DEFENDED_EPSILON,
    PAPER_HEAD_ACCURACY,
    PAPER_MNIST_POOLS,
    PAPER_SHADOW_TRAIN,
    PAPER_TABLE1,
    PAPER_TABLE2_D_THETA,
    PAPER_TABLE3_CIFAR_INIT_STD,
    PAPER_TABLE5,
    PAPER_TAU_NN,
    PAPER_UNCONDITIONAL,
    PAPER_VARIANTS,
    SIGNIFICANT_SE,
)
from compendium.scorecard import DIFFERS, IN_SHAPE, NOT_CHECKABLE, NOT_HERE, REPRODUCED, Card, Claim

PAPER = "Maciazek and Allison (2025)"


ERRATA_TABLE = "tl-errata-table"


#: Rows of the errata table that no claim of the scorecard decides, and why (none).
ERRATA_ELSEWHERE: dict[int, str] = {}


def _rates(experiment: str, n: int) -> str:
    tpr, fpr, tpr01 = PAPER_TABLE1[experiment][n]
    return f"{tpr:.3f}, {fpr:.3f} and {tpr01:.3f} at $N={n}$"


_DIGITS = ("the MNIST experiment on the data, image size and scale that open the finding (real 28×28 MNIST digits "
           "at `book` scale, scikit-learn's 8×8 digits at `ci`)")


_HEADS = f"{PAPER_SHADOW_TRAIN / 1e6:g} million shadow heads per run and Table 2's generator (GPU days)"


_CELEBA_TASK = "a digit class plays the person (CelebA at `paper` scale only)"


_SGD, _ADAM = PAPER_TABLE1["MNIST"][10][:2], PAPER_VARIANTS["Adam"]["MNIST"]


_RECIPES = [TRAINING_VARIANTS["1 epoch"]["epochs_offset"], TRAINING_VARIANTS["512 epochs"]["epochs_offset"]]


CLAIMS = (
    Claim("tl-fig1", "Figures 1 and 13", "figure",
          "Reconstructions of training images (MSE below $\\tau_{NN}$) from heads trained on $N=10$ and $N=40$ "
          "images, one per class.", "{numref}`tl-fig-reconstructions-10`", IN_SHAPE,
          reason=f"{_DIGITS}: the first validation heads' reconstructions at $N=10$ include successes at "
                 "$\\tau_{NN}$"),
    Claim("tl-baseline", "Sec. 2", "theorem",
          "The constant attack $\\mathcal R_0\\equiv Z_0$ has $\\mathrm{TPR}_\\tau=1-(1-\\kappa)^N\\to1$: the TPR "
          "alone does not measure an attack.", "{prf:ref}`tl-baseline`", REPRODUCED),
    Claim("tl-baseline-fpr", "Sec. 2", "statement", "The constant attack's FPR \"tends to 1 as well\".",
          "{prf:ref}`tl-baseline`", DIFFERS, erratum=4),
    Claim("tl-tau", "Sec. 2", "statement",
          f"The nearest-neighbour thresholds $\\tau_{{NN}}$ are {PAPER_TAU_NN['MNIST']}, {PAPER_TAU_NN['CIFAR']} and "
          f"{PAPER_TAU_NN['CelebA']} for MNIST, CIFAR-10 and CelebA.", "{prf:ref}`tl-def1`", NOT_HERE,
          reason="MNIST, CIFAR-10 and CelebA are downloaded at `paper` scale only, where the chapter computes "
                 f"$\\tau_{{NN}}$ the same way (MNIST at 32×32 from its {PAPER_MNIST_POOLS['train']:,} training "
                 "images); at `ci` and `book` scale it is that of the digits that run, at their size and from a "
                 "smaller pool"),
    Claim("tl-table1", "Table 1, MNIST row; Sec. 3.2 (2)", "table",
          f"TPR and FPR at $\\tau_{{NN}}$ and TPR at FPR = 0.01 of {_rates('MNIST', 10)} and "
          f"{_rates('MNIST', 40)}: the attack works at $N=10$, and its FPR grows with $N$.", "{ref}`tl-table1`",
          IN_SHAPE,
          reason=f"{_DIGITS}: at $N=10$ the TPR at FPR = 0.01 is far "
                 "above chance and over three times the $N=40$ value, and the FPR at $\\tau_{NN}$ rises with $N$"),
    Claim("tl-table1-cifar", "Table 1, CIFAR row; Figures 1 and 14", "table",
          f"TPR, FPR and TPR at FPR = 0.01 of {_rates('CIFAR', 10)} and {_rates('CIFAR', 40)} on CIFAR-10, and its "
          "reconstructions.", "{ref}`tl-paper-scale`", NOT_HERE,
          reason="CIFAR-10 and CIFAR-100 are downloaded, and EfficientNet-B0's features and Table 2's generator need "
                 "a GPU: `paper` scale with `dataset=\"cifar10\"` only"),
    Claim("tl-table1-celeba", "Table 1, CelebA row", "table",
          f"The unconditional reconstructor of one person: {_rates('CelebA', 10)} and {_rates('CelebA', 40)}.",
          "{ref}`tl-celeba`", IN_SHAPE,
          reason=f"{_CELEBA_TASK}: the TPR at FPR = 0.01 is far above chance at every $N$, and lower at $N=40$ "
                 "than at $N=10$ where both run (at `book` scale the TPR at $\\tau_{NN}$ rises with $N$ where the "
                 "paper's falls)"),
    Claim("tl-table1-celeba-rule", "Table 1 (CelebA row), Algorithm 2", "statement",
          "The CelebA rates are Algorithm 2's: the unconditional reconstruction is scored against all $N$ images of "
          "the set.", "{ref}`tl-celeba`", DIFFERS, erratum=5),
    Claim("tl-fig2", "Figures 2 and 15", "figure",
          "False-positive reconstructions at $N=40$: reconstructions from other sets' weights that pass "
          "$\\tau_{NN}$.", "{numref}`tl-fig-reconstructions-40`", IN_SHAPE,
          reason=f"{_DIGITS}: the random-weight rows at $N=40$ include successes at $\\tau_{{NN}}$ (the "
                 "face-recognition task on digit classes has few)"),
    Claim("tl-fig3a", "Sec. 3.2 (1), Figure 3a", "figure", "The TPR grows with the number of shadow models.",
          "{ref}`tl-factors`", IN_SHAPE,
          reason="the digits at $N=10$, a sweep over the training shadow heads (at `book` and `paper` scale): the "
                 f"TPR at $\\tau_{{NN}}$ rises with their number, by more than {SIGNIFICANT_SE:g} standard errors "
                 "of the difference from the fewest to the most"),
    Claim("tl-fig3c", "Sec. 3.2 (2), Figure 3c", "figure",
          "Training the reconstructor longer raises the TPR at FPR = 0.01, until it overfits.",
          "{numref}`tl-fig-training`", IN_SHAPE,
          reason=f"{_DIGITS}, the main attack at $N=10$: the validation loss falls, and the TPR at FPR = 0.01 of the "
                 f"best pass exceeds the first pass's by more than {CHANCE_SE:g} standard errors of the difference "
                 "(the paper's panel is the CelebA task at $N=40$)"),
    Claim("tl-uncond", "Sec. 3.2 (3)", "statement",
          f"An unconditional reconstructor (CIFAR-10, $N=10$) has TPR {PAPER_UNCONDITIONAL['CIFAR'][0]:.1%} and FPR "
          f"{PAPER_UNCONDITIONAL['CIFAR'][1]:.1%} at $\\tau_{{NN}}$, both above the conditional one's, and collapses "
          "onto one or two classes.", "{ref}`tl-factors`", IN_SHAPE,
          reason="the digits at $N=10$, fewer steps: both rates are higher than the conditional reconstructor's, and "
                 "two classes take over half of the reconstructions"),
    Claim("tl-binary", "Sec. 3.2 (4), Table 6", "statement",
          f"Binary heads (Table 6) attacked with a reconstructor conditioned on the ten classes still give TPR "
          f"{PAPER_BINARY['MNIST'][0]:.1%} and FPR {PAPER_BINARY['MNIST'][1]:.1%} (MNIST, $N=10$).",
          "{ref}`tl-factors`", IN_SHAPE,
          reason=f"{_DIGITS}, with the binary heads at `book` and `paper` scale: the attack on the raw binary heads "
                 f"has a TPR at FPR = 0.01 more than {CHANCE_SE:g} standard errors above chance"),
    Claim("tl-adam", "Sec. 3.2 (5)", "statement",
          f"Heads trained with Adam are attacked with slightly lower success: TPR {_ADAM[0]:.1%} and FPR "
          f"{_ADAM[1]:.1%} (MNIST, $N=10$; SGD {_SGD[0]:.1%} and {_SGD[1]:.1%}).", "{ref}`tl-factors`", IN_SHAPE,
          reason=f"{_DIGITS}, fewer shadow heads (at `book` and `paper` scale): Adam lowers the TPR at "
                 f"$\\tau_{{NN}}$ by more than {SIGNIFICANT_SE:g} standard errors of the difference, and its TPR at "
                 f"FPR = 0.01 stays more than {CHANCE_SE:g} standard errors above chance"),
    Claim("tl-fig3b", "Sec. 3.2 (6), Figure 3b", "figure",
          "Larger initial weights $\\sigma_{init}$ lower the TPR and raise the FPR, and cost the heads accuracy "
          "before they stop the attack.", "{ref}`tl-factors`", IN_SHAPE,
          reason="the digits at $N=10$, a larger $\\sigma_{init}$ (at `book` and `paper` scale): the TPR at FPR = "
                 f"0.01 falls and the FPR at $\\tau_{{NN}}$ rises, each by more than {SIGNIFICANT_SE:g} standard "
                 "errors of the difference, and the heads' accuracy falls"),
    Claim("tl-recipes", "Sec. 3.2 (5), (7)", "statement",
          f"Training the heads for {_RECIPES[0]} or {_RECIPES[1]} epochs, or on mini-batches of $N/2$, changes the "
          "reconstruction TPR and FPR insignificantly.", "{ref}`tl-factors`", IN_SHAPE,
          reason=f"{_DIGITS}, every recipe run with the same shadow heads and steps (at `book` and `paper` scale): no "
                 f"changed recipe moves the TPR or the FPR at $\\tau_{{NN}}$ by more than {SIGNIFICANT_SE:g} standard "
                 "errors of the difference from Table 3's recipe"),
    Claim("tl-ood", "Sec. 3.2 (8)", "statement",
          f"A reconstructor trained on shadow heads of out-of-distribution data (CIFAR-100 with random labels) still "
          f"attacks CIFAR-10 heads: TPR {PAPER_VARIANTS[OOD]['CIFAR'][0]:.1%} and FPR "
          f"{PAPER_VARIANTS[OOD]['CIFAR'][1]:.1%} at $\\tau_{{NN}}$.", "{ref}`tl-factors`", IN_SHAPE,
          reason=f"{_DIGITS}; the adversary's shadow data is the pre-training pool with random labels (Fashion-MNIST "
                 f"at `book` scale, EMNIST letters or CIFAR-100 at `paper` scale): its TPR at FPR = 0.01 is "
                 f"above chance by more than {CHANCE_SE:g} standard errors"),
    Claim("tl-dp-rate", "Sec. 4, App. E", "statement",
          "DP-SGD runs on batches of $N-1$, a sampling rate of $(N-1)/N$.", "{ref}`tl-dp`", DIFFERS, erratum=2),
    Claim("tl-fig4", "Sec. 4, Figure 4", "figure",
          "Under DP-SGD the TPR at FPR = 0.01 falls with $\\varepsilon$, and so does the heads' test accuracy.",
          "{numref}`tl-fig-dp-defence`", IN_SHAPE,
          reason="the digits at $N=10$, one noise level at `ci` and three at `book` scale: the TPR at FPR = 0.01 "
                 "falls, TPR and FPR at $\\tau_{NN}$ meet under the strongest noise, and the accuracy drops by over "
                 "ten points"),
    Claim("tl-eps", "Sec. 4", "statement",
          f"With $\\gamma$ = {GAMMA} the attack is defended for $\\varepsilon\\lesssim$ "
          f"{PAPER_DEFENDED_EPSILON[('MNIST', 10)]} and {PAPER_DEFENDED_EPSILON[('MNIST', 40)]} (MNIST, $N=10$ and "
          f"$40$), {PAPER_DEFENDED_EPSILON[('CIFAR', 10)]} and {PAPER_DEFENDED_EPSILON[('CIFAR', 40)]} (CIFAR-10).",
          "{ref}`tl-dp`", NOT_HERE,
          reason=f"the defended ε measures the attack's strength, and the paper's attack needs its {_HEADS} at every "
                 "noise level; "
                 "the book's weaker attack is defended at a much larger ε (printed under the sweep)"),
    Claim("tl-fig5", "Figures 5 and 16", "figure",
          "As $\\varepsilon$ falls the reconstructions blur into generic images of their class.",
          "{numref}`tl-fig-dp-reconstructions`", IN_SHAPE,
          reason="the digits at $N=10$: under the strongest noise the successes at $\\tau_{NN}$ are coincidental, "
                 "the TPR equal to the FPR within five standard errors"),
    Claim("tl-fig6", "Figures 6 and 8", "figure",
          "The attack's cumulative ROC curves; the cumulative and the Neyman–Pearson ROC overlap almost exactly.",
          "{numref}`tl-fig-roc`", IN_SHAPE,
          reason="the digits instead of CelebA: the ROC is above chance, more so at $N=10$ than at $N=40$ (AUC), and "
                 "the exact Neyman–Pearson ROC of the fitted Gaussians is within 0.01 of Eq. (6), their cumulative "
                 "ROC, at every FPR"),
    Claim("tl-fig7", "App. A.1, Figure 7", "figure",
          "$\\phi=\\mathrm{logit}(\\ell_{\\min}/4)$ is near-Gaussian under each hypothesis; $H_0$ and $H_1$ separate "
          "less at larger $N$, and $H_1^*$ lies further from $H_0$ than $H_1$.", "{numref}`tl-fig-phi-laws`",
          IN_SHAPE,
          reason="the digits instead of CelebA: the gap between the fitted means of $H_0$ and $H_1$ shrinks from "
                 "$N=10$ to $N=40$, and random prior draws pass $\\tau_{NN}$ less often than the reconstructor's "
                 "false positives"),
    Claim("tl-fig9", "App. A.1, Figure 9", "figure",
          "Eq. (6) with the fitted Gaussians agrees well with the experimental ROC, diverging a little at low FPR "
          "(\"insufficient sampling\").", "{numref}`tl-fig-roc`", DIFFERS, erratum=3),
    Claim("tl-thm1", "Theorem 1, Eqs. (6)–(13)", "theorem",
          "If a monotone transform makes both laws Gaussian, the cumulative and the Neyman–Pearson ROC are "
          "identical and given by Eq. (6); the proof rests on identity (13), verified numerically.",
          "{prf:ref}`tl-thm1`", DIFFERS, erratum=1),
    Claim("tl-table2", "Table 2", "table",
          f"The reconstructor reads $D_\\Theta$ = {PAPER_TABLE2_D_THETA['MNIST']}, {PAPER_TABLE2_D_THETA['CIFAR']} "
          f"and {PAPER_TABLE2_D_THETA['CelebA']} trained head parameters (MNIST, CIFAR-10, CelebA).",
          "{ref}`tl-paper-scale`", REPRODUCED),
    Claim("tl-fig10", "App. B, Figure 10", "figure",
          "The residual block of the reconstructor (Table 2's generator).", "{ref}`tl-paper-scale`", NOT_CHECKABLE,
          reason="a diagram of the architecture: it states no result (the generator, "
                 "`models.ResidualReconstructor`, is trained at `paper` scale)"),
    Claim("tl-fig11", "Figures 11 and 12", "figure",
          "Reconstructions of the person from the first validation heads of the CelebA experiment, $N=10$ and "
          "$N=40$.", "{numref}`tl-fig-identity-heads-10`", IN_SHAPE,
          reason=f"{_CELEBA_TASK}: the reconstructions show the heads' class, with a TPR at FPR = 0.01 far above "
                 "chance at every $N$ run"),
    Claim("tl-table3", "Table 3, CIFAR row", "table",
          f"CIFAR-10 heads start from weights of standard deviation $\\sigma_{{init}}$ = "
          f"{PAPER_TABLE3_CIFAR_INIT_STD:g}.", "{ref}`tl-errata`", DIFFERS, erratum=6),
    Claim("tl-table4", "Table 4", "table",
          f"Heads of Table 3's recipe reach test accuracy {PAPER_HEAD_ACCURACY['MNIST'][10]:.3f} at $N=10$ and "
          f"{PAPER_HEAD_ACCURACY['MNIST'][40]:.3f} at $N=40$ on MNIST ({PAPER_HEAD_ACCURACY['CIFAR'][10]:.3f} and "
          f"{PAPER_HEAD_ACCURACY['CIFAR'][40]:.3f} on CIFAR-10).", "{ref}`tl-table1`", IN_SHAPE,
          reason=f"{_DIGITS}, MNIST's row of Table 3 on its features: the accuracy rises from $N=10$ to $N=40$"),
    Claim("tl-table5", "Table 5", "table",
          f"The CelebA heads' accuracy is {PAPER_TABLE5[10]['accuracy'][0]:.3f} at $N=10$, but they recognise only "
          f"{PAPER_TABLE5[10]['TPR'][0]:.1%} of the person's photos (TNR {PAPER_TABLE5[10]['TNR'][0]:.1%}).",
          "{ref}`tl-celeba`", IN_SHAPE,
          reason=f"{_CELEBA_TASK}: each head recognises the other classes better than its own (paired); a digit "
                 "class is a coarser target than a face"),
    Claim("tl-abstract", "Abstract (a)", "headline",
          "A weak adversary, knowing the released head, its training recipe and the data distribution but no "
          "gradient or seed, reconstructs training images of a transfer-learned classifier.", "{ref}`tl-table1`",
          IN_SHAPE, reason=f"{_DIGITS}: at $N=10$ the TPR at FPR = 0.01 is far above chance"),
    Claim("tl-abstract-metric", "Abstract (b), Sec. 2", "headline",
          "The true-positive reconstruction rate alone fails to quantify an attack; the TPR at a fixed low FPR "
          "does.", "{ref}`tl-table1`", IN_SHAPE,
          reason="the constant attack beats the reconstructor's TPR at $\\tau_{NN}$ at $N=40$, with an FPR equal "
                 "to its TPR, while the reconstructor's TPR at FPR = 0.01 is far above chance at $N=10$"),
    Claim("tl-conclusion", "Sec. 5; Sec. 4", "headline",
          f"The attack cannot be defended by DP-SGD without severely damaging accuracy: over "
          f"{PAPER_DEFENCE_ACCURACY_COST[10]} points at $N=10$, slightly above {PAPER_DEFENCE_ACCURACY_COST[40]} at "
          "$N=40$.", "{numref}`tl-fig-dp-defence`", IN_SHAPE,
          reason="the digits at $N=10$; the book's weaker attack is defended at less noise than the paper's, yet the "
                 f"least noise of the sweep that defends it (TPR at FPR = 0.01 below $\\gamma$ by more than "
                 f"{SIGNIFICANT_SE:g} standard errors) costs the heads over ten points of accuracy"),
)


#: The claims decided on the CelebA experiment, whose data may differ from the other sections' (a digit class plays
#: the person at ``ci`` and ``book`` scale).
IDENTITY_CLAIMS = ("tl-table1-celeba", "tl-table1-celeba-rule", "tl-table5", "tl-fig11")
#: The claims decided on no data, with what decides them instead: Theorem 1's identities, the README's privacy
#: accounting, the heads' sizes of Table 2 and the authors' configs behind Table 3.
DATA_FREE_CLAIMS = {"tl-thm1": "no data (closed forms)", "tl-dp-rate": "no data (the accountant)",
                    "tl-table2": "no data (the heads' shapes)", "tl-table3": "no data (the authors' configs)"}


class RunCard(Card):
    """The chapter's scorecard :class:`~compendium.scorecard.Card` on :data:`CLAIMS`, whose findings open with what
    ran: ``run`` (the data, image size and scale, :func:`run_description`), ``identity_run`` for the claims of the
    CelebA experiment (:data:`IDENTITY_CLAIMS`), "no data (...)" for :data:`DATA_FREE_CLAIMS`."""

    def __init__(self, *, run: str, identity_run: str):
        super().__init__(PAPER, CLAIMS, errata=ERRATA_TABLE)
        self.data_run, self.identity_run = run, identity_run

    def check(self, key: str, *, holds: bool, found: str) -> None:
        run = DATA_FREE_CLAIMS.get(key) or (self.identity_run if key in IDENTITY_CLAIMS else self.data_run)
        super().check(key, holds=holds, found=f"{run}: {found}")

    def record(self, key: str, verdict: tuple[bool, str] | None, *, scale: str, runs: str) -> None:
        """Record a verdict ``(holds, found)`` of a sweep (:meth:`check`), or, where ``verdict`` is ``None`` (the
        sweep does not run at ``scale``), that the check is not run: only ``runs`` (e.g. ``"book and paper scale"``)
        run it."""
        if verdict is None:
            self.not_run(key, why=f"not run at `{scale}` scale (a sweep of whole attacks that {runs} run)")
        else:
            self.check(key, holds=verdict[0], found=verdict[1])


#: The data sets' names in a finding.
DATA_NAMES = {"digits": "scikit-learn's digits", "mnist_digits": "real MNIST digits (8,000 / 2,000 shipped)",
              "mnist": "MNIST", "cifar10": "CIFAR-10", "celeba": "CelebA"}


def run_description(dataset: str, images, scale: str) -> str:
    """What a finding was made on: the data set, the size of its images (``images``: (B, C, H, W)) and the scale,
    e.g. ``"real MNIST digits (8,000 / 2,000 shipped), 28×28, `book` scale"``."""
    height, width = images.shape[-2:]
    return f"{DATA_NAMES[dataset]}, {height}×{width}, `{scale}` scale"


def _above_chance(row, se: float = CHANCE_SE) -> bool:
    """Whether a rates row's TPR at FPR = 0.01 lies more than ``se`` standard errors above chance (0.01)."""
    return bool(row["TPR@FPR=0.01"] - 0.01 > se * row["TPR@FPR=0.01 SE"])


def _shift(row, reference, rate: str) -> float:
    """``row``'s change of ``rate`` from ``reference``'s in standard errors of the difference."""
    return standard_errors(row[rate] - reference[rate], math.hypot(row[f"{rate} SE"], reference[f"{rate} SE"]))


def factor_verdicts(factors: pd.DataFrame) -> dict[str, tuple[bool, str] | None]:
    """The verdicts of Figure 3a and 3b from :func:`factor_sweep`'s table (``None`` where the factor was not swept),
    each ``(holds, found)``:

    * ``tl-fig3a``: the TPR at ``tau_NN`` rises with every further number of training shadow heads, and from the
      fewest to the most by more than :data:`SIGNIFICANT_SE` standard errors of the difference (the rule by which
      Section 3.2's other points are read);
    * ``tl-fig3b``: larger initial weights weaken the attack: the TPR at FPR = 0.01 falls with every larger
      ``sigma_init``, and from the smallest to the largest it falls and the FPR at ``tau_NN`` rises, each by more
      than :data:`SIGNIFICANT_SE` standard errors of the difference, and the heads' accuracy falls."""
    verdicts: dict[str, tuple[bool, str] | None] = {"tl-fig3a": None, "tl-fig3b": None}
    by_count = factors[factors["factor"] == "shadow heads"].sort_values("value")
    if len(by_count) > 1:
        few, most = by_count.iloc[0], by_count.iloc[-1]
        rise = _shift(most, few, "TPR*")
        verdicts["tl-fig3a"] = (
            bool(np.all(np.diff(by_count["TPR*"]) > 0)) and rise > SIGNIFICANT_SE,
            "TPR at τ_NN " + ", ".join(f"{row['TPR*']:.3f} ± {row['TPR* SE']:.3f} with {int(row['value']):,}"
                                       for _, row in by_count.iterrows())
            + f" heads: {signed(rise)} SE of the difference from the fewest to the most (a rise counts beyond "
              f"{SIGNIFICANT_SE:g} SE)")
    by_std = factors[factors["factor"] == "init std"].sort_values("value")
    if len(by_std) > 1:
        lo, hi = by_std.iloc[0], by_std.iloc[-1]
        fall, rise = -_shift(hi, lo, "TPR@FPR=0.01"), _shift(hi, lo, "FPR*")
        verdicts["tl-fig3b"] = (
            bool(np.all(np.diff(by_std["TPR@FPR=0.01"]) < 0)) and min(fall, rise) > SIGNIFICANT_SE
            and hi["head accuracy"] < lo["head accuracy"],
            f"σ_init {lo['value']:g} → {hi['value']:g}: TPR at FPR = 0.01 {lo['TPR@FPR=0.01']:.3f} → "
            f"{hi['TPR@FPR=0.01']:.3f} ({signed(-fall)} SE), FPR at τ_NN {lo['FPR*']:.3f} → {hi['FPR*']:.3f} "
            f"({signed(rise)} SE), accuracy {lo['head accuracy']:.3f} → {hi['head accuracy']:.3f} (a change counts "
            f"beyond {SIGNIFICANT_SE:g} SE)")
    return verdicts


def variant_verdicts(variants: pd.DataFrame) -> dict[str, tuple[bool, str] | None]:
    """The verdicts of Section 3.2, points 5, 7 and 8 from :func:`variant_sweep`'s table (``None`` where the row
    was not run), each ``(holds, found)``:

    * ``tl-adam``: Adam lowers the TPR at ``tau_NN`` by more than :data:`SIGNIFICANT_SE` standard errors of the
      difference ("slightly lower success"), and its TPR at FPR = 0.01 stays :data:`CHANCE_SE` above chance;
    * ``tl-recipes``: one epoch, 512 epochs and mini-batches move neither the TPR nor the FPR at ``tau_NN`` by more
      than :data:`SIGNIFICANT_SE` standard errors of the difference (the paper has "not observed significant changes");
    * ``tl-ood``: the out-of-distribution adversary's TPR at FPR = 0.01 lies :data:`CHANCE_SE` above chance."""
    verdicts: dict[str, tuple[bool, str] | None] = {"tl-adam": None, "tl-recipes": None, "tl-ood": None}
    if not len(variants):
        return verdicts
    rows = variants.set_index("change")
    reference = rows.iloc[0]
    if "Adam" in rows.index:
        adam = rows.loc["Adam"]
        verdicts["tl-adam"] = (
            _shift(adam, reference, "TPR*") < -SIGNIFICANT_SE and _above_chance(adam),
            f"TPR at τ_NN {reference['TPR*']:.3f} with SGD, {adam['TPR*']:.3f} with Adam "
            f"({signed(_shift(adam, reference, 'TPR*'))} SE); TPR at FPR = 0.01 with Adam {adam['TPR@FPR=0.01']:.3f} ± "
            f"{adam['TPR@FPR=0.01 SE']:.3f}")
    recipes = [name for name in rows.index[1:] if name in TRAINING_VARIANTS and name != "Adam"]
    if recipes:
        shifts = {name: (_shift(rows.loc[name], reference, "TPR*"), _shift(rows.loc[name], reference, "FPR*"))
                  for name in recipes}
        verdicts["tl-recipes"] = (
            all(abs(t) <= SIGNIFICANT_SE and abs(f) <= SIGNIFICANT_SE for t, f in shifts.values()),
            "TPR / FPR at τ_NN against Table 3's recipe (shift in SE): " + "; ".join(
                f"{name} {rows.loc[name, 'TPR*']:.3f} ({signed(t)}) / {rows.loc[name, 'FPR*']:.3f} ({signed(f)})"
                for name, (t, f) in shifts.items())
            + f"; Table 3's {reference['TPR*']:.3f} / {reference['FPR*']:.3f}")
    if OOD in rows.index:
        ood = rows.loc[OOD]
        verdicts["tl-ood"] = (
            _above_chance(ood),
            f"out-of-distribution adversary: TPR at FPR = 0.01 {ood['TPR@FPR=0.01']:.3f} ± "
            f"{ood['TPR@FPR=0.01 SE']:.3f} (in distribution {reference['TPR@FPR=0.01']:.3f}); TPR / FPR at τ_NN "
            f"{ood['TPR*']:.3f} / {ood['FPR*']:.3f}")
    return verdicts


def variant_summary(variants: pd.DataFrame) -> str:
    """What :func:`variant_sweep`'s table says, as a phrase for the prose, from :func:`variant_verdicts` and the rows:
    whether Adam lowers the TPR at ``tau_NN`` significantly, whether the other recipes stay within
    :data:`SIGNIFICANT_SE` standard errors (and which lowers it most), whether the out-of-distribution adversary stays
    above chance; ``"the sweep does not run at this scale"`` without rows."""
    verdicts = variant_verdicts(variants)
    if not len(variants):
        return "the sweep does not run at this scale"
    rows = variants.set_index("change")
    reference = rows.iloc[0]
    parts = []
    if verdicts["tl-adam"] is not None:
        adam = _shift(rows.loc["Adam"], reference, "TPR*")
        parts.append(f"Adam moves the TPR at τ_NN by {signed(adam)} standard errors, " + (
            "a significant fall with the attack above chance, as in the paper" if verdicts["tl-adam"][0] else
            "not the significant fall with the attack above chance that the paper reports"))
    recipes = [name for name in rows.index[1:] if name in TRAINING_VARIANTS and name != "Adam"]
    if recipes:
        shifts = {name: _shift(rows.loc[name], reference, "TPR*") for name in recipes}
        worst = min(shifts, key=shifts.get)
        parts.append(f"every other recipe moves TPR and FPR at τ_NN by at most {SIGNIFICANT_SE:g} "
                     "standard errors, as the paper found" if verdicts["tl-recipes"][0] else
                     f"not every other recipe stays within {SIGNIFICANT_SE:g} standard errors: {worst} lowers the "
                     f"TPR the most ({signed(shifts[worst])} standard errors)")
    if verdicts["tl-ood"] is not None:
        parts.append("the out-of-distribution adversary stays above chance at FPR = 0.01" if verdicts["tl-ood"][0]
                     else "the out-of-distribution adversary does not stay above chance at FPR = 0.01")
    return "; ".join(parts)


def identity_verdicts(identity: dict, table5: pd.DataFrame) -> dict[str, tuple[bool, str]]:
    """The verdicts of the CelebA experiment's Table 1 row and Table 5 from its runs (``{N: AttackResult}``) and
    :func:`table5`, each ``(holds, found)``: ``tl-table1-celeba``, the TPR at FPR = 0.01 more than five standard
    errors above chance at every ``N``, and lower at the largest ``N`` than at the smallest by more than three
    standard errors of the difference where two ran; ``tl-table5``, each head recognises the other classes better
    than its own, the mean paired gap TNR - TPR more than three standard errors above 0."""
    summaries = {n: r.summary() for n, r in identity.items()}
    holds = all(_above_chance(s, 5.0) for s in summaries.values())
    if len(summaries) > 1:
        small, large = summaries[min(summaries)], summaries[max(summaries)]
        se = math.hypot(small["TPR@FPR=0.01 SE"], large["TPR@FPR=0.01 SE"])
        holds = holds and small["TPR@FPR=0.01"] - large["TPR@FPR=0.01"] > 3 * se
    gaps = {n: r.head_scores["TNR"] - r.head_scores["TPR"] for n, r in identity.items()}
    return {
        "tl-table1-celeba": (holds, "TPR at FPR = 0.01 " + ", ".join(
            f"{s['TPR@FPR=0.01']:.3f} at N = {n}" for n, s in summaries.items())
            + "; TPR at τ_NN " + ", ".join(f"{s['TPR*']:.3f}" for s in summaries.values())),
        "tl-table5": (all(float(g.mean()) > 3 * float(g.std()) / math.sqrt(len(g)) for g in gaps.values()),
                      "classification TPR / TNR " + ", ".join(
                          f"{float(r.head_scores['TPR'].mean()):.3f} / {float(r.head_scores['TNR'].mean()):.3f} at "
                          f"N = {n}" for n, r in identity.items())),
    }


def dp_verdicts(sweep: pd.DataFrame, *, validation_heads: int) -> dict[str, tuple[bool, str]]:
    """The verdicts of Section 4 from :func:`dp_sweep`'s table (its first row without DP), each ``(holds, found)``:
    ``tl-fig4``, the TPR at FPR = 0.01 under the strongest noise below the non-private one and the heads' accuracy
    more than ten points lower; ``tl-fig5``, under the strongest noise TPR and FPR at ``tau_NN`` within five
    standard errors of their difference, ``sqrt(2 / 4 n)`` at worst for ``n = validation_heads x 10`` draws each
    (a reconstruction no better than a guess); ``tl-conclusion``, the least noise of the sweep that defends the attack
    (TPR at FPR = 0.01 below :data:`GAMMA` by more than :data:`SIGNIFICANT_SE` standard errors) costs more than ten
    points of accuracy."""
    first, strongest = sweep.iloc[0], sweep.iloc[-1]
    n = validation_heads * NUM_CLASSES
    verdicts = {
        "tl-fig4": (bool(strongest["TPR@FPR=0.01"] < first["TPR@FPR=0.01"]
                         and strongest["head accuracy"] < first["head accuracy"] - 0.1),
                    f"{plural(len(sweep) - 1, 'noise level')}: TPR at FPR = 0.01 {first['TPR@FPR=0.01']:.3f} → "
                    f"{strongest['TPR@FPR=0.01']:.3f}, accuracy {first['head accuracy']:.3f} → "
                    f"{strongest['head accuracy']:.3f}"),
        "tl-fig5": (bool(abs(strongest["TPR*"] - strongest["FPR*"]) <= 5 * math.sqrt(2 * 0.25 / n)),
                    f"at ε = {strongest['eps_prv']:.3g}: TPR at τ_NN {strongest['TPR*']:.3f}, FPR "
                    f"{strongest['FPR*']:.3f} ({n:,} draws each)"),
    }
    margin = (GAMMA - sweep["TPR@FPR=0.01"]) / sweep["TPR@FPR=0.01 SE"]
    safe = sweep[sweep["eps_prv"].map(math.isfinite) & (margin > SIGNIFICANT_SE)]
    if len(safe):
        least = safe.sort_values("noise multiplier").iloc[0]
        cost = first["head accuracy"] - least["head accuracy"]
        verdicts["tl-conclusion"] = (bool(cost > 0.1), f"the least noise of the sweep that defends beyond "
                                     f"{SIGNIFICANT_SE:g} SE (σ = {least['noise multiplier']:g}, ε = "
                                     f"{least['eps_prv']:.3g}, TPR at FPR = 0.01 {least['TPR@FPR=0.01']:.4f}) "
                                     f"costs {100 * cost:.0f} points of accuracy")
    else:
        verdicts["tl-conclusion"] = (False, f"no noise level of the sweep defends the attack beyond "
                                     f"{SIGNIFICANT_SE:g} standard errors")
    return verdicts
