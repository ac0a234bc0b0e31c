"""The linear-algebra algorithms the opset-9 linalg handlers (opset9_linalg.py, opset9_linalg_spectral.py)
are built from, written in ONNX ops: LU with partial pivoting, triangular solves, Householder QR, the
matrix exponential's Pade tables, one-sided Jacobi SVD, symmetric eigendecomposition, Bunch-Kaufman
LDL^T. No handlers here.
Sizes are SymInts: an int where static (constants, as before), else a 0-d int64 value read from Shape."""

from __future__ import annotations

import functools
import math

import torch
import torch.utils._pytree as pytree

from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import SymInt, cast, dim_size, fill, loop, reshape, sym_prod
from aten2onnx.symbolic.opset9_math import is_zero

I64 = torch.int64


FLOAT_DTYPES = (torch.float32, torch.float64)


def matrix_shape(g: GraphBuilder, x: Value, what: str, *, dtypes=FLOAT_DTYPES,
                 symbols: dict[str, Value] | None = None) -> list[SymInt]:
    """The shape of a stack of matrices, after checking what the algorithms below take: an int per static
    dim, a 0-d int64 graph value per symbolic one (see `sizes`)."""
    if x.dtype not in dtypes:
        raise NotImplementedError(f"{what} of {x.dtype} is exported for {', '.join(map(str, dtypes))} only")
    if x.shape is None:
        raise NotImplementedError(f"{what} is exported for inputs of known rank only")
    if len(x.shape) < 2:
        raise NotImplementedError(f"{what} takes matrices; got rank {len(x.shape)}")
    return sizes(g, x, symbols)


def sizes(g: GraphBuilder, x: Value, symbols: dict[str, Value] | None = None) -> list[SymInt]:
    """x's dims: ints where static, else read from its Shape, once per symbol: dims sharing a symbol
    share the value, so `same_size` sees a square matrix, or two operands' equal sizes where the same
    `symbols` (symbol -> value, filled here) is passed for both."""
    by_symbol = {} if symbols is None else symbols
    out: list[SymInt] = []
    for i, d in enumerate(x.shape):
        if isinstance(d, int):
            out.append(d)
        elif isinstance(d, str) and d in by_symbol:
            out.append(by_symbol[d])
        else:
            out.append(dim_size(g, x, i))
            if isinstance(d, str):
                by_symbol[d] = out[-1]
    return out


def same_size(a: SymInt, b: SymInt) -> bool:
    """Whether two sizes are known equal when the graph is built."""
    return a is b or (isinstance(a, int) and isinstance(b, int) and a == b)


def square_size(shape: list[SymInt], what: str) -> SymInt:
    if not same_size(shape[-1], shape[-2]):
        raise NotImplementedError(f"{what} takes square matrices; got {shape[-2]}x{shape[-1]}")
    return shape[-1]


# -- sizes that are ints when static and graph values (0-d int64) when symbolic: static exports stay
#    constants, dynamic ones compute the size from Shape -----------------------------------------------


def as_i64(g: GraphBuilder, a: SymInt) -> Value:
    return g.const(a, dtype=I64) if isinstance(a, int) else a


def size_add(g: GraphBuilder, a: SymInt, b: SymInt) -> SymInt:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return g.op("Add", as_i64(g, a), as_i64(g, b))


def size_sub(g: GraphBuilder, a: SymInt, b: SymInt) -> SymInt:
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    return g.op("Sub", as_i64(g, a), as_i64(g, b))


def size_mul(g: GraphBuilder, a: SymInt, b: SymInt) -> SymInt:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if isinstance(a, int) and a == 1:
        return b
    if isinstance(b, int) and b == 1:
        return a
    return g.op("Mul", as_i64(g, a), as_i64(g, b))


def size_min(g: GraphBuilder, a: SymInt, b: SymInt) -> SymInt:
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    if same_size(a, b):
        return a
    a, b = as_i64(g, a), as_i64(g, b)
    return g.op("Where", g.op("Less", a, b), a, b)  # (Min takes integers from opset 12 only)


def size_max(g: GraphBuilder, a: SymInt, b: SymInt) -> SymInt:
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    if same_size(a, b):
        return a
    a, b = as_i64(g, a), as_i64(g, b)
    return g.op("Where", g.op("Less", a, b), b, a)


def is_empty(shape: list[SymInt]) -> bool:
    """Whether a static size is 0, so the results are shape-only. A symbolic size is taken as nonzero:
    torch.export specializes an example size of 0 unless told otherwise."""
    return any(isinstance(d, int) and d == 0 for d in shape)


def broadcast_batch(g: GraphBuilder, *batches: list[SymInt]) -> list[SymInt]:
    if all(isinstance(d, int) for batch in batches for d in batch):
        return list(torch.broadcast_shapes(*map(tuple, batches)))
    rank = max(len(b) for b in batches)
    out: list[SymInt] = []
    for i in range(rank):
        dims = [b[i - rank + len(b)] for b in batches if i - rank + len(b) >= 0]
        known = [d for d in dims if not (isinstance(d, int) and d == 1)]
        size: SymInt = 1
        for d in known:  # broadcasting sizes are 1 or equal: the largest (where none is 0)
            size = d if isinstance(size, int) and size == 1 else size_max(g, size, d)
        out.append(size)
    return out


def same_sizes(a: list[SymInt], b: list[SymInt]) -> bool:
    return len(a) == len(b) and all(same_size(x, y) for x, y in zip(a, b))


def flatten(g: GraphBuilder, x: Value, batch: list[SymInt], tail: list[SymInt]) -> Value:
    """x (a batch broadcastable to `batch`, then `tail`) as [prod(batch), *tail]; no dim may be 0."""
    own = None if x.shape is None else list(x.shape[:x.rank - len(tail)])
    if own is None or not (all(isinstance(d, int) for d in own) and same_sizes(own, batch)):  # Expand to be sure
        x = g.op("Expand", x, g.int_list(batch + tail))
    return reshape(g, x, [sym_prod(g, batch), *tail])


def unflatten(g: GraphBuilder, x: Value, batch: list[SymInt], tail: list[SymInt]) -> Value:
    return reshape(g, x, batch + tail)


def transposed(g: GraphBuilder, x: Value) -> Value:
    """The matrices of a flattened [B, r, c] stack transposed."""
    return g.op("Transpose", x, perm=[0, 2, 1])


def shape_only(g: GraphBuilder, op, args: tuple, kwargs: dict | None = None) -> list[Value] | None:
    """When every tensor argument or every result is empty, the result depends on shapes alone: eager's
    on zeros of those shapes (results from meta tensors where some input has data), as constants."""
    kwargs = kwargs or {}
    tensors = [a for a in args if isinstance(a, Value)]
    if not all(t.is_static for t in tensors):
        return None

    def fake(device: str) -> list:
        return [torch.zeros(a.shape, dtype=a.dtype, device=device) if isinstance(a, Value) else a for a in args]

    if all(math.prod(t.shape) == 0 for t in tensors):
        outs = pytree.tree_leaves(op(*fake("cpu"), **kwargs))
    else:
        try:
            outs = pytree.tree_leaves(op(*fake("meta"), **kwargs))
        except (NotImplementedError, RuntimeError):  # no meta kernel: the results are not all empty here
            return None
        if any(o.numel() for o in outs):
            return None
    return [fill(g, list(o.shape), 0, o.dtype) if o.numel() == 0 else g.const(o.cpu()) for o in outs]


def index1(g: GraphBuilder, i: Value) -> Value:
    """A 0-d index as a 1-element one, so Gather keeps the axis."""
    return reshape(g, i, [1])


def arange(g: GraphBuilder, n: SymInt) -> Value:
    """0..n-1 as int64: a constant, or Range on a symbolic size."""
    if isinstance(n, int):
        return g.const(torch.arange(n))
    return g.op("Range", g.const(0, dtype=I64), n, g.const(1, dtype=I64))


def arange_col(g: GraphBuilder, n: SymInt) -> Value:
    return g.const(torch.arange(n).reshape(n, 1)) if isinstance(n, int) else reshape(g, arange(g, n), [n, 1])


def arange_row(g: GraphBuilder, n: SymInt) -> Value:
    return g.const(torch.arange(n).reshape(1, n)) if isinstance(n, int) else reshape(g, arange(g, n), [1, n])


def row_offsets(g: GraphBuilder, batch: SymInt, rows: SymInt) -> Value:
    """[batch, 1] int64: the first row of each matrix of a [batch, rows, ...] stack flattened to rows."""
    if isinstance(batch, int) and isinstance(rows, int):
        return g.const((torch.arange(batch) * rows).reshape(batch, 1))
    return g.op("Mul", arange_col(g, batch), as_i64(g, rows))


def gather_rows(g: GraphBuilder, x: Value, index: Value, batch: SymInt, rows: SymInt, cols: SymInt) -> Value:
    """x[b, index[b, r], :] of a [batch, rows, cols] stack, index [batch, r] int64: [batch, r, cols]. One
    Gather on the flattened rows (GatherElements would need opset 11)."""
    offsets = row_offsets(g, batch, rows)
    return g.op("Gather", reshape(g, x, [size_mul(g, batch, rows), cols]), g.op("Add", index, offsets), axis=0)


def first_failure(g: GraphBuilder, info: Value, failed: Value, k: Value) -> Value:
    """info [B] int64 keeps the first 1-based step at which `failed` (any shape of B elements) held."""
    fresh = g.op("And", is_zero_int(g, info), reshape(g, failed, [-1]))
    return g.op("Where", fresh, g.op("Add", k, g.const(1, dtype=I64)), info)


def is_zero_int(g: GraphBuilder, x: Value) -> Value:
    return g.op("Equal", x, g.const(0, dtype=x.dtype))


def first_indices(g: GraphBuilder, k: SymInt) -> Value:
    """[k] int64 0..k-1, for Gather of the first k rows or columns."""
    return g.const(list(range(k)), dtype=I64) if isinstance(k, int) else arange(g, k)


def lu_loop(g: GraphBuilder, a: Value, batch: SymInt, m: SymInt, n: SymInt, *, pivot: bool) -> tuple[Value, Value, Value]:
    """LAPACK getrf on a [batch, m, n] stack: (packed L\\U, zero-based pivots [batch, min(m, n)] int64,
    info [batch] int64: the first 1-based column whose pivot is exactly zero, else 0). Column k swaps
    in the row of largest magnitude at or below k (the first on ties), scales the column below the
    pivot by its reciprocal (left as is when the pivot is zero) and updates the trailing block."""
    rows, cols = arange_col(g, m), arange_row(g, n)
    one = g.const(1, dtype=a.dtype)

    def step(body: GraphBuilder, k: Value, state: list[Value]) -> list[Value]:
        lu, info = state
        k1 = index1(body, k)
        if pivot:
            col = body.op("Gather", lu, k1, axis=2)
            magnitude = body.op("Where", body.op("Less", rows, k), body.const(-1, dtype=a.dtype), body.op("Abs", col))
            p = body.op("ArgMax", magnitude, axis=1, keepdims=0)  # [batch, 1]
            row_p = gather_rows(body, lu, p, batch, m, n)
            row_k = body.op("Gather", lu, k1, axis=1)
            is_p = body.op("Equal", rows, reshape(body, p, [batch, 1, 1]))
            lu = body.op("Where", body.op("Equal", rows, k), row_p, body.op("Where", is_p, row_k, lu))
            p = reshape(body, p, [batch])
        else:
            row_p = body.op("Gather", lu, k1, axis=1)
            p = body.op("Expand", k, body.int_list([batch]))
        col = body.op("Gather", lu, k1, axis=2)
        d = body.op("Gather", row_p, k1, axis=2)  # [batch, 1, 1]
        singular = is_zero(body, d)
        l = body.op("Mul", col, body.op("Reciprocal", body.op("Where", singular, one, d)))
        below = body.op("Greater", rows, k)
        trailing = body.op("And", below, body.op("Greater", cols, k))
        lu = body.op("Where", trailing, body.op("Sub", lu, body.op("Mul", l, row_p)), lu)
        lu = body.op("Where", body.op("And", below, body.op("Equal", cols, k)), l, lu)
        return [lu, first_failure(body, info, singular, k), p]

    lu, info, pivots = loop(g, size_min(g, m, n), [a, zeros(g, batch)], step, name="lu", scan_outputs=1)
    return lu, g.op("Transpose", pivots, perm=[1, 0]), info


def zeros(g: GraphBuilder, batch: SymInt) -> Value:
    """[batch] int64 zeros: a fresh info or counter per matrix."""
    return g.const(torch.zeros(batch, dtype=I64)) if isinstance(batch, int) else fill(g, [batch], 0, I64)


def zero_based(g: GraphBuilder, pivots: Value) -> Value:
    """LAPACK's 1-based pivots as int64 indices."""
    return g.op("Sub", cast(g, pivots, I64), g.const(1, dtype=I64))


def permutation(g: GraphBuilder, pivots: Value, batch: SymInt, m: SymInt, k: SymInt) -> Value:
    """perm [batch, m] int64 with (P^T A)[i] = A[perm[i]]: the swaps i <-> pivots[i] (zero-based, [batch, k])
    applied in order to 0..m-1, as LAPACK's laswp applies them."""
    idx = arange_row(g, m)
    if isinstance(batch, int) and isinstance(m, int):
        start = g.const(torch.arange(m).repeat(batch, 1))
    else:
        start = g.op("Expand", idx, g.int_list([batch, m]))
    offsets = row_offsets(g, batch, m)

    def step(body: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
        (perm,) = state
        i1 = index1(body, i)
        p = body.op("Gather", pivots, i1, axis=1)  # [batch, 1]
        at_i = body.op("Gather", perm, i1, axis=1)
        at_p = body.op("Gather", reshape(body, perm, [size_mul(body, batch, m)]), body.op("Add", p, offsets), axis=0)
        swapped = body.op("Where", body.op("Equal", idx, p), at_i, perm)
        return [body.op("Where", body.op("Equal", idx, i), at_p, swapped)]

    return loop(g, k, [start], step, name="laswp")[0]


def inverse_permutation(g: GraphBuilder, perm: Value, batch: SymInt, m: SymInt) -> Value:
    """inv [batch, m] with inv[perm[i]] = i: the position of each row in perm (ArgMax of a one-hot)."""
    onehot = g.op("Equal", reshape(g, perm, [batch, 1, m]), arange_col(g, m))  # [batch, m(value), m(position)]
    return g.op("ArgMax", cast(g, onehot, torch.float32), axis=2, keepdims=0)


def permutation_matrix(g: GraphBuilder, perm: Value, batch: SymInt, m: SymInt, dtype: torch.dtype) -> Value:
    """P with A = P (P^T A): P[r, c] = (perm[c] == r)."""
    return cast(g, g.op("Equal", arange_col(g, m), reshape(g, perm, [batch, 1, m])), dtype)


def tril_mask(g: GraphBuilder, m: SymInt, n: SymInt, diagonal: int) -> Value:
    """[m, n] bool: the entries on or below the diagonal'th diagonal (col - row <= diagonal)."""
    if isinstance(m, int) and isinstance(n, int):
        return g.const(torch.ones(m, n, dtype=torch.bool).tril(diagonal))
    offset = g.op("Sub", arange_row(g, n), arange_col(g, m))
    return g.op("Not", g.op("Greater", offset, g.const(diagonal, dtype=I64)))


def triu_mask(g: GraphBuilder, m: SymInt, n: SymInt, diagonal: int) -> Value:
    """[m, n] bool: the entries on or above the diagonal'th diagonal (col - row >= diagonal)."""
    if isinstance(m, int) and isinstance(n, int):
        return g.const(torch.ones(m, n, dtype=torch.bool).triu(diagonal))
    offset = g.op("Sub", arange_row(g, n), arange_col(g, m))
    return g.op("Not", g.op("Less", offset, g.const(diagonal, dtype=I64)))


def eye(g: GraphBuilder, m: SymInt, n: SymInt, dtype: torch.dtype) -> Value:
    """The [m, n] identity."""
    if isinstance(m, int) and isinstance(n, int):
        return g.const(torch.eye(m, n, dtype=dtype))
    return cast(g, g.op("Equal", arange_col(g, m), arange_row(g, n)), dtype)


def masked(g: GraphBuilder, mask: Value, x: Value) -> Value:
    return g.op("Where", mask, x, g.const(0, dtype=x.dtype))


def tri_solve(g: GraphBuilder, t: Value, rhs: Value, batch: SymInt, n: SymInt, k: SymInt, *, lower: bool,
              unit: bool) -> Value:
    """X with T X = rhs for [batch, n, n] triangular T (only its `lower` or upper triangle read; a unit
    diagonal assumed when `unit`) and rhs [batch, n, k]: substitution one row per iteration, forward
    for lower, backward for upper."""
    strict = masked(g, tril_mask(g, n, n, -1) if lower else triu_mask(g, n, n, 1), t)
    rows = arange_col(g, n)
    last = as_i64(g, size_sub(g, n, 1))

    def step(body: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
        (x,) = state
        r = i if lower else body.op("Sub", last, i)
        r1 = index1(body, r)
        # unsolved rows of x are still zero, so the product reads solved ones only
        xr = body.op("Sub", body.op("Gather", rhs, r1, axis=1),
                     body.op("MatMul", body.op("Gather", strict, r1, axis=1), x))
        if not unit:
            xr = body.op("Div", xr, body.op("Gather", body.op("Gather", t, r1, axis=1), r1, axis=2))
        return [body.op("Where", body.op("Equal", rows, r), xr, x)]

    return loop(g, n, [fill(g, [batch, n, k], 0, rhs.dtype)], step, name="trsm")[0]


def lu_solve(g: GraphBuilder, lu: Value, perm: Value, rhs: Value, batch: SymInt, n: SymInt, k: SymInt, *,
             adjoint: bool) -> Value:
    """X with A X = rhs (A^H X = rhs when `adjoint`), A = P L U given as packed L\\U and perm."""
    if not adjoint:
        y = gather_rows(g, rhs, perm, batch, n, k)
        y = tri_solve(g, lu, y, batch, n, k, lower=True, unit=True)
        return tri_solve(g, lu, y, batch, n, k, lower=False, unit=False)
    lu_t = transposed(g, lu)
    y = tri_solve(g, lu_t, rhs, batch, n, k, lower=True, unit=False)
    y = tri_solve(g, lu_t, y, batch, n, k, lower=False, unit=True)
    return gather_rows(g, y, inverse_permutation(g, perm, batch, n), batch, n, k)


def identity(g: GraphBuilder, batch: SymInt, n: SymInt, dtype: torch.dtype) -> Value:
    return g.op("Expand", eye(g, n, n, dtype), g.int_list([batch, n, n]))


def factor_and_solve(g: GraphBuilder, a: Value, rhs: Value, batch: SymInt, n: SymInt, k: SymInt, *,
                     adjoint: bool = False) -> tuple[Value, Value, Value, Value]:
    """LU-factor A and solve: (X, LU, zero-based pivots, info) on flattened stacks."""
    lu, pivots, info = lu_loop(g, a, batch, n, n, pivot=True)
    perm = permutation(g, pivots, batch, n, n)
    return lu_solve(g, lu, perm, rhs, batch, n, k, adjoint=adjoint), lu, pivots, info


def inverse(g: GraphBuilder, A: Value, what: str) -> tuple[Value, Value]:
    """(inverse, info int32) of a stack of square matrices, as linalg_inv_ex: solve(A, I)."""
    shape = matrix_shape(g, A, what)
    n = square_size(shape, what)
    batch = shape[:-2]
    b = sym_prod(g, batch)
    x, _, _, info = factor_and_solve(g, flatten(g, A, batch, [n, n]), identity(g, b, n, A.dtype), b, n, n)
    return unflatten(g, x, batch, [n, n]), reshape(g, cast(g, info, torch.int32), batch)


def cholesky_loop(g: GraphBuilder, a: Value, batch: SymInt, n: SymInt) -> tuple[Value, Value]:
    """LAPACK potrf (lower) on a [batch, n, n] stack, reading its lower triangle: (L, info [batch] int64).
    A column whose diagonal is not positive (or NaN) stops the factorization, as potrf does: it keeps
    that diagonal before the square root, and the columns after it keep A's values."""
    rows, cols = arange_col(g, n), arange_row(g, n)
    zero = g.const(0, dtype=a.dtype)

    def step(body: GraphBuilder, j: Value, state: list[Value]) -> list[Value]:
        l, info = state
        j1 = index1(body, j)
        done = body.op("Where", body.op("Less", cols, j), l, zero)  # the finished columns
        c = body.op("Sub", body.op("Gather", l, j1, axis=2),
                    body.op("MatMul", done, transposed(body, body.op("Gather", done, j1, axis=1))))
        d2 = body.op("Gather", c, j1, axis=1)  # [batch, 1, 1]
        ok = body.op("Greater", d2, zero)
        d = body.op("Sqrt", body.op("Where", ok, d2, body.const(1, dtype=a.dtype)))
        column = body.op("Where", body.op("Equal", rows, j), body.op("Where", ok, d, d2),
                         body.op("Where", body.op("Greater", rows, j), body.op("Mul", c, body.op("Reciprocal", d)), zero))
        column = body.op("Where", body.op("Or", ok, body.op("Equal", rows, j)), column, body.op("Gather", l, j1, axis=2))
        running = reshape(body, is_zero_int(body, info), [batch, 1, 1])
        l = body.op("Where", body.op("And", running, body.op("Equal", cols, j)), column, l)
        return [l, first_failure(body, info, body.op("Not", ok), j)]

    start = masked(g, tril_mask(g, n, n, 0), a)
    return loop(g, n, [start, zeros(g, batch)], step, name="potrf")


def cholesky(g: GraphBuilder, self: Value, upper: bool, what: str) -> tuple[Value, Value]:
    """(L, or U = L^H when `upper`, reading that triangle; info int32)."""
    shape = matrix_shape(g, self, what)
    n = square_size(shape, what)
    batch = shape[:-2]
    b = sym_prod(g, batch)
    a = flatten(g, self, batch, [n, n])
    l, info = cholesky_loop(g, transposed(g, a) if upper else a, b, n)
    return unflatten(g, transposed(g, l) if upper else l, batch, [n, n]), reshape(g, cast(g, info, torch.int32), batch)


def cholesky_solve(g: GraphBuilder, rhs: Value, factor: Value, upper: bool, batch: SymInt, n: SymInt,
                   k: SymInt) -> Value:
    """X with (L L^H) X = rhs, or (U^H U) X = rhs when `upper`: two triangular solves."""
    lower = transposed(g, factor) if upper else factor
    y = tri_solve(g, lower, rhs, batch, n, k, lower=True, unit=False)
    return tri_solve(g, transposed(g, lower), y, batch, n, k, lower=False, unit=False)


def is_vector_rhs(A: list[SymInt], B: list[SymInt]) -> bool:
    """linalg.solve's rule: B is a (batch of) vector(s) when 1-D, or of A's shape less the last dim."""
    return len(B) == 1 or (len(A) - 1 == len(B) and same_sizes(B, A[:-1]))


def solve(g: GraphBuilder, A: Value, B: Value, left: bool, what: str) -> tuple[Value, Value, Value, Value]:
    """linalg.solve as _linalg_solve_ex: (X, LU, pivots int32, info int32). X A = B (left=False) is
    A^H X^H = B^H, solved with A's own factors as eager does."""
    symbols: dict[str, Value] = {}
    a_shape = matrix_shape(g, A, what, symbols=symbols)
    n = square_size(a_shape, what)
    if B.dtype != A.dtype or B.shape is None:
        raise NotImplementedError(f"{what} of {A.dtype} and {B.dtype}, or of unknown rank")
    b_shape = sizes(g, B, symbols)
    vector = is_vector_rhs(a_shape, b_shape)
    b_batch, b_tail = (b_shape[:-1], [n, 1]) if vector else (b_shape[:-2], b_shape[-2:])
    # A is factored in its own batch (LU, pivots and info have its batch shape), then broadcast with B's
    a_batch, batch = a_shape[:-2], broadcast_batch(g, a_shape[:-2], b_batch)
    a_count, count = sym_prod(g, a_batch), sym_prod(g, batch)
    lu, pivots, info = lu_loop(g, flatten(g, A, a_batch, [n, n]), a_count, n, n, pivot=True)
    out_shape = batch + ([n] if vector else b_shape[-2:])
    if is_empty(out_shape):
        x = fill(g, out_shape, 0, A.dtype)
    else:
        rhs = flatten(g, reshape(g, B, b_batch + b_tail) if vector else B, batch, b_tail)
        if not left:
            rhs = transposed(g, rhs)
        perm = permutation(g, pivots, a_count, n, n)
        x = lu_solve(g, rebatch(g, lu, a_batch, batch, [n, n]), rebatch(g, perm, a_batch, batch, [n]), rhs, count, n,
                     b_tail[1] if left else b_tail[0], adjoint=not left)
        x = reshape(g, transposed(g, x) if not left else x, out_shape)
    return (x, unflatten(g, lu, a_batch, [n, n]), reshape(g, one_based(g, pivots), a_batch + [n]),
            reshape(g, cast(g, info, torch.int32), a_batch))


def rebatch(g: GraphBuilder, x: Value, batch: list[SymInt], to: list[SymInt], tail: list[SymInt]) -> Value:
    """A flattened stack of `batch` broadcast to a flattened stack of `to`."""
    return x if same_sizes(batch, to) else flatten(g, unflatten(g, x, batch, tail), to, tail)


def solve_results(g: GraphBuilder, A: Value, B: Value, left: bool, what: str) -> tuple[Value, Value, Value, Value]:
    folded = shape_only(g, torch.ops.aten._linalg_solve_ex.default, (A, B), {"left": left})
    return tuple(folded) if folded is not None else solve(g, A, B, left, what)


def lu_factor(g: GraphBuilder, A: Value, pivot: bool, what: str) -> tuple[Value, Value, Value]:
    """(LU, 1-based int32 pivots, int32 info) as linalg_lu_factor_ex."""
    shape = matrix_shape(g, A, what)
    batch, (m, n) = shape[:-2], shape[-2:]
    b = sym_prod(g, batch)
    lu, pivots, info = lu_loop(g, flatten(g, A, batch, [m, n]), b, m, n, pivot=pivot)
    return (unflatten(g, lu, batch, [m, n]), reshape(g, one_based(g, pivots), batch + [size_min(g, m, n)]),
            reshape(g, cast(g, info, torch.int32), batch))


def one_based(g: GraphBuilder, pivots: Value) -> Value:
    return cast(g, g.op("Add", pivots, g.const(1, dtype=I64)), torch.int32)


def lu_factor_results(g: GraphBuilder, A: Value, pivot: bool, what: str) -> tuple[Value, Value, Value]:
    folded = shape_only(g, torch.ops.aten.linalg_lu_factor_ex.default, (A,), {"pivot": pivot})
    return tuple(folded) if folded is not None else lu_factor(g, A, pivot, what)


def unpack_lu(g: GraphBuilder, lu: Value, batch: SymInt, m: SymInt, n: SymInt) -> tuple[Value, Value]:
    """(L [batch, m, k] with its unit diagonal, U [batch, k, n]) from packed factors, k = min(m, n)."""
    k = size_min(g, m, n)
    first = first_indices(g, k)
    l = g.op("Where", tril_mask(g, m, k, -1), g.op("Gather", lu, first, axis=2), eye(g, m, k, lu.dtype))
    u = masked(g, triu_mask(g, k, n, 0), g.op("Gather", lu, first, axis=1))
    return l, u


def solve_with_lu(g: GraphBuilder, LU: Value, pivots: Value, B: Value, left: bool, adjoint: bool, what: str) -> Value:
    """linalg_lu_solve: X A = B (left=False) is A^H X^H = B^H."""
    symbols: dict[str, Value] = {}
    lu_shape = matrix_shape(g, LU, what, symbols=symbols)
    n = square_size(lu_shape, what)
    b_shape = matrix_shape(g, B, what, symbols=symbols)
    if B.dtype != LU.dtype or pivots.shape is None:
        raise NotImplementedError(f"{what}: mixed dtypes or pivots of unknown rank")
    batch = broadcast_batch(g, lu_shape[:-2], sizes(g, pivots, symbols)[:-1], b_shape[:-2])
    count = sym_prod(g, batch)
    rhs = flatten(g, B, batch, b_shape[-2:])
    if not left:
        rhs = transposed(g, rhs)
    k = b_shape[-1] if left else b_shape[-2]
    perm_pivots = reshape(g, g.op("Expand", zero_based(g, pivots), g.int_list(batch + [n])), [count, n])
    x = lu_solve(g, flatten(g, LU, batch, [n, n]), permutation(g, perm_pivots, count, n, n), rhs, count, n, k,
                 adjoint=adjoint != (not left))
    return reshape(g, transposed(g, x) if not left else x, batch + b_shape[-2:])


def solve_triangular(g: GraphBuilder, A: Value, B: Value, *, upper: bool, left: bool, transpose: bool,
                     unitriangular: bool, what: str) -> tuple[Value, list[SymInt]]:
    """X with op(A) X = B (X op(A) = B when not left), op(A) = A or A^T; and the broadcast batch."""
    symbols: dict[str, Value] = {}
    a_shape = matrix_shape(g, A, what, symbols=symbols)
    n = square_size(a_shape, what)
    b_shape = matrix_shape(g, B, what, symbols=symbols)
    if B.dtype != A.dtype:
        raise NotImplementedError(f"{what} of {A.dtype} and {B.dtype}")
    batch = broadcast_batch(g, a_shape[:-2], b_shape[:-2])
    if is_empty(batch + b_shape[-2:]):
        return fill(g, batch + b_shape[-2:], 0, A.dtype), batch
    count = sym_prod(g, batch)
    a, rhs = flatten(g, A, batch, [n, n]), flatten(g, B, batch, b_shape[-2:])
    # X A = B is A^T X^T = B^T; a transposed triangle swaps lower and upper
    flip = transpose != (not left)
    if flip:
        a = transposed(g, a)
    if not left:
        rhs = transposed(g, rhs)
    x = tri_solve(g, a, rhs, count, n, b_shape[-1] if left else b_shape[-2], lower=upper == flip, unit=unitriangular)
    return reshape(g, x if left else transposed(g, x), batch + b_shape[-2:]), batch


def cholesky_results(g: GraphBuilder, self: Value, upper: bool, what: str) -> tuple[Value, Value]:
    folded = shape_only(g, torch.ops.aten.linalg_cholesky_ex.default, (self,), {"upper": upper})
    return tuple(folded) if folded is not None else cholesky(g, self, upper, what)


# The largest 1-norm each degree covers, per working dtype (eager's thetas).
MEXP_THETAS = {
    torch.float32: (1.192092800768788e-07, 5.978858893805233e-04, 5.116619363445086e-02, 5.800524627688768e-01,
                    1.461661507209034e+00, 3.010066362817634e+00),
    torch.float64: (2.220446049250313e-16, 2.580956802971767e-08, 3.397168839976962e-04, 4.991228871115323e-02,
                    2.996158913811580e-01, 1.090863719290036e+00),
}


# Row i: B_i as a combination of (I, A, A^2, A^3).
MEXP_T12 = ((9.0198e-16, 0.46932117595418237389, -0.20099424927047284052, -0.04623946134063071740),
            (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031, 0.01108844528519167989),
            (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968, 0.00610700528898058230),
            (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079, -0.00675951846863086359))


# Row i: B_i as a combination of (I, A, A^2, A^3, A^6).
MEXP_T18 = ((0., -1.00365581030144618291e-01, -8.02924648241156932449e-03, -8.92138498045729985177e-04, 0.),
            (0., 3.97849749499645077844e-01, 1.36783778460411720168e+00, 4.98289622525382669416e-01,
             -6.37898194594723280150e-04),
            (-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02,
             -6.98210122488052056106e-03, 3.34975017086070470649e-05),
            (-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
             2.95552570429315521194e-02, -1.39180257516060693404e-05),
            (0., 0., -9.23364619367118555360e-02, -1.69364939002081722752e-02, -1.40086798182036094347e-05))


def rounded(value: float, dtype: torch.dtype) -> float:
    return torch.tensor(value, dtype=torch.float64).to(dtype).item()


def t8_coefficients(dtype: torch.dtype) -> tuple[float, ...]:
    """x1..x7 and y2 of the degree-8 approximant as eager computes them: sqrt(177) and 2/3 rounded to
    the working dtype, each expression in double, then rounded."""
    r = functools.partial(rounded, dtype=dtype)
    sqrt_177, x3 = r(0.1330413469565007072504e+2), r(2.0 / 3.0)
    return tuple(r(v) for v in (x3 * ((1 + sqrt_177) / 88), x3 * ((1 + sqrt_177) / 352), x3,
                                (-271 + 29 * sqrt_177) / (315 * x3), (-11 + 11 * sqrt_177) / (1260 * x3),
                                (-99 + 11 * sqrt_177) / (5040 * x3), (89 - sqrt_177) / (5040 * x3),
                                (857 - 58 * sqrt_177) / 630))


def matrix_product(g: GraphBuilder, a: Value, b: Value, n: SymInt) -> Value:
    """a @ b for [B, n, n] stacks, rounded as eager's bmm rounds it. Eager multiplies small matrices
    (n^3 < 400) with its own loop, summing the products in index order (baddbmm_cpu_kernel), and leaves
    larger ones to BLAS. MatMul sums in the runtime's own order, and squaring magnifies a difference of
    one rounding beyond float32 tolerances wherever the exponential cancels; so a small product is that
    loop unrolled, a larger one MatMul, whose order is as much the runtime's as eager's is BLAS's. A
    symbolic n takes the loop as an ONNX Loop, eager's order at any size."""
    if not isinstance(n, int):
        def step(body: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
            index = index1(body, body.op("Add", i, body.const(1, dtype=I64)))
            term = body.op("Mul", body.op("Gather", a, index, axis=2), body.op("Gather", b, index, axis=1))
            return [body.op("Add", state[0], term)]

        first = g.const([0], dtype=I64)
        start = g.op("Mul", g.op("Gather", a, first, axis=2), g.op("Gather", b, first, axis=1))
        return loop(g, size_sub(g, n, 1), [start], step, name="product")[0]
    if n ** 3 >= 400:
        return g.op("MatMul", a, b)
    out = None
    for k in range(n):
        index = g.const([k], dtype=I64)
        term = g.op("Mul", g.op("Gather", a, index, axis=2), g.op("Gather", b, index, axis=1))
        out = term if out is None else g.op("Add", out, term)
    return out


class MatrixPowers:
    """A, A^2, A^3, A^6 of a [B, n, n] stack, each made when first asked for, as eager makes them."""

    def __init__(self, g: GraphBuilder, a: Value, n: SymInt) -> None:
        self.g, self.n = g, n
        self.made = {1: a}

    def __getitem__(self, k: int) -> Value:
        if k not in self.made:
            left, right = {2: (1, 1), 3: (1, 2), 6: (3, 3)}[k]
            self.made[k] = matrix_product(self.g, self[left], self[right], self.n)
        return self.made[k]


def combination(g: GraphBuilder, terms: list[Value | None], coefficients, n: SymInt, dtype: torch.dtype) -> Value:
    """sum_j c_j terms_j, summed in order as eager's _compute_linear_combination; a None term is I. Zero
    coefficients are left out (adding an exact 0 changes nothing)."""
    out = None
    for term, c in zip(terms, coefficients):
        if c == 0:
            continue
        if term is None and isinstance(n, int):
            product = g.const(torch.eye(n, dtype=dtype) * rounded(c, dtype))
        elif term is None:
            product = g.op("Mul", eye(g, n, n, dtype), g.const(rounded(c, dtype), dtype=dtype))
        elif c == 1:
            product = term
        else:
            product = g.op("Mul", term, g.const(rounded(c, dtype), dtype=dtype))
        out = product if out is None else g.op("Add", out, product)
    return out


def mexp_t1(g: GraphBuilder, p: MatrixPowers, dtype: torch.dtype) -> Value:
    return combination(g, [None, p[1]], (1, 1), p.n, dtype)


def mexp_t2(g: GraphBuilder, p: MatrixPowers, dtype: torch.dtype) -> Value:
    return combination(g, [None, p[1], p[2]], (1, 1, 0.5), p.n, dtype)


def mexp_t4(g: GraphBuilder, p: MatrixPowers, dtype: torch.dtype) -> Value:
    """I + A + A^2 (I/2 + A/6 + A^2/24)."""
    tail = matrix_product(g, p[2], combination(g, [None, p[1], p[2]], (1 / 2, 1 / 6, 1 / 24), p.n, dtype), p.n)
    return combination(g, [None, p[1], tail], (1, 1, 1), p.n, dtype)


def mexp_t8(g: GraphBuilder, p: MatrixPowers, dtype: torch.dtype) -> Value:
    """I + A + y2 A^2 + A8, A8 = (x3 A^2 + A4)(x4 I + x5 A + x6 A^2 + x7 A4), A4 = A^2 (x1 A + x2 A^2)."""
    x1, x2, x3, x4, x5, x6, x7, y2 = t8_coefficients(dtype)
    a4 = matrix_product(g, p[2], combination(g, [p[1], p[2]], (x1, x2), p.n, dtype), p.n)
    a8 = matrix_product(g, combination(g, [p[2], a4], (x3, 1), p.n, dtype),
                        combination(g, [None, p[1], p[2], a4], (x4, x5, x6, x7), p.n, dtype), p.n)
    return combination(g, [None, p[1], p[2], a8], (1, 1, y2, 1), p.n, dtype)


def mexp_t12(g: GraphBuilder, p: MatrixPowers, dtype: torch.dtype) -> Value:
    """B0 + (B1 + A6) A6, A6 = B2 + B3 B3."""
    b = [combination(g, [None, p[1], p[2], p[3]], row, p.n, dtype) for row in MEXP_T12]
    a6 = g.op("Add", b[2], matrix_product(g, b[3], b[3], p.n))
    return g.op("Add", b[0], matrix_product(g, g.op("Add", b[1], a6), a6, p.n))


def mexp_t18(g: GraphBuilder, p: MatrixPowers, dtype: torch.dtype) -> Value:
    """B1 + (B2 + A9) A9, A9 = B3 + B0 B4."""
    b = [combination(g, [None, p[1], p[2], p[3], p[6]], row, p.n, dtype) for row in MEXP_T18]
    a9 = g.op("Add", b[3], matrix_product(g, b[0], b[4], p.n))
    return g.op("Add", b[1], matrix_product(g, g.op("Add", b[2], a9), a9, p.n))


def reflector(g: GraphBuilder, a: Value, j: Value, rows: Value) -> Value:
    """v_j [batch, m, 1] of LAPACK's packed reflectors: 0 above row j, 1 at j, a[:, j] below."""
    one, zero = g.const(1, dtype=a.dtype), g.const(0, dtype=a.dtype)
    return g.op("Where", g.op("Greater", rows, j), g.op("Gather", a, index1(g, j), axis=2),
                g.op("Where", g.op("Equal", rows, j), one, zero))


def apply_reflectors(g: GraphBuilder, a: Value, taus: Value, c: Value, batch: SymInt, m: SymInt, k: SymInt, *, left: bool,
                     transpose: bool) -> Value:
    """LAPACK ormqr: Q C or Q^T C (left), C Q or C Q^T, for Q = H_0 ... H_{k-1}, H_j = I - tau_j v_j v_j^T
    with the v_j packed in a [batch, m, >=k] and taus [batch, k]; C [batch, m, s] (left) or [batch, s, m]."""
    rows = arange_col(g, m)
    last_first = left != transpose  # Q C = H_0 (H_1 (... (H_{k-1} C))); C Q = ((C H_0) H_1) ...
    last = as_i64(g, size_sub(g, k, 1))

    def step(body: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
        (x,) = state
        j = body.op("Sub", last, i) if last_first else i
        v = reflector(body, a, j, rows)
        t = reshape(body, body.op("Gather", taus, index1(body, j), axis=1), [batch, 1, 1])
        if left:
            update = body.op("Mul", body.op("Mul", v, t), body.op("MatMul", transposed(body, v), x))
        else:
            update = body.op("Mul", body.op("Mul", body.op("MatMul", x, v), t), transposed(body, v))
        return [body.op("Sub", x, update)]

    return loop(g, k, [c], step, name="ormqr")[0]


def geqrf_loop(g: GraphBuilder, a: Value, batch: SymInt, m: SymInt, n: SymInt) -> tuple[Value, Value]:
    """LAPACK geqr2 on a [batch, m, n] stack: (R above the diagonal with the reflectors below, taus
    [batch, min(m, n)]). Column j's reflector (dlarfg) maps it to beta e_j, beta = -sign(alpha) ||x||
    (alpha = x_j, +0 counting as positive), tau = (beta - alpha) / beta, v = x / (alpha - beta) below j;
    a column already zero below j takes tau = 0 and stays."""
    rows, cols = arange_col(g, m), arange_row(g, n)
    zero, one = g.const(0, dtype=a.dtype), g.const(1, dtype=a.dtype)
    ones = g.const(torch.ones(1, m, dtype=a.dtype)) if isinstance(m, int) else fill(g, [1, m], 1, a.dtype)

    def step(body: GraphBuilder, j: Value, state: list[Value]) -> list[Value]:
        (r,) = state
        j1 = index1(body, j)
        col = body.op("Gather", r, j1, axis=2)  # [batch, m, 1]
        below = body.op("Greater", rows, j)
        alpha = body.op("Gather", col, j1, axis=1)  # [batch, 1, 1]
        tail2 = body.op("MatMul", ones, body.op("Where", below, body.op("Mul", col, col), zero))
        trivial = is_zero(body, tail2)
        norm = body.op("Sqrt", body.op("Add", body.op("Mul", alpha, alpha), tail2))
        beta = body.op("Where", body.op("Less", alpha, zero), norm, body.op("Neg", norm))
        safe_beta = body.op("Where", trivial, one, beta)
        tau = body.op("Where", trivial, zero, body.op("Div", body.op("Sub", safe_beta, alpha), safe_beta))
        scale = body.op("Reciprocal", body.op("Where", trivial, one, body.op("Sub", alpha, beta)))
        v = body.op("Where", below, body.op("Mul", col, scale), body.op("Where", body.op("Equal", rows, j), one, zero))
        # H = I - tau v v^T on the columns after j
        w = body.op("MatMul", transposed(body, v), r)  # [batch, 1, n]
        updated = body.op("Sub", r, body.op("Mul", body.op("Mul", v, tau), w))
        r = body.op("Where", body.op("Greater", cols, j), updated, r)
        packed = body.op("Where", body.op("Equal", rows, j), body.op("Where", trivial, alpha, beta),
                         body.op("Where", below, body.op("Where", trivial, col, v), col))
        r = body.op("Where", body.op("Equal", cols, j), packed, r)
        return [r, reshape(body, tau, [batch])]

    r, taus = loop(g, size_min(g, m, n), [a], step, name="geqrf", scan_outputs=1)
    return r, g.op("Transpose", taus, perm=[1, 0])


def geqrf(g: GraphBuilder, self: Value, what: str) -> tuple[Value, Value, list[SymInt], SymInt, SymInt]:
    """(packed QR, taus) on flattened stacks, with the batch shape and m, n."""
    shape = matrix_shape(g, self, what)
    batch, (m, n) = shape[:-2], shape[-2:]
    count = sym_prod(g, batch)
    r, taus = geqrf_loop(g, flatten(g, self, batch, [m, n]), count, m, n)
    return r, taus, batch, m, n


def qr(g: GraphBuilder, A: Value, mode: str, what: str) -> tuple[Value, Value]:
    """linalg.qr: Q from the reflectors applied to the identity's first columns, R the upper triangle."""
    if mode not in ("reduced", "complete", "r"):
        raise NotImplementedError(f"{what}: unknown mode {mode!r}")
    folded = shape_only(g, torch.ops.aten.linalg_qr.default, (A, mode))
    if folded is not None:
        return tuple(folded)
    packed, taus, batch, m, n = geqrf(g, A, what)
    count, k = sym_prod(g, batch), size_min(g, m, n)
    rows = m if mode == "complete" else k
    r = packed if same_size(rows, m) else g.op("Gather", packed, first_indices(g, rows), axis=1)
    r = unflatten(g, masked(g, triu_mask(g, rows, n, 0), r), batch, [rows, n])
    if mode == "r":
        return fill(g, [0], 0, A.dtype), r
    start = g.op("Expand", eye(g, m, rows, A.dtype), g.int_list([count, m, rows]))
    q = apply_reflectors(g, packed, taus, start, count, m, k, left=True, transpose=False)
    return unflatten(g, q, batch, [m, rows]), r


