"""Training label-DP models: the mechanisms (a registry) and CatBoost fitting."""
