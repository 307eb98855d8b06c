"""Which trials a sweep runs next: the grid and the order of its blocks (schedule.py), a budgeted sweep's rounds
(budgeted.py), and where a budgeted sweep's extra blocks go (allocation.py).  Nothing here runs a trial."""
