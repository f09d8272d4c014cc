"""The `lineare` command: each subcommand's --help, an export for real, a server answering a page; and the same
from `pip install .` into a fresh virtual environment, run outside the source tree."""
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from PIL import Image

from app.devtools import ROOT, running_server
from lineare import cli

COMMANDS = ["serve", "host", "export", "train", "evaluate", "capacity", "bench"]


@pytest.mark.parametrize("command", COMMANDS)
def test_each_subcommand_has_its_help_under_its_name(command, capsys):
    assert cli.main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: lineare {command} ") and "python -m" not in out.split("\n")[0]


def test_the_command_lists_its_subcommands_and_its_version(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {command} " in out for command in COMMANDS)
    assert cli.main(["--version"]) == 0 and capsys.readouterr().out.startswith("lineare 0.")
    assert cli.main(["nonsense"]) == 2 and "invalid choice" in capsys.readouterr().err
    assert cli.main(["train", "--no-such-option"]) == 2


def test_lineare_export_writes_the_file_and_says_a_bad_value_on_standard_error(tmp_path, capsys):
    png = tmp_path / "step.png"
    assert cli.main(["export", "/state?variant=deltanet&t=2&lang=it", "-o", str(png), "--size", "small"]) == 0
    assert Image.open(png).size == (960, 540)
    table = tmp_path / "bills.csv"
    assert cli.main(["export", "/state?variant=../../etc/passwd", "-f", "csv", "-o", str(table)]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "../../etc/passwd" in err and "linear is used instead" in err
    refused = tmp_path / "refused.csv"
    assert cli.main(["export", "/state?variant=../../etc/passwd", "--strict", "-f", "csv", "-o", str(refused)]) == 2
    assert not refused.exists() and "refused:" in capsys.readouterr().err


def _answers(base, path):
    with urllib.request.urlopen(base + path, timeout=60) as response:
        return response.status, response.read().decode("utf-8")


def test_lineare_serve_answers_a_page():
    with running_server(shell_command="python -m lineare serve --port {port} --address 127.0.0.1") as base:
        status, page = _answers(base, "/state?lang=it")
    assert status == 200 and "<title>Lineare · La memoria si riempie</title>" in page


# ------------------------------------------------------------------------------ installed, outside the tree

@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh virtual environment with `pip install .` of a clean copy of the tree (no build/ left over).
    Its dependencies come from this environment (a .pth line): resolving them is pip's work, not ours,
    and takes minutes; what is checked is what our package ships and how it finds it."""
    where = tmp_path_factory.mktemp("installed")
    source, venv = where / "source", where / "venv"
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "*.egg-info", "__pycache__", ".host", "screenshots", "*.mo", ".pytest_cache"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    ours = [p for p in sys.path if p.endswith("site-packages")]
    (site / "dependencies.pth").write_text("\n".join(ours) + "\n")
    done = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", str(source)],
                          capture_output=True, text=True, timeout=600, cwd=where)
    assert done.returncode == 0, done.stderr[-3000:]
    shutil.rmtree(source)                                   # nothing may be read from the tree any more
    return venv, where


def run_installed(installed, *args, timeout=120):
    venv, where = installed
    command = venv / ("Scripts/lineare.exe" if sys.platform == "win32" else "bin/lineare")
    return subprocess.run([command, *args], capture_output=True, text=True, timeout=timeout, cwd=where)


def test_the_installed_command_runs_every_help_outside_the_tree(installed):
    venv, where = installed
    located = subprocess.run([venv / "bin/python", "-c", "import app, engine, lineare; print(app.__file__)"],
                             capture_output=True, text=True, cwd=where, check=True).stdout
    assert str(venv) in located                              # the installed package, not a checkout's
    run_dir = subprocess.run([venv / "bin/python", "-c", "from deploy.host import parse; print(parse([]).run_dir)"],
                             capture_output=True, text=True, cwd=where, check=True).stdout.strip()
    assert run_dir == str(where / ".host")                  # the host's files: here, not in site-packages
    assert run_installed(installed, "--version").stdout.startswith("lineare 0.")
    for command in COMMANDS:
        done = run_installed(installed, command, "--help")
        assert done.returncode == 0 and done.stdout.startswith(f"usage: lineare {command}"), done.stderr[-2000:]


def test_the_installed_command_exports_in_italian_and_serves_every_page(installed):
    venv, where = installed
    done = run_installed(installed, "export", "/state?variant=deltanet&t=3&lang=it", "-f", "csv", "-o", "s.csv")
    assert done.returncode == 0, done.stderr[-2000:]
    text = (where / "s.csv").read_text()
    assert text.startswith("# Lineare · La memoria si riempie · DeltaNet")      # the Italian catalog was found
    done = run_installed(installed, "export", "/state?mode=trained&variant=deltanet&t=3", "-f", "csv", "-o", "t.csv")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in (where / "t.csv").read_text().splitlines() if not line.startswith("#")]
    assert len(rows) > 20                                  # the shipped checkpoint was found and run, token by token
    command = f"{venv}/bin/lineare serve --port {{port}} --address 127.0.0.1"
    with running_server(shell_command=f"cd {where} && {command}") as base:
        assert "La memoria si riempie" in _answers(base, "/state?lang=it")[1]
        assert _answers(base, "/notebooks/parallel_equals_recurrent.ipynb")[0] == 200   # the notebook it links
