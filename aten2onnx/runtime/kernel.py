"""Kernel base class and the kernel table: (domain, op_type) -> kernels by the schema versions they run.

A kernel is built once per node when a session is created (attributes decoded then, into the
keyword arguments of `setup`), and its `run` is called with torch tensors on every run; it
returns a tuple of values, one per node output, which the session checks (runtime/results.py).

    @kernel("Relu", since=6)  # 13, 14: types
    class Relu(Kernel):
        def run(self, x):
            return (torch.relu(x),)
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import threading
import warnings
from typing import Any, Callable, ClassVar, Protocol, Sequence, TypeVar

import ml_dtypes
import numpy as np
import onnx
import torch
from onnx import AttributeProto, numpy_helper

from aten2onnx import _dtypes
from aten2onnx.errors import InvalidModelError
from aten2onnx.runtime.safety import AllowedOps


class Subgraph(Protocol):
    """A planned subgraph, as SessionContext.compile_graph gives it (runtime/session.py's GraphRunner)."""

    output_names: list[str]

    def run(self, inputs: Sequence[Any], outer: dict[str, Any] | None = None) -> list[Any]: ...


class SessionContext:
    """What a kernel may need beyond its attributes: the device, subgraph compilation, which torch ops
    a model may name (see runtime/safety.py), a private random state, and the current run's deadline."""

    def __init__(self, device: torch.device, opsets: dict[str, int], allowed_aten_namespaces: tuple[str, ...],
                 compile_graph: Callable[[onnx.GraphProto], Subgraph] | None = None, fuse: bool = False,
                 allowed_aten_ops: AllowedOps = None, exact: bool = False, process_rng: bool = False) -> None:
        self.device = device
        self.exact = exact  # run an exact export's ATen calls (runtime/exact.py)
        self.process_rng = process_rng  # random ops draw from torch's default generators
        self.requires_grad: frozenset[str] = frozenset()  # exact mode: initializers eager has requiring grad
        self.opsets = opsets
        self.allowed_aten_namespaces = allowed_aten_namespaces
        self.allowed_aten_ops = allowed_aten_ops
        self.fuse = fuse
        # Plans a subgraph (a body, a fused group) with this context: given by the session, so that
        # kernels run subgraphs without importing it.
        self.compile_graph = compile_graph
        self._run = threading.local()  # per thread: concurrent runs of one session keep their own deadline
        self._rng_lock = threading.Lock()
        self._rng_states: dict[str, torch.Tensor] | None = None  # made on first use

    @property
    def deadline(self) -> float | None:
        """time.monotonic() after which the current run stops (None: no limit)."""
        return getattr(self._run, "deadline", None)

    @deadline.setter
    def deadline(self, value: float | None) -> None:
        self._run.deadline = value

    @contextlib.contextmanager
    def private_rng(self):
        """Torch's default generators hold this session's state for the block, and the process's own
        state again after it: a random op a model runs neither reads nor advances the caller's. A session
        made with rng="process" draws from the process's generators instead, as eager PyTorch does."""
        if self.process_rng:
            yield
            return
        with self._rng_lock:
            if self._rng_states is None:
                self._rng_states = {kind: _fresh_rng_state(kind) for kind in {"cpu", self.device.type}}
            outside = {kind: _RNG[kind][0](self.device) for kind in self._rng_states}
            for kind, state in self._rng_states.items():
                _RNG[kind][1](state, self.device)
            try:
                yield
            finally:
                for kind, state in outside.items():
                    self._rng_states[kind] = _RNG[kind][0](self.device)
                    _RNG[kind][1](state, self.device)


# The default generator's (get_state, set_state) per device type.
_RNG = {
    "cpu": (lambda device: torch.get_rng_state(), lambda state, device: torch.set_rng_state(state)),
    "cuda": (lambda device: torch.cuda.get_rng_state(device), lambda state, device: torch.cuda.set_rng_state(state, device)),
}


def _fresh_rng_state(kind: str) -> torch.Tensor:
    generator = torch.Generator(device=kind)
    generator.seed()  # from the OS, never from (or advancing) the process's generator
    return generator.get_state()


class Kernel:
    """One node's kernel. `kernel(...)` sets the class attributes below when it registers the class."""

    domain: ClassVar[str] = ""
    op_type: ClassVar[str]
    since_version: ClassVar[int]
    until: ClassVar[int | None] = None

    def __init__(self, ctx: SessionContext, node: onnx.NodeProto | None = None,
                 input_types: Sequence[int | None] = (), /, **attrs: Any) -> None:
        """input_types: per node input, its ONNX element type where the model states it or it follows from the
        model's types (None: unknown), for the kernels whose result depends on a type its torch dtype does not
        tell apart (an int4 input is held as int8: see SUB_BYTE)."""
        # positional-only: an ATen node's attributes are named after schema arguments, `self` among them
        self.ctx = ctx
        self.node = node
        self.input_types = tuple(input_types)
        self.setup(**attrs)

    def input_type(self, i: int, value: Any) -> int:
        """The ONNX element type of input i: as planned where the value is held as that type is (a model's
        stated types are untrusted), else the one its dtype holds (elem_type_of)."""
        planned = self.input_types[i] if i < len(self.input_types) else None
        if planned in SUB_BYTE and SUB_BYTE[planned] == value.dtype:
            return planned
        return elem_type_of(value.dtype)

    def setup(self) -> None:
        """Override with the op's attributes as keyword arguments, defaults as in the ONNX spec."""

    def run(self, *inputs: torch.Tensor | None) -> tuple[Any, ...]:
        raise NotImplementedError


# The newest ai.onnx opset whose schema changes the kernels were checked against. A kernel runs every
# schema version of its op from `since` on, up to the next kernel of the op (or its `until`), as far
# as this opset; a version onnx adds later is refused until someone has read its changes. Raising it
# means reading the changes of every op with a kernel whose schema changed in the new opsets, and
# registering a new kernel (or giving the old one an `until`) where they are not type-only.
CHECKED_OPSET = 28

_TABLE: dict[tuple[str, str], list[type[Kernel]]] = {}
K = TypeVar("K", bound=type[Kernel])


def kernel(op_type: str, since: int, until: int | None = None, *, domain: str = "") -> Callable[[K], K]:
    """Class decorator: register the class as the kernel of domain::op_type for the op's schema versions
    from `since` up to, not including, `until` (None: up to the op's next kernel, or CHECKED_OPSET).
    For ai.onnx ops both bounds must be versions onnx.defs lists for the op; a bound that is not, or a
    range overlapping another kernel's, fails here, at import."""

    def register(cls: K) -> K:
        cls.domain, cls.op_type, cls.since_version, cls.until = domain, op_type, since, until
        name = f"{domain or 'ai.onnx'}::{op_type}"
        if domain == "":
            versions = schema_versions(op_type)
            for bound in (since, until):
                if bound is not None and bound not in versions:
                    raise ValueError(f"kernel {cls.__name__}: {name} has no schema version {bound}; onnx defines "
                                     f"versions {versions}")
        if until is not None and until <= since:
            raise ValueError(f"kernel {cls.__name__}: {name} range [{since}, {until}) is empty")
        kernels = _TABLE.setdefault((domain, op_type), [])
        for other in kernels:
            first, second = sorted((cls, other), key=lambda k: k.since_version)
            if first.since_version == second.since_version or (first.until or second.since_version) > second.since_version:
                raise ValueError(f"kernel {cls.__name__}: {name} from version {since} overlaps {other.__name__} "
                                 f"(from version {other.since_version})")
        bisect.insort(kernels, cls, key=lambda k: k.since_version)
        return cls

    return register


def schema_versions(op_type: str, domain: str = "") -> tuple[int, ...]:
    """The since_versions onnx.defs lists for an op (empty for one onnx does not define: ATen, fused)."""
    return _schema_index().get((domain, op_type), ())


@functools.cache
def _schema_index() -> dict[tuple[str, str], tuple[int, ...]]:
    index: dict[tuple[str, str], set[int]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        index.setdefault((schema.domain, schema.name), set()).add(schema.since_version)
    return {key: tuple(sorted(versions)) for key, versions in index.items()}


def schema_version(domain: str, op_type: str, opset: int) -> int | None:
    """The version of an op a model importing `opset` of `domain` runs: the newest of the op's schema
    versions at or below opset (None: onnx defines the op only from a later opset). For an op onnx does
    not define, the opset itself: such a domain versions its ops by the opset."""
    versions = schema_versions(op_type, domain)
    if not versions:
        return opset
    return versions[bisect.bisect_right(versions, opset) - 1] if versions[0] <= opset else None


def op_schema(domain: str, op_type: str, opset: int) -> onnx.defs.OpSchema | None:
    """The op's schema a model importing `opset` of `domain` runs (None: one onnx does not define there)."""
    version = schema_version(domain, op_type, opset)
    if version is None or not schema_versions(op_type, domain):
        return None
    return onnx.defs.get_schema(op_type, version, domain)


def kernel_range(cls: type[Kernel]) -> tuple[int, int | None]:
    """[since, until) of the schema versions cls runs; until None: no end."""
    kernels = _TABLE[(cls.domain, cls.op_type)]
    later = kernels[kernels.index(cls) + 1:]
    until = cls.until if cls.until is not None else (later[0].since_version if later else None)
    if cls.domain == "":
        until = min(until or CHECKED_OPSET + 1, CHECKED_OPSET + 1)
    return cls.since_version, until


def find_kernel(domain: str, op_type: str, opset: int) -> type[Kernel]:
    """The kernel that runs op_type for a model importing `opset` of its domain: the one whose range
    holds the op's schema version there. Raises InvalidModelError saying what exists otherwise."""
    kernels = _TABLE.get((domain, op_type))
    name = f"{domain or 'ai.onnx'}::{op_type}"
    if not kernels:
        raise InvalidModelError(f"{name} at opset {opset} is not supported; aten2onnx.runtime has no kernel for it")
    version = schema_version(domain, op_type, opset)
    if domain == "" and version is not None and version > CHECKED_OPSET:
        raise InvalidModelError(f"{name} at opset {opset} is version {version} of the op, newer than opset "
                                f"{CHECKED_OPSET}, the newest aten2onnx.runtime's kernels are checked against")
    for cls in kernels:
        since, until = kernel_range(cls)
        if version is not None and since <= version and (until is None or version < until):
            return cls
    ranges = ", ".join(_range_text(kernel_range(k)) for k in kernels)
    detail = "" if version in (None, opset) else f" (version {version} of the op)"
    raise InvalidModelError(f"{name} at opset {opset}{detail} is not supported; kernels exist from versions "
                            f"{[k.since_version for k in kernels]}, running versions {ranges}")


def _range_text(bounds: tuple[int, int | None]) -> str:
    since, until = bounds
    return f"{since}+" if until is None else f"{since}-{until - 1}"


def has_kernel(domain: str, op_type: str) -> bool:
    """Whether any kernel runs the op, at any version."""
    return (domain, op_type) in _TABLE


def all_kernels() -> dict[tuple[str, str], list[type[Kernel]]]:
    return {key: list(kernels) for key, kernels in sorted(_TABLE.items())}


def decode_attribute(attr: AttributeProto) -> Any:
    """An AttributeProto as the Python value kernels take (strings as str, tensors as torch)."""
    kind = attr.type
    if kind == AttributeProto.INT:
        return attr.i
    if kind == AttributeProto.FLOAT:
        return attr.f
    if kind == AttributeProto.STRING:
        return attr.s.decode("utf-8")
    if kind == AttributeProto.INTS:
        return list(attr.ints)
    if kind == AttributeProto.FLOATS:
        return list(attr.floats)
    if kind == AttributeProto.STRINGS:
        return [s.decode("utf-8") for s in attr.strings]
    if kind == AttributeProto.TENSOR:
        return tensor_from_proto(attr.t)
    if kind == AttributeProto.GRAPH:
        return attr.g
    if kind == AttributeProto.GRAPHS:
        return list(attr.graphs)
    if kind == AttributeProto.TYPE_PROTO:
        return attr.tp
    raise ValueError(f"attribute {attr.name!r} has unsupported type {AttributeProto.AttributeType.Name(kind)}")


# ONNX element types torch has no dtype for, held widened: int4/int2 as int8, uint4/uint2 as uint8,
# float4e2m1 and float6 as float32 (each value exact). A held value says its type only together with the
# model's types (a session plans each kernel with its inputs' element types, Kernel.input_types); kernels that
# make such values (Cast, QuantizeLinear, ...) round and saturate to the narrow type themselves (ops/_narrow.py).
SUB_BYTE: dict[int, torch.dtype] = {
    onnx.TensorProto.INT4: torch.int8,
    onnx.TensorProto.UINT4: torch.uint8,
    onnx.TensorProto.INT2: torch.int8,
    onnx.TensorProto.UINT2: torch.uint8,
    onnx.TensorProto.FLOAT4E2M1: torch.float32,
    onnx.TensorProto.FLOAT6E2M3: torch.float32,
    onnx.TensorProto.FLOAT6E3M2: torch.float32,
}
# Element types the runtime holds in a torch dtype of their own that aten2onnx._dtypes leaves out, since the
# exporter writes no such tensors (it refuses a model's float8_e8m0fnu).
_RUNTIME_ONLY: dict[int, torch.dtype] = {onnx.TensorProto.FLOAT8E8M0: torch.float8_e8m0fnu}
_RUNTIME_ONLY_ELEM = {dtype: elem for elem, dtype in _RUNTIME_ONLY.items()}
_FLOAT8_STORAGE = (torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz,
                   torch.float8_e8m0fnu)


def runtime_dtype(elem_type: int) -> torch.dtype:
    """The torch dtype the runtime holds an ONNX element type in (sub-byte types widened)."""
    if elem_type in SUB_BYTE:
        return SUB_BYTE[elem_type]
    if elem_type in _RUNTIME_ONLY:
        return _RUNTIME_ONLY[elem_type]
    return _dtypes.to_torch(elem_type)


def elem_type_of(dtype: torch.dtype) -> int:
    """The ONNX element type a tensor of this dtype holds when nothing says it is a narrower one."""
    if dtype in _RUNTIME_ONLY_ELEM:
        return _RUNTIME_ONLY_ELEM[dtype]
    return _dtypes.to_onnx(dtype)


def holds_onnx(dtype: torch.dtype) -> bool:
    """Whether the runtime holds values of some ONNX element type in this dtype."""
    return dtype in _RUNTIME_ONLY_ELEM or _dtypes.has_onnx(dtype)


def tensor_from_proto(proto: onnx.TensorProto) -> torch.Tensor:
    """A torch tensor over a TensorProto's bytes, sharing them where the proto holds raw data. External
    data must have been read in by the loader (runtime/external_data.py), which checks its paths."""
    if proto.data_location == onnx.TensorProto.EXTERNAL:
        raise InvalidModelError(f"tensor {proto.name!r} keeps its data in an external file, which was not loaded")
    if proto.data_type in SUB_BYTE or proto.data_type == onnx.TensorProto.STRING:
        return from_numpy(numpy_helper.to_array(proto))
    dtype = runtime_dtype(proto.data_type)
    shape = tuple(proto.dims)
    if proto.raw_data:
        raw = proto.raw_data
        storage_dtype = {torch.bfloat16: torch.int16}.get(dtype, dtype)
        if dtype in _FLOAT8_STORAGE:
            storage_dtype = torch.uint8
        # torch warns that bytes are read-only; kernels never write to their inputs, so sharing is safe.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            flat = torch.frombuffer(raw, dtype=storage_dtype)
        return flat.view(dtype).reshape(shape)
    array = numpy_helper.to_array(proto)
    if dtype == torch.bfloat16:
        return torch.from_numpy(array.astype("float32")).to(torch.bfloat16).reshape(shape)
    if dtype in _FLOAT8_STORAGE:  # numpy_helper gives ml_dtypes float8 arrays, which torch refuses
        return torch.from_numpy(np.ascontiguousarray(array).view(np.uint8).copy()).view(dtype).reshape(shape)
    return torch.from_numpy(array.copy()).reshape(shape)


def from_numpy(array: np.ndarray) -> Any:
    """A numpy array (ml_dtypes included) as the runtime holds it: a torch tensor, sub-byte types
    widened (see SUB_BYTE), float8 and bfloat16 moved bit for bit; string arrays stay numpy
    object arrays, the string kernels' representation."""
    name = array.dtype.name
    if array.dtype.kind in "OSU":
        return np.asarray(array, dtype=object)
    if name in _ML_BITS:
        storage, dtype = _ML_BITS[name]
        return torch.from_numpy(np.array(array, order="C").view(storage)).view(dtype)
    if name in _ML_WIDE:
        return torch.from_numpy(np.array(array.astype(_ML_WIDE[name]), order="C"))
    return torch.from_numpy(np.array(array, order="C"))


def to_numpy(value: torch.Tensor, elem_type: int | None = None) -> np.ndarray:
    """A tensor as numpy, as onnx's reference evaluator gives it: ml_dtypes arrays for the types numpy
    lacks (bfloat16, float8), and the declared sub-byte type (int4, ...) of a value held widened."""
    value = value.detach().cpu().resolve_conj().resolve_neg()
    bits = _ML_OF.get(value.dtype)
    array = value.numpy() if bits is None else value.view(bits[0]).numpy().view(bits[1])
    if elem_type in SUB_BYTE:
        array = array.astype(_ML_SUB_BYTE[elem_type])
    return array


_ML_BITS = {
    "bfloat16": (np.uint16, torch.bfloat16),
    "float8_e4m3fn": (np.uint8, torch.float8_e4m3fn),
    "float8_e4m3fnuz": (np.uint8, torch.float8_e4m3fnuz),
    "float8_e5m2": (np.uint8, torch.float8_e5m2),
    "float8_e5m2fnuz": (np.uint8, torch.float8_e5m2fnuz),
    "float8_e8m0fnu": (np.uint8, torch.float8_e8m0fnu),
}
_ML_WIDE = {"int4": np.int8, "uint4": np.uint8, "int2": np.int8, "uint2": np.uint8, "float4_e2m1fn": np.float32,
            "float6_e2m3fn": np.float32, "float6_e3m2fn": np.float32}
# torch dtype -> (same-width torch integer dtype, ml_dtypes type), for the inverse of _ML_BITS
_ML_OF = {dtype: ({np.uint16: torch.int16, np.uint8: torch.uint8}[storage], getattr(ml_dtypes, name))
          for name, (storage, dtype) in _ML_BITS.items()}
_ML_SUB_BYTE = {onnx.TensorProto.INT4: ml_dtypes.int4, onnx.TensorProto.UINT4: ml_dtypes.uint4,
                onnx.TensorProto.INT2: ml_dtypes.int2, onnx.TensorProto.UINT2: ml_dtypes.uint2,
                onnx.TensorProto.FLOAT4E2M1: ml_dtypes.float4_e2m1fn, onnx.TensorProto.FLOAT6E2M3: ml_dtypes.float6_e2m3fn,
                onnx.TensorProto.FLOAT6E3M2: ml_dtypes.float6_e3m2fn}
