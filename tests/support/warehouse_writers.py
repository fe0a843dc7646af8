"""Writers that write to one warehouse at once, for the concurrency tests (tests/auditing/sinks/warehouse/
test_base.py): ``write_rounds`` writes rounds of a shared key and a writer's own key, run in threads and in
processes started with ``python -c`` (which import it from here: a test file is never imported); every number of a
row carries ``writer_marker`` (writer + round / 100), so a row mixed from two writes is detectable."""

from __future__ import annotations

import os
import time

from auditing.sinks.warehouse import open_warehouse
from tests.support.warehouse_rows import make_row


def writer_marker(writer: int, round_: int) -> float:
    return writer + round_ / 100


def write_rounds(target: str, writer: int, rounds: int, go_file: str | None = None) -> None:
    with open_warehouse(target) as wh:
        if go_file:  # start together, so that the writes really overlap
            print("ready", flush=True)
            while not os.path.exists(go_file):
                time.sleep(0.005)
        for r in range(rounds):
            for model in ("shared", f"own-{writer}"):
                wh.write_audit(*make_row(model_id=model, marker=writer_marker(writer, r), points=2 + writer))
