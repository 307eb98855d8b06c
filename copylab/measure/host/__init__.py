"""What a sweep learns once, before its trials, about where it runs: the host's round-trip floor (floor.py), the
path's bytes in flight (in_flight.py), and the hardware, toolchain and code it records (provenance.py)."""
