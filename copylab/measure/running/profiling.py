"""The sampled profile of a sweep's trials: one sampler for the sweep, on while a trial runs, cut to its window.

copylab.programs.sampler runs perf record; copylab.programs.profile_reader charges its samples.  A sweep that
cannot sample (no root, two hosts, no perf) says why in one line, and its trials run unsampled.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from copylab.errors import CopylabError
from copylab.programs import profile_reader, sampler
from copylab.programs.profile_reader import Profile, TrialWindow
from copylab.programs.sampler import Sampler, SamplerUse
from copylab.scratch import private_directory


def cpu_set(cpus: tuple[str | None, ...]) -> frozenset[int] | None:
    """The CPUs of CPU lists such as "0" and "0,1"; None when one of them is None (no affinity: every CPU)."""
    if any(c is None for c in cpus):
        return None
    return frozenset(int(n) for c in cpus if c is not None for n in c.split(","))


class SweepSampler:
    """The sweep's sampler as its trials use it: switched on around each trial, each trial's window noted.  A sampler
    that stops answering is given up, and the trials after it run unsampled (the report counts them)."""

    def __init__(self, use: SamplerUse, running: Sampler | None = None) -> None:
        self.use = use
        self.running = running
        self.windows: list[TrialWindow] = []
        self.failure: str | None = None  # why the sampler was given up during the sweep

    @contextmanager
    def around_trial(self) -> Iterator[None]:
        if self.running is None or self.failure is not None:
            yield
            return
        self._switch(self.running.enable)
        try:
            yield
        finally:
            if self.failure is None:
                self._switch(self.running.disable)

    def _switch(self, action: Callable[[], None]) -> None:
        try:
            action()
        except CopylabError as error:
            self.failure = str(error)
            print(f"copylab: the sampler is given up, the next trials run unsampled: {error}", file=sys.stderr)

    def note(
        self, trial_id: str, window: tuple[int, int] | None, programs: tuple[str, str], cpus: frozenset[int] | None
    ) -> None:
        """The window (CLOCK_MONOTONIC ends, ns) of a trial that ended ok, and its two programs (server, client) and
        CPUs."""
        if self.running is None or self.failure is not None or window is None:
            return
        sender, receiver = (profile_reader.comm_of(p) for p in programs)
        self.windows.append(TrialWindow(trial_id, *window, sender, receiver, cpus))

    def finish(self) -> Profile | None:
        """Stops the sampler and charges the samples of every noted window; None when nothing was sampled."""
        if self.running is None:
            return None
        self.running.stop()
        script = self.running.script()
        assert script.stdout is not None
        with script:
            profile = profile_reader.attribute(script.stdout, self.windows)
        return profile


@contextmanager
def sampling(name: str, cpu_lists: Sequence[str | None], local: bool, root: bool) -> Iterator[SweepSampler]:
    """A running sampler for the sweep NAME on the CPUs of CPU_LISTS (its trials' ends'; None: no affinity, every
    CPU), stopped after the block (LOCAL: both ends on this machine; ROOT: the sweep runs as root), or an idle one
    that says why it cannot sample."""
    why = sampler.refusal(local, root)
    if why is not None:
        yield SweepSampler(SamplerUse(False, why))
        return
    cpus = cpu_set(tuple(cpu_lists))
    with private_directory(f"copylab-samples-{name}-") as directory:
        running = Sampler(Path(directory), None if cpus is None else ",".join(str(c) for c in sorted(cpus)))
        try:
            try:
                running.start()
            except CopylabError as error:
                yield SweepSampler(SamplerUse(False, f"perf record did not start: {error}"))
                return
            yield SweepSampler(SamplerUse(True), running)
        finally:
            running.stop()


def is_root() -> bool:
    return os.geteuid() == 0
