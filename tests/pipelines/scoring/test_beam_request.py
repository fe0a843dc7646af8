"""The scoring request (pipelines/scoring/beam_request.py): which plan a runner gets for a day's rows."""

from pipelines.scoring import beam_request

DASK_RUNNER = beam_request.DASK_RUNNER


def test_auto_plan_keeps_scored_batches_out_of_a_local_runners_memory():
    # A local runner holds a side input's waiting PCollection in memory: above LOCAL_SIDE_INPUT_ROWS rows (or an
    # unknown count) auto writes the scored batches to the work directory there (two-stage), as on Dask at any
    # size; a small day keeps the side input locally, and runners whose shuffle spills keep it always.
    plan_for, limit = beam_request.plan_for, beam_request.LOCAL_SIDE_INPUT_ROWS
    for runner in (None, beam_request.FN_API_RUNNER, "DirectRunner"):
        assert plan_for("auto", runner, limit + 1) == plan_for("auto", runner) == "two-stage"
        assert plan_for("auto", runner, limit) == "side-input"
    assert plan_for("auto", DASK_RUNNER, 1000) == "two-stage"
    assert plan_for("auto", "DataflowRunner", 10**9) == "side-input"
    assert plan_for("side-input", None) == "side-input"
    assert plan_for("two-stage", "DataflowRunner") == "two-stage"
