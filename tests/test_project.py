"""The project's own files stay consistent: environment.yml lists what pyproject.toml asks for."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"torch": "pytorch", "playwright": "playwright-python", "build": "python-build",   # conda-forge's
               "redis": "redis-py"}


def names(requirements):
    found = {re.split(r"[<>=!~ \[]", r, maxsplit=1)[0].strip().lower() for r in requirements}
    return {CONDA_NAMES.get(n, n) for n in found} - {"lineare"}         # dev's lineare[…]: the other extras


def listed(path):
    """The packages an environment file asks for (conda-forge's and pip's), without python and pip."""
    found, in_dependencies = set(), False
    for line in path.read_text().splitlines():
        if not line.startswith(" "):
            in_dependencies = line.startswith("dependencies:")
        m = in_dependencies and re.match(r"^\s+-\s+([A-Za-z0-9_.-]+)\s*(?:[<>=!#]|$)", line)
        if m and m.group(1) not in ("pip", "python", "."):
            found.add(m.group(1).lower())
    return found


def test_the_environment_files_match_pyproject():
    """environment.yml: the app and the notebook extra (what a user needs); environment-dev.yml: everything."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    users = names(project["dependencies"]) | names(extras["notebook"])
    assert listed(ROOT / "environment.yml") == users
    assert listed(ROOT / "environment-dev.yml") == users.union(*map(names, extras.values()))
    assert "-e ." not in (ROOT / "environment.yml").read_text()        # a user's environment outlives the clone


def test_the_app_script_installs_the_app_alone_and_the_tests_their_extra():
    assert "./scripts/setup app\n" in (ROOT / "scripts" / "app").read_text()
    assert "./scripts/setup\n" in (ROOT / "scripts" / "test").read_text()
    setup = (ROOT / "scripts" / "setup").read_text()
    assert 'app) SPEC="." ;;' in setup and 'test) SPEC=".[test]" ;;' in setup and "-qq" in setup


def test_one_version_one_license():
    import lineare

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in config["project"] and config["project"]["dynamic"] == ["version"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "lineare.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", lineare.__version__)
    assert config["project"]["license"] == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT License")


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
    as what it is; no Python module keeps a JSComponent's module, a callback or a page script in a string."""
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
    assert in_strings == [], in_strings


def test_the_lock_pins_a_tested_set_within_the_declared_ranges():
    """requirements.lock (what ./scripts/setup installs) pins Panel, Bokeh and param to a set the server's patches
    were tested on, inside pyproject.toml's ranges, and PyTorch to the CPU 2.13.0 (never a newer one)."""
    from packaging.requirements import Requirement

    from lineare.app.server.patches import LIBRARIES, TESTED

    pinned = dict(re.findall(r"^([a-z0-9_.-]+)==(\S+)$", (ROOT / "requirements.lock").read_text(), re.M))
    assert tuple(pinned[name] for name in LIBRARIES) in TESTED and pinned["torch"] == "2.13.0"
    declared = {Requirement(r).name: Requirement(r) for r in
                tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    for name in (*LIBRARIES, "torch"):
        assert declared[name].specifier.contains(pinned[name]), (name, pinned[name], declared[name])
    for name in LIBRARIES:                     # an upper bound below the next minor release, which no patch knows
        assert any(spec.operator == "<" for spec in declared[name].specifier), declared[name]


OLD_NAMES = ("app", "engine", "bench", "deploy")          # the checkout's folders, installed as lineare.<name>


def test_the_code_imports_its_packages_by_their_installed_names():
    """Every import of our code says lineare.app, lineare.engine, … (a module imported both as app.x and as
    lineare.app.x would be two modules with two states), and pyproject.toml installs every package."""
    import ast

    wrong = []
    for path in ROOT.rglob("*.py"):
        if {".venv", "build", ".git"} & set(path.relative_to(ROOT).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            wrong += [f"{path.relative_to(ROOT)}:{node.lineno} {name}" for name in names
                      if name.split(".")[0] in OLD_NAMES]
    assert not wrong, wrong
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {"lineare." + ".".join(init.parent.relative_to(ROOT).parts)
             for name in OLD_NAMES for init in (ROOT / name).rglob("__init__.py")}
    assert found | {"lineare"} == set(setuptools["packages"])
    assert {setuptools["package-dir"][f"lineare.{name}"] for name in OLD_NAMES} == set(OLD_NAMES)
