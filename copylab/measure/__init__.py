"""Measuring a sweep, by stage: running/ runs one trial and reads it, planning/ decides which trials come next,
host/ probes what the host and its path are once a sweep; sweep.py runs a sweep through the three."""
