"""The one exception type for bad input anywhere in labeldp-audit.

Every message names the argument, column, file or line at fault, what was expected and what was received
(and, for columns, how many rows are bad). The command line prints the message and exits with status 2,
without a traceback.
"""


class LabelDPInputError(ValueError):
    """Bad input from a user: an argument out of range, a malformed file, a column with bad rows."""
