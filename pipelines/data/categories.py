"""A categorical column's per-row codes and its distinct values, from Arrow's dictionary encoding: no Python
object per row, only one per value the rows use. The CatBoost frame (`pipelines.models.catboost_frames`) and the
row groups' keys (`pipelines.scoring.row_grouping`) build their pandas categoricals from it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

MISSING_CATEGORY = ""  # a missing categorical value, as the models read it (CatBoost frames, ONNX string inputs)


def used_categories(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, categories): int64 codes into the values these rows use (-1 for a null), and those values as an
    object array. A dictionary column (as Parquet gives it) is recoded through its indices without decoding a
    value per row: a row group's dictionary holds every value of the row group, so only the used entries are
    kept. The categories are the dictionary's: unique for a dictionary Arrow encoded, not checked here."""
    if not pa.types.is_dictionary(column.type):
        column = pa.chunked_array([pc.dictionary_encode(column.combine_chunks())])
    elif column.num_chunks > 1:
        column = column.unify_dictionaries()
    chunks = column.chunks
    dictionary = chunks[0].dictionary if chunks else pa.array([], column.type.value_type
                                                             if pa.types.is_dictionary(column.type) else column.type)
    indices = (np.concatenate([chunk.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
                               for chunk in chunks]) if chunks else np.zeros(0, np.int64))
    size = len(dictionary)
    used = np.zeros(size + 1, dtype=bool)
    used[indices] = True  # a null (-1) marks the extra last slot
    keep = np.flatnonzero(used[:size])
    recode = np.full(size + 1, -1, dtype=np.int64)
    recode[keep] = np.arange(keep.size)
    categories = np.asarray(dictionary.take(pa.array(keep)).to_numpy(zero_copy_only=False), dtype=object)
    return recode[indices], categories


def compact_dictionaries(table: pa.Table) -> pa.Table:
    """``table`` with each dictionary chunk holding only the entries its rows use. Rows taken out of a Parquet
    batch keep the whole row group's dictionary: a keyed sample of 1e6 rows of a 1e7-row day held 7e6 entries
    of one column over its 50 chunks (621 MiB for the table, benchmarks/results/memory.md). Values, types and
    chunks are unchanged; only unused dictionary entries go."""
    columns = []
    for column in table.columns:
        if not pa.types.is_dictionary(column.type):
            columns.append(column)
            continue
        chunks = []
        for chunk in column.chunks:
            indices = chunk.indices.fill_null(0).to_numpy(zero_copy_only=False)
            valid = chunk.indices.is_valid().to_numpy(zero_copy_only=False) if chunk.null_count else None
            used = np.zeros(len(chunk.dictionary), dtype=bool)
            used[indices if valid is None else indices[valid]] = True
            if used.all():
                chunks.append(chunk)
                continue
            keep = np.flatnonzero(used)
            recode = np.zeros(used.size, dtype=indices.dtype)
            recode[keep] = np.arange(keep.size, dtype=indices.dtype)
            new = pa.array(recode[indices], type=chunk.indices.type,
                           mask=None if valid is None else ~valid)
            chunks.append(pa.DictionaryArray.from_arrays(new, chunk.dictionary.take(pa.array(keep))))
        columns.append(pa.chunked_array(chunks, type=column.type))
    return pa.Table.from_arrays(columns, schema=table.schema)


__all__ = ["MISSING_CATEGORY", "compact_dictionaries", "used_categories"]
