"""The curves "Parallel = recurrent" measures, for every fixed-state model: chunked against recurrent at the
longest length both reach, and against parallel at the parallel form's longest (d = 16, one head, the page's setting).

    .venv/bin/python -m lineare.bench.forms_page
"""
from lineare.app.dashboards.parallel_recurrent.model import measure_costs
from lineare.app.variants import REGISTRY


def main():
    for v in [n for n, r in REGISTRY.items() if r.fixed_state]:
        c = measure_costs(v, 64)
        rec, par, chk = (dict(c.times.get(f, [])) for f in ("recurrent", "parallel", "chunked"))
        common = max(set(rec) & set(chk))
        longest = max(chk)
        print(f"{v:15s} T={common:5d} recurrent {rec[common]*1e3:8.1f} ms  chunked {chk[common]*1e3:7.1f} ms  "
              f"ratio {rec[common]/chk[common]:5.1f}x | parallel at T={max(par)} {par[max(par)]*1e3:7.1f} ms "
              f"vs chunked {chk.get(max(par), float('nan'))*1e3:6.1f} | chunked reaches {longest}")


if __name__ == "__main__":
    main()
