"""Data-only records shared by the game, the result and the verdict: they import nothing else from auditing."""
