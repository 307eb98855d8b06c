"""Counts the report gives agree with each other and with the console: every trial that ran is counted once."""

from __future__ import annotations

import dataclasses

import pandas as pd

from copylab.declarations.config import make_config
from copylab.report import sections
from copylab.report.results import Layouts
from copylab.report.sections.methodology import _receive_buffer_share
from tests.test_answers import make_sweep


def test_the_trial_count_includes_the_layout_arms_and_says_how_many_they_add():
    sweep = make_sweep()
    study = sweep.trials.assign(layout="fields")
    arms = study[study["implementation"] == "one_copy"].assign(layout="contiguous")
    every = pd.concat([study, arms], ignore_index=True)
    empty = sweep.comparisons.iloc[:0]
    sweep = dataclasses.replace(sweep, trials=study, layouts=Layouts(every, sweep.summary, empty, empty))
    text = " ".join(sections.method(sweep).split())
    assert f"**Repetitions.** {len(every):,} trials in total ({len(every):,} succeeded)" in text
    assert f"{len(arms):,} of them held the message in another layout (`contiguous`)" in text
    assert f"the other sections rest on {len(study):,}" in text
    assert f"All {len(every)} trials completed" in sections.limitations(sweep)


def test_the_receive_buffers_share_follows_the_socket_buffer_setting():
    """Kernel-sized buffers (--socket-buffer 0) are the transport's doing; fixed ones are said to be fixed."""
    manifest = make_sweep().manifest
    for chosen, said in (
        (0, "The kernel sized this sweep's socket buffers"),
        (1 << 20, "fixed the socket buffers at 1 MiB"),
    ):
        config = dataclasses.replace(make_config("fixture", "quick"), socket_buffer=chosen)
        text = _receive_buffer_share(dataclasses.replace(manifest, parameters=config))
        assert said in text
        assert ("kernel sized" in text) == (chosen == 0)
