"""The Beam scoring job: the request and its key, the rows it plays on, the batches, the two exact passes, the job itself."""
