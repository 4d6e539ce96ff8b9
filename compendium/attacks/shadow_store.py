"""Algorithm 1's output on disk, for the paper's shadow-model counts (Maciazek & Allison 2025, Section 3.1): the
2.56 million training heads of one experiment are 26 GB of float32 weights for MNIST (2,570 parameters per head),
131 GB for CIFAR, so they are written shard by shard into memory-mapped ``.npy`` files and read back through the
page cache, never held in memory at once.

A store is a folder with

* ``weights.npy``: (K, D) float32, the heads' flattened weights (:meth:`compendium.train.LinearHeads.flat`);
* ``sets.npy``: (K, C, M) int32, the pool indices of each head's training images;
* ``progress.json``: what was asked for (a fingerprint of the run), how many heads are written and the random
  generator's state after them (in the same atomic write), so that an interrupted run resumes exactly where it
  stopped and gives the same heads as an uninterrupted one.

:meth:`ShadowStore.open` refuses a store that is not complete: a half-written result is never read as a whole one.
"""
from __future__ import annotations

import base64
import json
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import torch

from compendium import validation

try:
    import fcntl
except ImportError:  # Windows: no advisory locks (run the jobs one at a time there)
    fcntl = None

WEIGHTS, SETS, PROGRESS = "weights.npy", "sets.npy", "progress.json"


@contextmanager
def locked(path: str | Path | None) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``<path>.lock`` while the block runs (``fcntl.flock``; it waits for the
    lock), so that processes sharing a file or store of the run (the chapter's jobs side by side, ``python -m
    compendium jobs``) write it one at a time: the first writes it, the others wait, then find it written and read
    it.  The lock is the operating system's: it is released when its holder ends, even by a crash, and it holds
    between threads of one process too (each opens the file anew).  ``None``, or a system without ``fcntl``: no
    lock.  On NFS, Linux takes the lock on the server (byte-range locks), so processes on several machines sharing
    one ``shadow_dir`` wait for each other as well."""
    if path is None or fcntl is None:
        yield
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass(frozen=True)
class ShadowStore:
    """A complete store opened for reading: ``weights`` (K, D) and ``sets`` (K, C, M) are CPU tensors backed by the
    memory-mapped files (copy-on-write: nothing written to them reaches the disk)."""

    folder: Path
    weights: torch.Tensor
    sets: torch.Tensor

    @classmethod
    def open(cls, folder: str | Path) -> "ShadowStore":
        folder = Path(folder)
        progress = _read_progress(folder)
        if progress is None:
            raise FileNotFoundError(f"no shadow-head store in {folder.resolve()} (it needs {PROGRESS}, {WEIGHTS} and "
                                    f"{SETS}); write one with ShadowWriter")
        if progress["written"] != progress["count"]:
            raise ValueError(f"the shadow-head store in {folder.resolve()} is incomplete ({progress['written']} of "
                             f"{progress['count']} heads written); run the same call again to resume it")
        weights = np.load(folder / WEIGHTS, mmap_mode="c")
        sets = np.load(folder / SETS, mmap_mode="c")
        return cls(folder, torch.from_numpy(weights), torch.from_numpy(sets))


def _read_progress(folder: Path) -> dict | None:
    path = folder / PROGRESS
    return json.loads(path.read_text()) if path.is_file() else None


class ShadowWriter:
    """Writes ``count`` heads of ``dim`` weights and sets of shape ``set_shape`` into ``folder``, shard by shard.

    ``fingerprint`` (a JSON-serialisable dict: the recipe, the seed, the pool, ...) identifies the run.  A folder
    that already holds the same run is resumed: :attr:`written` heads are kept and ``generator`` is restored to the
    state it had after them; a folder holding a different run is refused, so that two runs never mix."""

    def __init__(self, folder: str | Path, *, count: int, dim: int, set_shape: tuple[int, int],
                 fingerprint: dict, generator: torch.Generator):
        validation.integer("count", count)
        validation.integer("dim", dim)
        validation.generator("generator", generator)
        self.folder = Path(folder)
        self.generator = generator
        self.progress = {"count": count, "dim": dim, "set_shape": list(set_shape),
                         "fingerprint": json.loads(json.dumps(fingerprint)), "written": 0}
        existing = _read_progress(self.folder)
        if existing is not None:
            run = {k: v for k, v in existing.items() if k not in ("written", "generator")}
            if run != {k: v for k, v in self.progress.items() if k != "written"}:
                raise ValueError(f"{self.folder.resolve()} holds a different shadow-head run ({run}); remove the "
                                 "folder or choose another one")
            self.progress = existing
            if existing["written"]:
                state = base64.b64decode(existing["generator"])
                generator.set_state(torch.frombuffer(bytearray(state), dtype=torch.uint8))
            mode = "r+"
        else:
            self.folder.mkdir(parents=True, exist_ok=True)
            mode = "w+"
        self._weights = np.lib.format.open_memmap(self.folder / WEIGHTS, mode=mode, dtype=np.float32,
                                                  shape=(count, dim))
        self._sets = np.lib.format.open_memmap(self.folder / SETS, mode=mode, dtype=np.int32,
                                               shape=(count, *set_shape))
        if mode == "w+":
            self._save_progress()

    @property
    def written(self) -> int:
        return self.progress["written"]

    def write(self, sets: torch.Tensor, weights: torch.Tensor) -> None:
        """Append one shard: ``sets`` (B, C, M) and ``weights`` (B, D), flushed to disk before the progress counter
        and the generator's state move together."""
        start, stop = self.written, self.written + len(weights)
        if stop > self.progress["count"] or len(sets) != len(weights):
            raise ValueError(f"a shard of {len(weights)} weights and {len(sets)} sets after {start} heads; allowed: "
                             f"equal sizes, at most {self.progress['count']} heads in all")
        self._weights[start:stop] = weights.detach().cpu().numpy()
        self._sets[start:stop] = sets.cpu().numpy()
        self._weights.flush()
        self._sets.flush()
        self.progress["written"] = stop
        self.progress["generator"] = base64.b64encode(self.generator.get_state().numpy().tobytes()).decode()
        self._save_progress()

    def _save_progress(self) -> None:
        tmp = self.folder / (PROGRESS + ".part")
        tmp.write_text(json.dumps(self.progress))
        tmp.replace(self.folder / PROGRESS)  # atomic: a crash leaves the old counter or the new one
