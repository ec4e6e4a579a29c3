"""Proof that a change does what it says: per-test results, the verdict and the concerns a person sees."""
