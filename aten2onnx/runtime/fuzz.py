"""Mutation fuzzing of the runtime: models mutated as an attacker would mutate them (attributes, dims,
dtypes, wiring, deleted nodes, metadata, flipped bytes), each run in a worker process beside onnxruntime.

    report = fuzz(seeds, n=500, seed=0)      # seeds: [(ModelProto, {input name: numpy array})]
    print(report.summary())                  # ends with "500 tried, 0 escapes"

An escape is what a model file must never cause: a crash (the worker died of a signal), a hang (no
answer within the hard time limit although each run has a timeout), an exception that is not
aten2onnx's own, or a wrong answer (not judged for exact exports, whose ATen call metadata, not
their ONNX nodes, says what our runtime computes: "exact" mutations forge those calls). The comparison rule for answers: where onnxruntime runs a mutant,
our runtime must give the same outputs (same count, dtypes and shapes, values within tolerance,
NaN equal to NaN) or raise our error. onnxruntime is not the truth, though: it accepts some models
the spec forbids and deviates from it in places. So when the two disagree, onnx's reference evaluator
decides: if it agrees with us, onnxruntime deviates (counted, not an escape); if it agrees with
onnxruntime, we are wrong (an escape); if it fails or agrees with neither, the mutant is undecided
(listed, for a person to judge). A fusion disagreement: where onnxruntime runs a mutant, the session
with fusion and the one without must agree the same way (fusing may never change what a model computes).
The mutations themselves are in runtime/fuzz_mutations.py.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import pickle
import random
import select
import struct
import subprocess
import sys
import time
from typing import Callable

import numpy as np
import onnx

from aten2onnx.runtime.fuzz_mutations import feeds_for, mutant

Seed = tuple[onnx.ModelProto, dict[str, np.ndarray]]

# Worker limits: each run of our runtime stops after RUN_TIMEOUT seconds (our RunTimeoutError); a
# worker silent for HARD_TIMEOUT is a hang. Address space is capped so that a mutant asking for
# terabytes gets an allocation error instead of the kernel's OOM killer.
RUN_TIMEOUT = 2.0
HARD_TIMEOUT = 30.0
MEMORY_LIMIT = 4 << 30
# Outputs bigger than this (a mutant may broadcast to billions of elements) are not sent back to be
# compared: sending would take longer than computing.
SHIP_LIMIT = 64 << 20
# (rtol, atol) per numpy dtype name; integers and bools compare exactly.
TOLERANCES = {"float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2), "float32": (1e-3, 1e-4), "float64": (1e-6, 1e-7)}


# -- running one mutant in a worker -----------------------------------------------------------------


@dataclasses.dataclass
class Stage:
    """What one runtime did with a mutant. kind: "ok" (outputs), "ours" (aten2onnx's own error),
    "foreign" (any other exception), "error" (onnxruntime's or the reference's refusal)."""

    name: str
    kind: str
    detail: str = ""
    outputs: list | None = None


def _run_ours(data: bytes, feeds: dict, fuse: bool) -> Stage:
    from aten2onnx.errors import Aten2OnnxError
    from aten2onnx.runtime import InferenceSession

    name = "ours" if fuse else "unfused"
    try:
        session = InferenceSession(data, fuse=fuse, timeout=RUN_TIMEOUT)
        return Stage(name, "ok", outputs=session.run(None, feeds))
    except Aten2OnnxError as e:
        return Stage(name, "ours", f"{type(e).__name__}: {e}"[:400])
    except Exception as e:
        import traceback

        return Stage(name, "foreign", f"{type(e).__name__}: {e}"[:400] + " | " +
                     " <- ".join(f"{f.name}:{f.lineno}" for f in traceback.extract_tb(e.__traceback__)[-4:]))


def _run_ort(data: bytes, feeds: dict) -> Stage:
    import onnxruntime as ort

    try:
        options = ort.SessionOptions()
        options.log_severity_level = 4
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        return Stage("ort", "ok", outputs=session.run(None, feeds))
    except Exception as e:
        return Stage("ort", "error", f"{type(e).__name__}: {e}"[:300])


def _run_reference(data: bytes, feeds: dict) -> Stage:
    from onnx.reference import ReferenceEvaluator

    try:
        return Stage("reference", "ok", outputs=list(ReferenceEvaluator(onnx.load_from_string(data)).run(None, feeds)))
    except Exception as e:
        return Stage("reference", "error", f"{type(e).__name__}: {e}"[:300])


def same_outputs(a: list, b: list) -> str | None:
    """None when the outputs agree (count, dtype, shape, values within TOLERANCES, NaN equal to NaN),
    else how they differ."""
    if len(a) != len(b):
        return f"{len(a)} outputs against {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        if isinstance(x, list) or isinstance(y, list):
            if not (isinstance(x, list) and isinstance(y, list)):
                return f"output {i}: a sequence against a tensor"
            problem = same_outputs(x, y)
            if problem:
                return f"output {i}: {problem}"
            continue
        if x is None or y is None:
            if x is not y:
                return f"output {i}: None against a value"
            continue
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype != y.dtype or x.shape != y.shape:
            return f"output {i}: {x.dtype}{list(x.shape)} against {y.dtype}{list(y.shape)}"
        if x.dtype.kind in "OSU":
            if not np.array_equal(x, y):
                return f"output {i}: strings differ"
            continue
        if x.dtype.kind not in "fc":
            if not np.array_equal(x, y):
                return f"output {i}: values differ at {int(np.argmax(x.reshape(-1) != y.reshape(-1)))}"
            continue
        rtol, atol = TOLERANCES.get(x.dtype.name, (1e-3, 1e-4))
        xf, yf = x.astype(np.float64), y.astype(np.float64)
        close = np.isclose(xf, yf, rtol=rtol, atol=atol, equal_nan=True) | (xf == yf)
        if not close.all():
            k = int(np.argmin(close.reshape(-1)))
            return f"output {i}: {xf.reshape(-1)[k]} against {yf.reshape(-1)[k]} at {k}"
    return None


def _job(data: bytes, feeds: dict, emit: Callable[[Stage], None]) -> None:
    """Every stage of one mutant, each sent as soon as it is known (a crash later keeps them)."""
    ours = _run_ours(data, feeds, fuse=True)
    emit(ours)
    unfused = _run_ours(data, feeds, fuse=False)
    emit(unfused)
    timed_out = "RunTimeoutError" in ours.detail or "RunTimeoutError" in unfused.detail
    if timed_out or (ours.kind != "ok" and unfused.kind != "ok"):
        return  # nothing of ours to compare (and onnxruntime might run for as long as we refused to)
    ort_stage = _run_ort(data, feeds)
    emit(ort_stage)
    if ort_stage.kind == "ok" and any(s.kind == "ok" and same_outputs(s.outputs, ort_stage.outputs)
                                      for s in (ours, unfused)):
        emit(_run_reference(data, feeds))


def _nbytes(outputs: list) -> int:
    return sum(_nbytes(o) if isinstance(o, list) else getattr(o, "size", 0) * getattr(getattr(o, "dtype", None),
                                                                                      "itemsize", 0)
               for o in outputs)


def worker_main() -> None:
    """The worker's loop: a job (pickled, length-prefixed) on stdin; its stages on the protocol fd."""
    import resource

    import torch

    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed by a kernel goes to stderr, never into the protocol
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    torch.set_num_threads(1)

    def emit(stage: Stage) -> None:
        if stage.outputs is not None and _nbytes(stage.outputs) > SHIP_LIMIT:
            stage = Stage(stage.name, stage.kind, "outputs too large to compare")
        payload = pickle.dumps(stage)
        channel.write(struct.pack("<Q", len(payload)) + payload)
        channel.flush()

    source = sys.stdin.buffer
    while True:
        header = source.read(8)
        if len(header) < 8:
            return
        data, feeds = pickle.loads(source.read(struct.unpack("<Q", header)[0]))
        _job(data, feeds, emit)
        emit(Stage("done", "ok"))


class Worker:
    """A worker process that runs mutants one at a time; started again after a crash or a hang."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None

    def _start(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", "from aten2onnx.runtime.fuzz import worker_main; worker_main()"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def run(self, data: bytes, feeds: dict, timeout: float = HARD_TIMEOUT) -> tuple[list[Stage], str | None]:
        """The stages the worker finished, and "crash: <signal>" or "hang" when it did not finish."""
        if self.process is None or self.process.poll() is not None:
            self._start()
        payload = pickle.dumps((data, feeds))
        try:
            self.process.stdin.write(struct.pack("<Q", len(payload)) + payload)
            self.process.stdin.flush()
        except BrokenPipeError:
            return [], self._died()
        stages: list[Stage] = []
        deadline = time.monotonic() + timeout
        while True:
            stage = self._read(deadline)
            if stage is None:
                return stages, self._died()
            if stage.name == "done":
                return stages, None
            stages.append(stage)

    def _read(self, deadline: float) -> Stage | None:
        header = self._exactly(8, deadline)
        if header is None:
            return None
        body = self._exactly(struct.unpack("<Q", header)[0], deadline)
        return None if body is None else pickle.loads(body)

    def _exactly(self, n: int, deadline: float) -> bytes | None:
        out = self.process.stdout
        chunks = b""
        while len(chunks) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([out], [], [], remaining)[0]:
                return None
            chunk = os.read(out.fileno(), n - len(chunks))
            if not chunk:  # the worker closed its end: it is exiting, so wait for its status
                self.process.wait(timeout=HARD_TIMEOUT)
                return None
            chunks += chunk
        return chunks

    def _died(self) -> str:
        code = self.process.poll()
        if code is None:  # alive but silent: a hang
            self.process.kill()
            self.process.wait()
            self.process = None
            return "hang"
        self.process = None
        return f"crash: signal {-code}" if code < 0 else f"crash: exit {code}"

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=10)


# -- judging -----------------------------------------------------------------------------------------


@dataclasses.dataclass
class Verdict:
    """escape: a crash, hang, foreign exception or wrong answer (None when there is none). fusion:
    the fused and unfused sessions disagree on a model onnxruntime runs. note: what else is worth
    counting (onnxruntime deviates, undecided, refused a model onnxruntime runs)."""

    escape: str | None = None
    fusion: str | None = None
    note: str | None = None


def judge(stages: list[Stage], failure: str | None, exact: bool = False) -> Verdict:
    """exact: the mutant is an exact export, whose ATen calls define what our runtime computes (not its
    ONNX nodes, which onnxruntime runs): answers are not compared, crashes and exceptions still are."""
    by = {s.name: s for s in stages}
    ours, unfused, ort_stage, ref = (by.get(k) for k in ("ours", "unfused", "ort", "reference"))
    if failure is not None and (ours is None or unfused is None):
        return Verdict(escape=f"{failure} in our runtime")
    for stage in (ours, unfused):
        if stage.kind == "foreign":
            return Verdict(escape=f"foreign exception ({stage.name}): {stage.detail}")
    if failure is not None:
        return Verdict(note=f"onnxruntime or the reference: {failure}")
    if exact:
        return Verdict(note="exact model: its calls, not its ONNX nodes, give our answer")
    if ort_stage is None or ort_stage.kind != "ok":
        return Verdict()
    verdict = Verdict()
    if any(s.kind == "ok" and s.outputs is None for s in (ours, unfused, ort_stage)):
        return Verdict(note="outputs too large to compare")
    if ours.kind == "ok" and unfused.kind == "ok":
        problem = same_outputs(ours.outputs, unfused.outputs)
        verdict.fusion = problem and f"fused against unfused: {problem}"
    elif ours.kind != unfused.kind:
        verdict.fusion = f"fused {ours.kind}, unfused {unfused.kind}: {ours.detail or unfused.detail}"
    for stage in (ours, unfused):
        if stage.kind != "ok":
            verdict.note = verdict.note or "refused a model onnxruntime runs"
            continue
        problem = same_outputs(stage.outputs, ort_stage.outputs)
        if problem is None:
            continue
        if ref is not None and ref.kind == "ok" and same_outputs(stage.outputs, ref.outputs) is None:
            verdict.note = "onnxruntime deviates from the reference"
        elif ref is not None and ref.kind == "ok" and same_outputs(ort_stage.outputs, ref.outputs) is None:
            verdict.escape = f"wrong answer ({stage.name}): {problem}"
        else:
            verdict.note = f"undecided ({stage.name} vs onnxruntime: {problem}; reference: {ref.detail if ref else '-'})"
    return verdict


@dataclasses.dataclass
class Report:
    tried: int = 0
    escapes: list[tuple[int, list[str], str]] = dataclasses.field(default_factory=list)
    fusion: list[tuple[int, list[str], str]] = dataclasses.field(default_factory=list)
    notes: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    outcomes: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    undecided: list[tuple[int, list[str], str]] = dataclasses.field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        lines = [f"{self.tried} mutants in {self.seconds:.0f}s ({self.tried / max(self.seconds, 1e-9):.1f}/s)"]
        lines += [f"  {n} {outcome}" for outcome, n in self.outcomes.most_common()]
        lines += [f"  {n} {note}" for note, n in self.notes.most_common()]
        for title, items in (("ESCAPE", self.escapes), ("FUSION", self.fusion), ("undecided", self.undecided)):
            lines += [f"{title} #{i}: {what} after {'; '.join(mutations)}" for i, mutations, what in items[:50]]
        lines.append(f"{len(self.fusion)} fusion disagreements")
        lines.append(f"{self.tried} tried, {len(self.escapes)} escapes")
        return "\n".join(lines)


def _exact_model(data: bytes) -> bool:
    from aten2onnx._aten_node import is_exact

    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception:  # flipped bytes: not a model at all
        return False
    return is_exact(model)


def fuzz(seeds: list[Seed], n: int, seed: int = 0, *, progress: Callable[[Report], None] | None = None,
         timeout: float = HARD_TIMEOUT, kinds: tuple[str, ...] = ()) -> Report:
    """Run n mutants of the seeds (chosen in turn, mutated by a Random seeded with `seed`; only the
    mutation kinds named, when some are)."""
    rng = random.Random(seed)
    report = Report()
    worker = Worker()
    start = time.monotonic()
    try:
        for i in range(n):
            model, example = seeds[i % len(seeds)]
            data, mutations = mutant(model, rng, kinds)
            stages, failure = worker.run(data, feeds_for(data, example, rng), timeout)
            verdict = judge(stages, failure, _exact_model(data))
            report.tried += 1
            report.outcomes[" ".join(f"{s.name}:{s.kind}" for s in stages if s.name != "unfused") + (f" {failure}" if failure else "")] += 1
            if verdict.escape:
                report.escapes.append((i, mutations, verdict.escape))
            if verdict.fusion:
                report.fusion.append((i, mutations, verdict.fusion))
            if verdict.note:
                report.notes[verdict.note.split(" (")[0]] += 1
                if verdict.note.startswith("undecided"):
                    report.undecided.append((i, mutations, verdict.note))
            report.seconds = time.monotonic() - start
            if progress is not None:
                progress(report)
    finally:
        worker.close()
    return report


def replay(seeds: list[Seed], index: int, seed: int = 0, kinds: tuple[str, ...] = ()) -> tuple[bytes, dict, list[str]]:
    """Mutant number `index` of a fuzz run, exactly as fuzz(seeds, n > index, seed, kinds=kinds) made it."""
    rng = random.Random(seed)
    for i in range(index + 1):
        model, example = seeds[i % len(seeds)]
        data, mutations = mutant(model, rng, kinds)
        feeds = feeds_for(data, example, rng)
    return data, feeds, mutations
