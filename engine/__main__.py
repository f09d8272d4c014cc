"""`python -m engine COMMAND ...`: the engine's command-line jobs, one module each."""
import importlib
import sys

COMMANDS = {
    "bench": ("bench.engine", "time the three forms and the per-token step (bench/engine.py)"),
    "capacity": ("engine.capacity", "how many associations a single layer can store"),
    "train": ("engine.train", "train a tiny model on a task and write a checkpoint"),
    "evaluate": ("engine.evaluate", "measure a checkpoint's accuracy"),
}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        print("usage: python -m engine COMMAND [options]\n\ncommands:")
        for name, (_, what) in COMMANDS.items():
            print(f"  {name:<10} {what}")
        return 0 if argv[:1] in ([], ["-h"], ["--help"]) else 2
    module = importlib.import_module(COMMANDS[argv[0]][0])
    return module.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
