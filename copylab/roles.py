"""The study's three variants (Part A of the study, README.md): the questions of Part E are asked about them.  The
registry says which implementation plays which (copylab.declarations.implementations, `role=`); everything else finds a
variant by its role, never by its name."""

from __future__ import annotations

import enum


class Role(enum.StrEnum):
    TWO_COPY = "A1"  # the baseline
    ONE_COPY = "A2"
    ZERO_COPY = "A3"


STUDY_BASELINE = Role.TWO_COPY
