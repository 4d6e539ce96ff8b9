"""Build pipeline of the book: execute the chapters with papermill, stage the sources, render with Jupyter Book.

1. :func:`execute_chapter` runs a chapter notebook at a named scale into ``_build/executed/<notebook path>``.
   Results are cached: the executed notebook records a key made from the notebook's bytes, the parameters, the
   package version and a digest of the package's source, and a run with the same key is skipped.
2. :func:`stage_book` copies ``_config.yml``, ``_toc.yml``, ``book/`` and the executed notebooks into a staging
   folder laid out like the repository.
3. :func:`build_book` does both for every chapter (:func:`execute_chapters`: several at a time, each in its own
   process), renders the staged copy with ``jupyter-book build`` (execution off, warnings as errors) and puts the
   site in ``_build/html``.

Relative paths given to these functions are taken from the repository root.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

import compendium
from compendium import chapters, scorecard, validation
from compendium.base import BOOK_BUILD, CARDS_ON_PHONE, in_repository, repository_root, resolve_device

KERNEL = "python3"
# executed notebooks carry {"cache_key", "parameters", "version", "seconds", "cpus", "threads"} under this key
METADATA_KEY = "compendium"


class ChapterExecutionError(RuntimeError):
    """A chapter notebook failed to execute."""


class BookBuildError(RuntimeError):
    """``jupyter-book build`` failed (a warning counts as a failure)."""


def package_digest() -> str:
    """sha256 over every ``.py`` file of the package (relative path and bytes), so a code change recomputes."""
    package = Path(compendium.__file__).resolve().parent
    digest = hashlib.sha256()
    for file in sorted(package.rglob("*.py")):
        digest.update(file.relative_to(package).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def cache_key(notebook: Path, parameters: dict) -> str:
    """The key of one execution: sha256 of the notebook's bytes, the parameters as canonical JSON, the package
    version and :func:`package_digest`."""
    parts = [
        Path(notebook).read_bytes(),
        json.dumps(parameters, sort_keys=True, separators=(",", ":")).encode(),
        compendium.__version__.encode(),
        package_digest().encode(),
    ]
    digest = hashlib.sha256()
    for part in parts:  # length-prefixed, so no two different tuples of parts hash alike
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()


def stored_key(executed: Path) -> str | None:
    """The cache key recorded in an executed notebook, or ``None`` when there is none (or no readable notebook)."""
    try:
        metadata = json.loads(Path(executed).read_text())["metadata"]
    except (OSError, ValueError, KeyError):
        return None
    return metadata.get(METADATA_KEY, {}).get("cache_key")


def execute_notebook(
    source: Path, target: Path, parameters: dict, force: bool = False, label: str | None = None
) -> bool:
    """Execute ``source`` with papermill into ``target`` unless ``target`` already holds the same cache key.

    The kernel is ``python3`` and its working folder the notebook's folder.  The result is written to a temporary
    file in ``target``'s folder and renamed on success, so ``target`` is never half-written.  On failure the
    partially executed notebook (with the traceback) is kept as ``<target stem>.failed.ipynb`` and a
    :class:`ChapterExecutionError` names the chapter and that file.  Returns whether the notebook was executed.
    """
    source, target = in_repository(source), in_repository(target)
    label = label or source.stem
    key = cache_key(source, parameters)
    if not force and stored_key(target) == key:
        print(f"[{label}] up to date, not re-executed: {target}", flush=True)
        return False

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.stem}.partial.ipynb")
    failed = target.with_name(f"{target.stem}.failed.ipynb")
    print(f"[{label}] executing {source} with {parameters}", flush=True)
    start, cpu_start = time.perf_counter(), _children_cpu_seconds()
    previous = os.environ.get(BOOK_BUILD)
    os.environ[BOOK_BUILD] = "1"  # the kernel inherits it: figures are glued for the page, not shown twice
    import papermill  # here, not at the top: its import takes seconds that `compendium risk` need not wait

    try:
        # The notebook is written once at the end (and on failure, with the traceback); only a `paper` run, whose
        # cells take hours, is also saved after every cell, to be watched: at `ci` scale the saves took seconds.
        papermill.execute_notebook(
            str(source), str(partial), parameters=parameters, kernel_name=KERNEL, cwd=str(source.parent),
            progress_bar=True, request_save_on_cell_execute=parameters.get("scale") == "paper",
        )
    except Exception as err:
        if partial.exists():
            os.replace(partial, failed)
            where = f"the notebook as executed up to the failing cell, with its traceback, is {failed}"
        else:
            where = "papermill wrote no output notebook; see the papermill messages above"
        detail = f"{err.ename}: {err.evalue}" if isinstance(err, papermill.PapermillExecutionError) else repr(err)
        raise ChapterExecutionError(f"chapter {label!r} failed with {detail}; {where}") from err
    finally:
        if previous is None:
            os.environ.pop(BOOK_BUILD, None)
        else:
            os.environ[BOOK_BUILD] = previous

    executed = nbformat.read(partial, as_version=4)
    for cell in executed.cells:  # papermill's copy of the parameters: the chapter's own cell already shows them
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
    executed.metadata[METADATA_KEY] = {"cache_key": key, "parameters": parameters, "version": compendium.__version__,
                                       "seconds": round(time.perf_counter() - start, 1),
                                       "cpu_seconds": round(_children_cpu_seconds() - cpu_start, 1),
                                       "cpus": usable_cores(),
                                       "threads": os.environ.get("OMP_NUM_THREADS") or str(usable_cores())}
    nbformat.write(executed, partial)
    os.replace(partial, target)
    failed.unlink(missing_ok=True)
    print(f"[{label}] executed: {target}", flush=True)
    return True


def _children_cpu_seconds() -> float:
    """The CPU seconds (user and system) of this process's finished children, among them each chapter's kernel once
    papermill has shut it down; 0 where the ``resource`` module is missing (Windows)."""
    try:
        import resource
    except ImportError:
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _check_jobs(jobs) -> int:
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs={jobs!r}; allowed: an integer >= 1 (chapters executed at once)")
    return jobs


def _check_run(scale: str, device: str, seed: int) -> None:
    chapters.check_scale(scale)
    resolve_device(device)
    validation.seed(seed)


def execute_chapter(
    key: str,
    scale: str = "book",
    device: str = "auto",
    seed: int = 0,
    out_dir: Path = Path("_build/executed"),
    force: bool = False,
    extra_parameters: dict | None = None,
    output: Path | None = None,
) -> Path:
    """Execute chapter ``key`` at ``scale`` into ``output`` (default ``out_dir/<notebook path>``) and return that path.

    ``extra_parameters`` are further papermill parameters (chapter knobs); they may not repeat scale, device or seed.
    Skips the execution when the output already holds the result for the same notebook, parameters and package
    (see :func:`cache_key`), unless ``force``.
    """
    chapter = chapters.chapter(key)
    _check_run(scale, device, seed)
    extra = dict(extra_parameters or {})
    clash = sorted({"scale", "device", "seed"} & set(extra))
    if clash:
        raise ValueError(f"extra_parameters may not set {clash}; use the scale, device and seed arguments")
    parameters = {"scale": scale, "device": device, "seed": seed, **extra}
    target = in_repository(output) if output is not None else in_repository(out_dir) / chapter.notebook
    execute_notebook(chapter.notebook, target, parameters, force=force, label=key)
    return target


#: Where :func:`execute_paper_shape` writes its stand-in data and executed notebooks, below the output folder.
PAPER_SHAPE_DIR = "paper-shape"


def execute_paper_shape(key: str, *, device: str = "auto", seed: int = 0,
                        out_dir: Path = Path("_build/executed"), force: bool = False) -> Path:
    """Execute chapter ``key``'s paper pipeline at the papers' shapes and models with its counts cut to seconds, on
    stand-in data (:mod:`compendium.standin`), into ``out_dir/paper-shape/<notebook path>``; returns that path.

    The chapter module's ``paper_shape(folder)`` writes the stand-in files the paper scale reads into ``folder``
    (``out_dir/paper-shape/data/<key>``) and returns the notebook's parameters: ``scale="paper"`` and the overrides
    that point it at those files and cut its counts.  Its numbers mean nothing; the run shows that every shape, model
    and device of the paper's pipeline works end to end (the prepared check a GPU user runs first).
    """
    chapter = chapters.chapter(key)
    resolve_device(device)
    validation.seed(seed)
    root = in_repository(out_dir) / PAPER_SHAPE_DIR
    folder = root / "data" / key
    folder.mkdir(parents=True, exist_ok=True)
    parameters = dict(chapter.module.paper_shape(folder))
    if parameters.get("scale") != "paper":
        raise ValueError(f"compendium.chapters.{key}.paper_shape returned scale={parameters.get('scale')!r}; "
                         "allowed: 'paper' (a run at the papers' shapes)")
    parameters |= {"device": device, "seed": seed}
    target = root / chapter.notebook
    execute_notebook(chapter.notebook, target, parameters, force=force, label=f"{key}, paper shapes")
    return target


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, as ``nproc``; else ``os.cpu_count()``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_jobs() -> int:
    """Chapters executed at once unless told otherwise: one per core, and one more where the cores are fewer than
    half the chapters.  With one per core, the cores whose chapters end first idle while the longest ones run; a
    process more than there are cores keeps every core busy to the end.  On 2 cores the whole book at ``book`` scale
    took 16 min 17 s with 2 chapters at once and 14 min 6 s with 3 (an earlier version of the book), and 812 s after
    the install with 3 and the longest at full priority (:func:`priority_prefix`; 888 s with equal priorities)."""
    cores = usable_cores()
    return cores + 1 if 2 * cores <= len(chapters.registry()) else cores


#: The niceness (POSIX ``nice``) of the chapter runs that run beside the one expected to take longest.
BESIDE_LONGEST_NICENESS = 10


def priority_prefix(rank: int) -> list[str]:
    """The command prefix of a chapter run that starts ``rank``-th in order of expected time (0: the longest) while
    others run beside it: nothing for the longest, ``nice -n 10`` for the rest (where a ``nice`` program exists).

    The longest chapter sets the build's time.  With equal priorities it gets only its share of the cores while the
    shorter ones run, and then runs alone on one thread while the other cores idle; at a lower priority the shorter
    ones take what it leaves, so that the cores stay busy to the end.  A Jupyter kernel runs in a session of its own,
    so the kernels take the same nice value for their scheduling groups (:data:`compendium.NICENESS_VARIABLE`).  The
    longest keeps one thread: on 2 cores at ``book`` scale (three chapters at once) diffusion took 842 s with equal
    priorities and one thread each (the execution 848 s), 607 s at full priority on one thread (the execution 770
    s), and 598 s on two threads, which kept 1.6 cores busy and left the others too little."""
    validation.integer("rank", rank, minimum=0)
    nice = shutil.which("nice")
    return [] if rank == 0 or nice is None else [nice, "-n", str(BESIDE_LONGEST_NICENESS)]


def thread_environment(jobs: int) -> dict[str, str]:
    """The environment of a chapter run that shares the machine with ``jobs - 1`` others: the parent's, with the
    math libraries' threads (OpenMP, MKL) set to an equal share of the :func:`usable_cores`, at least one."""
    threads = str(max(1, usable_cores() // jobs))
    return {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}


def recorded_seconds(executed: Path, scale: str | None = None, *, cpu: bool = False) -> float | None:
    """The execution time an executed notebook recorded (at ``scale``, when given): wall-clock seconds, or with
    ``cpu`` its kernel's CPU seconds (recorded since the build gave the chapters unequal priorities); ``None`` if it
    has none."""
    try:
        meta = nbformat.read(executed, as_version=4).metadata.get(METADATA_KEY, {})
    except (OSError, ValueError):
        return None
    if scale is not None and meta.get("parameters", {}).get("scale") != scale:
        return None
    return meta.get("cpu_seconds" if cpu else "seconds") or None


def expected_seconds(key: str, executed: Path, scale: str) -> float:
    """How much work chapter ``key`` is at ``scale``: the CPU seconds of its kernel that its last run at that scale
    recorded in ``executed`` (else that run's wall-clock seconds), else the chapter module's ``SECONDS`` (a fresh
    clone has no recorded run).  CPU seconds, because a run's wall-clock time depends on its priority beside the
    others (:func:`priority_prefix`): ordered by it, the chapter given priority would take it from the next."""
    recorded = recorded_seconds(executed, scale, cpu=True) or recorded_seconds(executed, scale)
    return recorded if recorded is not None else chapters.chapter(key).seconds.get(scale, math.inf)


def execute_chapters(keys: list[str], *, scale: str = "book", device: str = "auto", seed: int = 0,
                     out_dir: Path = Path("_build/executed"), force: bool = False, jobs: int = 1,
                     processes: int | None = None) -> dict[str, Path]:
    """:func:`execute_chapter` for every chapter of ``keys`` into ``out_dir``; returns key -> executed notebook.

    With ``jobs > 1`` the chapters to execute (those not cached, or all with ``force``) run ``jobs`` at a time, each
    in its own process (``python -m compendium run``) with :func:`thread_environment`'s share of the cores, the
    longest first (:func:`expected_seconds`), every one but the longest at a lower priority
    (:func:`priority_prefix`); a line says when each starts and ends, and a failed chapter's
    output is in the error raised once every chapter has ended, with all the failures.  On 2 cores two
    one-thread runs take half the time of one run after the other (the chapters are mostly too small to gain from a
    second thread), so the build defaults to at least one job per core (:func:`default_jobs`).  ``processes`` is how
    many processes share the cores, for the threads each run gets (default: the runs at once); a caller that runs
    other processes beside these gives the total.  With ``jobs=1`` the chapters run in this process, one after the
    other, and ``processes`` is not used."""
    _check_run(scale, device, seed)
    jobs = _check_jobs(jobs)
    if processes is not None:
        validation.integer("processes", processes)
    out_dir = in_repository(out_dir)
    targets = {key: out_dir / chapters.chapter(key).notebook for key in keys}
    if jobs == 1:
        for key in keys:
            execute_chapter(key, scale=scale, device=device, seed=seed, out_dir=out_dir, force=force)
        return targets
    parameters = {"scale": scale, "device": device, "seed": seed}
    stale = [key for key in keys if force
             or stored_key(targets[key]) != cache_key(in_repository(chapters.chapter(key).notebook), parameters)]
    for key in set(keys) - set(stale):
        print(f"[{key}] up to date, not re-executed: {targets[key]}", flush=True)
    stale.sort(key=lambda k: -expected_seconds(k, targets[k], scale))
    env = thread_environment(processes or min(jobs, len(stale) or 1))

    def run(key: str) -> str | None:
        prefix = priority_prefix(stale.index(key))
        command = [*prefix, sys.executable, "-m", "compendium", "run", key, "--scale", scale, "--device", device,
                   "--seed", str(seed), "--output", str(targets[key])]
        # beside the longest chapter: its kernel at the same lower priority
        chapter_env = {**env, compendium.NICENESS_VARIABLE: prefix[-1]} if prefix else env
        sys.stdout.write(f"[{key}] executing in a process of its own\n")  # one write: the lines of two runs
        sys.stdout.flush()  # do not interleave
        start = time.perf_counter()
        result = subprocess.run(command, env=chapter_env, cwd=repository_root(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        sys.stdout.write(f"[{key}] {'executed' if result.returncode == 0 else 'FAILED'} after "
                         f"{time.perf_counter() - start:.0f} s: {targets[key]}\n")
        sys.stdout.flush()
        return None if result.returncode == 0 else f"chapter {key!r} failed (exit code {result.returncode}):\n" + (
            result.stdout)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        failures = [failure for failure in pool.map(run, stale) if failure]
    if failures:
        raise ChapterExecutionError("\n\n".join(failures))
    return targets


BUILD_TIMES = re.compile(r"(<!-- generated by the build: chapter times -->\n).*?"
                         r"(\n<!-- end of the generated tables -->)", re.S)


def duration_text(seconds: float) -> str:
    """``42 s`` below two minutes, else ``3 min 5 s``."""
    seconds = round(seconds)
    return f"{seconds} s" if seconds < 120 else f"{seconds // 60} min {seconds % 60} s"


def build_times_table(executed: dict[str, Path]) -> str:
    """A markdown table of the execution each executed notebook recorded: chapter, scale, time, the machine's
    cores and the threads the chapter had."""
    lines = [CARDS_ON_PHONE, "| Chapter | scale | execution time | cores | threads |", "|---|---|---|---|---|"]
    for key, path in executed.items():
        meta = nbformat.read(path, as_version=4).metadata.get(METADATA_KEY, {})
        seconds = meta.get("seconds")
        shown = "not recorded" if seconds is None else duration_text(seconds)
        lines.append(f"| {chapters.chapter(key).title} | `{meta.get('parameters', {}).get('scale', '?')}` | {shown} "
                     f"| {meta.get('cpus', '?')} | {meta.get('threads', '?')} |")
    return "\n".join([*lines, ":::"])


SCORECARD = re.compile(r"(<!-- generated by the build: scorecard -->\n).*?(\n<!-- end of the generated scorecard -->)",
                       re.S)
SCORECARD_SUMMARY = re.compile(r"(<!-- generated by the build: scorecard summary -->\n).*?"
                               r"(\n<!-- end of the generated scorecard summary -->)", re.S)


def errata_checks_markers(table: str) -> re.Pattern:
    """The generated part of the errata page under the errata table named ``table``."""
    return re.compile(rf"(<!-- generated by the build: checks of {re.escape(table)} -->\n).*?"
                      r"(\n<!-- end of the generated checks -->)", re.S)


def scorecards(executed: dict[str, Path]) -> dict[str, dict]:
    """The scorecard each executed notebook published (:mod:`compendium.scorecard`), keyed by chapter in the book's
    order; a chapter without one (the calculator, which checks no paper) is left out."""
    cards = {key: scorecard.read_card(path) for key, path in executed.items()}
    return {key: card for key, card in cards.items() if card is not None}


def fill_generated(page: Path, pattern: re.Pattern, text: str) -> None:
    """Replace the generated part of ``page`` (between the markers ``pattern`` matches) by ``text``; a page without
    the markers is an error, so a renamed marker cannot leave stale text."""
    source = page.read_text()
    if not pattern.search(source):
        raise ValueError(f"{page} has no generated part matching {pattern.pattern[:60]!r}")
    page.write_text(pattern.sub(lambda m: m.group(1) + text + m.group(2), source))


def stage_book(executed_dir: Path, stage_dir: Path) -> Path:
    """Lay out the book for ``jupyter-book build`` in ``stage_dir``: ``_config.yml``, ``_toc.yml``, ``book/`` from
    the repository and every chapter's executed notebook from ``executed_dir``, at their repository paths; the
    reproduce page's chapter times are filled in from the executed notebooks (:func:`build_times_table`).

    ``stage_dir`` is emptied first.  Returns it.
    """
    root = repository_root()
    executed_dir, stage_dir = in_repository(executed_dir), in_repository(stage_dir)
    if stage_dir == root or stage_dir in root.parents:
        raise ValueError(f"stage_dir={str(stage_dir)!r} would hold the repository; use a folder such as _build/stage")
    missing = [c.notebook for c in chapters.registry().values() if not (executed_dir / c.notebook).is_file()]
    if missing:
        raise FileNotFoundError(f"no executed notebook in {executed_dir} for {missing}; run execute_chapter first")

    shutil.rmtree(stage_dir, ignore_errors=True)
    stage_dir.mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(root / name, stage_dir / name)
    shutil.copytree(root / "book", stage_dir / "book", ignore=shutil.ignore_patterns(".ipynb_checkpoints", "_build"))
    for c in chapters.registry().values():
        (stage_dir / c.notebook).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(executed_dir / c.notebook, stage_dir / c.notebook)
    executed = {key: executed_dir / c.notebook for key, c in chapters.registry().items()}
    # the times and the verdicts of the very build the reader is looking at
    fill_generated(stage_dir / "book" / "reproduce.md", BUILD_TIMES, build_times_table(executed))
    cards = scorecards(executed)
    fill_generated(stage_dir / "book" / "scorecard.md", SCORECARD, scorecard.page(cards))
    fill_generated(stage_dir / "book" / "intro.md", SCORECARD_SUMMARY,
                   scorecard.summary(cards))
    for key, card in cards.items():
        fill_generated(stage_dir / "book" / "errata.md", errata_checks_markers(card["errata"]),
                       scorecard.errata_checks(card, elsewhere=chapters.chapter(key).module.ERRATA_ELSEWHERE))
    return stage_dir


def build_book(
    scale: str = "book", device: str = "auto", seed: int = 0, force: bool = False, out: Path = Path("_build"),
    jobs: int = 1,
) -> Path:
    """Execute every chapter (cached; ``jobs`` at a time, :func:`execute_chapters`) into ``out/executed``, stage
    into ``out/stage``, render with ``jupyter-book build -W -n --keep-going`` (into ``out/stage/_build/html``) and
    copy the site to ``out/html``.  Returns that folder."""
    _check_run(scale, device, seed)
    _check_jobs(jobs)
    out = in_repository(out)
    execute_chapters(list(chapters.registry()), scale=scale, device=device, seed=seed, out_dir=out / "executed",
                     force=force, jobs=jobs)
    stage = stage_book(out / "executed", out / "stage")

    # jupyter-book writes to <source>/_build/html; the stage is fresh, so this is always a full Sphinx build.
    command = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()",
               "build", str(stage), "-W", "-n", "--keep-going"]
    result = subprocess.run(command, cwd=stage, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(result.stdout, flush=True)
    if result.returncode != 0:
        problems = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in result.stdout.splitlines()
                    if "WARNING" in line or "ERROR" in line]
        raise BookBuildError(f"jupyter-book build of {stage} failed (exit code {result.returncode}; warnings count "
                             "as errors):\n" + "\n".join(problems))
    html = out / "html"
    shutil.rmtree(html, ignore_errors=True)
    shutil.copytree(stage / "_build" / "html", html)
    print(f"The book is at {html / 'index.html'}", flush=True)
    return html
