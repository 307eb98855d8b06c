"""The zero-copy path diagram: a real picture, annotated with the measured share when given."""

from __future__ import annotations

import io

import matplotlib.image as mpimg
import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch
from matplotlib.text import Text

from copylab.errors import BrokenInvariant
from copylab.report.experiments.copies.figures.diagram import zerocopy_path_figure

DPI = 150


def _pixels(figure: Figure) -> np.ndarray:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    buffer.seek(0)
    return mpimg.imread(buffer)


def test_diagram_is_a_nontrivial_picture():
    image = _pixels(zerocopy_path_figure())
    assert image.shape[0] >= 600 and image.shape[1] >= 1000
    # boxes, text and lanes, not a blank canvas: many distinct colours
    assert len(np.unique(image.reshape(-1, image.shape[2]), axis=0)) > 50


@pytest.mark.parametrize("between_hosts", [False, True], ids=["veth", "two-hosts"])
def test_the_measured_share_is_written_in_its_step_and_nowhere_else(between_hosts):
    """The annotation is the share in words, in the box of the step that reports the COPIED flag: the pixels that
    change are a line of text's worth, all inside that box."""
    plain = zerocopy_path_figure(between_hosts=between_hosts)
    annotated = zerocopy_path_figure(0.973, between_hosts=between_hosts)
    added = _texts(annotated) - _texts(plain)
    assert len(added) == 1 and "measured: 97.3% of sends" in next(iter(added)), added
    assert "COPIED" in next(iter(added)), f"the share annotates the step reporting the COPIED flag: {added}"
    before, after = _pixels(plain), _pixels(annotated)
    assert before.shape == after.shape
    rows, columns = np.nonzero(np.any(np.abs(after - before) > 0.05, axis=2))
    top, bottom, left, right = _box_pixels(annotated, next(iter(added)), after.shape[0])
    outside = (rows < top) | (rows > bottom) | (columns < left) | (columns > right)
    assert not outside.any(), f"{outside.sum()} changed pixels outside the step's box"
    # A line of 8-point text at 150 dpi: at least a few hundred pixels, far fewer than the box holds.
    assert 200 <= len(rows) <= (bottom - top) * (right - left) / 2, len(rows)


def _texts(figure: Figure) -> set[str]:
    return {text.get_text() for text in figure.findobj(Text) if text.get_text()}


def _box_pixels(figure: Figure, label: str, height: int) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) in the saved PNG's pixels of the rounded box holding the text LABEL."""
    figure.canvas.draw()
    text = next(text for text in figure.findobj(Text) if text.get_text() == label)
    centre = text.get_window_extent().get_points().mean(axis=0)
    box = next(
        patch.get_window_extent()
        for patch in figure.findobj(FancyBboxPatch)
        if patch.get_window_extent().contains(*centre) and patch.get_window_extent().width < figure.bbox.width / 2
    )
    scale = DPI / figure.dpi
    (x0, y0), (x1, y1) = box.get_points() * scale
    return int(height - y1) - 2, int(height - y0) + 2, int(x0) - 2, int(x1) + 2


@pytest.mark.parametrize("fraction", [-0.1, 1.5, float("nan")])
def test_impossible_share_is_rejected(fraction):
    with pytest.raises(BrokenInvariant, match=r"within 0\.\.1"):
        zerocopy_path_figure(fraction)
