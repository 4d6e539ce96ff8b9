"""The results Maciazek & Allison (2025) state, as scorecard records (:mod:`compendium.scorecard`): one
:class:`~compendium.scorecard.Claim` per theorem, table, figure and headline claim, with the errata table's label."""
from __future__ import annotations

from compendium.attacks.transfer_heads import (
    TRAINING_VARIANTS,
)
from compendium.chapters.transfer_learned.settings import (
    GAMMA,
    OOD,
    PAPER_BINARY,
    PAPER_DEFENCE_ACCURACY_COST,
    PAPER_DEFENDED_EPSILON,
    PAPER_HEAD_ACCURACY,
    PAPER_SHADOW_TRAIN,
    PAPER_TABLE1,
    PAPER_TABLE2_D_THETA,
    PAPER_TABLE3_CIFAR_INIT_STD,
    PAPER_TABLE5,
    PAPER_TAU_NN,
    PAPER_UNCONDITIONAL,
    PAPER_VARIANTS,
)
from compendium.scorecard import DIFFERS, IN_SHAPE, NOT_CHECKABLE, NOT_HERE, REPRODUCED, Claim

PAPER = "Maciazek and Allison (2025)"


ERRATA_TABLE = "tl-errata-table"


#: Rows of the errata table that no claim of the scorecard decides, and why (none).
ERRATA_ELSEWHERE: dict[int, str] = {}


def _rates(experiment: str, n: int) -> str:
    tpr, fpr, tpr01 = PAPER_TABLE1[experiment][n]
    return f"{tpr:.3f}, {fpr:.3f} and {tpr01:.3f} at $N={n}$"


_DIGITS = "scikit-learn's 8×8 digits instead of MNIST"


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
                 "$\\tau_{NN}$ the same way; at `ci` and `book` scale it is the digits' own"),
    Claim("tl-table1", "Table 1, MNIST row; Sec. 3.2 (2)", "table",
          f"TPR and FPR at $\\tau_{{NN}}$ and TPR at FPR = 0.01 of {_rates('MNIST', 10)} and "
          f"{_rates('MNIST', 40)}: the attack works at $N=10$, and its FPR grows with $N$.", "{ref}`tl-table1`",
          IN_SHAPE,
          reason=f"{_DIGITS}, fewer shadow heads and an MLP reconstructor: at $N=10$ the TPR at FPR = 0.01 is far "
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
                 "TPR at $\\tau_{NN}$ rises with their number"),
    Claim("tl-fig3c", "Sec. 3.2 (2), Figure 3c", "figure",
          "Training the reconstructor longer raises the TPR at FPR = 0.01, until it overfits.",
          "{numref}`tl-fig-training`", IN_SHAPE,
          reason="the main digits attack at $N=10$: the validation loss falls and the TPR at FPR = 0.01 more than "
                 "doubles over the training (the paper's panel is the CelebA task at $N=40$)"),
    Claim("tl-uncond", "Sec. 3.2 (3)", "statement",
          f"An unconditional reconstructor (CIFAR-10, $N=10$) has TPR {PAPER_UNCONDITIONAL['CIFAR'][0]:.1%} and FPR "
          f"{PAPER_UNCONDITIONAL['CIFAR'][1]:.1%} at $\\tau_{{NN}}$, both above the conditional one's, and collapses "
          "onto one or two classes.", "{ref}`tl-factors`", IN_SHAPE,
          reason="the digits at $N=10$, fewer steps: both rates are higher than the conditional reconstructor's, and "
                 "two classes take over half of the reconstructions"),
    Claim("tl-binary", "Sec. 3.2 (4), Table 6", "statement",
          f"Binary heads (Table 6) attacked with a reconstructor conditioned on the ten classes still give TPR "
          f"{PAPER_BINARY['MNIST'][0]:.1%} and FPR {PAPER_BINARY['MNIST'][1]:.1%} (MNIST, $N=10$).",
          "{ref}`tl-factors`", NOT_HERE,
          reason=f"at `book` scale the attack on the raw binary heads is near chance (ordering their hidden units "
                 f"lifts it a little); whether it reaches the paper's rates needs the paper's {_HEADS}"),
    Claim("tl-adam", "Sec. 3.2 (5)", "statement",
          f"Heads trained with Adam are attacked with slightly lower success: TPR {_ADAM[0]:.1%} and FPR "
          f"{_ADAM[1]:.1%} (MNIST, $N=10$; SGD {_SGD[0]:.1%} and {_SGD[1]:.1%}).", "{ref}`tl-factors`", IN_SHAPE,
          reason="the digits at $N=10$, fewer shadow heads (at `book` and `paper` scale): Adam lowers the TPR at "
                 "$\\tau_{NN}$ by over three standard errors, and the attack stays well above chance"),
    Claim("tl-fig3b", "Sec. 3.2 (6), Figure 3b", "figure",
          "Larger initial weights $\\sigma_{init}$ lower the TPR and raise the FPR, and cost the heads accuracy "
          "before they stop the attack.", "{ref}`tl-factors`", IN_SHAPE,
          reason="the digits at $N=10$, a larger $\\sigma_{init}$ (at `book` and `paper` scale): the TPR at FPR = "
                 "0.01 falls, the FPR at $\\tau_{NN}$ rises and the heads' accuracy falls"),
    Claim("tl-recipes", "Sec. 3.2 (5), (7), (8)", "statement",
          f"Training the heads for {_RECIPES[0]} or {_RECIPES[1]} epochs or on mini-batches of $N/2$ changes the "
          f"success insignificantly; shadow heads trained out of distribution (CIFAR-100) still reach TPR "
          f"{PAPER_VARIANTS[OOD]['CIFAR'][0]:.1%} and FPR {PAPER_VARIANTS[OOD]['CIFAR'][1]:.1%} on CIFAR-10.",
          "{ref}`tl-factors`", NOT_HERE,
          reason=f"at `book` scale most changed recipes move the TPR at $\\tau_{{NN}}$ by more than a standard error "
                 f"(one epoch the most), and the turned-digit adversary, a larger drift than CIFAR-100's, fails; "
                 f"whether the gaps close needs the paper's {_HEADS}"),
    Claim("tl-dp-rate", "Sec. 4, App. E", "statement",
          "DP-SGD runs on batches of $N-1$, a sampling rate of $(N-1)/N$.", "{ref}`tl-dp`", DIFFERS, erratum=2),
    Claim("tl-fig4", "Sec. 4, Figure 4", "figure",
          "Under DP-SGD the TPR at FPR = 0.01 falls with $\\varepsilon$, and so does the heads' test accuracy.",
          "{numref}`tl-fig-dp-defence`", IN_SHAPE,
          reason="the digits at $N=10$, one noise level at `ci` and four at `book` scale: the TPR at FPR = 0.01 "
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
          reason="MNIST's row of Table 3 on the features of scikit-learn's 8×8 digits: the accuracy rises from "
                 "$N=10$ to $N=40$"),
    Claim("tl-table5", "Table 5", "table",
          f"The CelebA heads' accuracy is {PAPER_TABLE5[10]['accuracy'][0]:.3f} at $N=10$, but they recognise only "
          f"{PAPER_TABLE5[10]['TPR'][0]:.1%} of the person's photos (TNR {PAPER_TABLE5[10]['TNR'][0]:.1%}).",
          "{ref}`tl-celeba`", IN_SHAPE,
          reason=f"{_CELEBA_TASK}: each head recognises the other classes better than its own (paired), though a "
                 "digit class is far easier to recognise than a face"),
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
                 "least noise of the sweep that defends it (TPR at FPR = 0.01 at most $\\gamma$) costs the heads "
                 "over ten points of accuracy"),
)
