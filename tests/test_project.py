"""The project's own files stay consistent: environment.yml lists what pyproject.toml asks for."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"torch": "pytorch", "redis": "redis-py"}   # the same packages under conda-forge's names


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
