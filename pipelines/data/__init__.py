"""Days of click logs: dataset specs, partitions and their schema, ingest of Criteo and any tabular log, synthetic days, the keyed splits."""
