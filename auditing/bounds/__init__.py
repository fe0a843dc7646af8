"""Lower bounds on epsilon from the game's counts: the methods (binomial, f-DP), the selection strategies over the sweep and the checks of their scalar arguments."""
