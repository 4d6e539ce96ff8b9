"""The diffusion chapter's scorecard: every result the paper states (:data:`CLAIMS`), decided in the notebook
(:mod:`compendium.scorecard`)."""
from __future__ import annotations

from compendium.bounds import diffusion as theory
from compendium.chapters.diffusion.settings import (
    METHODS,
    PAPER_TABLE1,
    PAPER_TABLE2,
    PAPER_TABLE3,
    PAPER_TABLE4,
    PAPER_TABLE5,
    PAPER_TABLE6,
    FLOOR_MARGIN,
    T1_DPS_DROP,
    TABLE6_VARIANCE,
)
from compendium.scorecard import DIFFERS, IN_SHAPE, NOT_CHECKABLE, NOT_HERE, REPRODUCED, Claim

PAPER = "Huang, Meng et al. (2024)"
ERRATA_TABLE = "df-errata-table"
#: Rows of the errata table that no claim of the scorecard decides, and why (none).
ERRATA_ELSEWHERE: dict[int, str] = {}
_T1_DSG_RAW = PAPER_TABLE1[("DSG", False, TABLE6_VARIANCE)]  # (PSNR, MSE) of the row that contradicts itself
_T3_BEST = max(PAPER_TABLE3, key=PAPER_TABLE3.get)
_T4_BEST = max(PAPER_TABLE4, key=PAPER_TABLE4.get)
_T5_BEST = max((k for k in PAPER_TABLE5 if k not in METHODS), key=PAPER_TABLE5.get)
_T6_BEST = max((k for k in PAPER_TABLE6 if k not in METHODS), key=PAPER_TABLE6.get)

CLAIMS = (
    Claim("df-fig1", "Figure 1", "figure",
          "The forward (noising) and the reverse (denoising) process of a diffusion model.",
          "{numref}`df-fig-prior-samples`", NOT_CHECKABLE,
          reason="a schematic of the two processes: it states no result"),
    Claim("df-lemma1", "Lemma 1", "theorem",
          "Gaussian noise with $\\sigma\\ge\\Delta\\sqrt{2\\ln(5/(4\\delta))}/\\varepsilon$ makes a release of "
          "$\\ell_2$-sensitivity $\\Delta$ $(\\varepsilon,\\delta)$-DP, stated for every $\\varepsilon$.",
          "{prf:ref}`df-lemma1`", DIFFERS, erratum=1),
    Claim("df-thm1", "Theorem 1, Eq. (14)", "theorem",
          "The Jensen gap of the DPS approximation is at most $\\frac{d}{\\sqrt{2\\pi\\sigma^2}}"
          "\\lVert\\nabla_{\\mathbf x}\\nabla_WF\\rVert$ times "
          "$\\int\\lVert\\mathbf x_0-\\hat{\\mathbf x}_0\\rVert\\,dP_\\theta(\\mathbf x_0\\mid\\mathbf x_t)$.",
          "{prf:ref}`df-thm1`", DIFFERS, erratum=2),
    Claim("df-def3", "Definition 3, Eqs. (16)–(17)", "statement",
          "Eq. (17), a mean of $\\lVert\\nabla_{\\mathbf x}(\\mathbf v^\\top\\nabla_WF)\\rVert$ over random orthogonal "
          "directions, estimates RV, the maximum over the images of $\\lVert\\nabla_{\\mathbf x}\\nabla_WF\\rVert_F$.",
          "{prf:ref}`df-def3`", DIFFERS, erratum=7),
    Claim("df-lemma2", "Lemma 2, Eq. (19)", "theorem",
          "For a $\\beta'$-strongly convex loss and a Gaussian posterior with variances $\\sigma_i^2$ the Jensen "
          "gap is at least $\\frac12\\beta'\\sum_i\\sigma_i^2$.", "{prf:ref}`df-lemma2`", REPRODUCED),
    Claim("df-lemma3", "Lemma 3, Eq. (20)", "theorem",
          "The density of $\\mathcal N(0,\\sigma^2I_d)$ is Lipschitz with "
          "$L=\\frac{d}{\\sqrt{2\\pi\\sigma^2}}e^{-1/(2\\sigma^2)}$.", "{prf:ref}`df-lemma3`", DIFFERS, erratum=3),
    Claim("df-thm2", "Theorem 2, Eq. (21)", "theorem",
          "Under Assumptions 1–4 the Jensen gap is at least "
          "$\\frac12\\big(\\beta\\lambda_{\\min}(\\mathbf J_g^\\top\\mathbf J_g)-\\alpha L_g\\big)\\sum_i\\sigma_i^2$.",
          "{prf:ref}`df-thm2`", DIFFERS, erratum=4),
    Claim("df-thm2-noise", "Sec. 3.2, after Theorem 2", "statement",
          "A larger DP noise $\\sigma^2$ gives a smaller $L_g$, hence a larger lower bound on the Jensen gap.",
          "{numref}`df-fig-lipschitz`", DIFFERS, erratum=4),
    Claim("df-lemma4", "Lemma 4, Eq. (28)", "theorem",
          "A $\\beta'$-strongly convex, $\\alpha'$-smooth loss has "
          "$\\beta'I\\preceq\\nabla^2\\mathcal L\\preceq\\alpha'I$.",
          "{prf:ref}`df-lemma4`", REPRODUCED),
    Claim("df-thm3", "Theorem 3", "theorem",
          "The attack loss decreases monotonically along the denoising steps of Algorithm 2.",
          "{prf:ref}`df-thm3`", DIFFERS, erratum=6),
    Claim("df-lemma5", "Lemma 5, Eq. (33)", "theorem",
          "$\\lVert\\nabla_{\\mathbf x}\\mathcal L\\rVert_2"
          "\\le\\sqrt{\\lambda_{\\max}(\\mathbf J_g\\mathbf J_g^\\top)}\\,L_g$.",
          "{prf:ref}`df-lemma5`", DIFFERS, erratum=5),
    Claim("df-thm4", "Theorem 4, Eq. (37), and its figures", "theorem",
          "Along the guided step of length $s$ the loss changes by at least $\\frac{\\beta'}2s^2-sG$, with $G$ a bound "
          "on $\\lVert\\nabla\\mathcal L\\rVert$ (Lemma 5's in the paper).", "{prf:ref}`df-thm4`", REPRODUCED),
    Claim("df-fig2", "Sec. 4.2.1, Figure 2", "figure",
          "Along the reverse process the gradient distance falls, and the MSE to the private image falls with it.",
          "{numref}`df-fig-loss-trajectory`", IN_SHAPE,
          reason="for both samplers the loss and the MSE of the last step are below those of the first (the first "
                 "target)"),
    Claim("df-fig3", "Sec. 4.2.1, Figure 3", "figure",
          "The estimates $\\hat{\\mathbf x}_0(\\mathbf x_t)$ approach the private image along the reverse process.",
          "{numref}`df-fig-snapshots`", IN_SHAPE,
          reason="both samplers' last snapshot is closer to the target (MSE) than their first"),
    Claim("df-noise-figure", "Sec. 4.2.2, unnumbered figure of PSNR against σ² (raw gradients)", "figure",
          "Small noise on the raw gradients leaves the reconstructions nearly identical to the private images; larger "
          "noise degrades them.", "{numref}`df-fig-psnr-trajectory`", IN_SHAPE,
          reason="both samplers' best PSNR along the trajectory is lower at the grid's largest σ² than at its smallest "
                 "(the first target)"),
    Claim("df-dp-figure", "Sec. 4.2.2, unnumbered figure of PSNR against ε (normalised gradients)", "figure",
          "On normalised gradients the reconstructions of both samplers decline as $\\varepsilon$ decreases.",
          "{ref}`df-noisy`", IN_SHAPE,
          reason="on normalised gradients both samplers' mean final PSNR falls with σ² (no rise of 1 dB) and stays "
                 "below the noiseless one"),
    Claim("df-normalised", "Sec. 4.2.2, Table 1", "statement",
          "Gradients normalised before the noise is added are easier to attack than raw ones.",
          "{ref}`df-noisy`", NOT_CHECKABLE,
          reason="it depends on ‖g₀‖, which the paper does not report: normalising to norm 1 shrinks the signal where "
                 "‖g₀‖ > 1; the chapter's table of findings says which gradient the run's CNN gave the higher PSNR"),
    Claim("df-table1", "Table 1", "table",
          "The quality of both samplers' reconstructions falls with the noise variance $\\sigma^2$, on raw and on "
          "normalised gradients.", "{ref}`df-noisy`", IN_SHAPE,
          reason=f"on raw gradients both samplers' mean final PSNR falls with σ² (no rise of 1 dB), DPS's by more than "
                 f"{T1_DPS_DROP:g} dB (the paper reports the oracle peak)"),
    Claim("df-table1-eps", "Table 1, its ε", "table",
          "The normalised rows are $(\\varepsilon,\\delta)$-DP by Lemma 1, with $\\varepsilon$ = "
          + ", ".join(f"{e:g}" for e in theory.TABLE1_EPSILONS) + ".", "{ref}`df-privacy`", DIFFERS, erratum=1),
    Claim("df-table1-dsg", "Table 1, DSG, raw gradients", "table",
          f"At $\\sigma^2$ = {TABLE6_VARIANCE:g}: PSNR {_T1_DSG_RAW[0]:.4f} dB and MSE {_T1_DSG_RAW[1]:.4e}.",
          "{ref}`df-noisy`", DIFFERS, erratum=8),
    Claim("df-samplers", "Tables 1, 5 and 6", "table",
          f"DSG beats DPS without noise ({PAPER_TABLE5['DSG']:.4f} against {PAPER_TABLE5['DPS']:.4f} dB) and DPS beats "
          f"DSG at $\\sigma^2$ = {TABLE6_VARIANCE:g} ({PAPER_TABLE6['DPS']:.4f} against {PAPER_TABLE6['DSG']:.4f} dB).",
          "{ref}`the step-count table <df-steps-label>`", DIFFERS, erratum=9),
    Claim("df-table2", "Table 2 and its figure", "table",
          f"RV of five networks with fixed random weights, from ResNet9's {PAPER_TABLE2['ResMini'][0]:g} to MLP_1's "
          f"{PAPER_TABLE2['MLP_1'][0]:g}, beside both samplers' reconstructions.", "{ref}`df-rv-sec`", IN_SHAPE,
          reason="the network with the paper's largest RV has the largest RV here, and the MLPs keep the paper's "
                 "order (Definition 3's exact RV where the images are small enough, else Eq. (17); the paper's RV and "
                 "PSNR are at 256×256)"),
    Claim("df-rv", "Sec. 4.2.3", "statement",
          "Models with a larger RV give better reconstructions: RV measures a model's vulnerability.",
          "{ref}`the step-size table <df-rv-step-label>`", DIFFERS, erratum=10),
    Claim("df-table3", "Table 3, Sec. 4.2.4", "table",
          f"DPS's PSNR peaks at the step size $\\zeta$ = {_T3_BEST} ({PAPER_TABLE3[_T3_BEST]:.4f} dB) and falls "
          "beyond it.", "{ref}`df-sweeps`", IN_SHAPE,
          reason="the step size has an interior optimum, on the scale's grid of ζ (the paper's belong to its gradient "
                 "scale at 256×256)"),
    Claim("df-table4", "Table 4, Sec. 4.2.4", "table",
          f"Too small a guidance rate gives too little guidance: the PSNR is lowest at $m_r$ = "
          f"{min(PAPER_TABLE4):g} ({PAPER_TABLE4[min(PAPER_TABLE4)]:.4f} dB).", "{ref}`df-sweeps`", IN_SHAPE,
          reason="the mean final PSNR is lowest at the grid's smallest $m_r$ (DSG's step count)"),
    Claim("df-table4-peak", "Table 4, Sec. 4.2.4", "statement",
          f"The guidance rate has an interior optimum, $m_r$ = {_T4_BEST:.2f} ({PAPER_TABLE4[_T4_BEST]:.4f} dB); "
          "higher rates degrade the reconstruction.", "{ref}`df-sweeps`", NOT_CHECKABLE,
          reason="Table 4 states neither how many images each PSNR averages nor a spread, so its differences near "
                 "the peak cannot be told from the noise of the runs; the chapter's table of findings says whether "
                 "the run's PSNR rises up to $m_r=1$"),
    Claim("df-table5", "Table 5, Sec. 4.2.5", "table",
          f"Without noise both samplers ({PAPER_TABLE5['DPS']:.4f} and {PAPER_TABLE5['DSG']:.4f} dB) beat seven "
          f"baselines, the best of them {_T5_BEST} ({PAPER_TABLE5[_T5_BEST]:.4f} dB).", "{ref}`df-baselines`",
          NOT_HERE,
          reason="five of the baselines need pretrained generators or an unpublished fine-tuning recipe that the book "
                 "does not download, and the comparison needs the paper's 256×256 faces; the chapter's table of "
                 "findings says whether the prior-free Inverting Gradients beats DPS on the images that ran"),
    Claim("df-table6", "Table 6, Sec. 4.2.5", "table",
          f"With noise of variance {TABLE6_VARIANCE:g} on the raw gradients the samplers stay ahead: DPS "
          f"{PAPER_TABLE6['DPS']:.4f} dB, DSG {PAPER_TABLE6['DSG']:.4f} dB, the best baseline {_T6_BEST} "
          f"{PAPER_TABLE6[_T6_BEST]:.4f} dB.", "{ref}`df-baselines`", IN_SHAPE,
          reason="under that noise the best method run is a diffusion sampler, ahead of the prior-free DLG and "
                 "Inverting Gradients (the pretrained baselines are not run)"),
    Claim("df-abstract", "Abstract", "headline",
          "Gradient-guided diffusion models reconstruct private images starting from random noise, even when a small "
          "amount of DP noise is added to the gradients.", "{ref}`df-baselines`", IN_SHAPE,
          reason=f"with noise of variance {TABLE6_VARIANCE:g} on the raw gradients the better sampler still ends "
                 "above the prior-only floor"),
    Claim("df-conclusion", "Sec. 6", "headline",
          "Two training-free methods reconstruct private images from leaked gradients with minimal changes to a "
          "diffusion model's sampling and without prior knowledge of the image.", "{ref}`df-baselines`", IN_SHAPE,
          reason=f"from noiseless gradients both samplers end above the prior-only floor, DPS by more than "
                 f"{FLOOR_MARGIN:g} dB"),
)
