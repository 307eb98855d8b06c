"""`./inv explore` and `./inv lab` print their URL only once the server answers, so a browser opened at it at once
finds the page; a server that exits first, or never answers, is a one-line error."""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from copylab.errors import CopylabError
from copylab.explore import serve
from tests.synthetic import make_trials, write_sweep

# A stand-in server: listens only after a second, as Voilà does after its start-up, says when it answers (before
# the answer leaves), and ends after its first answer.
LATE_SERVER = """
import http.server, sys, time
class Answer(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self):
        print("answered", flush=True)
        self.send_response(403)
        self.end_headers()
time.sleep(1)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Answer).handle_request()
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _connects(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_explore_prints_its_url_only_once_the_server_answers(tmp_path: Path) -> None:
    """`copylab explore` as the user starts it: the moment its URL line is read, the port takes connections."""
    sweep = write_sweep(tmp_path / "sweep", make_trials(seed=4))
    port = _free_port()
    log = (tmp_path / "explore.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "copylab", "explore", "--data", str(sweep), "--port", str(port)],
        cwd=tmp_path,
        env=dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime")),
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        start_new_session=True,
    )
    try:
        ready, _, _ = select.select([process.stdout], [], [], 120)
        assert ready, "no URL printed within 120 s"
        line = process.stdout.readline()
        connected = _connects(port)
        assert line.startswith(f"copylab explorer: http://127.0.0.1:{port}/?token="), (
            line or (tmp_path / "explore.log").read_text()[-2000:]
        )
        assert connected, "the URL was printed before the server took connections"
    finally:
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C, the usual way to stop it
        process.wait(30)
        log.close()


def test_the_url_is_printed_after_the_first_answer_of_a_server_that_starts_late(tmp_path: Path, capfd) -> None:
    port = _free_port()
    code = serve.serve([sys.executable, "-c", LATE_SERVER, str(port)], dict(os.environ), tmp_path, port, "http://u/")
    assert code == 0
    assert capfd.readouterr().out.splitlines() == ["answered", "copylab explorer: http://u/"]


def test_a_server_that_exits_before_it_answers_is_a_one_line_error(tmp_path: Path, capfd) -> None:
    command = [sys.executable, "-c", "import sys; sys.exit(3)"]
    with pytest.raises(CopylabError) as refused:
        serve.serve(command, dict(os.environ), tmp_path, _free_port(), "http://127.0.0.1/")
    assert "exited with 3 before it answered on port" in str(refused.value) and "\n" not in str(refused.value)
    assert "copylab explorer:" not in capfd.readouterr().out


def test_a_server_that_never_answers_is_stopped_and_a_one_line_error(tmp_path: Path, capfd) -> None:
    command = [sys.executable, "-c", "import time; time.sleep(60)"]
    started = time.monotonic()
    with pytest.raises(CopylabError, match=r"did not answer on port \d+ within 1 s"):
        serve.serve(command, dict(os.environ), tmp_path, _free_port(), "http://127.0.0.1/", grace=5, answer_s=1)
    assert time.monotonic() - started < 10, "the silent server was stopped, not waited for"
    assert "copylab explorer:" not in capfd.readouterr().out
