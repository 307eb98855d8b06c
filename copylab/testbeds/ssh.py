"""Opening an SSH connection to a host (Fabric), with OpenSSH's trust and one-line errors, and running a shell
command over it.

Authentication is OpenSSH's (agent, keys, ssh_config); a host key must already be known unless the ssh config's
StrictHostKeyChecking says otherwise.  copylab never asks for a password.
"""

from __future__ import annotations

import subprocess
from contextlib import suppress
from pathlib import Path
from typing import Any

import fabric
import paramiko
from invoke.exceptions import CommandTimedOut

from copylab.declarations.config import HOST_PATTERN
from copylab.error_catalogue import (
    HOST_KEY_CHANGED,
    HOST_KEY_UNKNOWN,
    KEYS_REFUSED,
    NOT_CONNECTED,
    SSH_BROKE,
    SSH_FAILED,
    SSH_UNREACHABLE,
)
from copylab.testbeds.testbed import EndLost

CONNECT_TIMEOUT_S = 10


def _new_connection(target: str, ssh_config: str | None) -> fabric.Connection:
    match = HOST_PATTERN.fullmatch(target)
    assert match is not None  # the settings were validated
    config = fabric.Config(runtime_ssh_path=ssh_config) if ssh_config else fabric.Config()
    port = int(match["port"]) if match["port"] else None
    connection = fabric.Connection(
        match["host"], user=match["user"], port=port, config=config, connect_timeout=CONNECT_TIMEOUT_S
    )
    # Fabric accepts any host key by default; copylab trusts what OpenSSH would.
    keys = connection.client.get_host_keys()
    known = connection.ssh_config.get("userknownhostsfile", "~/.ssh/known_hosts ~/.ssh/known_hosts2")
    for path in [*known.split(), "/etc/ssh/ssh_known_hosts"]:
        with suppress(OSError):
            keys.load(str(Path(path).expanduser()))
    checking = connection.ssh_config.get("stricthostkeychecking", "ask").lower()
    policy = paramiko.AutoAddPolicy() if checking in ("no", "off", "accept-new") else paramiko.RejectPolicy()
    connection.client.set_missing_host_key_policy(policy)
    return connection


def open_connection(target: str, ssh_config: str | None, host: str) -> fabric.Connection:
    """An open connection to TARGET (USER@HOST[:PORT]); a one-line CopylabError naming HOST and the cause when it
    cannot be opened."""
    connection = _new_connection(target, ssh_config)
    try:
        connection.open()
    except paramiko.BadHostKeyException:
        raise HOST_KEY_CHANGED.error(host=host) from None
    except paramiko.AuthenticationException:
        raise KEYS_REFUSED.error(host=host) from None
    except paramiko.SSHException as error:
        if "not found in known_hosts" in str(error):
            raise HOST_KEY_UNKNOWN.error(host=host) from None
        raise SSH_FAILED.error(host=host, error=error) from None
    except (OSError, EOFError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error) or "timed out"
        raise SSH_UNREACHABLE.error(host=host, reason=reason) from None
    return connection


def shell(connection: fabric.Connection | None, label: str, purpose: str, command: str, timeout: float | None) -> Any:
    """Runs a shell COMMAND over CONNECTION (its own SSH session); EndLost when the connection is gone."""
    if connection is None or not connection.is_connected:
        raise NOT_CONNECTED.error(EndLost, label=label, purpose=purpose)
    try:
        return connection.run(command, hide=True, warn=True, in_stream=False, timeout=timeout)
    except CommandTimedOut:
        raise subprocess.TimeoutExpired(command, timeout or 0) from None
    except (paramiko.SSHException, OSError, EOFError) as error:
        raise SSH_BROKE.error(EndLost, label=label, error=error or type(error).__name__) from None
