"""Session fixtures shared by the notebook and site tests.

Every chapter is executed once per test session, at ``ci`` scale, one process per core
(:func:`compendium.book.execute_chapters`), then run at the papers' shapes on stand-in data, and the site is built
once from the executed notebooks (the build finds them in its cache), so no chapter runs twice at one scale. The
chapters' determinism is held by ``tests/test_ci_numbers.py``: every number the run glues equals the one kept, which
checks more than nbval's re-execution did (its lax mode compared the few cells tagged ``nbval-check-output``) at
half the cost.

This work starts in background threads as soon as the collected tests turn out to need it
(:func:`pytest_collection_finish`), and the unit tests run in the meantime, with the cores' threads the chapters'
processes leave: the cores do both instead of idling while one of them runs the unit tests (on 2 cores the suite
took 519 s one after the other, 344 to 391 s overlapped, in fresh clones).  A fixture waits for its part of the
work and raises what it raised.  (pytest-xdist could give the same overlap, but its ``loadgroup`` distribution,
which would keep these fixtures on one worker, does not group tests under pytest 9.2: pytest-dev/pytest-xdist#1386.)
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path

import pytest
import torch

from compendium import book, chapters

#: chapters executed at once: one per core (2 in CI), each with an equal share of the cores' threads
JOBS = max(1, min(os.cpu_count() or 1, len(chapters.registry())))
#: the fixtures that need the background work
BOOK_FIXTURES = {"book_work", "build_dir", "executed_notebooks", "paper_shape_notebooks", "site"}


class BookWork:
    """The session's book work, run in a daemon thread: every chapter executed at ``ci`` scale into
    ``build_dir/executed`` and run at the papers' shapes on stand-in data (:meth:`chapters`),
    then the site rendered into ``build_dir/html``.  Each step's result, or its error, is a future; the steps after a
    failed one fail with its error."""

    def __init__(self, build_dir: Path):
        self.build_dir = build_dir
        self.executed, self.paper_shapes, self.site = Future(), Future(), Future()
        #: (step, chapter) -> wall seconds, printed at the end of the session (:func:`pytest_terminal_summary`)
        self.seconds: dict[tuple[str, str], float] = {}
        threading.Thread(target=self._run, name="book work", daemon=True).start()

    def _run(self) -> None:
        try:
            self.chapters()
        except BaseException as err:  # handed to every fixture that waits on this step or a later one
            for rest in (self.executed, self.paper_shapes, self.site):
                if not rest.done():
                    rest.set_exception(err)

    def chapters(self) -> None:
        """Every chapter executed, then the site rendered from them and the chapters run at the papers' shapes
        (:func:`paper_shape`), on :data:`JOBS` workers: a free worker executes the longest chapter not yet executed,
        else renders the site once every execution has ended, else runs a chapter at the papers' shapes.  The
        browser's tests then run beside the last paper shapes (:func:`pytest_collection_modifyitems` puts them
        first) instead of after them, with one core idle.  Sets :attr:`executed` once every execution has ended
        (with every failed chapter's output in one error), :attr:`site` once rendered, and :attr:`paper_shapes`
        (key -> the executed notebook, or the error) at the end; raises the executions' error, if any."""
        out = self.build_dir / "executed"
        keys = sorted(chapters.registry(),
                      key=lambda k: -book.expected_seconds(k, out / chapters.chapter(k).notebook, "ci"))
        tasks, executed, failed = [("execute", key) for key in keys], {}, {}
        shapes = [("paper-shape", key) for key in keys]  # taken when no execution is waiting
        shaped = {}
        executing = len(keys)  # executions not yet ended
        ready = threading.Condition()

        def ended() -> None:  # called with the lock held, once, when the last execution ends
            if failed:
                error = book.ChapterExecutionError("\n\n".join(map(str, failed.values())))
                self.executed.set_exception(error)
                self.site.set_exception(error)
            else:
                self.executed.set_result({key: executed[key] for key in keys})
                tasks.insert(0, ("site", "all"))  # the next free worker renders it

        def worker() -> None:
            while True:
                with ready:
                    while not tasks and not shapes and executing:
                        ready.wait()
                    if not tasks and not shapes:
                        return
                    kind, key = tasks.pop(0) if tasks else shapes.pop(0)
                start = time.perf_counter()
                try:
                    do(kind, key)
                finally:
                    self.seconds[kind, key] = time.perf_counter() - start

        def do(kind: str, key: str) -> None:
            nonlocal executing
            if kind == "site":
                try:
                    self.site.set_result(book.build_book(scale="ci", out=self.build_dir, jobs=JOBS))
                except Exception as err:  # handed to the fixtures that wait on the site
                    self.site.set_exception(err)
                return
            if kind == "paper-shape":
                try:
                    shaped[key] = paper_shape(key, out)
                except Exception as err:  # reported by that chapter's paper-shape test
                    shaped[key] = err
                return
            try:
                executed[key] = book.execute_chapters([key], scale="ci", out_dir=out, jobs=JOBS,
                                                      processes=JOBS)[key]
            except Exception as err:
                failed[key] = err
            with ready:
                executing -= 1
                if not executing:
                    ended()
                ready.notify_all()

        workers = [threading.Thread(target=worker, name=f"book work {i}", daemon=True) for i in range(JOBS)]
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join()
        self.paper_shapes.set_result(shaped)
        if failed:
            raise self.executed.exception()


def paper_shape(key: str, out: Path) -> Path:
    """Chapter ``key``'s paper pipeline at the papers' shapes on stand-in data (``python -m compendium paper-shapes``,
    in a process of its own with the chapters' share of threads), into ``out/paper-shape``; its executed notebook."""
    result = subprocess.run(
        [sys.executable, "-m", "compendium", "paper-shapes", key, "--device", "cpu", "--out", str(out)],
        cwd=book.repository_root(), capture_output=True, text=True, env=book.thread_environment(JOBS))
    if result.returncode:
        raise book.ChapterExecutionError(f"{key} at the papers' shapes failed:\n{result.stdout}{result.stderr}")
    return out / book.PAPER_SHAPE_DIR / chapters.chapter(key).notebook


BOOK_WORK = pytest.StashKey[BookWork]()
#: torch's threads in the test process before the book work took :data:`JOBS` cores' worth of them
TEST_THREADS = pytest.StashKey[int]()


def uses_book_work(item: pytest.Item) -> bool:
    return bool(BOOK_FIXTURES & set(getattr(item, "fixturenames", ())))


def book_work_stage(item: pytest.Item) -> int:
    """When the book work has what the test waits for: 0 at once (it needs none), 1 once the chapters are executed,
    2 once the site is rendered, 3 once the paper shapes have run."""
    if not uses_book_work(item):
        return 0
    names = set(item.fixturenames)
    return 3 if "paper_shape_notebooks" in names else 2 if "site" in names else 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests run in the order in which the book work gives them what they wait for (:func:`book_work_stage`),
    so that every other test runs while it is under way, and the browser's beside the last paper shapes."""
    items.sort(key=book_work_stage)  # stable: each part keeps its order


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the book work when a collected test needs it (not for ``--collect-only``); until it ends, the tests'
    own torch computations take the cores its processes leave, at least one thread."""
    if session.config.option.collectonly:
        return
    if any(map(uses_book_work, session.items)):
        session.config.stash[BOOK_WORK] = BookWork(session.config._tmp_path_factory.mktemp("build"))
        session.config.stash[TEST_THREADS] = torch.get_num_threads()
        torch.set_num_threads(max(1, book.usable_cores() - JOBS))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Give the tests their threads back once the book work has ended (its last step, the paper shapes: two threads
    beside the chapters' two processes made a test's OpenMP threads wait on each other, 30 times slower)."""
    stash = item.config.stash
    if TEST_THREADS in stash and stash[BOOK_WORK].paper_shapes.done():
        torch.set_num_threads(stash[TEST_THREADS])
        del stash[TEST_THREADS]


@pytest.fixture(scope="session")
def book_work(request: pytest.FixtureRequest) -> BookWork:
    """The session's :class:`BookWork` (started here when a test asks for it by name at run time)."""
    stash = request.config.stash
    if BOOK_WORK not in stash:
        stash[BOOK_WORK] = BookWork(request.config._tmp_path_factory.mktemp("build"))
    return stash[BOOK_WORK]


@pytest.fixture(scope="session")
def build_dir(book_work: BookWork) -> Path:
    """The session's build folder: ``executed/``, ``stage/`` and ``html/``, as in ``_build``."""
    return book_work.build_dir


@pytest.fixture(scope="session")
def executed_notebooks(book_work: BookWork) -> dict[str, Path]:
    """Chapter key -> its notebook executed at ``ci`` scale."""
    return book_work.executed.result()


@pytest.fixture(scope="session")
def paper_shape_notebooks(book_work: BookWork) -> dict[str, Path | Exception]:
    """Chapter key -> its notebook executed at the papers' shapes on stand-in data (counts cut to seconds), or the
    error that stopped it."""
    return book_work.paper_shapes.result()


@pytest.fixture(scope="session")
def site(book_work: BookWork) -> Path:
    """The html folder of the book built at ``ci`` scale (reusing :func:`executed_notebooks`)."""
    return book_work.site.result()


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """The book work's steps with their wall seconds, longest first: where the suite's time budget goes."""
    if BOOK_WORK not in config.stash or not config.stash[BOOK_WORK].seconds:
        return
    seconds = config.stash[BOOK_WORK].seconds
    terminalreporter.write_sep("=", f"book work on {JOBS} workers: {sum(seconds.values()):.0f} s in all")
    for (step, key), value in sorted(seconds.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f"{value:7.1f} s  {step} {key}")
