"""`python -m lineare.engine COMMAND ...`: the engine's command-line jobs, one module each."""
import importlib
import sys

COMMANDS = {
    "bench": ("lineare.bench.engine", "time the three forms and the per-token step (bench/engine.py)"),
    "capacity": ("lineare.engine.capacity", "how many associations a single layer can store"),
    "train": ("lineare.engine.train", "train a tiny model on a task and write a checkpoint"),
    "evaluate": ("lineare.engine.evaluate", "measure a checkpoint's accuracy"),
}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        print("usage: python -m lineare.engine COMMAND [options]\n\ncommands:")
        for name, (_, what) in COMMANDS.items():
            print(f"  {name:<10} {what}")
        return 0 if argv[:1] in ([], ["-h"], ["--help"]) else 2
    module = importlib.import_module(COMMANDS[argv[0]][0])
    return module.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
