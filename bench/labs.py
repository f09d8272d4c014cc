"""What a laboratory costs to appear in a notebook cell, in CPU seconds (wall time depends on the machine's load).

    .venv/bin/python -m lineare.bench.labs            # every laboratory
    .venv/bin/python -m lineare.bench.labs state      # one

Each laboratory is built (`lineare.labs`) and rendered as a notebook renders it (`_repr_mimebundle_`, with
`pn.extension(inline=True)`) in this process, twice: the first time pays the imports and the caches a kernel
fills once (PyTorch, the engine, the page's modules), the second is what every later cell costs.
"""
import sys
import time


def cpu(work):
    started = time.process_time()
    result = work()
    return time.process_time() - started, result


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    spent, _ = cpu(lambda: __import__("panel").extension(inline=True))
    from lineare import labs

    print(f"pn.extension(inline=True) and imports: {spent:.2f} s of CPU")
    slugs = argv or [slug.replace("_", "-") for slug in ("softmax", "two_bills", "state", "transition",
                                                           "memory_fails", "parallel_recurrent", "architectures")]
    print(f"{'laboratory':<20}{'built':>8}{'shown':>8}{'again':>8}   (CPU seconds)")
    for slug in slugs:
        built, lab = cpu(lambda: labs.lab(slug))
        shown, _ = cpu(lab._repr_mimebundle_)
        again, _ = cpu(lambda: labs.lab(slug)._repr_mimebundle_())
        print(f"{slug:<20}{built:>8.2f}{shown:>8.2f}{again:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
