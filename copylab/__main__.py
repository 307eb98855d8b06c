"""python -m copylab: the command line (copylab.cli.main)."""

from copylab.cli.main import main

raise SystemExit(main())
