"""Command line: ``python -m compendium build`` renders the book, ``python -m compendium run CHAPTER`` reruns a chapter,
``python -m compendium plan CHAPTER|all [--scale paper] [--json]`` prints what a run costs (:mod:`compendium.plan`),
``python -m compendium jobs CHAPTER [--scale paper] [--set KEY=VALUE ...] [--run K]`` lists a chapter's independent
trainings and runs one of them (one process per GPU; the transfer-learning chapter's sweeps),
``python -m compendium student-edition OUT`` writes the chapters without their solutions (:mod:`compendium.student`),
``python -m compendium risk ...`` is the reconstruction-risk calculator (:mod:`compendium.risk`) and
``python -m compendium dithering --feature-noise S (--feature-gain G | --matrix A.npy) [--releases T]`` its row for
inference-time dithering (the HCR chapter).  With ``--json`` both print one flat JSON object in which an infinite
bound is the string ``"inf"`` (``float("inf")`` parses it; JSON has no infinity) and a missing value is ``null``.

Unknown chapters, scales or devices and negative seeds are refused with exit code 2 and a message that lists the
valid values, before any work.
"""
from __future__ import annotations

import argparse
import ast
import json
import math
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from compendium import book, chapters, validation
from compendium.base import resolve_device


def _seed(text: str) -> int:
    """The seed as an integer, by the package's one seed rule (:func:`compendium.validation.seed`)."""
    try:
        return validation.seed(int(text))
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"seed={text!r}; allowed: an integer >= 0") from err


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}; allowed: an integer >= 1")
    return value


def _device(text: str) -> str:
    try:
        resolve_device(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err
    return text


def _chapter(text: str) -> str:
    # Resolved lazily (not as argparse choices): the registry reads the repository's _toc.yml, which only the
    # book's commands need; the calculator works from any installation.
    try:
        return chapters.chapter(text).key
    except (ValueError, RuntimeError, OSError) as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def _chapter_or_all(text: str) -> str:
    return text if text == "all" else _chapter(text)


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scale", default="book", choices=chapters.SCALES,
                        help="ci: seconds on a CPU (tests); book: the rendered book (default); "
                             "paper: the papers' settings, for a GPU")
    parser.add_argument("--device", default="auto", type=_device, choices=("auto", "cpu", "cuda"),
                        help="auto (default): CUDA when available, else CPU")
    parser.add_argument("--seed", type=_seed, default=0, help="random seed, an integer >= 0 (default 0)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m compendium",
                                     description="Build the compendium's book or rerun one of its chapters.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    build = commands.add_parser("build", help="execute every chapter (cached) and render the book into _build/html")
    _add_run_options(build)
    build.add_argument("--force", action="store_true", help="re-execute every chapter even when its result is cached")
    build.add_argument("--jobs", type=_jobs, default=book.default_jobs(),
                       help="chapters executed at once, each in its own process with an equal share of the cores "
                            "(default: one per core, one more on a machine with fewer cores than half the chapters)")
    build.set_defaults(action=_build)

    run = commands.add_parser("run", help="re-execute one chapter notebook and print where the result is")
    run.add_argument("chapter", type=_chapter, metavar="CHAPTER",
                     help="a chapter's key: the name of its notebook in notebooks/ (e.g. ziller2024)")
    _add_run_options(run)
    run.add_argument("--output", type=Path, default=None,
                     help="path of the executed notebook (default: _build/executed/<notebook path>)")
    run.set_defaults(action=_run)

    shapes = commands.add_parser(
        "paper-shapes", help="run chapters' paper pipelines at the papers' shapes on stand-in data, counts cut to "
                             "seconds: the check to run first on a GPU")
    shapes.add_argument("chapters", type=_chapter, nargs="*", metavar="CHAPTER",
                        help="chapter keys (default: every chapter)")
    shapes.add_argument("--device", default="auto", type=_device, choices=("auto", "cpu", "cuda"),
                        help="auto (default): CUDA when available, else CPU")
    shapes.add_argument("--out", type=Path, default=Path("_build/executed"),
                        help="output folder (default _build/executed); runs go to OUT/paper-shape/")
    shapes.set_defaults(action=_paper_shapes)

    costs = commands.add_parser(
        "plan", help="what a chapter's run costs before it starts: its costly steps, hours on each GPU card, GPU "
                     "memory, host RAM and disk")
    costs.add_argument("chapter", type=_chapter_or_all, metavar="CHAPTER",
                       help="a chapter's key (e.g. transfer_learned), or all")
    costs.add_argument("--scale", default="paper", choices=chapters.SCALES, help="paper (default), book or ci")
    costs.add_argument("--device", default="auto", type=_device, choices=("auto", "cpu", "cuda"),
                       help="the device whose hours are shown beside the cards' (auto: CUDA when available)")
    output = costs.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print one JSON object (chapter key -> plan with all)")
    output.add_argument("--markdown", action="store_true",
                        help="print the reproduce page's table of every chapter (with CHAPTER all)")
    costs.add_argument("--page", type=Path, default=None,
                       help="with --markdown: write the table into this page's generated plan (book/reproduce.md)")
    costs.set_defaults(action=_plan)

    work = commands.add_parser(
        "jobs", help="list a chapter's independent trainings at a scale, or run one of them (one process per GPU)",
        description="Each job trains one of the chapter's reconstructors to its checkpoint in shadow_dir (resumed when "
                    "partial); the chapter's notebook, run afterwards, loads every finished one instead of training.")
    work.add_argument("chapter", type=_chapter, metavar="CHAPTER", help="a chapter with jobs (transfer_learned)")
    work.add_argument("--scale", default="paper", choices=chapters.SCALES, help="paper (default), book or ci")
    work.add_argument("--device", default="auto", type=_device,
                      help="auto (default: CUDA when available, else CPU), cpu, cuda or cuda:K")
    work.add_argument("--seed", type=_seed, default=0, help="random seed, an integer >= 0 (default 0)")
    work.add_argument("--set", dest="overrides", action="append", default=[], type=_setting, metavar="KEY=VALUE",
                      help="a setting of the chapter, as the notebook's overrides (a Python literal, e.g. "
                           "shadow_dir=/scratch/heads or set_sizes=10,40); repeat for several")
    work.add_argument("--run", type=int, default=None, metavar="K", help="run job K of the list (from 0)")
    work.add_argument("--cards", type=_jobs, default=None, metavar="G",
                      help="GPUs the printed shell lines share the jobs among (default: the cards visible here)")
    work.set_defaults(action=_chapter_jobs)

    students = commands.add_parser("student-edition",
                                   help="write the chapter notebooks without the exercises' solutions into a folder")
    students.add_argument("out", type=Path, metavar="OUT", help="the folder to write the notebooks into")
    students.add_argument("--executed", type=Path, default=None, metavar="DIR",
                          help="the executed notebooks whose glued numbers the edition writes out (default: the "
                               "last build's, _build/executed/notebooks)")
    students.set_defaults(action=_student_edition)

    risk = commands.add_parser(
        "risk", help="the reconstruction-risk calculator: every bound of the book for one DP-SGD configuration",
        description="What an adversary without data priors can reconstruct under DP-SGD with these settings: "
                    "epsilon (RDP, PRV) and every applicable bound, each labelled with its chapter and equation.")
    risk.add_argument("--noise-multiplier", type=float, required=True, help="sigma, > 0")
    risk.add_argument("--clip", type=float, required=True, help="clipping bound C (maximum gradient norm), > 0")
    risk.add_argument("--dim", type=int, required=True, help="data dimension N (e.g. 3*224*224), >= 1")
    risk.add_argument("--steps", type=int, default=1, help="DP-SGD steps T the adversary links (default 1)")
    risk.add_argument("--sample-rate", type=float, default=1.0, help="sampling rate q in (0, 1] (default 1)")
    risk.add_argument("--delta", type=float, default=1e-5, help="delta of (epsilon, delta)-DP (default 1e-5)")
    risk.add_argument("--min-norm", type=float, default=None,
                      help="smallest L2 norm of a data sample; without it the data-independent bounds are used")
    risk.add_argument("--data-range", type=float, default=1.0, help="data range R for the PSNR (default 1)")
    risk.add_argument("--eta-mse", type=float, default=None, help="MSE threshold: report P(MSE <= eta)")
    risk.add_argument("--eta-psnr", type=float, default=None, help="PSNR threshold in dB: report P(PSNR >= eta)")
    risk.add_argument("--kappa", type=float, default=None,
                      help="prior success probability of a worst-case, prior-aware adversary, in (0, 1)")
    risk.add_argument("--target-probability", type=float, default=None,
                      help="with --eta-mse: the smallest noise multiplier keeping P(MSE <= eta) below this")
    risk.add_argument("--target-success", type=float, default=None,
                      help="with --kappa: the smallest noise multiplier keeping the prior-aware worst-case success "
                           "(exact under subsampling) at most this")
    risk.add_argument("--json", action="store_true", help="print one flat JSON object")
    risk.add_argument("--plot", type=Path, default=None, metavar="FILE",
                      help="write the worst-case success against the prior's kappa (and the prior alone) to FILE "
                           "(.png, .pdf, .svg)")
    risk.set_defaults(action=_risk)

    dithering = commands.add_parser(
        "dithering", help="the calculator's row for inference-time dithering: the HCR chapter's bounds",
        description="How precisely can an unbiased estimator recover a client's input from its dithered features "
                    "X = a(theta) + N(0, sigma^2 I)? A per-input guarantee (not differential privacy) that does not "
                    "bind an attacker with a prior; infinite bounds are printed as inf (the string \"inf\" in JSON).")
    dithering.add_argument("--feature-noise", type=float, required=True,
                           help="sigma, the standard deviation of the noise added to each feature, > 0")
    feature_map = dithering.add_mutually_exclusive_group(required=True)
    feature_map.add_argument("--feature-gain", type=float, default=None,
                             help="largest singular value (or Lipschitz constant) of the feature map, > 0")
    feature_map.add_argument("--matrix", type=Path, default=None,
                             help="a .npy file holding the n x p matrix of a linear feature map (or its Jacobian)")
    dithering.add_argument("--releases", type=int, default=1,
                           help="independent releases T of the same input the adversary averages (default 1)")
    dithering.add_argument("--json", action="store_true", help="print one flat JSON object")
    dithering.set_defaults(action=_dithering)
    return parser


def _build(args: argparse.Namespace) -> None:
    book.build_book(scale=args.scale, device=args.device, seed=args.seed, force=args.force, jobs=args.jobs)


def _run(args: argparse.Namespace) -> None:
    output = args.output.absolute() if args.output is not None else None
    path = book.execute_chapter(args.chapter, scale=args.scale, device=args.device, seed=args.seed, force=True,
                                output=output)
    print(f"Executed notebook: {path}")


def _paper_shapes(args: argparse.Namespace) -> None:
    for key in args.chapters or list(chapters.registry()):
        start = time.perf_counter()
        path = book.execute_paper_shape(key, device=args.device, out_dir=args.out.absolute(), force=True)
        print(f"{key}: paper shapes ran in {time.perf_counter() - start:.0f} s: {path}")


def _plan(args: argparse.Namespace) -> None:
    from compendium import plan  # imported here: the other commands do not need it

    keys = list(chapters.registry()) if args.chapter == "all" else [args.chapter]
    if args.markdown:
        if args.chapter != "all":
            raise ValueError(f"--markdown with chapter={args.chapter!r}; allowed: all (the page's table has every "
                             "chapter)")
        if args.page is None:
            print(plan.markdown(args.scale))
        else:
            plan.fill_page(args.page, args.scale)
            print(f"wrote the plan into {args.page}")
        return
    if args.page is not None:
        raise ValueError("--page without --markdown; allowed: --markdown --page PAGE")
    plans = {key: plan.plan(key, args.scale, device=args.device) for key in keys}
    if args.json:
        found = {key: p.to_dict() for key, p in plans.items()}
        print(json.dumps(found if args.chapter == "all" else found[args.chapter], indent=1, allow_nan=False))
    else:
        print("\n\n".join(p.text() for p in plans.values()))


def _setting(text: str) -> tuple[str, object, str]:
    """``KEY=VALUE`` as a setting ``(KEY, value, text)``: the value a Python literal (a list becomes a tuple), else the
    string itself."""
    key, sep, value = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"{text!r}; allowed: KEY=VALUE with KEY a setting's name")
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        parsed = value
    return key, tuple(parsed) if isinstance(parsed, list) else parsed, text


def _chapter_jobs(args: argparse.Namespace) -> None:
    module = chapters.chapter(args.chapter).module
    if not hasattr(module, "chapter_jobs"):
        raise ValueError(f"chapter={args.chapter!r} has no separate jobs; allowed: a chapter whose module lists them "
                         "(transfer_learned)")
    overrides = {key: value for key, value, _ in args.overrides}
    cfg = module.settings(args.scale, args.device, args.seed, **overrides)
    try:
        _list_or_run_jobs(args, module, cfg)
    except FileNotFoundError as err:  # the data a job reads (and whose sizes name its checkpoint) is not in place
        raise ValueError(str(err)) from err


def _list_or_run_jobs(args: argparse.Namespace, module, cfg) -> None:
    if args.run is not None:
        start = time.perf_counter()
        job, result = module.run_job(cfg, args.run)
        summary = result.summary()
        print(f"job {job.index} ({job.label}) finished in {time.perf_counter() - start:.0f} s: TPR at FPR = 0.01 "
              f"{summary['TPR@FPR=0.01']:.3f}; saved in {job.checkpoint or 'nothing (no shadow_dir)'}")
        return
    if args.cards is None:
        import torch

        args.cards = max(1, torch.cuda.device_count())
    listed = module.chapter_jobs(cfg)
    width = max(len(job.label) for job in listed)
    lines = [f"{len(listed)} jobs of {args.chapter} at {args.scale} scale (seed {args.seed}), one reconstructor "
             f"each, saved in shadow_dir={cfg.shadow_dir}:"]
    statuses = [job.status() for job in listed]
    lines += [f"{job.index:>3}  {job.label:<{width}}  {status:<24}  {job.checkpoint}"
              for job, status in zip(listed, statuses)]
    lines += ["", module.SHARED_STEPS, ""]
    command = " ".join(["python -m compendium jobs", args.chapter, "--scale", args.scale]
                       + (["--seed", str(args.seed)] if args.seed else [])
                       + [f"--set {shlex.quote(text)}" for _, _, text in args.overrides])
    pending = [job.index for job, status in zip(listed, statuses) if status != "done"]
    print("\n".join(lines + [module.job_commands(command, pending, cards=args.cards)]))


def _student_edition(args: argparse.Namespace) -> None:
    from compendium import student

    for path in student.student_edition(args.out, student.executed_in(args.executed or student.default_executed())):
        print(path)


def _risk(args: argparse.Namespace) -> None:
    from compendium import risk  # imported here: the build and run commands do not need the calculator

    query = risk.RiskQuery(
        noise_multiplier=args.noise_multiplier, clip=args.clip, dim=args.dim, steps=args.steps,
        sample_rate=args.sample_rate, delta=args.delta, min_norm=args.min_norm, data_range=args.data_range,
        eta_mse=args.eta_mse, eta_psnr=args.eta_psnr, kappa=args.kappa, target_probability=args.target_probability,
        target_success=args.target_success)
    if args.plot is not None and not args.plot.absolute().parent.is_dir():
        raise ValueError(f"--plot {args.plot}: the folder {args.plot.absolute().parent} does not exist")
    result = risk.assess(query)
    print(_json(result) if args.json else risk.format_report(result))
    if args.plot is not None:
        risk.plot_worst_case(query).savefig(args.plot, dpi=150)
        print(f"plot written to {args.plot}", file=sys.stderr)


def _dithering(args: argparse.Namespace) -> None:
    from compendium import risk

    matrix = None
    if args.matrix is not None:
        try:
            matrix = np.load(args.matrix, allow_pickle=False)
        except (OSError, ValueError, EOFError) as err:
            raise ValueError(f"--matrix: cannot read {args.matrix} as a .npy array: {err}") from err
        if not isinstance(matrix, np.ndarray):
            matrix.close()
            raise ValueError(f"--matrix: {args.matrix} must be a .npy file holding one array, not an archive")
    query = risk.DitheringQuery(feature_noise=args.feature_noise, gain=args.feature_gain, matrix=matrix,
                                releases=args.releases)
    result = risk.assess_dithering(query)
    print(_json(result) if args.json else risk.format_report(result))


def _json(result: dict) -> str:
    """``result`` as valid JSON: an infinite or NaN number becomes the string ``"inf"``, ``"-inf"`` or ``"nan"``."""
    def valid(value):
        return str(value) if isinstance(value, float) and not math.isfinite(value) else value

    return json.dumps({key: valid(value) for key, value in result.items()}, indent=1, allow_nan=False)


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the command; returns the exit status (2: bad arguments, 1: the run failed)."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        args.action(args)
    except (book.ChapterExecutionError, book.BookBuildError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except ValueError as err:  # bad input found after parsing (e.g. by the risk calculator): no traceback
        print(f"{parser.prog} {args.command}: error: {err}", file=sys.stderr)
        return 2
    return 0
