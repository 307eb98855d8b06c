"""One trial: what it is (spec.py), the driver that starts and reads its implementation's two ends (drivers.py),
running it on the testbed (trial.py), and what is read around its measured window (window.py): the kernel's copies
(kernel_copies.py) and the CPUs' speed (host_speed.py)."""
