"""Data and compute jobs: partitions, label-DP training, the model registry and the Beam scoring job."""
