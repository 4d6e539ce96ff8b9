"""The prepared GPU check: rerun the book on a GPU as a Colab user would, and time the papers' sizes there.

    python benchmarks/gpu_check.py --out DIR [--device cuda] [--scale book] [--wheels .whl]
                                   [--reference _build/executed] [--jobs 6] [--chapters KEY,KEY]

1. With ``--wheels``: install the package from the repository the way a notebook's install cell does (no
   constraints file), but from the wheels in that folder (``pip --no-index``).  A dry run comes first; the check
   stops before installing anything when pip would install or replace torch, torchvision, triton or a CUDA
   library, the GPU machine's own stack.
2. Paper sizes, on synthetic inputs (random data and random weights; nothing is downloaded): the per-step time of
   each expensive loop of the papers' own settings and the total it extrapolates to, beside the paper's (or the
   authors' README's) figure where one is given.  At ``--scale ci`` the same code runs at toy sizes.
3. Every chapter notebook executed with papermill at ``--scale`` on ``--device``, ``--jobs`` at a time, each
   kernel given its share of the CPU cores.  Each chapter's time (papermill's, without the kernel's start) and its
   headline numbers, compared with the ``--reference`` run's (the same chapters executed on a CPU, e.g. the
   ``_build/executed`` folder that ``make book`` leaves): the numbers of the glued values and of the cells tagged
   ``nbval-check-output`` (the cells the tests hold to be deterministic), number by number.
4. Writes ``DIR/gpu_check.json`` (after every stage, so a run cut short still reports) and
   ``DIR/executed.tar.gz`` (the executed notebooks), and prints one table.  Nothing is written under the repository.

Exits 1 when the install, a paper-size item or a chapter failed; numbers that differ from the CPU run are
reported, not failed: the CUDA random streams differ from the CPU's, so a chapter that draws on the GPU computes
other (equally valid) samples.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
#: What pip must leave alone on a GPU machine: its own torch and the CUDA stack built for it.
PROTECTED = re.compile(r"^(torch|torchvision|torchaudio|triton|nvidia-.*|cuda-.*)$")
#: Tiers of agreement of a headline number with the CPU run's, by relative difference |a - b| / max(|a|, |b|).
#: Below 1e-3: the same number up to float rounding, TF32 or the display's last digit; below 5e-2: close, as a
#: Monte-Carlo estimate from another random stream is; above: differs.
TIERS = (("same", 1e-3), ("close", 5e-2))
#: Below this magnitude a number is a round-off residual (a gap of 1e-15, a check's 1e-12): differences between two
#: such numbers count as the same.
RESIDUAL = 1e-8
#: The error of a chapter still running at ``--deadline``.
DEADLINE_ERROR = "ended at the check's deadline"
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def say(*parts) -> None:
    print(*parts, flush=True)


# ---------------------------------------------------------------------------------------------------------------
# 1. the install
# ---------------------------------------------------------------------------------------------------------------
def replaced_packages(report: dict) -> list[str]:
    """The packages of a ``pip install --report`` that are among :data:`PROTECTED` (``name version`` each)."""
    found = []
    for item in report.get("install", []):
        name = item["metadata"]["name"].lower().replace("_", "-")
        if PROTECTED.match(name):
            found.append(f"{name} {item['metadata']['version']}")
    return found


def pip_install(wheels: Path | None, *, dry_run: bool, build_isolation: bool = True) -> dict:
    """``pip install`` of the repository (``--no-index --find-links wheels`` when given); with ``dry_run`` the
    report of what it would install.  Raises ``RuntimeError`` with pip's output when pip fails."""
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
    if wheels is not None:
        command += ["--no-index", "--find-links", str(wheels)]
    if not build_isolation:
        command.append("--no-build-isolation")
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        if dry_run:
            command += ["--dry-run", "--quiet", "--report", str(report)]
        command.append(str(REPOSITORY))
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return json.loads(report.read_text()) if dry_run else {}


def torch_version() -> str:
    """The torch version a fresh interpreter imports (not this process's, which may predate an install)."""
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def install(wheels: Path) -> dict:
    """Step 1: the dry run, the refusal when torch or CUDA would be replaced, the install, and the proof that the
    interpreter's torch is the one it had.  Returns what was installed."""
    before = torch_version()
    report = pip_install(wheels, dry_run=True)
    replaced = replaced_packages(report)
    if replaced:
        raise RuntimeError(f"pip would install {', '.join(replaced)} beside torch {before}; the package's ranges "
                           "must admit the GPU's own torch (pyproject.toml)")
    planned = sorted(f"{i['metadata']['name']} {i['metadata']['version']}" for i in report.get("install", []))
    pip_install(wheels, dry_run=False)
    after = torch_version()
    if after != before:
        raise RuntimeError(f"the install replaced torch {before} with {after}")
    return {"torch": after, "installed": planned}


# ---------------------------------------------------------------------------------------------------------------
# 2. paper sizes on synthetic inputs
# ---------------------------------------------------------------------------------------------------------------
def _synchronize(device) -> None:
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def _seconds(action, device) -> float:
    _synchronize(device)
    start = time.perf_counter()
    action()
    _synchronize(device)
    return time.perf_counter() - start


def heads_item(device, tiny: bool) -> list[dict]:
    """The transfer-learning chapter's Algorithm 1: 2.56e6 training heads per ``N`` (Table 3's MNIST recipe on 256
    VGGtiny-sized features; random non-negative features), from ``heads`` heads trained at once."""
    import torch

    from compendium import train
    from compendium.chapters import transfer_learned as tl

    heads = 256 if tiny else 100_000
    rows = []
    for n in (10, 40):
        recipe = tl.HeadRecipe.of("mnist", n)
        g = torch.Generator(device=device).manual_seed(0)
        x = torch.randn(heads, n, 256, generator=g, device=device).relu()
        y = (torch.arange(n, device=device) % 10).repeat(heads, 1)

        def fit():
            train.fit_linear_heads(x, y, num_classes=10, steps=recipe.epochs, lr=recipe.lr,
                                   weight_decay=recipe.weight_decay, init_std=recipe.init_std, generator=g,
                                   device=str(device))

        fit()  # warm-up: kernels, allocator
        seconds = _seconds(fit, device) / heads
        rows.append({"item": f"transfer: 2.56e6 training heads, N = {n}", "unit": "head", "per_step_s": seconds,
                     "count": 2.56e6, "hours": seconds * 2.56e6 / 3600,
                     "paper_hours": tl.PAPER_README_HOURS["heads"]["MNIST", n],
                     "paper_note": "authors' README, Apple M4 Pro CPU, one head at a time"})
    return rows


def reconstructor_item(device, tiny: bool) -> list[dict]:
    """The transfer-learning chapter's conditional reconstructor at Table 2's MNIST size (2,580 inputs, S = 256,
    32 x 32 x 1; 52,965,377 weights), Adam steps on batches of 32 through :func:`train_reconstructor`."""
    import torch

    from compendium import models
    from compendium.attacks import shadow_reconstructor as attack
    from compendium.chapters import transfer_learned as tl

    width, steps = (16, 4) if tiny else (256, 100)
    g = torch.Generator().manual_seed(0)
    pool = torch.randint(0, 256, (4096, 1, 32, 32), generator=g, dtype=torch.uint8)
    model = models.ResidualReconstructor(2580, width, 1, 32, generator=torch.Generator().manual_seed(0))

    def run(k):
        weights = torch.randn(32 * k, 2570, generator=g)
        sets = torch.randint(0, len(pool), (32 * k, 10, 1), generator=g)
        attack.train_reconstructor(model, weights, sets, pool, epochs=1, generator=torch.Generator().manual_seed(1),
                                   device=str(device), progress=False)

    run(3)  # warm-up
    seconds = _seconds(lambda: run(steps), device) / steps
    return [{"item": "transfer: reconstructor, 1e6 Adam steps (Table 2, MNIST, batch 32)", "unit": "step",
             "per_step_s": seconds, "count": 1e6, "hours": seconds * 1e6 / 3600,
             "paper_hours": tl.PAPER_README_HOURS["reconstructor"]["MNIST", 10],
             "paper_note": "authors' README, one V100, N = 10"}]


def stacked_timing(device, *, build, inputs: int, image: tuple, models: int, steps: int) -> dict:
    """``models`` reconstructors (``build(generator)``, each from its own initial weights) trained for ``steps`` Adam
    steps on batches of 32 of synthetic heads (``inputs`` = weights + 10 classes) and ``image``-shaped targets, side
    by side in one run: one after another (:meth:`ReconstructorTraining.run`, the chapter's path) and as one stacked
    model (:func:`train_reconstructors`), the same data, draws and initial weights.  Returns the seconds of each,
    their ratio and the largest relative difference of a model's mean training loss between the two (float
    rounding: stacked products round otherwise)."""
    import torch

    from compendium.attacks import shadow_reconstructor as attack

    g = torch.Generator().manual_seed(0)
    pool = torch.randint(0, 256, (4096, *image), generator=g, dtype=torch.uint8)

    def trainings(count: int) -> list:
        data = torch.Generator().manual_seed(count)
        return [attack.ReconstructorTraining(build(torch.Generator().manual_seed(k)),
                                             torch.randn(32 * count, inputs - 10, generator=data),
                                             torch.randint(0, len(pool), (32 * count, 10, 1), generator=data), pool,
                                             1, torch.Generator().manual_seed(100 + k)) for k in range(models)]

    def separate(group):
        return [t.run(device=str(device), progress=False) for t in group]

    def stacked(group):
        return attack.train_reconstructors(group, device=str(device), progress=False)

    for warm_up in (separate, stacked):  # kernels, the allocator, vmap's first trace
        warm_up(trainings(2))
    alone, together = trainings(steps), trainings(steps)
    found = {}
    seconds = {"separate_s": _seconds(lambda: found.setdefault("separate", separate(alone)), device),
               "stacked_s": _seconds(lambda: found.setdefault("stacked", stacked(together)), device)}
    difference = max(abs(a["loss"][0] / b["loss"][0] - 1) for a, b in zip(found["separate"], found["stacked"]))
    return {**seconds, "speedup": seconds["separate_s"] / seconds["stacked_s"], "loss_rel_diff": difference,
            "models": models, "steps": steps}


def stacked_item(device, tiny: bool) -> list[dict]:
    """The transfer-learning chapter's sweeps on a GPU: five of Table 2's MNIST generators (the DP-SGD sweep's five
    noise levels share architecture, heads and length) trained one after another and as one stacked model
    (:func:`stacked_timing`), the same steps; a step here is one Adam step of all five (two, tiny, at `ci` scale)."""
    from compendium import models

    width, steps, count = (16, 2, 2) if tiny else (256, 50, 5)
    found = stacked_timing(device, build=lambda g: models.ResidualReconstructor(2580, width, 1, 32, generator=g),
                           inputs=2580, image=(1, 32, 32), models=count, steps=steps)
    per_step = found["stacked_s"] / steps
    return [{"item": f"transfer: {count} stacked reconstructors, 1e6 Adam steps (Table 2, MNIST, batch 32 each)",
             "unit": "step", "per_step_s": per_step, "count": 1e6, "hours": per_step * 1e6 / 3600,
             "paper_hours": None, "speedup": found["speedup"], "separate_per_step_s": found["separate_s"] / steps,
             "loss_rel_diff": found["loss_rel_diff"],
             "paper_note": f"x{found['speedup']:.2f} over the {count} one after another "
                           f"({found['separate_s'] / steps:.3g} s a step of all {count}); losses within "
                           f"{found['loss_rel_diff']:.1e}"}]


#: ``google/ddpm-celebahq-256``'s UNet2DModel configuration (its config.json), built here with random weights.
DDPM_CELEBAHQ_256 = dict(sample_size=256, in_channels=3, out_channels=3, layers_per_block=2,
                         block_out_channels=(128, 128, 256, 256, 512, 512),
                         down_block_types=("DownBlock2D", "DownBlock2D", "DownBlock2D", "DownBlock2D",
                                           "AttnDownBlock2D", "DownBlock2D"),
                         up_block_types=("UpBlock2D", "AttnUpBlock2D", "UpBlock2D", "UpBlock2D", "UpBlock2D",
                                         "UpBlock2D"))


def diffusion_item(device, tiny: bool) -> list[dict]:
    """The diffusion chapter's Algorithms 1 (DPS) and 2 (DSG) at the paper's 3 x 256 x 256 with the hub
    checkpoint's UNet2DModel (random weights) and the paper's CNN as the attacked network: seconds per sampler step
    (a UNet pass, the CNN's weight gradient, the matching loss's gradient through both), extrapolated to one
    reconstruction (1000 DPS steps, 100 DSG steps)."""
    import torch
    from diffusers import UNet2DModel

    from compendium.attacks import diffusion_guided as dg
    from compendium.models import gradient_targets

    torch.manual_seed(0)  # diffusers draws its random initialisation from the global generator
    if tiny:
        config = dict(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(8, 16),
                      down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                      up_block_types=("AttnUpBlock2D", "UpBlock2D"),
                      norm_num_groups=4)
    else:
        config = DDPM_CELEBAHQ_256
    size = config["sample_size"]
    unet = UNet2DModel(**config).to(device).eval().requires_grad_(False)
    cnn = gradient_targets.gradient_target("CNN", in_channels=3, image_size=size,
                                           generator=torch.Generator().manual_seed(0)).to(device)
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.rand(1, 3, size, size, generator=g, device=device) * 2 - 1
    label = torch.zeros(1, dtype=torch.long, device=device)
    target = dg.weight_gradient(cnn, x, label)[None]  # one image: a batch of one
    rows = []
    for name, full_steps, timed in (("DPS", 1000, 3), ("DSG", 100, 3)):
        def sample(steps):
            if name == "DPS":
                dg.dps_reconstruct(unet, cnn, label, target, shape=(1, 3, size, size), zeta=1.0, generators=g,
                                   steps=steps)
            else:
                dg.dsg_reconstruct(unet, cnn, label, target, shape=(1, 3, size, size), guidance_rate=0.2,
                                   generators=g, steps=steps)

        sample(1)  # warm-up
        seconds = _seconds(lambda: sample(timed * 2), device) / (timed * 2)
        rows.append({"item": f"diffusion: {name}, one 256x256 reconstruction ({full_steps} steps)", "unit": "step",
                     "per_step_s": seconds, "count": full_steps, "hours": seconds * full_steps / 3600,
                     "paper_hours": None, "paper_note": "not stated (4 RTX A6000)"})
    return rows


def hcr_item(device, tiny: bool) -> list[dict]:
    """The HCR chapter's ImageNet bound (Sec. 3.3): ResNet-18 (random weights; BatchNorm on the batch's statistics,
    as the authors' code) on one image of the paper's 91 x 91 (upsampled to 224 inside), one restart and one
    repetition of Algorithm 1 (an LSQR solve of at most 300 iterations, each a JVP and a VJP), extrapolated to the
    paper's R = 25 restarts and i = 10 repetitions for one image and one s."""
    import torch

    from compendium import models
    from compendium.bounds import hcr

    if tiny:
        from compendium.models import gradient_targets

        net = gradient_targets.gradient_target("CNN", in_channels=3, image_size=8,
                                               generator=torch.Generator().manual_seed(0)).to(device)
        feature_map, shape = (lambda z: net[:7](z)), (1, 3, 8, 8)
    else:
        net = models.imagenet_split_model("resnet18", weights=None).to(device)
        feature_map, shape = net.features, (1, 3, models.pretrained.CROP_SIZE, models.pretrained.CROP_SIZE)
    x = torch.rand(shape, generator=torch.Generator().manual_seed(0)).to(device)
    with torch.no_grad():
        sigma = hcr.noise_sigma(feature_map(x), 2.0)

    def bound():
        return hcr.hcr_bound(feature_map, x, sigma, num_restarts=1, num_power_iterations=1, diffdiv=500.0,
                             solve="per_restart", iter_lim=300,
                             generator=torch.Generator(device=device).manual_seed(0))

    bound()  # warm-up
    result = {}
    seconds = _seconds(lambda: result.setdefault("r", bound()), device)
    iterations = int(result["r"].lsqr_iterations.max())
    return [{"item": "HCR: one ImageNet bound, ResNet-18 (R = 25, i = 10)", "unit": "solve", "per_step_s": seconds,
             "count": 250, "hours": seconds * 250 / 3600, "paper_hours": None,
             "paper_note": f"not stated; LSQR took {iterations} iterations"
                           + (" (the cap: a lower bound)" if iterations >= 300 else "")}]


def ziller_item(device, tiny: bool) -> list[dict]:
    """The Ziller chapter's attack at the paper's ImageNet size: one opacus DP-SGD step of the linear layer on one
    3 x 224 x 224 image (clip, noise, update, read the weights), extrapolated to the paper scale's 15,000 steps."""
    import torch

    from compendium.attacks import linear_layer as attack

    side, images = (16, 4) if tiny else (224, 64)
    x = torch.rand(images, 3, side, side, generator=torch.Generator().manual_seed(0)).to(device)
    g = torch.Generator(device=device).manual_seed(0)
    attack.reconstruct(x[:2], max_grad_norm=1.0, noise_multiplier=1.0, generator=g)  # warm-up
    seconds = _seconds(lambda: attack.reconstruct(x, max_grad_norm=1.0, noise_multiplier=1.0, generator=g),
                       device) / images
    return [{"item": "Ziller: 15,000 DP-SGD steps on 224x224 images", "unit": "step", "per_step_s": seconds,
             "count": 15_000, "hours": seconds * 15_000 / 3600, "paper_hours": None, "paper_note": "not stated"}]


PAPER_ITEMS = (heads_item, reconstructor_item, stacked_item, diffusion_item, hcr_item, ziller_item)


def paper_sizes(device, tiny: bool) -> list[dict]:
    """Step 2: every item of :data:`PAPER_ITEMS`; an item that raises is reported with its error."""
    rows = []
    for item in PAPER_ITEMS:
        start = time.perf_counter()
        try:
            found = item(device, tiny)
        except Exception as err:  # noqa: BLE001 - a broken item is reported and the check goes on
            found = [{"item": item.__name__, "error": f"{type(err).__name__}: {err}"}]
        for row in found:
            row["wall_s"] = time.perf_counter() - start
        say(*(f"  {r['item']}: " + (r["error"] if "error" in r else f"{r['per_step_s']:.3g} s per {r['unit']}")
              for r in found))
        rows += found
    return rows


# ---------------------------------------------------------------------------------------------------------------
# 3. the chapters
# ---------------------------------------------------------------------------------------------------------------
def _launch(key: str, scale: str, device: str, out_dir: Path, threads: int) -> subprocess.Popen:
    """One chapter in its own process session (so that a deadline can end it and its kernel together), its output
    in ``out_dir/<key>.log``; the kernel inherits the thread counts."""
    env = os.environ | {name: str(threads) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); from compendium import book; "
            "book.execute_chapter(sys.argv[2], scale=sys.argv[3], device=sys.argv[4], out_dir=Path(sys.argv[5]), "
            "force=True)")
    with open(out_dir / f"{key}.log", "w") as log:  # the child keeps its own copy of the descriptor
        return subprocess.Popen([sys.executable, "-c", code, str(REPOSITORY), key, scale, device, str(out_dir)],
                                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def execute_all(keys: list[str], scale: str, device: str, jobs: int, out_dir: Path, deadline: float) -> dict:
    """Every chapter of ``keys``, ``jobs`` at a time, each kernel with its share of the cores; a chapter still
    running at ``deadline`` (``time.monotonic()``) is ended.  Returns ``{key: {"wall_s", "error"}}``."""
    threads = max(1, (os.cpu_count() or 1) // jobs)
    waiting, running, done = list(keys), {}, {}
    while waiting or running:
        while waiting and len(running) < jobs:
            key = waiting.pop(0)
            running[key] = (_launch(key, scale, device, out_dir, threads), time.perf_counter())
        time.sleep(0.5)
        for key, (process, started) in list(running.items()):
            late = time.monotonic() > deadline
            if process.poll() is None and not late:
                continue
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                error = DEADLINE_ERROR
            else:
                error = None if process.returncode == 0 else _last_error(out_dir / f"{key}.log")
            done[key] = {"wall_s": time.perf_counter() - started, "error": error}
            del running[key]
            say(f"  {key}: {done[key]['wall_s']:.0f} s" + (f", {error}" if error else ""))
        if time.monotonic() > deadline:
            for key in waiting:
                done[key] = {"wall_s": 0.0, "error": "not started before the check's deadline"}
            waiting = []
    return done


def _last_error(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if "Error" in line]
    return lines[-1][-300:] if lines else f"failed; see {log.name}"


def notebook_seconds(notebook: dict) -> float | None:
    """papermill's recorded execution time of an executed notebook (the kernel's start excluded)."""
    return notebook.get("metadata", {}).get("papermill", {}).get("duration")


def _output_text(output: dict) -> str:
    """The text of an output, standard error excluded (warnings differ between machines)."""
    if output.get("output_type") == "stream":
        return "".join(output.get("text", "")) if output.get("name") == "stdout" else ""
    return "".join(output.get("data", {}).get("text/plain", ""))


def headline_numbers(notebook: dict) -> dict[str, list[float]]:
    """The numbers of an executed notebook that the check compares: per glued value (``glue:<name>``) and per cell
    tagged ``nbval-check-output`` (``cell:<id>``), the numbers of their text outputs in order."""
    found: dict[str, list[float]] = {}
    for index, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        checked = "nbval-check-output" in cell.get("metadata", {}).get("tags", [])
        for output in cell.get("outputs", []):
            glued = output.get("metadata", {}).get("scrapbook", {}).get("name")
            if glued is not None:
                data = output.get("data", {})
                text = "".join(next((v for k, v in data.items() if k.endswith("text/plain")), ""))
                found[f"glue:{glued}"] = [float(t) for t in NUMBER.findall(text)]
            elif checked:
                key = f"cell:{cell.get('id', index)}"
                found.setdefault(key, []).extend(float(t) for t in NUMBER.findall(_output_text(output)))
    return found


def _relative(a: float, b: float) -> float:
    if a == b or (math.isnan(a) and math.isnan(b)):
        return 0.0
    return abs(a - b) / max(abs(a), abs(b), RESIDUAL)


def compare(reference: dict[str, list[float]], new: dict[str, list[float]]) -> dict:
    """Number by number, the tiers of :data:`TIERS` (``"same"``, ``"close"``, ``"differs"``) of the headline numbers
    present in both runs; keys whose count of numbers differs are ``"unmatched"``.  Returns the counts, the largest
    relative difference and where it is, and the keys with a number that differs or is unmatched."""
    counts = {name: 0 for name, _ in TIERS} | {"differs": 0, "unmatched": 0}
    differing: set[str] = set()
    worst = (0.0, None)
    for key in sorted(reference.keys() & new.keys()):
        a, b = reference[key], new[key]
        if len(a) != len(b):
            counts["unmatched"] += 1
            differing.add(key)
            continue
        for i, (x, y) in enumerate(zip(a, b)):
            rel = _relative(x, y)
            tier = next((name for name, bound in TIERS if rel <= bound), "differs")
            counts[tier] += 1
            if tier == "differs":
                differing.add(key)
            if rel > worst[0]:
                worst = (rel, f"{key}[{i}]: {x:g} (CPU) vs {y:g}")
    counts["missing"] = len(reference.keys() ^ new.keys())
    return {"counts": counts, "max_rel": worst[0], "worst": worst[1], "differing": sorted(differing)}


def chapters_run(keys: list[str], scale: str, device: str, jobs: int, out_dir: Path, reference: Path | None,
                 deadline: float) -> list[dict]:
    """Step 3: the chapters (:func:`execute_all`) and their comparison with the reference run."""
    rows = [{"chapter": key, **row} for key, row in execute_all(keys, scale, device, jobs, out_dir, deadline).items()]
    rows.sort(key=lambda row: keys.index(row["chapter"]))
    for row in rows:
        attach_results(row, out_dir, reference)
    return rows


def attach_results(row: dict, executed_dir: Path, reference: Path | None) -> None:
    """Adds to a chapter's row its papermill time and the reference's, and either its comparison with
    ``reference``'s notebook (device, :func:`compare`, the scorecard verdicts of :func:`verdicts`) or, when it
    failed, the failing cell's traceback."""
    from compendium import chapters

    notebook = chapters.chapter(row["chapter"]).notebook
    executed = executed_dir / notebook
    ref_file = reference / notebook if reference is not None else None
    ref = json.loads(ref_file.read_text()) if ref_file is not None and ref_file.is_file() else None
    if ref is not None:
        row["reference_seconds"] = notebook_seconds(ref)
        row["reference_parameters"] = ref.get("metadata", {}).get("compendium", {}).get("parameters")
    if not executed.is_file():
        failed = executed.with_name(f"{executed.stem}.failed.ipynb")
        if failed.is_file():
            row["traceback"] = _traceback(json.loads(failed.read_text()))
        return
    nb = json.loads(executed.read_text())
    row["seconds"] = notebook_seconds(nb)
    if ref is not None:
        row["comparison"] = compare(headline_numbers(ref), headline_numbers(nb)) | verdicts(ref_file, executed)


def verdicts(reference: Path, executed: Path) -> dict:
    """The scorecard verdicts (:mod:`compendium.scorecard`) of two executions of a chapter, claim by claim (the
    claims both cards have): how many got the same verdict, and the keys of those whose verdict flipped.  Empty for
    a chapter without a scorecard."""
    from compendium import scorecard

    cards = scorecard.read_card(reference), scorecard.read_card(executed)
    if None in cards:
        return {}
    new = {row["key"]: row["verdict"] for row in cards[1]["rows"]}
    pairs = [(row["key"], row["verdict"], new[row["key"]]) for row in cards[0]["rows"] if row["key"] in new]
    return {"verdicts_same": sum(a == b for _, a, b in pairs), "verdicts_flipped": [k for k, a, b in pairs if a != b]}


def recompare(runs: list[Path], reference: Path) -> dict:
    """The report of finished runs (each ``run/gpu_check.json`` with ``run/executed.tar.gz``) with every chapter
    compared afresh with ``reference``: for runs made where the reference notebooks were not at hand.  The first run
    gives the report; a chapter of a later run (say, one rerun alone after a deadline) replaces its row."""
    report = json.loads((runs[0] / "gpu_check.json").read_text())
    rows = {}
    for run in runs:
        with tempfile.TemporaryDirectory() as tmp:
            with tarfile.open(run / "executed.tar.gz") as tar:
                tar.extractall(tmp, filter="data")
            for row in json.loads((run / "gpu_check.json").read_text()).get("chapters", []):
                attach_results(row, Path(tmp) / "executed", reference)
                rows[row["chapter"]] = row | {"run": run.name}
    report["chapters"] = list(rows.values())
    return report


def _traceback(notebook: dict) -> str:
    """The failing cell's source head and its error, from papermill's partially executed notebook."""
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                trace = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(output.get("traceback", [])))
                return "".join(cell.get("source", ""))[:400] + "\n---\n" + trace[-2500:]
    return ""


# ---------------------------------------------------------------------------------------------------------------
# 4. report
# ---------------------------------------------------------------------------------------------------------------
def device_name(device: str) -> str:
    import torch

    if torch.device(device).type == "cuda":
        return torch.cuda.get_device_name(torch.device(device))
    return f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"


def table(report: dict) -> str:
    lines = [f"device: {report['device']}; torch {report['torch']}; scale {report['scale']}", "",
             f"{'chapter':<18}{'CPU s':>9}{'GPU s':>9}{'ratio':>8}  numbers vs CPU (same/close/differs/unmatched)"]
    for row in report.get("chapters", []):
        cpu, gpu = row.get("reference_seconds"), row.get("seconds")
        ratio = f"{cpu / gpu:.1f}" if cpu and gpu else "-"
        comp = row.get("comparison")
        counts = (f"{comp['counts']['same']}/{comp['counts']['close']}/{comp['counts']['differs']}/"
                  f"{comp['counts']['unmatched']}, max rel {comp['max_rel']:.1e}"
                  f"{', verdicts flipped: %d' % len(comp['verdicts_flipped']) if 'verdicts_flipped' in comp else ''}"
                  ) if comp else "-"
        status = f"FAILED: {row['error'][:60]}" if row.get("error") else counts
        lines.append(f"{row['chapter']:<18}{cpu or float('nan'):>9.0f}{gpu or float('nan'):>9.0f}{ratio:>8}  {status}")
    lines += ["", f"{'paper-size item':<66}{'per step':>12}{'total h':>10}{'paper h':>9}"]
    for row in report.get("paper_sizes", []):
        if "error" in row:
            lines.append(f"{row['item']:<66}  FAILED: {row['error'][:80]}")
            continue
        paper = f"{row['paper_hours']:.1f}" if row["paper_hours"] is not None else "-"
        lines.append(f"{row['item']:<66}{row['per_step_s']:>10.3g} s{row['hours']:>10.3g}{paper:>9}")
    return "\n".join(lines)


def duration(seconds: float) -> str:
    """``seconds`` in the unit a reader takes in at a glance: µs, ms, s below 2 min, min below 2 h, h above."""
    if seconds < 1:
        value, unit = (seconds * 1e6, "µs") if seconds < 1e-3 else (seconds * 1e3, "ms")
        return f"{value:.2g} {unit}" if value < 10 else f"{value:.0f} {unit}"
    if seconds < 120:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.2g} h" if seconds < 36_000 else f"{seconds / 3600:.0f} h"


def chapter_duration(seconds: float) -> str:
    """A chapter's run time beside another's and their ratio: :func:`duration`, but minutes to a tenth (rounded to
    whole minutes, 5 min against 6 min read as a ratio of 1.2 beside the printed x1.0)."""
    return f"{seconds / 60:.1f} min" if 120 <= seconds < 7200 else duration(seconds)


MARKDOWN_START = "<!-- generated by benchmarks/gpu_check.py --markdown from benchmarks/results/gpu_check.json -->"
MARKDOWN_END = "<!-- end of the generated tables -->"


def markdown(report: dict) -> str:
    """The reproduce page's two tables of a finished run (between :data:`MARKDOWN_START` and :data:`MARKDOWN_END`):
    each chapter's time on the CPU and on the GPU with its headline numbers' agreement, and the paper-size items,
    each shown as cards on a phone."""
    from compendium.base import CARDS_ON_PHONE  # the package is imported where it is needed (after an install)

    lines = [MARKDOWN_START, "", f"Measured on one {report['device']} (torch {report['torch']}, Python "
             f"{report['python']}), chapters at `{report['scale']}` scale.", "", CARDS_ON_PHONE,
             "| Chapter | 2 CPU cores | the GPU | CPU / GPU | headline numbers: same / close / differ | "
             "scorecard verdicts: same / flipped |", "|---|---|---|---|---|---|"]
    for row in report["chapters"]:
        cpu = chapter_duration(row["reference_seconds"]) if row.get("reference_seconds") else ""
        comp = row.get("comparison")
        if row.get("error") == DEADLINE_ERROR:
            lines.append(f"| `{row['chapter']}` | {cpu} | > {chapter_duration(row['wall_s'])} | | not finished: "
                         f"{row['error']} | |")
            continue
        if row.get("error") or comp is None:
            lines.append(f"| `{row['chapter']}` | {cpu} | | | failed: {row.get('error')} | |")
            continue
        counts = comp["counts"]
        verdicts = (f"{comp['verdicts_same']} / {len(comp['verdicts_flipped'])}" if "verdicts_same" in comp
                    else "no scorecard")
        lines.append(f"| `{row['chapter']}` | {cpu} | {chapter_duration(row['seconds'])} | "
                     f"×{row['reference_seconds'] / row['seconds']:.1f} | {counts['same']} / {counts['close']} / "
                     f"{counts['differs'] + counts['unmatched']} | {verdicts} |")
    lines += [":::", "", CARDS_ON_PHONE, "| Paper-size work (synthetic inputs, random weights) | per step on the GPU | "
              "extrapolated | the paper's own figure |", "|---|---|---|---|"]
    for row in report["paper_sizes"]:
        paper = (f"{row['paper_hours']:g} h ({row['paper_note']})" if row["paper_hours"] is not None
                 else row["paper_note"])
        lines.append(f"| {row['item']} | {duration(row['per_step_s'])} per {row['unit']} | "
                     f"{duration(row['hours'] * 3600)} | {paper} |")
    return "\n".join([*lines, ":::", "", MARKDOWN_END])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="folder for gpu_check.json and executed.tar.gz")
    parser.add_argument("--markdown", type=Path, default=None, metavar="JSON",
                        help="run nothing: print the reproduce page's tables of a finished run's report")
    parser.add_argument("--recompare", type=Path, nargs="+", default=None, metavar="RUN",
                        help="run nothing: compare the finished runs in folders RUN with --reference, write to "
                             "--out; a later run's chapter replaces an earlier one's")
    parser.add_argument("--device", default="cuda", help="torch device of the chapters and items (default cuda)")
    parser.add_argument("--scale", default="book", choices=("ci", "book"), help="chapters' scale; ci: toy items too")
    parser.add_argument("--wheels", type=Path, default=None, help="install the package from these wheels first")
    parser.add_argument("--reference", type=Path, default=None,
                        help="folder of the same chapters executed on a CPU (e.g. _build/executed)")
    parser.add_argument("--jobs", type=int, default=6, help="chapters executed at once (default 6)")
    parser.add_argument("--chapters", default=None, help="comma-separated chapter keys (default: all)")
    parser.add_argument("--skip-paper-sizes", action="store_true", help="do not time the paper-size items")
    parser.add_argument("--deadline", type=float, default=None,
                        help="seconds after the start at which unfinished chapters are ended (default: none)")
    args = parser.parse_args(argv)
    if args.markdown is not None:
        print(markdown(json.loads(args.markdown.read_text())))
        return 0
    if args.out is None:
        parser.error("--out is required")
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}; allowed: an integer >= 1")
    out = args.out.resolve()
    if out == REPOSITORY or REPOSITORY in out.parents:
        parser.error(f"--out {out} is inside the repository; the check writes nothing there")
    if args.reference is not None and not args.reference.is_dir():
        parser.error(f"--reference {args.reference}: no such folder")
    out.mkdir(parents=True, exist_ok=True)
    if args.recompare is not None:
        if args.reference is None:
            parser.error("--recompare needs --reference")
        sys.path.insert(0, str(REPOSITORY))
        report = recompare(args.recompare, args.reference)
        (out / "gpu_check.json").write_text(json.dumps(report, indent=1))
        say(table(report))
        return 0
    deadline = time.monotonic() + (args.deadline if args.deadline is not None else math.inf)
    report: dict = {"scale": args.scale}

    def save():
        (out / "gpu_check.json").write_text(json.dumps(report, indent=1))

    failed = False
    if args.wheels is not None:
        say("1. install")
        try:
            report["install"] = install(args.wheels)
        except (RuntimeError, subprocess.CalledProcessError) as err:
            report["install"] = {"error": str(err)}
            save()
            say(f"FAILED: {err}")
            return 1
    sys.path.insert(0, str(REPOSITORY))
    import torch

    from compendium import base, chapters

    device = str(base.resolve_device(args.device))
    keys = list(chapters.registry()) if args.chapters is None else args.chapters.split(",")
    unknown = sorted(set(keys) - set(chapters.registry()))
    if unknown:
        parser.error(f"--chapters {unknown}; allowed: {', '.join(chapters.registry())}")
    report |= {"device": device_name(device), "torch": torch.__version__, "python": platform.python_version()}
    save()
    if not args.skip_paper_sizes:
        say("2. paper sizes")
        report["paper_sizes"] = paper_sizes(device, tiny=args.scale == "ci")
        failed |= any("error" in row for row in report["paper_sizes"])
        save()
    say(f"3. chapters at {args.scale} scale on {device}, {args.jobs} at a time")
    with tempfile.TemporaryDirectory() as tmp:
        executed = Path(tmp)
        start = time.perf_counter()
        report["chapters"] = chapters_run(keys, args.scale, device, args.jobs, executed, args.reference,
                                          deadline)
        report["chapters_wall_s"] = time.perf_counter() - start
        failed |= any(row["error"] for row in report["chapters"])
        save()
        with tarfile.open(out / "executed.tar.gz", "w:gz") as tar:  # the notebooks and the chapters' logs
            tar.add(executed, arcname="executed")
    say("", table(report))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
