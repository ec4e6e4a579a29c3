"""Proof of a change: per-test results read from each framework's machine output, the
baseline on the base, and the verdict (verified, unproven, regressed, failed) with its evidence."""
