"""Prints the Markdown tables of BENCHMARKS.md from bench/results/*.csv, and the targets.

Usage: python3 bench/summarize.py [bench/results]
"""

import csv
import sys
from pathlib import Path


def rows(path):
    return list(csv.DictReader(path.open())) if path.exists() else []


def f(x):
    return float(x)


def fmt(x, digits=1):
    return f"{x:,.{digits}f}"


def main():
    results = Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results")
    load = rows(results / "load.csv")
    offsets = rows(results / "offsets.csv")
    raw = rows(results / "raw.csv")

    print(f"### Throughput ({load[0]['connections'] if load else '?'} connections)\n")
    print("| backend | case | offset | req/s (spread) | p50 ms (spread) | p99 ms (spread) "
          "| items read | store queries | index calls | errors |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in load:
        print(f"| {r['backend']} | {r['case']} | {int(r['offset']):,} "
              f"| {fmt(f(r['req_s']))} (±{r['req_s_spread_pct']}%) "
              f"| {fmt(f(r['p50_ms']), 2)} (±{r['p50_spread_pct']}%) "
              f"| {fmt(f(r['p99_ms']), 2)} (±{r['p99_spread_pct']}%) "
              f"| {r['items_read']} | {r['store_queries']} | {r['index_calls']} | {r['errors']} |")

    if raw:
        print("\n### Raw backends (same concurrency)\n")
        print("| backend | operation | req/s (spread) | p50 ms | p99 ms | items per call |")
        print("|---|---|--:|--:|--:|--:|")
        for r in raw:
            print(f"| {r['backend']} | {r['operation']} | {fmt(f(r['req_s']))} (±{r['req_s_spread_pct']}%) "
                  f"| {fmt(f(r['p50_ms']), 2)} | {fmt(f(r['p99_ms']), 2)} | {r['items']} |")
        # "Query Limit 21 (first)", "key_at, then Query Limit 21 (offset, pinned)": by the
        # name in parentheses.
        measured = {r["operation"].rsplit("(", 1)[-1].rstrip(")"): f(r["req_s"])
                    for r in raw if r["backend"] == "dynamodb-local"}
        print("\n### Server against the raw backends (DynamoDB Local + Redis)\n")
        print("Raw equivalent of a page: for the first page, the bare client's `Query` rate; for the "
              "offset page, the bare client's rate for the same two calls (the index's `key_at` in Redis, then "
              "the `Query` below the key it found); for the two-query pages, the first page's `Query` "
              "rate divided by two.\n")
        print("| cores | case | server req/s | raw equivalent req/s | ratio |")
        print("|---|---|--:|--:|--:|")
        for r in load:
            suffix = {"dynamodb": "", "dynamodb-pinned": ", pinned"}.get(r["backend"])
            if suffix is None:
                continue
            if r["case"] == "offset":
                equivalent = measured.get(f"offset{suffix}")
            else:
                first = measured.get(f"first{suffix}")
                equivalent = first / int(r["store_queries"]) if first else None
            if equivalent is None:
                continue
            cores = "separate" if suffix else "shared"
            print(f"| {cores} | {r['case']} | {fmt(f(r['req_s']))} | {fmt(equivalent)} | {f(r['req_s']) / equivalent:.2f} |")

    if offsets:
        print("\n### Latency against offset (one connection, page of 20)\n")
        series = {}
        for r in offsets:
            series.setdefault((r["backend"], r["mode"]), {})[int(r["offset"])] = r
        keys = sorted(series)
        print("| offset | " + " | ".join(f"{b} {m}: p50 ms (spread) / items read" for b, m in keys) + " |")
        print("|--:|" + "--:|" * len(keys))
        for offset in sorted({int(r["offset"]) for r in offsets}):
            cells = []
            for k in keys:
                r = series[k].get(offset)
                cells.append(f"{fmt(f(r['p50_ms']), 2)} (±{r['p50_spread_pct']}%) / {int(r['items_read']):,}" if r else "")
            print(f"| {offset:,} | " + " | ".join(cells) + " |")
        print("\n### Targets\n")
        for k in keys:
            s = series[k]
            lo, hi = min(s), max(s)
            ratio = f(s[hi]["p50_ms"]) / f(s[lo]["p50_ms"])
            print(f"- {k[0]} {k[1]}: p50 at offset {hi:,} / p50 at offset {lo:,} = {ratio:.2f}")


main()
