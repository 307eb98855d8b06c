"""copylab's command line: the tasks (commands.py), their options' parsing (parsing.py), and the entry point that
turns errors and interruptions into one line and an exit status (main.py).  ./inv's tasks.py wraps the same
commands for invoke; `python -m copylab` and the `copylab` console script call main."""
