"""Generic helpers every layer uses (errors, safe names and dates, atomic files, the command hints, registries of choices, declared settings, progress): no audit math, no I/O beyond files."""
