import os
import sys

# lets test modules `import inputs` / `import reference` from this folder
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def served_patched(tmp_path_factory):
    """`python -m lineare.app --num-procs 2`, the classroom's default with its patches: (URL, its two processes, its
    log). One per test run, shared by the files that look at the served path (test_processes, test_served)."""
    from served import two_processes

    with two_processes(tmp_path_factory.mktemp("patched") / "server.log") as served:
        yield served


@pytest.fixture(scope="session")
def served_unpatched(tmp_path_factory):
    """The same server with --no-patches: Panel and Bokeh as released."""
    from served import two_processes

    with two_processes(tmp_path_factory.mktemp("unpatched") / "server.log", "--no-patches") as served:
        yield served
