"""pytest configuration of the fuzz slices (test_fuzz_slice.py)."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "fuzz: a fixed-seed slice of a fuzzer (minutes); deselect with -m 'not fuzz'")
