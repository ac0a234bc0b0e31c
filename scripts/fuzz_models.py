"""Differential fuzzing of the exporter: random programs (aten2onnx.testing.models) exported at two
opsets each and compared with eager PyTorch in onnxruntime and aten2onnx.runtime.

    python scripts/fuzz_models.py --n 3000 --seed 1
    python scripts/fuzz_models.py --n 500 --exact     # exact=True exports, bitwise in aten2onnx.runtime
    python scripts/fuzz_models.py --n 500 --onnxruntime  # optimize="onnxruntime": its contrib ops
    python scripts/fuzz_models.py --n 1000 --quantized --emulate  # quantized programs (PT2E, torchao), also
                                                                   # in onnxruntime as CPUs without VNNI run it

Each failure is shrunk to a small program and printed as Python with the outcome; the last line is
`N models, M exported, K mismatches` (exported: at least one opset exported; mismatches: programs with
a wrong answer, an invalid model, a foreign exception, a changed model, or a hang).
"""

from __future__ import annotations

import argparse
import collections
import signal
import sys
import time
import warnings


class Hang(Exception):
    pass


def _alarm(signum, frame):  # noqa: ANN001 (signal handler)
    raise Hang()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="programs to try")
    parser.add_argument("--seed", type=int, default=0, help="the first program's seed; program i uses seed + i")
    parser.add_argument("--max-steps", type=int, default=8, help="statements per program, at most")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per program before it counts as a hang")
    parser.add_argument("--no-shrink", action="store_true", help="print failures as drawn")
    parser.add_argument("--refusals", action="store_true", help="also print why exports were refused")
    parser.add_argument("--exact", action="store_true",
                        help="export with exact=True and require aten2onnx.runtime to be bitwise equal to eager")
    parser.add_argument("--no-optimize", dest="optimize", action="store_false",
                        help="export with optimize=False (the graph as translated), for a campaign without the optimizer")
    parser.add_argument("--onnxruntime", dest="optimize", action="store_const", const="onnxruntime",
                        help="export with optimize=\"onnxruntime\" (onnxruntime's contrib ops)")
    parser.add_argument("--quantized", action="store_true",
                        help="quantized programs (aten2onnx.testing.quantized): PT2E and torchao quantizations of random "
                             "networks, held to the quantized eager model")
    parser.add_argument("--emulate", action="store_true",
                        help="with --quantized, also run onnxruntime as a CPU without VNNI (qemu-user)")
    args = parser.parse_args()

    warnings.simplefilter("ignore")
    if args.quantized:
        return quantized_campaign(args)
    from aten2onnx.testing.generation import RandomDraw, generate
    from aten2onnx.testing.models import examine, shrink

    signal.signal(signal.SIGALRM, _alarm)
    statuses: collections.Counter = collections.Counter()
    exported = mismatches = 0
    start = time.time()
    for i in range(args.n):
        program = generate(RandomDraw(args.seed + i), max_steps=args.max_steps)
        signal.alarm(args.timeout)
        try:
            outcomes = examine(program, exact=args.exact, optimize=args.optimize)
        except Hang:
            outcomes = None
        finally:
            signal.alarm(0)
        if outcomes is None:
            mismatches += 1
            statuses["hang"] += 1
            print(f"\n=== program {args.seed + i}: hang (over {args.timeout} s)\n{program.describe()}", flush=True)
            continue
        statuses.update(o.status for o in outcomes)
        if args.refusals:
            for o in outcomes:
                if o.status == "refused":
                    print(f"--- program {args.seed + i} refused at opset {o.opset}: {o.detail}")
        exported += any(o.status != "refused" for o in outcomes)
        bugs = [o for o in outcomes if o.bug]
        if bugs:
            mismatches += 1
            bug = bugs[0]
            if not args.no_shrink:
                program = shrink(program, lambda p: any(o.bug and o.status == bug.status
                                                        for o in examine(p, opsets=[bug.opset], exact=args.exact)))
                bug = next((o for o in examine(program, opsets=[bug.opset], exact=args.exact) if o.bug), bug)
            print(f"\n=== program {args.seed + i}: {bug.status} at opset {bug.opset}: {bug.detail}\n"
                  f"{program.describe()}", flush=True)
        if (i + 1) % 50 == 0:
            print(f"[{i + 1}/{args.n}] {time.time() - start:.0f} s, {dict(statuses)}", file=sys.stderr, flush=True)
    print(f"outcomes per export: {dict(statuses)}; {time.time() - start:.0f} s")
    print(f"{args.n} models, {exported} exported, {mismatches} mismatches")
    return 1 if mismatches else 0


def quantized_campaign(args: argparse.Namespace) -> int:
    """--quantized: programs in batches of 25 (one emulated onnxruntime process per batch)."""
    from aten2onnx.testing.quantized import examine_quantized, generate_quantized

    statuses: collections.Counter = collections.Counter()
    exported = mismatches = 0
    start = time.time()
    for first in range(0, args.n, 25):
        seeds = range(args.seed + first, args.seed + min(first + 25, args.n))
        programs = [generate_quantized(seed, max_steps=args.max_steps) for seed in seeds]
        for program, outcome in zip(programs, examine_quantized(programs, emulate=args.emulate)):
            statuses[outcome.status] += 1
            exported += outcome.status in ("match", "mismatch")
            if args.refusals and outcome.status in ("refused", "skipped"):
                print(f"--- program {program.seed} {outcome.status}: {outcome.detail}")
            if outcome.bug:
                mismatches += 1
                print(f"\n=== program {program.seed}: {outcome.status}: {outcome.detail}\n{program.describe()}",
                      flush=True)
        print(f"[{min(first + 25, args.n)}/{args.n}] {time.time() - start:.0f} s, {dict(statuses)}", file=sys.stderr,
              flush=True)
    print(f"outcomes: {dict(statuses)}; {time.time() - start:.0f} s")
    print(f"{args.n} models, {exported} exported, {mismatches} mismatches")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
