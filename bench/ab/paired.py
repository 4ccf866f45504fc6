#!/usr/bin/env python3
"""Paired ratios of bench/ab/run.sh outputs: for each round, the new side's CPU per request
over the old side's (the two runs are adjacent in time, so a machine that speeds up or slows
down between rounds moves both); then their median, geometric mean, spread, and a 95 %
bootstrap interval of the median (5,000 resamples, fixed seed). One line per file.

    bench/ab/paired.py RUN_OUTPUT...
"""
import math
import random
import statistics
import sys


def rounds(path):
    """{round: {side: cpu_us_per_request}} from run.sh's "round case side ..." lines."""
    found = {}
    with open(path) as lines:
        for line in lines:
            fields = line.split()
            if len(fields) == 6 and fields[0].isdigit():
                found.setdefault(int(fields[0]), {})[fields[2]] = float(fields[5])
    return {r: sides for r, sides in found.items() if {"old", "new"} <= sides.keys()}


def percent(ratio):
    return f"{100 * (ratio - 1):+.1f} %"


def main(paths):
    for path in paths:
        runs = rounds(path)
        if not runs:
            print(f"{path}: no complete round")
            continue
        ratios = [sides["new"] / sides["old"] for sides in runs.values()]
        n = len(ratios)
        median = statistics.median(ratios)
        geometric = math.exp(sum(math.log(r) for r in ratios) / n)
        rng = random.Random(1)
        boots = sorted(statistics.median(rng.choices(ratios, k=n)) for _ in range(5000))
        low, high = boots[125], boots[4874]
        spread = statistics.stdev(ratios) * 100 if n > 1 else 0.0
        old = statistics.median(s["old"] for s in runs.values())
        new = statistics.median(s["new"] for s in runs.values())
        print(
            f"{path.split('/')[-1]}: {n} rounds; CPU per request, medians: old {old:.2f} µs,"
            f" new {new:.2f} µs; paired new/old median {percent(median)}, geometric mean"
            f" {percent(geometric)}, 95 % bootstrap interval of the median"
            f" [{percent(low)}, {percent(high)}], sd {spread:.1f} %"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
