"""The zero-copy path diagram: a real picture, annotated with the measured share when given."""

from __future__ import annotations

import io

import matplotlib.image as mpimg
import numpy as np
import pytest
from matplotlib.figure import Figure

from copylab.errors import CopylabError
from copylab.experiments.copies.diagram import zerocopy_path_figure


def _pixels(figure: Figure) -> np.ndarray:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=150)
    buffer.seek(0)
    return mpimg.imread(buffer)


def test_diagram_is_a_nontrivial_picture():
    image = _pixels(zerocopy_path_figure())
    assert image.shape[0] >= 600 and image.shape[1] >= 1000
    # boxes, text and lanes, not a blank canvas: many distinct colours
    assert len(np.unique(image.reshape(-1, image.shape[2]), axis=0)) > 50


def test_measured_share_changes_the_drawing():
    plain, annotated = _pixels(zerocopy_path_figure()), _pixels(zerocopy_path_figure(0.973))
    assert plain.shape == annotated.shape and not np.array_equal(plain, annotated)


@pytest.mark.parametrize("fraction", [-0.1, 1.5, float("nan")])
def test_impossible_share_is_rejected(fraction):
    with pytest.raises(CopylabError, match=r"within 0\.\.1"):
        zerocopy_path_figure(fraction)
