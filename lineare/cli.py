"""`lineare COMMAND …`: one command for everything Lineare runs; each subcommand is an existing entry point.

    lineare serve --port 5006 --show            # the laboratories on this machine (what ./scripts/app runs)
    lineare host --origin demo.example.org      # a public demo: several servers behind nginx
    lineare export "/state?variant=deltanet&t=12" -o delta.gif
    lineare train --variant deltanet --out model.safetensors
    lineare --version

Every subcommand keeps its own argument parser (app.serve, deploy.host, app.export, engine.*, bench.engine),
so its options and `--help` are the module's own; only the program name shown is `lineare COMMAND`.
"""
import argparse
import contextlib
import importlib
import sys

COMMANDS = {    # name: (module whose main(argv) runs it, what it does)
    "serve": ("lineare.app.serve", "serve the laboratories on this machine (what ./scripts/app runs)"),
    "host": ("lineare.deploy.host", "host a public demo: several servers behind nginx (needs nginx)"),
    "export": ("lineare.app.export.__main__", "save a page's run as GIF, MP4, PNG, CSV or a one-file lesson"),
    "train": ("lineare.engine.train", "train a tiny model on a task and write a checkpoint"),
    "evaluate": ("lineare.engine.evaluate", "measure a checkpoint's accuracy"),
    "capacity": ("lineare.engine.capacity", "how many associations a single layer can store"),
    "bench": ("lineare.bench.engine", "time the engine's three forms and its per-token step"),
}


@contextlib.contextmanager
def named(prog):
    """The command's parser shows `prog` as its name (in usage and --help) instead of the module's `python -m …`:
    the modules build their parsers inside main(), with that name written in. Only the first such parser is
    renamed (a subcommand's parsers take their names from it), and argparse is itself again right after."""
    original = argparse.ArgumentParser.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if self.prog.startswith(("python -m ", "scripts/")):
            self.prog = prog
            argparse.ArgumentParser.__init__ = original
    argparse.ArgumentParser.__init__ = __init__
    try:
        yield
    finally:
        argparse.ArgumentParser.__init__ = original


def parser():
    from lineare import __version__

    listing = "\n".join(f"  {name:<10} {what}" for name, (_module, what) in COMMANDS.items())
    made = argparse.ArgumentParser(
        prog="lineare", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Lineare: an interactive laboratory for the linear-attention family of sequence models.",
        epilog=f"commands:\n{listing}\n\n`lineare COMMAND --help` shows a command's options.")
    made.add_argument("--version", action="version", version=f"lineare {__version__}")
    made.add_argument("command", choices=COMMANDS, metavar="COMMAND", help="one of: " + ", ".join(COMMANDS))
    made.add_argument("options", nargs=argparse.REMAINDER, help="the command's own options")
    return made


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:                                 # `lineare` alone: what it can do, not "COMMAND is required"
        parser().print_help()
        return 0
    try:
        return run(argv)
    except SystemExit as exit_:                  # argparse: --help, --version (0) or a bad option (2)
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except KeyboardInterrupt:                    # Ctrl-C while a command starts (imports) or runs
        print("\ninterrupted", file=sys.stderr)
        return 130


def run(argv):
    args = parser().parse_args(argv[:1])              # the rest is the command's, untouched
    options = argv[1:]
    module = importlib.import_module(COMMANDS[args.command][0])
    with named(f"lineare {args.command}"):
        if args.command == "serve":
            # app.serve re-runs itself as `python -m lineare.app` with the command line's arguments (for its
            # memory allocator): hand it ours as the command line, as ./scripts/app does
            sys.argv = [sys.argv[0], *options]
            return module.main()
        return module.main(options)

if __name__ == "__main__":
    sys.exit(main())
