"""Two fixes to Beam's Dask runner (apache-beam 2.77) that keep a worker's memory flat in the day's rows.

**One output list per bundle.** The runner runs a ParDo on a Dask partition with one receiver object built when the
pipeline is translated, so the worker process that runs many partitions of it can keep every earlier partition's
outputs in that object's list; and it collects the bundle's outputs before ``finish_bundle``, so that method's
outputs are dropped. `_ParDoPerBundle` (registered for ``ParDo``) builds the receiver inside each bundle and
collects after ``finish_bundle``.

**Combiner lifting.**

On the Dask runner (apache-beam 2.77) a ``CombineGlobally`` or ``CombinePerKey`` is its expansion, a
``GroupByKey`` followed by the combine of each group: Dask's ``Bag.groupby`` moves every input element (here every
scored batch of the day) to the worker of its key before anything is combined, so the workers' memory grows with
the day's rows (4.9 and 5.0 GB per worker at 1e7 rows against 1.0 GB at 1e6; benchmarks/results/scaling.md). Other
runners lift the combine themselves: each worker folds its own elements into an accumulator and only accumulators
move. ``LiftedCombineGlobally`` does that on Dask. It is a primitive the Dask runner translates (registered in its
translation table on import) into ``Bag.reduction``: each Dask partition folds its elements into one accumulator,
and a tree of merges, ``split_every`` accumulators at a time, gives the one output. No task then holds more than
one partition's elements or ``split_every`` accumulators. Outputs equal those of ``CombineGlobally`` whenever the
combine's merge does not depend on order (the game's histograms are integer counts).

Only for the Dask runner: other runners do not know the primitive (`pipelines.scoring.beam_scoring` uses it there
alone). Importing this module registers both translations.
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.runners.common import DoFnContext, DoFnInvoker, DoFnSignature, _OutputHandler
from apache_beam.runners.dask import transform_evaluator

# Accumulators merged at once in the reduction tree (each of the game's pass-1 accumulators holds R x bins counts).
SPLIT_EVERY = 4


class LiftedCombineGlobally(beam.PTransform):
    """``CombineGlobally(fn).without_defaults()`` folded per Dask partition and merged in a tree (Dask runner only)."""

    def __init__(self, fn: beam.CombineFn, split_every: int = SPLIT_EVERY):
        super().__init__()
        self.fn = fn
        self.split_every = split_every

    def expand(self, pcoll):
        return beam.pvalue.PCollection.from_(pcoll)


class _LiftedCombineOp(transform_evaluator.DaskBagOp):
    def apply(self, input_bag, side_inputs=None):
        import dask
        import dask.bag as db

        transform = self.transform
        fn = transform.fn

        def fold(items):
            accumulator = fn.create_accumulator()
            for item in items:
                accumulator = fn.add_input(accumulator, item)
            return fn.compact(accumulator)

        def merge(accumulators):
            return fn.compact(fn.merge_accumulators(list(accumulators)))

        def output(accumulator):
            return [fn.extract_output(accumulator)]

        total = input_bag.reduction(fold, merge, split_every=transform.split_every)
        return db.from_delayed([dask.delayed(output)(total.to_delayed())])


class _ParDoPerBundle(transform_evaluator.ParDo):
    """A ParDo whose receiver lives for one bundle (a Dask partition), with ``finish_bundle``'s outputs kept."""

    def apply(self, input_bag, side_inputs=None):
        transform = self.transform
        args, kwargs = transform.raw_side_inputs
        main_input = next(iter(self.applied.main_inputs.values()))
        window_fn = main_input.windowing.windowfn if hasattr(main_input, "windowing") else None
        signature = DoFnSignature(transform.fn)
        label = transform.label

        def bundle(items):
            receivers = transform_evaluator.OneReceiver()
            handler = _OutputHandler(window_fn=window_fn, main_receivers=receivers[None], tagged_receivers=receivers,
                                     per_element_output_counter=None, output_batch_converter=None,
                                     process_yields_batches=False, process_batch_yields_elements=False)
            invoker = DoFnInvoker.create_invoker(
                signature, handler, context=DoFnContext(label, state=None), side_inputs=side_inputs,
                input_args=list(args), input_kwargs=kwargs, user_state_context=None,
                bundle_finalizer_param=beam.DoFn.BundleFinalizerParam())
            invoker.invoke_setup()
            invoker.invoke_start_bundle()
            for item in items:
                invoker.invoke_process(item)
            invoker.invoke_finish_bundle()
            outputs = [value.value for value in receivers.values]
            invoker.invoke_teardown()
            return outputs

        return input_bag.map(transform_evaluator.get_windowed_value, window_fn).map_partitions(bundle)


transform_evaluator.TRANSLATIONS[LiftedCombineGlobally] = _LiftedCombineOp
transform_evaluator.TRANSLATIONS[beam.ParDo] = _ParDoPerBundle
