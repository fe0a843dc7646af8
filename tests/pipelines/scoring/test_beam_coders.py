"""The scoring job's batch coder (pipelines/scoring/beam_coders.py): it encodes as Beam's pickle fallback does,
and estimates an element's size from its buffers without serializing it."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pyarrow as pa
from apache_beam import coders, typehints

from pipelines.scoring.beam_coders import BATCH, BatchCoder, keyed, payload_nbytes, typed


@dataclasses.dataclass
class _Payload:
    scores: np.ndarray
    table: pa.Table
    note: str


def test_payload_size_is_the_sum_of_its_buffers():
    scores = np.zeros(1000, dtype=np.float64)
    table = pa.table({"x": np.arange(500, dtype=np.int64)})
    assert payload_nbytes(scores) == 8000
    assert payload_nbytes(table) == table.nbytes == 4000
    assert payload_nbytes(_Payload(scores, table, "abc")) == 8000 + 4000 + 3
    assert payload_nbytes((scores, [scores], {"k": b"12"})) == 8000 + 8000 + 2
    assert payload_nbytes(np.array(["a", "b"], dtype=object)) == 32  # object arrays: a small object per item


class _NoPickle:
    nbytes = 123

    def __reduce__(self):
        raise AssertionError("the size estimate must not serialize")


def test_the_coder_round_trips_by_pickle_and_estimates_without_it():
    coder = BatchCoder()
    impl = coder.get_impl()
    value = (3, np.arange(10, dtype=np.int32))
    encoded = impl.encode(value)
    assert encoded == pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    key, array = impl.decode(encoded)
    assert key == 3 and np.array_equal(array, value[1])
    assert impl.estimate_size(_NoPickle()) == 123
    assert coder == BatchCoder() and hash(coder) == hash(BatchCoder()) and not coder.is_deterministic()


def test_the_marker_type_maps_to_the_batch_coder():
    assert isinstance(coders.registry.get_coder(BATCH), BatchCoder)
    assert keyed(int) == typehints.Tuple[int, BATCH]

    class _PCollection:
        element_type = None

    pcoll = _PCollection()
    assert typed(pcoll, BATCH) is pcoll and pcoll.element_type is BATCH
