"""What a test needs from the machine (a browser, nginx, redis-server, axe-core): missing, the test is skipped on a
developer's machine and fails in CI (the CI environment variable set), which must run every test."""
import os

import pytest


def unavailable(what, error):
    """Skip, or fail in CI, saying which tool is missing and why."""
    if os.environ.get("CI"):
        pytest.fail(f"CI needs {what}: {error}")
    pytest.skip(f"no {what}: {error}")
