"""copylab's command line: the tasks (commands.py, the study's own and the table of all; tools.py, the commands
around a study), their options' parsing (parsing.py), and the entry point that turns errors and interruptions into
one line and an exit status (main.py).  ./inv's tasks.py wraps the same commands for invoke; `python -m copylab`
and the `copylab` console script call main."""
