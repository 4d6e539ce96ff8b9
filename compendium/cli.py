"""Command line: ``python -m compendium build`` renders the book, ``python -m compendium run CHAPTER`` reruns a chapter.

Unknown chapters, scales or devices and negative seeds are refused with exit code 2 and a message that lists the
valid values, before any work.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from compendium import book, scales


def _seed(text: str) -> int:
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if seed < 0:
        raise argparse.ArgumentTypeError(f"seed must be an integer >= 0; got {text!r}")
    return seed


def _device(text: str) -> str:
    try:
        scales.resolve_device(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err
    return text


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scale", default="book", choices=scales.SCALES,
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
    build.set_defaults(action=_build)

    run = commands.add_parser("run", help="re-execute one chapter notebook and print where the result is")
    run.add_argument("chapter", choices=tuple(scales.CHAPTERS), metavar="CHAPTER",
                     help=f"one of: {', '.join(scales.CHAPTERS)}")
    _add_run_options(run)
    run.add_argument("--output", type=Path, default=None,
                     help="path of the executed notebook (default: _build/executed/<notebook path>)")
    run.set_defaults(action=_run)
    # Further subcommands (the planned ``risk`` calculator) are added here, each with its own ``action``.
    return parser


def _build(args: argparse.Namespace) -> None:
    book.build_book(scale=args.scale, device=args.device, seed=args.seed, force=args.force)


def _run(args: argparse.Namespace) -> None:
    output = args.output.absolute() if args.output is not None else None
    path = book.execute_chapter(args.chapter, scale=args.scale, device=args.device, seed=args.seed, force=True,
                                output=output)
    print(f"Executed notebook: {path}")


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the command; returns the exit status (2: bad arguments, 1: the run failed)."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        args.action(args)
    except (book.ChapterExecutionError, book.BookBuildError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0
