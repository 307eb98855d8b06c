"""The copy-cost calibration: what a copy costs on one CPU of a host, measured once when a sweep starts (or by
./inv calibrate) and kept in its manifest.  record.py is the record and what may be derived from it (pure: the
manifest, the analysis and the report read it); measurement.py runs the calibration programs on an end and makes
the record."""
