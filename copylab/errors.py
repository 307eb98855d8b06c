"""The one exception type copylab raises for bad input; the CLI turns it into a one-line error."""


class CopylabError(Exception):
    """Bad input or an unusable environment, described in one line."""


class BrokenInvariant(Exception):
    """copylab broke a rule of its own: a bug to report, never something a user's input or machine causes, so it
    is not one of the catalogue's errors and the command line shows its traceback."""
