"""``python -m compendium``: see :mod:`compendium.cli`."""
import sys

from compendium.cli import main

sys.exit(main())
