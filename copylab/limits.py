"""Constants the C programs and the Python side must agree on that are not a setting's limits.

csrc/limits.h carries them, generated with the settings' limits (copylab.settings.c_header); a test holds the
header to both.
"""

from __future__ import annotations

# The study's message: this many separately allocated fields.
FIELD_COUNT = 8
# select's descriptor sets hold descriptors below FD_SETSIZE (1024); the server keeps 16 for its own (stdio,
# listener, control and perf fifos), so this many connections is what a select server can hold.
SELECT_MAX_CONNECTIONS = 1024 - 16

CONSTANTS = {"FIELD_COUNT": FIELD_COUNT, "SELECT_MAX_CONNECTIONS": SELECT_MAX_CONNECTIONS}
