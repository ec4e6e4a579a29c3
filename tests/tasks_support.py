"""The old name of `support.tasks` (tests/support/): the same module, for tests written before the move."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("support.tasks")
