"""``python -m auditing.warehouse duckdb|postgres`` prints the warehouse DDL (infra/warehouse/*.sql)."""

import sys

from auditing.warehouse.migrations import main

sys.exit(main())
