"""`python -m copylab.declarations.settings` prints csrc/limits.h, `... settings sweep_config` SweepConfig's module
(copylab.declarations.settings)."""

import sys

from copylab.declarations.settings import c_header, sweep_config_module

sys.stdout.write(sweep_config_module() if sys.argv[1:] == ["sweep_config"] else c_header())
