"""The transfer-learning chapter's independent trainings as separate, resumable jobs (``python -m compendium jobs
transfer_learned``): one job per attack of
:func:`~compendium.chapters.transfer_learned.experiments.chapter_attacks`, the notebook's own list, so that a user
with several GPUs trains the reconstructors side by side, one process per card, and the notebook, run afterwards as
usual, loads every finished training instead of repeating it.

A job trains what its attack needs, each piece saved where the notebook looks for it (``shadow_dir``): the feature
extractor (VGGtiny on EMNIST letters at ``paper`` scale), its training shadow heads (a store that several attacks
share) and its reconstructor (a :func:`compendium.train.fit` checkpoint beside the heads, resumed after a crash).
Shared pieces are written under a file lock (:func:`compendium.attacks.shadow_store.locked`): jobs started together
wait for the one that writes a piece and then read it, so no job has to come first.  Nothing here schedules:
one process runs one job; across processes, cards or machines an existing engine (a shell loop, GNU parallel, a
SLURM array) starts them."""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from compendium import train, validation
from compendium.attacks.transfer_heads import Attack, AttackResult
from compendium.chapters.transfer_learned.experiments import (
    attack_files,
    chapter_attacks,
    feature_extractor,
    identity_data,
    pools,
    run_attack,
    validation_count,
)
from compendium.chapters.transfer_learned.settings import Settings
from compendium.data import Pools


#: What the jobs share, said where they are listed.
SHARED_STEPS = ("Shared steps: every job first loads or trains the feature extractor (VGGtiny on EMNIST letters at "
                "paper scale) and its attack's training shadow heads (a store several jobs share), each saved in "
                "shadow_dir under a file lock: start the jobs together; the first to need a shared piece writes it, "
                "the others wait for it and read it.  A job resumes its partial checkpoint; a finished one is "
                "loaded, by the jobs and by the notebook alike, whatever card it ran on.")


@dataclass(frozen=True)
class Job:
    """One independent training of the chapter: the attack ``spec`` of ``section`` (a key of
    :func:`chapter_attacks`) under the row key ``key``, and the checkpoint its reconstructor's training is saved to
    (``None`` without ``shadow_dir``: then nothing is kept for the notebook)."""

    index: int
    section: str
    key: object
    spec: Attack
    checkpoint: Path | None

    @property
    def label(self) -> str:
        """What the job trains, e.g. ``"Table 1: N = 10"`` or ``"DP-SGD: σ = 1.82"``."""
        key = self.key
        if self.section == "factors":
            what = f"{key[0]} {key[1]:,}" if key[0] == "shadow heads" else f"{key[0]} {key[1]:g}"
        elif self.section == "binary":
            what = "hidden units ordered" if key else "raw heads"
        elif self.section == "variants":
            what = "Table 3's recipe" if key is None else str(key)
        elif self.section == "DP-SGD":
            what = "without DP" if key == 0 else f"σ = {key:g}"
        else:
            what = f"N = {key}"
        return f"{self.section}: {what}"

    def status(self) -> str:
        """``"done"`` (the notebook loads it), ``"partial (e of E epochs)"`` (the job resumes it), ``"to run"``, or
        ``"not kept (no shadow_dir)"``."""
        if self.checkpoint is None:
            return "not kept (no shadow_dir)"
        progress = train.checkpoint_progress(self.checkpoint)
        if progress is None:
            return "to run"
        done, epochs = progress
        return "done" if done == epochs else f"partial ({done} of {epochs} epochs)"


def job_count(cfg: Settings) -> int:
    """How many jobs :func:`chapter_jobs` lists (no data read)."""
    return sum(len(specs) for specs in chapter_attacks(cfg).values())


def chapter_jobs(cfg: Settings, pool: Pools | None = None) -> list[Job]:
    """The chapter's independent trainings at ``cfg``, in the notebook's order (:func:`chapter_attacks`), each with
    its checkpoint (:func:`attack_files`).  ``pool`` (default :func:`pools` of ``cfg``, read only when
    ``cfg.disjoint_validation`` makes the number of validation heads, which names the checkpoint, depend on it)."""
    if pool is None and cfg.disjoint_validation:
        pool = pools(cfg)
    found = []
    for section, specs in chapter_attacks(cfg).items():
        for key, spec in specs.items():
            labels = None if pool is None else pool.validation[1]
            count = cfg.shadow_val if labels is None else validation_count(cfg, spec, labels)
            found.append(Job(len(found), section, key, spec, attack_files(cfg, spec, val_count=count)[1]))
    return found


def run_job(cfg: Settings, index: int, *, progress: bool = True) -> tuple[Job, AttackResult]:
    """Run job ``index`` of :func:`chapter_jobs` to its end: the pools, the feature extractor (and CelebA's features
    for the identity task) and :func:`run_attack` of its attack, each piece loaded where it is saved and finished,
    resumed where it is partial, trained otherwise.  ``cfg.device`` may name any card (``"cuda:1"``): no saved piece
    names its device.  Returns the job and the attack's result."""
    count = job_count(cfg)
    validation.integer("index", index, minimum=0)
    if index >= count:
        raise ValueError(f"index={index!r}; allowed: 0 to {count - 1} (the jobs that `python -m compendium jobs "
                         "transfer_learned` lists at these settings)")
    if cfg.shadow_dir is None:
        raise ValueError("shadow_dir=None; allowed: a folder (--set shadow_dir=PATH): a job's training is kept there "
                         "for the notebook, and nothing would be kept without it")
    pool = pools(cfg)
    job = chapter_jobs(cfg, pool)[index]
    extractor = feature_extractor(cfg, pool, progress)
    if job.section == "identity":
        pool, extractor = identity_data(cfg, pool, extractor, progress)
    return job, run_attack(cfg, pool, extractor, job.spec, progress=progress)


def job_commands(command: str, pending: list[int], *, cards: int) -> str:
    """Shell lines that run the jobs ``pending`` with ``cards`` GPUs, one process per card, ``command`` being the
    job command without ``--run`` (e.g. ``python -m compendium jobs transfer_learned --scale paper``): the first
    ``cards`` jobs started by hand (``CUDA_VISIBLE_DEVICES=k ... --run K &``), then every pending job through GNU
    parallel (``-j cards``, slot ``{%}`` choosing the card) and through a SLURM array of one GPU per task, the
    existing engines that start them across cards or machines."""
    validation.integer("cards", cards)
    if not pending:
        return "# every job is done: run the notebook, which loads them"
    lines = [f"# {len(pending)} job(s) to run; by hand, one per card (start the next as one ends):"]
    lines += [f"CUDA_VISIBLE_DEVICES={card} {command} --run {job} &" for card, job in zip(range(cards), pending)]
    lines += ["wait", f"# all of them, {cards} at a time, one per card (GNU parallel):",
              f"parallel -j {cards} --lb {shlex.quote(f'CUDA_VISIBLE_DEVICES=$(({{%}} - 1)) {command} --run {{}}')}"
              f" ::: {' '.join(map(str, pending))}",
              "# on a cluster whose machines share shadow_dir (SLURM, one GPU per task):",
              f"sbatch --array={','.join(map(str, pending))} --gpus=1 "
              f"--wrap {shlex.quote(f'{command} --run $SLURM_ARRAY_TASK_ID')}"]
    return "\n".join(lines)
