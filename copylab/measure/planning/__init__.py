"""Which trials a sweep runs next: the grid and the design that orders it (schedule.py), and where a budgeted
sweep's extra blocks go (allocation.py).  Nothing here runs a trial."""
