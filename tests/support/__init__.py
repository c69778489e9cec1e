"""What the tests share: the testbed, traffic, the conformance checks and the oracles they
run (each module says what it gives); the test files are tests/test_*.py and
tests/algorithms/."""
