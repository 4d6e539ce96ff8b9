"""The reference compendium on data reconstruction attacks and differential privacy.

Closed-form bounds (:mod:`compendium.bounds`), the attacks that test them (:mod:`compendium.attacks`), the metrics,
data, DP-SGD glue and the build pipeline of the Jupyter Book that puts them side by side.
"""
import os as _os

__version__ = "0.1.0"

#: The environment variable by which a book build lowers the priority of a chapter's Jupyter kernel
#: (:func:`compendium.book.execute_chapters`).
NICENESS_VARIABLE = "COMPENDIUM_KERNEL_NICENESS"


def _take_the_builds_priority() -> None:
    """Where a book build asks for it (:data:`NICENESS_VARIABLE`), give this process's scheduling group that nice
    value.  A chapter's kernel runs in a session of its own (jupyter_client starts it with ``start_new_session``),
    and where Linux groups the processes of a session for scheduling (autogroup, on by default), a nice value acts
    only inside its group: the group's own nice value, ``/proc/self/autogroup``, is what sets its share of the CPU
    against the other chapters' kernels."""
    niceness = _os.environ.get(NICENESS_VARIABLE)
    if not niceness:
        return
    try:
        with open("/proc/self/autogroup", "w") as group:
            group.write(niceness)
    except OSError:  # no autogroup (another system, or turned off): the nice value the kernel inherited acts alone
        pass


_take_the_builds_priority()
