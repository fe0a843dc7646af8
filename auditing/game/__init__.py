"""The observational label-inference game (paper Alg. 2): keyed randomness, scores, the compiled kernel, the sweep and its exact reduction, the slot plan and the game's stored counts."""
