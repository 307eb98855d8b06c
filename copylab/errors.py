"""The one exception type copylab raises for bad input; the CLI turns it into a one-line error."""


class CopylabError(Exception):
    """Bad input or an unusable environment, described in one line."""
