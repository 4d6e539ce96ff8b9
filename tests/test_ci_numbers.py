"""Every number the ``ci`` run glues equals the one kept in ``tests/ci_numbers.json``: a refactoring leaves the
book's numbers as they were, a non-deterministic step shows up as a changed number, and a change meant to move
them rewrites the file (``python scripts/ci_numbers.py FOLDER``) in the same commit."""
from __future__ import annotations

import importlib.util
import json
import math

from compendium.base import repository_root
from compendium.student import glued_value

spec = importlib.util.spec_from_file_location("ci_numbers", repository_root() / "scripts" / "ci_numbers.py")
ci_numbers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ci_numbers)

#: a float may move in its last digits between processors (BLAS kernels); anything more is a change
RELATIVE = 1e-6


def _same(kept: str, now: str) -> bool:
    a, b = glued_value(kept), glued_value(now)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=RELATIVE, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))
    return kept == now


def test_the_ci_run_glues_the_kept_numbers(executed_notebooks) -> None:
    kept = json.loads(ci_numbers.SNAPSHOT.read_text())
    folder = next(iter(executed_notebooks.values())).parent
    now = ci_numbers.snapshot(folder)
    changes = []
    for key in sorted(set(kept) | set(now)):
        old, new = kept.get(key, {}), now.get(key, {})
        changes += [f"{key}: {name} no longer glued" for name in sorted(set(old) - set(new))]
        changes += [f"{key}: {name} new ({new[name]})" for name in sorted(set(new) - set(old))]
        changes += [f"{key}: {name} {old[name]} -> {new[name]}" for name in sorted(set(old) & set(new))
                    if not _same(old[name], new[name])]
    assert not changes, ("the ci run's numbers changed (rewrite tests/ci_numbers.json with scripts/ci_numbers.py "
                         "only for a change meant to move them):\n" + "\n".join(changes[:60]))


def test_the_comparison_allows_last_digits_only() -> None:
    assert _same("0.1234567", "np.float64(0.12345670000001)") and not _same("0.1234567", "0.1234577")
    assert _same("'a'", "'a'") and not _same("'a'", "'b'") and _same("nan", "nan")
