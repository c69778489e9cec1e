"""Experiments: the seed papers' runs, scaled to BMv2, and the demo."""
