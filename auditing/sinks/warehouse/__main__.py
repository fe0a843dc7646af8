"""``python -m auditing.sinks.warehouse duckdb|postgres`` prints the warehouse DDL (infra/warehouse/*.sql)."""

import sys

from auditing.sinks.warehouse.migrations import main

sys.exit(main())
