"""The zero-copy path diagram: a real PNG, annotated with the measured share when given."""

from __future__ import annotations

import matplotlib.image as mpimg
import numpy as np
import pytest

from copylab.diagram import draw_zerocopy_path
from copylab.errors import CopylabError


def test_diagram_is_a_nontrivial_png(tmp_path):
    out = draw_zerocopy_path(tmp_path / "sub" / "zc.png")
    assert out == tmp_path / "sub" / "zc.png"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 30_000
    image = mpimg.imread(out)
    assert image.shape[0] >= 600 and image.shape[1] >= 1000
    # boxes, text and lanes, not a blank canvas: many distinct colours
    assert len(np.unique(image.reshape(-1, image.shape[2]), axis=0)) > 50


def test_measured_share_changes_the_drawing(tmp_path):
    plain = mpimg.imread(draw_zerocopy_path(tmp_path / "plain.png"))
    annotated = mpimg.imread(draw_zerocopy_path(tmp_path / "annotated.png", 0.973))
    assert plain.shape == annotated.shape and not np.array_equal(plain, annotated)


@pytest.mark.parametrize("fraction", [-0.1, 1.5, float("nan")])
def test_impossible_share_is_rejected(tmp_path, fraction):
    with pytest.raises(CopylabError, match="within 0..1"):
        draw_zerocopy_path(tmp_path / "x.png", fraction)
