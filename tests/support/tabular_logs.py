"""A tabular click log under a dataset spec, for the tabular ingest's tests (tests/pipelines/data/
test_tabular_ingest.py) and the ``data ingest`` command's (tests/flows/commands/test_data.py): TABULAR_ROWS rows of
day TABULAR_DATE written as a CSV with a header, a gzip TSV without one and Parquet, with the spec's file, once per
module. Each folder's conftest.py offers ``tabular_source`` by name."""

from __future__ import annotations

import datetime as dt
import gzip
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows.cli import main

TABULAR_DATE = dt.date(2024, 5, 6)
TABULAR_ROWS = 3_000
TABULAR_COLUMNS = ["impression_id", "clicked", "f1", "f2", "f3", "f4", "f5", "country", "device", "slot", "campaign",
                   "site"]
TABULAR_SPEC = {"name": "clicks", "description": "test clicks", "label": "clicked", "classes": 2,
                "row_key": "impression_id", "numeric": ["f1", "f2", "f3", "f4", "f5"],
                "categorical": ["country", "device", "slot", "campaign"], "carry": ["site"]}
CAMPAIGNS = ["spring", "summer", "autumn", "winter", "launch"]


def click_data(rows: int, seed: int = 3) -> dict[str, list]:
    """The columns of a click log as Python values (None = missing)."""
    rng = np.random.default_rng(seed)
    data: dict[str, list] = {
        "impression_id": [int(x) for x in rng.choice(10**15, size=rows, replace=False) + 10**15],
        "clicked": [int(x) for x in rng.random(rows) < 0.2],
    }
    for j in range(1, 6):
        values = rng.normal(scale=10.0 ** (j - 2), size=rows)
        missing = rng.random(rows) < 0.1
        data[f"f{j}"] = [None if m else float(v) for v, m in zip(values, missing, strict=True)]
    data["country"] = [int(x) for x in rng.choice([840, 276, 250, 392, 76], size=rows)]
    data["device"] = [int(x) for x in rng.integers(0, 4, size=rows)]
    data["slot"] = [int(x) for x in rng.integers(1, 13, size=rows)]
    data["campaign"] = [str(x) for x in rng.choice(CAMPAIGNS, size=rows)]
    data["site"] = [f"site-{int(x)}" for x in rng.integers(0, 50, size=rows)]
    return data


def cell(value) -> str:
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


def text_lines(data: dict[str, list], delimiter: str = ",", header: bool = True,
               columns=TABULAR_COLUMNS) -> list[str]:
    rows = len(data[columns[0]])
    body = [delimiter.join(cell(data[name][i]) for name in columns) for i in range(rows)]
    return ([delimiter.join(columns)] if header else []) + body


def write_text(path, lines, compress=False):
    text = "\n".join(lines) + "\n"
    if compress:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def write_parquet(path, data):
    pq.write_table(pa.table({name: data[name] for name in TABULAR_COLUMNS}), path)
    return path


@pytest.fixture(scope="module")
def tabular_source(tmp_path_factory):
    """The spec and one day of clicks as a CSV with a header, a gzip TSV without one, and Parquet."""
    directory = tmp_path_factory.mktemp("tabular")
    spec_path = directory / "clicks.json"
    spec_path.write_text(json.dumps(TABULAR_SPEC))
    data = click_data(TABULAR_ROWS)
    csv = write_text(directory / "day.csv", text_lines(data))
    tsv = write_text(directory / "day.tsv.gz", text_lines(data, "\t", header=False), compress=True)
    parquet = write_parquet(directory / "day.parquet", data)
    return {"dir": directory, "spec": spec_path, "data": data, "csv": csv, "tsv": tsv, "parquet": parquet}


def data_command(*args) -> int:
    """`labeldp-audit data ARGS...` in process (each argument as its string), and its exit code."""
    return main(["data", *[str(arg) for arg in args]])
