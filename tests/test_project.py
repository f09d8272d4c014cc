"""The project's own files stay consistent: environment.yml lists what pyproject.toml asks for."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"torch": "pytorch"}          # the same package under conda-forge's name


def names(requirements):
    return {re.split(r"[<>=!~ \[]", r, maxsplit=1)[0].strip().lower() for r in requirements}


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = names(project["dependencies"]).union(*map(names, project["optional-dependencies"].values()))
    wanted = {CONDA_NAMES.get(n, n) for n in wanted}
    listed, in_dependencies = set(), False
    for line in (ROOT / "environment.yml").read_text().splitlines():
        if not line.startswith(" "):
            in_dependencies = line.startswith("dependencies:")
        m = in_dependencies and re.match(r"^\s+-\s+([A-Za-z0-9_.-]+)\s*(?:[<>=!]|$)", line)
        if m and m.group(1) not in ("pip", "python"):
            listed.add(m.group(1).lower())
    assert wanted == listed, f"only in pyproject: {wanted - listed}; only in environment.yml: {listed - wanted}"


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "./scripts/test" in readme and "./scripts/test" in ci


def test_the_test_command_lints_before_it_tests():
    script = (ROOT / "scripts" / "test").read_text()
    assert script.index(".venv/bin/ruff check .") < script.index("-m pytest")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]
    assert config["line-length"] == 120 and "E501" in config["lint"]["select"]


def test_the_browser_code_is_javascript_files_that_parse():
    """The pages' JavaScript lives in app/js/ (ES modules, callback bodies, page scripts), each parsed by Node.js
    as what it is; no Python module outside the lesson cards keeps a JSComponent's module in a string."""
    import shutil
    import subprocess

    node = shutil.which("node")
    assert node, "Node.js (the machine's `node`) parses the browser code"
    result = subprocess.run([node, "--no-warnings", "--experimental-vm-modules", str(ROOT / "tests" / "parse_js.cjs"),
                             str(ROOT / "app" / "js")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert int(result.stdout.split()[-4]) == len(list((ROOT / "app" / "js").glob("*/*.js"))) >= 15
    in_strings = [str(path.relative_to(ROOT)) for path in (ROOT / "app").rglob("*.py")
                  if re.search(r'_esm = """|code="""|<script>\n', path.read_text(encoding="utf-8"))]
    assert in_strings == ["app/components/lesson.py"], in_strings


def test_the_lock_pins_a_tested_set_within_the_declared_ranges():
    """requirements.lock (what ./scripts/setup installs) pins Panel, Bokeh and param to a set the server's patches
    were tested on, inside pyproject.toml's ranges, and PyTorch to the CPU 2.13.0 (never a newer one)."""
    from packaging.requirements import Requirement

    from app.server.patches import LIBRARIES, TESTED

    pinned = dict(re.findall(r"^([a-z0-9_.-]+)==(\S+)$", (ROOT / "requirements.lock").read_text(), re.M))
    assert tuple(pinned[name] for name in LIBRARIES) in TESTED and pinned["torch"] == "2.13.0"
    declared = {Requirement(r).name: Requirement(r) for r in
                tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    for name in (*LIBRARIES, "torch"):
        assert declared[name].specifier.contains(pinned[name]), (name, pinned[name], declared[name])
    for name in LIBRARIES:                     # an upper bound below the next minor release, which no patch knows
        assert any(spec.operator == "<" for spec in declared[name].specifier), declared[name]
