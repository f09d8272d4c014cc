"""The `lineare` command: each subcommand's --help, an export for real, a server answering a page; and the same
from `pip install .` into a fresh virtual environment, run outside the source tree."""
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from PIL import Image

from lineare.app.devtools import ROOT, running_server
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


def test_lineare_export_shows_progress_on_a_terminal_and_writes_a_plain_csv(tmp_path, capsys, monkeypatch):
    import io

    import pandas as pd

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    gif = tmp_path / "softmax.gif"                   # the first lesson's page exports too
    assert cli.main(["export", "/softmax?attention=linear&lang=it", "-o", str(gif)]) == 0
    assert "/16 [" in terminal.getvalue() and "%|" in terminal.getvalue()      # 8 frames drawn, 8 encoded
    assert Image.open(gif).n_frames == 8
    monkeypatch.undo()
    table = tmp_path / "bills.csv"
    assert cli.main(["export", "/two-bills?tokens=16&heads=1&dim=16", "--table", "tokens", "-o", str(table)]) == 0
    read = pd.read_csv(table)                        # as it is: no comment lines
    assert len(read) == 16 and list(read.columns)[:2] == ["token", "tokens_in_memory"]
    about = (tmp_path / "bills.about.txt").read_text()
    assert about.startswith("Lineare · Two bills · Generating") and "/two-bills?" in about
    assert "bills.about.txt" in capsys.readouterr().out


def test_lineare_alone_says_what_it_can_do(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: lineare") and all(f"  {command} " in out for command in COMMANDS)
    assert "required" not in out


def _parser_of(command, monkeypatch):
    """The argparse parser a command builds (its parse_args is stopped before anything runs)."""
    import argparse

    made, parse = [], argparse.ArgumentParser.parse_args

    def stop(self, args=None, namespace=None):
        if self.prog == "lineare":                   # the command's name, read by `lineare` itself
            return parse(self, args, namespace)
        made.append(self)
        raise SystemExit(0)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", stop)
    monkeypatch.setattr(sys, "argv", ["lineare"])
    cli.main([command])
    monkeypatch.undo()
    return made[0]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_has_help_and_shows_its_default(command, monkeypatch):
    parser = _parser_of(command, monkeypatch)
    text = " ".join(parser.format_help().split())
    assert "README" not in text and "python -m" not in text.split("usage:")[1].split("]")[0]
    for action in parser._actions:
        if action.option_strings and action.dest != "help":
            assert action.help, f"lineare {command} {action.option_strings[0]}: no help"
            if action.default not in (None, False, []) and action.dest != "secret_key":
                helped = " ".join(parser._get_formatter()._expand_help(action).split())
                assert "default" in helped, f"lineare {command} {action.option_strings[0]}: its default is not said"


BAD = {        # command: argument lists that are wrong, each refused with a message and status 2, no traceback
    "serve": [["--port", "99999"], ["--port", "http"], ["--num-procs", "-1"], ["--idle-minutes", "0"],
              ["--max-waiting-builds", "0"]],
    "host": [["--port", "0"], ["--workers", "0"], ["--max-sessions", "100000"], ["--max-url", "8 gigabytes"],
             ["--first-server-port", "70000"], ["--rate", "fast"]],
    "export": [["/state", "-o", "{tmp}/x.gif", "--fps", "nan"], ["/state", "-o", "{tmp}/no/such/folder/x.gif"],
               ["/state", "-o", "{tmp}"], ["/state", "-o", "{tmp}/x.gif", "--size", "huge"],
               ["/nope", "-o", "{tmp}/x.gif"], ["/state", "-o", "{tmp}/x.bmp"],
               ["/state", "-o", "{tmp}/x.csv", "--table", "nope"], ["/state?t=999", "--strict", "-o", "{tmp}/x.png"]],
    "train": [["--variant", "deltanet", "--out", "{tmp}/x.safetensors", "--seq-len", "-3"],
              ["--variant", "nope", "--out", "{tmp}/x.safetensors"], ["--variant", "deltanet", "--out", "{tmp}/x.pt"],
              ["--variant", "deltanet", "--out", "{tmp}/x.safetensors", "--lr", "nan"],
              ["--variant", "deltanet", "--out", "{tmp}/x.safetensors", "--kv-pairs", "40", "--seq-len", "16"],
              ["--variant", "deltanet", "--out", "{tmp}/x.safetensors", "--device", "cuda:7"],
              ["--variant", "deltanet", "--out", "{tmp}/a-file/x.safetensors"],
              ["--variant", "deltanet", "--out", "{tmp}/x.safetensors", "--warmup", "2"]],
    "evaluate": [["--checkpoint", "nope"], ["--checkpoint", "deltanet", "--examples", "0"],
                 ["--checkpoint", "deltanet", "--batch-size", "0"], ["--checkpoint", "deltanet", "--threads", "0"],
                 ["--checkpoint", "deltanet", "--kv-pairs", "x"],
                 ["--checkpoint", "deltanet", "--seq-len", "8", "--kv-pairs", "16"]],
    "capacity": [["--rule", "sum", "--d-k", "0", "--pairs", "4"], ["--rule", "sum", "--d-k", "4", "--pairs", "a,b"],
                 ["--rule", "sum", "--d-k", "4", "--pairs", "8", "--keys", "orthogonal"]],
    "bench": [["--variants", "nope"], ["--lengths", "x"], ["--chunk-size", "0"], ["--threads", "-1"]],
}


@pytest.mark.parametrize("command", BAD)
def test_a_bad_value_is_one_message_and_status_2_never_a_traceback(command, tmp_path, monkeypatch, capsys):
    import os

    import lineare.deploy.host

    def started(*args, **kwargs):
        raise AssertionError(f"lineare {command} started with a bad value")
    monkeypatch.setattr(os, "execve", started)                 # serve: what it runs once its options are good
    monkeypatch.setattr(lineare.deploy.host, "Host", started)
    (tmp_path / "a-file").write_text("not a folder")
    for bad in BAD[command]:
        argv = [command, *(arg.replace("{tmp}", str(tmp_path)) for arg in bad)]
        monkeypatch.setattr(sys, "argv", ["lineare", *argv])
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "Traceback" not in err and err.strip(), argv
        assert any(word in err for word in ("error:", "refused:")), (argv, err)
    assert not list(tmp_path.glob("x.*"))                         # nothing written


def test_a_checkpoint_is_named_and_a_moved_one_is_refused_with_what_to_do(tmp_path, capsys):
    assert cli.main(["evaluate", "--checkpoint", "deltanet", "--examples", "4", "--json"]) == 0
    assert '"variant": "deltanet"' in capsys.readouterr().out
    assert cli.main(["evaluate", "--checkpoint", "assets/checkpoints/missing.safetensors"]) == 2
    assert "give its name alone: deltanet" in capsys.readouterr().err
    moved = tmp_path / "moved"
    moved.mkdir()
    for suffix in (".safetensors", ".json"):
        shutil.copy(ROOT / "assets" / "checkpoints" / f"gla{suffix}", moved)
    assert cli.main(["evaluate", "--checkpoint", str(moved / "gla.safetensors")]) == 2
    err = capsys.readouterr().err
    assert "is not listed in" in err and "(there is none)" in err and "copy the MANIFEST.json" in err
    shutil.copy(ROOT / "assets" / "checkpoints" / "MANIFEST.json", moved)        # what the message says to do
    assert cli.main(["evaluate", "--checkpoint", str(moved / "gla.safetensors"), "--examples", "4"]) == 0


def test_ctrl_c_in_train_writes_the_last_validated_model_and_says_where(tmp_path):
    import signal

    out = tmp_path / "run" / "d.safetensors"
    training = subprocess.Popen(
        [sys.executable, "-m", "lineare", "train", "--variant", "deltanet", "--d-model", "16", "--seq-len", "16",
         "--kv-pairs", "2", "--vocab-size", "32", "--train-examples", "200", "--val-examples", "20",
         "--steps", "1000000", "--eval-every", "3", "--target-accuracy", "1", "--out", str(out)],
        stderr=subprocess.PIPE, cwd=tmp_path)
    said = b""
    while b"val_acc" not in said:                     # the progress bar shows the first validation
        chunk = training.stderr.read1(4096)
        assert chunk, said.decode()[-2000:]
        said += chunk
    training.send_signal(signal.SIGINT)
    said += training.stderr.read()
    assert training.wait(timeout=60) == 130
    said = said.decode()
    assert "Traceback" not in said and f"to {out}" in said and "the last validated" in said
    from lineare.engine import checkpoint
    model, sidecar = checkpoint.load(out)
    assert sidecar["steps"] % 3 == 0 and sidecar["interrupted_at_step"] >= sidecar["steps"]


def _answers(base, path):
    with urllib.request.urlopen(base + path, timeout=60) as response:
        return response.status, response.read().decode("utf-8")


def test_lineare_serve_answers_a_page():
    with running_server(shell_command="python -m lineare serve --port {port} --address 127.0.0.1") as base:
        status, page = _answers(base, "/state?lang=it")
    assert status == 200 and "<title>Lineare · La memoria si riempie</title>" in page


# ------------------------------------------------------------------------------ installed, outside the tree

USERS_APP = 'NAME = "the user\'s own app.py"\n'          # what a Panel user keeps beside a notebook


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel built from a clean copy of the tree (not an editable install), installed into a fresh virtual
    environment, used from a folder that holds the user's own app.py and engine.py. Its dependencies come from
    this environment (a .pth line): resolving them is pip's work, not ours, and takes minutes; what is checked is
    what our wheel ships, under which names, and how it finds its files."""
    where = tmp_path_factory.mktemp("installed")
    source, venv, work = where / "source", where / "venv", where / "work"
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".host", "screenshots", "*.mo",
        ".pytest_cache"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            "-w", str(where / "dist"), str(source)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = next((where / "dist").glob("lineare-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    ours = [p for p in sys.path if p.endswith("site-packages")]
    (site / "dependencies.pth").write_text("\n".join(ours) + "\n")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                           str(wheel)], capture_output=True, text=True, timeout=600, cwd=where)
    assert done.returncode == 0, done.stderr[-3000:]
    shutil.rmtree(source)                                   # nothing may be read from the tree any more
    work.mkdir()
    (work / "app.py").write_text(USERS_APP)
    (work / "engine.py").write_text('NAME = "the user\'s own engine.py"\n')
    return venv, work, wheel


def run_installed(installed, *args, timeout=120):
    venv, work, _wheel = installed
    command = venv / ("Scripts/lineare.exe" if sys.platform == "win32" else "bin/lineare")
    return subprocess.run([command, *args], capture_output=True, text=True, timeout=timeout, cwd=work)


def python_installed(installed, code, timeout=300):
    venv, work, _wheel = installed
    done = subprocess.run([venv / "bin/python", "-c", code], capture_output=True, text=True, cwd=work,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_wheel_owns_one_top_level_name(installed):
    import zipfile

    _venv, _work, wheel = installed
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert {t for t in top if not t.startswith("lineare-")} == {"lineare"}, top       # besides its .dist-info/.data
    assert "lineare/app/pages/state.py" in names and "lineare/deploy/nginx.conf" in names
    assert any(name.endswith("share/lineare/assets/checkpoints/deltanet.safetensors") for name in names)


def test_the_installed_package_works_beside_a_users_app_and_engine(installed):
    venv, work, _wheel = installed
    said = python_installed(installed, """
import importlib
from lineare import labs
from lineare.engine.ops import forward
import lineare.app, torch
app, engine = importlib.import_module('app'), importlib.import_module('engine')   # the user's own files
print(app.NAME, '|', engine.NAME, '|', lineare.app.__file__)
q = k = v = torch.randn(1, 5, 1, 4)
o, state = forward('linear', q, k, v, form='chunked')
lab = labs.memory_fails(rule='delta', d_k=16, lang='it')
print(lab.export('capacity.csv'), tuple(o.shape), tuple(state.shape))
""")
    assert "the user's own app.py | the user's own engine.py" in said and str(venv) in said
    assert "(1, 5, 1, 4) (1, 1, 4, 4)" in said and (work / "capacity.csv").read_text().count("\n") > 5
    assert "Dove la memoria" in (work / "capacity.about.txt").read_text()        # the Italian catalog, installed


def test_the_installed_command_runs_every_help_outside_the_tree(installed):
    venv, work, _wheel = installed
    run_dir = python_installed(installed, "from lineare.deploy.host import parse; print(parse([]).run_dir)")
    assert run_dir.strip() == str(work / ".host")           # the host's files: here, not in site-packages
    assert run_installed(installed, "--version").stdout.startswith("lineare 0.")
    for command in COMMANDS:
        done = run_installed(installed, command, "--help")
        assert done.returncode == 0 and done.stdout.startswith(f"usage: lineare {command}"), done.stderr[-2000:]
    done = run_installed(installed, "evaluate", "--checkpoint", "deltanet", "--examples", "4")
    assert done.returncode == 0 and done.stdout.startswith("deltanet: accuracy"), done.stderr[-2000:]


def test_the_installed_command_exports_in_italian_and_serves_every_page(installed):
    venv, where, _wheel = installed
    done = run_installed(installed, "export", "/state?variant=deltanet&t=3&lang=it", "-f", "csv", "-o", "s.csv")
    assert done.returncode == 0, done.stderr[-2000:]
    text = (where / "s.about.txt").read_text()
    assert text.startswith("Lineare · La memoria si riempie · DeltaNet")      # the Italian catalog was found
    done = run_installed(installed, "export", "/state?mode=trained&variant=deltanet&t=3", "-f", "csv", "-o", "t.csv")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = (where / "t.csv").read_text().splitlines()
    assert len(rows) > 20                                  # the shipped checkpoint was found and run, token by token
    command = f"{venv}/bin/lineare serve --port {{port}} --address 127.0.0.1"
    with running_server(shell_command=f"cd {where} && {command}") as base:
        assert "La memoria si riempie" in _answers(base, "/state?lang=it")[1]
        assert _answers(base, "/notebooks/parallel_equals_recurrent.ipynb")[0] == 200   # the notebook it links
