"""Opset-9 base, linear algebra: factorizations, solves, inverses and matrix functions written as fixed-size elimination on static shapes.

ONNX has no factorization ops, so each algorithm is an ONNX Loop over the columns (or rows) of a
stack of static-size matrices flattened to [B, m, n]: one iteration is a handful of vectorized row
operations, Gather/Where with masks built from the iteration number, so the node count does not grow
with the matrix size. LU (getrf), Cholesky (potrf), Householder QR (geqrf/orgqr/ormqr) and
Bunch-Kaufman LDL^T (sytrf/sytrs) follow LAPACK's pivoting and sign conventions, so factors, pivots
and info are eager's, not merely equivalent ones. Eigenvalues and singular values, whose values do not
depend on the algorithm, come from cyclic Jacobi. Empty inputs have shape-only results, folded.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.utils._pytree as pytree

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast, loop, norm_dims, scalar_type
from aten2onnx.symbolic.opset9 import fill, reshape
from aten2onnx.symbolic.opset9_math import is_zero
from aten2onnx.symbolic.opset9_reduce import vector_norm
from aten2onnx.symbolic.opset9_shape import matmul

register = functools.partial(registry.register, opset=9)

I64 = torch.int64
FLOAT_DTYPES = (torch.float32, torch.float64)

# -- static stacks of matrices ------------------------------------------------------------------------


def matrix_shape(x: Value, what: str, *, dtypes=FLOAT_DTYPES) -> list[int]:
    """The static shape of a stack of matrices, after checking what the algorithms below take."""
    if x.dtype not in dtypes:
        raise NotImplementedError(f"{what} of {x.dtype} is exported for {', '.join(map(str, dtypes))} only")
    if not x.is_static:
        raise NotImplementedError(f"{what} is exported for static matrix and batch sizes only")
    if len(x.shape) < 2:
        raise NotImplementedError(f"{what} takes matrices; got rank {len(x.shape)}")
    return list(x.shape)


def square_size(shape: list[int], what: str) -> int:
    if shape[-1] != shape[-2]:
        raise NotImplementedError(f"{what} takes square matrices; got {shape[-2]}x{shape[-1]}")
    return shape[-1]


def broadcast_batch(*batches: list[int]) -> list[int]:
    return list(torch.broadcast_shapes(*map(tuple, batches)))


def flatten(g: GraphBuilder, x: Value, batch: list[int], tail: list[int]) -> Value:
    """x (a batch broadcastable to `batch`, then `tail`) as [prod(batch), *tail]; no dim may be 0."""
    if list(x.shape[:len(x.shape) - len(tail)]) != batch:
        x = g.op("Expand", x, g.const(batch + tail, dtype=I64))
    return reshape(g, x, [math.prod(batch), *tail])


def unflatten(g: GraphBuilder, x: Value, batch: list[int], tail: list[int]) -> Value:
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


def arange_col(g: GraphBuilder, n: int) -> Value:
    return g.const(torch.arange(n).reshape(n, 1))


def arange_row(g: GraphBuilder, n: int) -> Value:
    return g.const(torch.arange(n).reshape(1, n))


def gather_rows(g: GraphBuilder, x: Value, index: Value, batch: int, rows: int, cols: int) -> Value:
    """x[b, index[b, r], :] of a [batch, rows, cols] stack, index [batch, r] int64: [batch, r, cols]. One
    Gather on the flattened rows (GatherElements would need opset 11)."""
    offsets = g.const((torch.arange(batch) * rows).reshape(batch, 1))
    return g.op("Gather", reshape(g, x, [batch * rows, cols]), g.op("Add", index, offsets), axis=0)


def first_failure(g: GraphBuilder, info: Value, failed: Value, k: Value) -> Value:
    """info [B] int64 keeps the first 1-based step at which `failed` (any shape of B elements) held."""
    fresh = g.op("And", is_zero_int(g, info), reshape(g, failed, [-1]))
    return g.op("Where", fresh, g.op("Add", k, g.const(1, dtype=I64)), info)


def is_zero_int(g: GraphBuilder, x: Value) -> Value:
    return g.op("Equal", x, g.const(0, dtype=x.dtype))


# -- LU with partial pivoting ---------------------------------------------------------------------------


def lu_loop(g: GraphBuilder, a: Value, batch: int, m: int, n: int, *, pivot: bool) -> tuple[Value, Value, Value]:
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
            p = body.op("Expand", k, body.const([batch], dtype=I64))
        col = body.op("Gather", lu, k1, axis=2)
        d = body.op("Gather", row_p, k1, axis=2)  # [batch, 1, 1]
        singular = is_zero(body, d)
        l = body.op("Mul", col, body.op("Reciprocal", body.op("Where", singular, one, d)))
        below = body.op("Greater", rows, k)
        trailing = body.op("And", below, body.op("Greater", cols, k))
        lu = body.op("Where", trailing, body.op("Sub", lu, body.op("Mul", l, row_p)), lu)
        lu = body.op("Where", body.op("And", below, body.op("Equal", cols, k)), l, lu)
        return [lu, first_failure(body, info, singular, k), p]

    info0 = g.const(torch.zeros(batch, dtype=I64))
    lu, info, pivots = loop(g, min(m, n), [a, info0], step, name="lu", scan_outputs=1)
    return lu, g.op("Transpose", pivots, perm=[1, 0]), info


def zero_based(g: GraphBuilder, pivots: Value) -> Value:
    """LAPACK's 1-based pivots as int64 indices."""
    return g.op("Sub", cast(g, pivots, I64), g.const(1, dtype=I64))


def permutation(g: GraphBuilder, pivots: Value, batch: int, m: int, k: int) -> Value:
    """perm [batch, m] int64 with (P^T A)[i] = A[perm[i]]: the swaps i <-> pivots[i] (zero-based, [batch, k])
    applied in order to 0..m-1, as LAPACK's laswp applies them."""
    idx = arange_row(g, m)
    start = g.const(torch.arange(m).repeat(batch, 1))
    offsets = g.const((torch.arange(batch) * m).reshape(batch, 1))

    def step(body: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
        (perm,) = state
        i1 = index1(body, i)
        p = body.op("Gather", pivots, i1, axis=1)  # [batch, 1]
        at_i = body.op("Gather", perm, i1, axis=1)
        at_p = body.op("Gather", reshape(body, perm, [batch * m]), body.op("Add", p, offsets), axis=0)
        swapped = body.op("Where", body.op("Equal", idx, p), at_i, perm)
        return [body.op("Where", body.op("Equal", idx, i), at_p, swapped)]

    return loop(g, k, [start], step, name="laswp")[0]


def inverse_permutation(g: GraphBuilder, perm: Value, batch: int, m: int) -> Value:
    """inv [batch, m] with inv[perm[i]] = i: the position of each row in perm (ArgMax of a one-hot)."""
    onehot = g.op("Equal", reshape(g, perm, [batch, 1, m]), arange_col(g, m))  # [batch, m(value), m(position)]
    return g.op("ArgMax", cast(g, onehot, torch.float32), axis=2, keepdims=0)


def permutation_matrix(g: GraphBuilder, perm: Value, batch: int, m: int, dtype: torch.dtype) -> Value:
    """P with A = P (P^T A): P[r, c] = (perm[c] == r)."""
    return cast(g, g.op("Equal", arange_col(g, m), reshape(g, perm, [batch, 1, m])), dtype)


def tril_mask(g: GraphBuilder, m: int, n: int, diagonal: int) -> Value:
    return g.const(torch.ones(m, n, dtype=torch.bool).tril(diagonal))


def triu_mask(g: GraphBuilder, m: int, n: int, diagonal: int) -> Value:
    return g.const(torch.ones(m, n, dtype=torch.bool).triu(diagonal))


def masked(g: GraphBuilder, mask: Value, x: Value) -> Value:
    return g.op("Where", mask, x, g.const(0, dtype=x.dtype))


# -- triangular solves -----------------------------------------------------------------------------------


def tri_solve(g: GraphBuilder, t: Value, rhs: Value, batch: int, n: int, k: int, *, lower: bool,
              unit: bool) -> Value:
    """X with T X = rhs for [batch, n, n] triangular T (only its `lower` or upper triangle read; a unit
    diagonal assumed when `unit`) and rhs [batch, n, k]: substitution one row per iteration, forward
    for lower, backward for upper."""
    strict = masked(g, tril_mask(g, n, n, -1) if lower else triu_mask(g, n, n, 1), t)
    rows = arange_col(g, n)

    def step(body: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
        (x,) = state
        r = i if lower else body.op("Sub", body.const(n - 1, dtype=I64), i)
        r1 = index1(body, r)
        # unsolved rows of x are still zero, so the product reads solved ones only
        xr = body.op("Sub", body.op("Gather", rhs, r1, axis=1),
                     body.op("MatMul", body.op("Gather", strict, r1, axis=1), x))
        if not unit:
            xr = body.op("Div", xr, body.op("Gather", body.op("Gather", t, r1, axis=1), r1, axis=2))
        return [body.op("Where", body.op("Equal", rows, r), xr, x)]

    return loop(g, n, [fill(g, [batch, n, k], 0, rhs.dtype)], step, name="trsm")[0]


def lu_solve(g: GraphBuilder, lu: Value, perm: Value, rhs: Value, batch: int, n: int, k: int, *,
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


def identity(g: GraphBuilder, batch: int, n: int, dtype: torch.dtype) -> Value:
    return g.op("Expand", g.const(torch.eye(n, dtype=dtype)), g.const([batch, n, n], dtype=I64))


def factor_and_solve(g: GraphBuilder, a: Value, rhs: Value, batch: int, n: int, k: int, *,
                     adjoint: bool = False) -> tuple[Value, Value, Value, Value]:
    """LU-factor A and solve: (X, LU, zero-based pivots, info) on flattened stacks."""
    lu, pivots, info = lu_loop(g, a, batch, n, n, pivot=True)
    perm = permutation(g, pivots, batch, n, n)
    return lu_solve(g, lu, perm, rhs, batch, n, k, adjoint=adjoint), lu, pivots, info


def inverse(g: GraphBuilder, A: Value, what: str) -> tuple[Value, Value]:
    """(inverse, info int32) of a stack of square matrices, as linalg_inv_ex: solve(A, I)."""
    shape = matrix_shape(A, what)
    n = square_size(shape, what)
    batch = shape[:-2]
    b = math.prod(batch)
    x, _, _, info = factor_and_solve(g, flatten(g, A, batch, [n, n]), identity(g, b, n, A.dtype), b, n, n)
    return unflatten(g, x, batch, [n, n]), reshape(g, cast(g, info, torch.int32), batch)


# -- Cholesky --------------------------------------------------------------------------------------------


def cholesky_loop(g: GraphBuilder, a: Value, batch: int, n: int) -> tuple[Value, Value]:
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
    return loop(g, n, [start, g.const(torch.zeros(batch, dtype=I64))], step, name="potrf")


def cholesky(g: GraphBuilder, self: Value, upper: bool, what: str) -> tuple[Value, Value]:
    """(L, or U = L^H when `upper`, reading that triangle; info int32)."""
    shape = matrix_shape(self, what)
    n = square_size(shape, what)
    batch = shape[:-2]
    b = math.prod(batch)
    a = flatten(g, self, batch, [n, n])
    l, info = cholesky_loop(g, transposed(g, a) if upper else a, b, n)
    return unflatten(g, transposed(g, l) if upper else l, batch, [n, n]), reshape(g, cast(g, info, torch.int32), batch)


def cholesky_solve(g: GraphBuilder, rhs: Value, factor: Value, upper: bool, batch: int, n: int, k: int) -> Value:
    """X with (L L^H) X = rhs, or (U^H U) X = rhs when `upper`: two triangular solves."""
    lower = transposed(g, factor) if upper else factor
    y = tri_solve(g, lower, rhs, batch, n, k, lower=True, unit=False)
    return tri_solve(g, transposed(g, lower), y, batch, n, k, lower=False, unit=False)


# -- handlers: inverses and general solves -----------------------------------------------------------------


@register("aten::linalg_inv.default")
def aten_linalg_inv(g, A):
    """linalg_inv(Tensor A) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.linalg_inv_ex.default, (A,))
    if folded is not None:
        return folded[0]
    return inverse(g, A, "linalg_inv")[0]


@register("aten::linalg_inv_ex.default")
def aten_linalg_inv_ex(g, A, *, check_errors=False):
    """linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)"""
    folded = shape_only(g, torch.ops.aten.linalg_inv_ex.default, (A,))
    if folded is not None:
        return tuple(folded)
    return inverse(g, A, "linalg_inv_ex")


@register("aten::inverse.default")
def aten_inverse(g, self):
    """inverse(Tensor self) -> Tensor"""
    return aten_linalg_inv(g, self)


def is_vector_rhs(A: list[int], B: list[int]) -> bool:
    """linalg.solve's rule: B is a (batch of) vector(s) when 1-D, or of A's shape less the last dim."""
    return len(B) == 1 or (len(A) - 1 == len(B) and B == A[:-1])


def solve(g: GraphBuilder, A: Value, B: Value, left: bool, what: str) -> tuple[Value, Value, Value, Value]:
    """linalg.solve as _linalg_solve_ex: (X, LU, pivots int32, info int32). X A = B (left=False) is
    A^H X^H = B^H, solved with A's own factors as eager does."""
    a_shape = matrix_shape(A, what)
    n = square_size(a_shape, what)
    if B.dtype != A.dtype or not B.is_static:
        raise NotImplementedError(f"{what} of {A.dtype} and {B.dtype}, or of a dynamic shape")
    b_shape = list(B.shape)
    vector = is_vector_rhs(a_shape, b_shape)
    b_batch, b_tail = (b_shape[:-1], [n, 1]) if vector else (b_shape[:-2], b_shape[-2:])
    # A is factored in its own batch (LU, pivots and info have its batch shape), then broadcast with B's
    a_batch, batch = a_shape[:-2], broadcast_batch(a_shape[:-2], b_batch)
    a_count, count = math.prod(a_batch), math.prod(batch)
    lu, pivots, info = lu_loop(g, flatten(g, A, a_batch, [n, n]), a_count, n, n, pivot=True)
    out_shape = batch + ([n] if vector else b_shape[-2:])
    if 0 in out_shape:
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


def rebatch(g: GraphBuilder, x: Value, batch: list[int], to: list[int], tail: list[int]) -> Value:
    """A flattened stack of `batch` broadcast to a flattened stack of `to`."""
    return x if batch == to else flatten(g, unflatten(g, x, batch, tail), to, tail)


def solve_results(g: GraphBuilder, A: Value, B: Value, left: bool, what: str) -> tuple[Value, Value, Value, Value]:
    folded = shape_only(g, torch.ops.aten._linalg_solve_ex.default, (A, B), {"left": left})
    return tuple(folded) if folded is not None else solve(g, A, B, left, what)


@register("aten::linalg_solve.default")
def aten_linalg_solve(g, A, B, *, left=True):
    """linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor"""
    return solve_results(g, A, B, left, "linalg_solve")[0]


@register("aten::linalg_solve_ex.default")
def aten_linalg_solve_ex(g, A, B, *, left=True, check_errors=False):
    """linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) -> (Tensor result, Tensor info)"""
    x, _, _, info = solve_results(g, A, B, left, "linalg_solve_ex")
    return x, info


@register("aten::_linalg_solve_ex.default")
def aten__linalg_solve_ex(g, A, B, *, left=True, check_errors=False):
    """_linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) -> (Tensor result, Tensor LU, Tensor pivots, Tensor info)"""
    return solve_results(g, A, B, left, "_linalg_solve_ex")


# -- handlers: LU ------------------------------------------------------------------------------------------


def lu_factor(g: GraphBuilder, A: Value, pivot: bool, what: str) -> tuple[Value, Value, Value]:
    """(LU, 1-based int32 pivots, int32 info) as linalg_lu_factor_ex."""
    shape = matrix_shape(A, what)
    batch, (m, n) = shape[:-2], shape[-2:]
    b = math.prod(batch)
    lu, pivots, info = lu_loop(g, flatten(g, A, batch, [m, n]), b, m, n, pivot=pivot)
    return (unflatten(g, lu, batch, [m, n]), reshape(g, one_based(g, pivots), batch + [min(m, n)]),
            reshape(g, cast(g, info, torch.int32), batch))


def one_based(g: GraphBuilder, pivots: Value) -> Value:
    return cast(g, g.op("Add", pivots, g.const(1, dtype=I64)), torch.int32)


def lu_factor_results(g: GraphBuilder, A: Value, pivot: bool, what: str) -> tuple[Value, Value, Value]:
    folded = shape_only(g, torch.ops.aten.linalg_lu_factor_ex.default, (A,), {"pivot": pivot})
    return tuple(folded) if folded is not None else lu_factor(g, A, pivot, what)


@register("aten::linalg_lu_factor.default")
def aten_linalg_lu_factor(g, A, *, pivot=True):
    """linalg_lu_factor(Tensor A, *, bool pivot=True) -> (Tensor LU, Tensor pivots)"""
    return lu_factor_results(g, A, pivot, "linalg_lu_factor")[:2]


@register("aten::linalg_lu_factor_ex.default")
def aten_linalg_lu_factor_ex(g, A, *, pivot=True, check_errors=False):
    """linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> (Tensor LU, Tensor pivots, Tensor info)"""
    return lu_factor_results(g, A, pivot, "linalg_lu_factor_ex")


@register("aten::_lu_with_info.default")
def aten__lu_with_info(g, self, pivot=True, check_errors=True):
    """_lu_with_info(Tensor self, bool pivot=True, bool check_errors=True) -> (Tensor LU, Tensor pivots, Tensor info)"""
    return lu_factor_results(g, self, pivot, "_lu_with_info")


def unpack_lu(g: GraphBuilder, lu: Value, batch: int, m: int, n: int) -> tuple[Value, Value]:
    """(L [batch, m, k] with its unit diagonal, U [batch, k, n]) from packed factors, k = min(m, n)."""
    k = min(m, n)
    first = g.const(list(range(k)), dtype=I64)
    l = g.op("Where", tril_mask(g, m, k, -1), g.op("Gather", lu, first, axis=2), g.const(torch.eye(m, k, dtype=lu.dtype)))
    u = masked(g, triu_mask(g, k, n, 0), g.op("Gather", lu, first, axis=1))
    return l, u


@register("aten::linalg_lu.default")
def aten_linalg_lu(g, A, *, pivot=True):
    """linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor P, Tensor L, Tensor U)"""
    folded = shape_only(g, torch.ops.aten.linalg_lu.default, (A,), {"pivot": pivot})
    if folded is not None:
        return tuple(folded)
    shape = matrix_shape(A, "linalg_lu")
    batch, (m, n) = shape[:-2], shape[-2:]
    b, k = math.prod(batch), min(m, n)
    lu, pivots, _ = lu_loop(g, flatten(g, A, batch, [m, n]), b, m, n, pivot=pivot)
    l, u = unpack_lu(g, lu, b, m, n)
    l, u = unflatten(g, l, batch, [m, k]), unflatten(g, u, batch, [k, n])
    if not pivot:
        return fill(g, [0], 0, A.dtype), l, u
    p = permutation_matrix(g, permutation(g, pivots, b, m, k), b, m, A.dtype)
    return unflatten(g, p, batch, [m, m]), l, u


@register("aten::lu_unpack.default")
def aten_lu_unpack(g, LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, bool unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)"""
    folded = shape_only(g, torch.ops.aten.lu_unpack.default, (LU_data, LU_pivots, unpack_data, unpack_pivots))
    if folded is not None:
        return tuple(folded)
    shape = matrix_shape(LU_data, "lu_unpack")
    batch, (m, n) = shape[:-2], shape[-2:]
    b, k = math.prod(batch), min(m, n)
    empty = fill(g, [0], 0, LU_data.dtype)
    l = u = p = empty
    if unpack_data:
        l, u = unpack_lu(g, flatten(g, LU_data, batch, [m, n]), b, m, n)
        l, u = unflatten(g, l, batch, [m, k]), unflatten(g, u, batch, [k, n])
    if unpack_pivots:
        if not LU_pivots.is_static:
            raise NotImplementedError("lu_unpack is exported for static pivot shapes only")
        pivots = reshape(g, zero_based(g, LU_pivots), [b, k])
        p = unflatten(g, permutation_matrix(g, permutation(g, pivots, b, m, k), b, m, LU_data.dtype), batch, [m, m])
    return p, l, u


def solve_with_lu(g: GraphBuilder, LU: Value, pivots: Value, B: Value, left: bool, adjoint: bool, what: str) -> Value:
    """linalg_lu_solve: X A = B (left=False) is A^H X^H = B^H."""
    lu_shape = matrix_shape(LU, what)
    n = square_size(lu_shape, what)
    b_shape = matrix_shape(B, what)
    if B.dtype != LU.dtype or not pivots.is_static:
        raise NotImplementedError(f"{what}: mixed dtypes or dynamic pivots")
    batch = broadcast_batch(lu_shape[:-2], list(pivots.shape[:-1]), b_shape[:-2])
    count = math.prod(batch)
    rhs = flatten(g, B, batch, b_shape[-2:])
    if not left:
        rhs = transposed(g, rhs)
    k = b_shape[-1] if left else b_shape[-2]
    perm_pivots = reshape(g, g.op("Expand", zero_based(g, pivots), g.const(batch + [n], dtype=I64)), [count, n])
    x = lu_solve(g, flatten(g, LU, batch, [n, n]), permutation(g, perm_pivots, count, n, n), rhs, count, n, k,
                 adjoint=adjoint != (not left))
    return reshape(g, transposed(g, x) if not left else x, batch + b_shape[-2:])


@register("aten::linalg_lu_solve.default")
def aten_linalg_lu_solve(g, LU, pivots, B, *, left=True, adjoint=False):
    """linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, bool adjoint=False) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.linalg_lu_solve.default, (LU, pivots, B), {"left": left, "adjoint": adjoint})
    if folded is not None:
        return folded[0]
    return solve_with_lu(g, LU, pivots, B, left, adjoint, "linalg_lu_solve")


@register("aten::lu_solve.default")
def aten_lu_solve(g, self, LU_data, LU_pivots):
    """lu_solve(Tensor self, Tensor LU_data, Tensor LU_pivots) -> Tensor"""
    return aten_linalg_lu_solve(g, LU_data, LU_pivots, self)


# -- handlers: triangular solves -----------------------------------------------------------------------


def solve_triangular(g: GraphBuilder, A: Value, B: Value, *, upper: bool, left: bool, transpose: bool,
                     unitriangular: bool, what: str) -> tuple[Value, list[int]]:
    """X with op(A) X = B (X op(A) = B when not left), op(A) = A or A^T; and the broadcast batch."""
    a_shape = matrix_shape(A, what)
    n = square_size(a_shape, what)
    b_shape = matrix_shape(B, what)
    if B.dtype != A.dtype:
        raise NotImplementedError(f"{what} of {A.dtype} and {B.dtype}")
    batch = broadcast_batch(a_shape[:-2], b_shape[:-2])
    if 0 in batch + b_shape[-2:]:
        return fill(g, batch + b_shape[-2:], 0, A.dtype), batch
    count = math.prod(batch)
    a, rhs = flatten(g, A, batch, [n, n]), flatten(g, B, batch, b_shape[-2:])
    # X A = B is A^T X^T = B^T; a transposed triangle swaps lower and upper
    flip = transpose != (not left)
    if flip:
        a = transposed(g, a)
    if not left:
        rhs = transposed(g, rhs)
    x = tri_solve(g, a, rhs, count, n, b_shape[-1] if left else b_shape[-2], lower=upper == flip, unit=unitriangular)
    return reshape(g, x if left else transposed(g, x), batch + b_shape[-2:]), batch


@register("aten::linalg_solve_triangular.default")
def aten_linalg_solve_triangular(g, self, B, *, upper, left=True, unitriangular=False):
    """linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, bool unitriangular=False) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.linalg_solve_triangular.default, (self, B),
                        {"upper": upper, "left": left, "unitriangular": unitriangular})
    if folded is not None:
        return folded[0]
    return solve_triangular(g, self, B, upper=upper, left=left, transpose=False, unitriangular=unitriangular,
                            what="linalg_solve_triangular")[0]


@register("aten::triangular_solve.default")
def aten_triangular_solve(g, self, A, upper=True, transpose=False, unitriangular=False):
    """triangular_solve(Tensor self, Tensor A, bool upper=True, bool transpose=False, bool unitriangular=False) -> (Tensor solution, Tensor cloned_coefficient)"""
    folded = shape_only(g, torch.ops.aten.triangular_solve.default, (self, A, upper, transpose, unitriangular))
    if folded is not None:
        return tuple(folded)
    x, batch = solve_triangular(g, A, self, upper=upper, left=True, transpose=transpose, unitriangular=unitriangular,
                                what="triangular_solve")
    n = A.shape[-1]
    coefficient = A if list(A.shape[:-2]) == batch else g.op("Expand", A, g.const(batch + [n, n], dtype=I64))
    return x, g.op("Identity", coefficient)


# -- handlers: Cholesky ------------------------------------------------------------------------------------


def cholesky_results(g: GraphBuilder, self: Value, upper: bool, what: str) -> tuple[Value, Value]:
    folded = shape_only(g, torch.ops.aten.linalg_cholesky_ex.default, (self,), {"upper": upper})
    return tuple(folded) if folded is not None else cholesky(g, self, upper, what)


@register("aten::linalg_cholesky.default")
def aten_linalg_cholesky(g, self, *, upper=False):
    """linalg_cholesky(Tensor self, *, bool upper=False) -> Tensor"""
    return cholesky_results(g, self, upper, "linalg_cholesky")[0]


@register("aten::linalg_cholesky_ex.default")
def aten_linalg_cholesky_ex(g, self, *, upper=False, check_errors=False):
    """linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)"""
    return cholesky_results(g, self, upper, "linalg_cholesky_ex")


@register("aten::cholesky.default")
def aten_cholesky(g, self, upper=False):
    """cholesky(Tensor self, bool upper=False) -> Tensor"""
    return cholesky_results(g, self, upper, "cholesky")[0]


@register("aten::cholesky_solve.default")
def aten_cholesky_solve(g, self, input2, upper=False):
    """cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.cholesky_solve.default, (self, input2, upper))
    if folded is not None:
        return folded[0]
    f_shape = matrix_shape(input2, "cholesky_solve")
    n = square_size(f_shape, "cholesky_solve")
    b_shape = matrix_shape(self, "cholesky_solve")
    if self.dtype != input2.dtype:
        raise NotImplementedError(f"cholesky_solve of {self.dtype} and {input2.dtype}")
    batch = broadcast_batch(f_shape[:-2], b_shape[:-2])
    count = math.prod(batch)
    x = cholesky_solve(g, flatten(g, self, batch, b_shape[-2:]), flatten(g, input2, batch, [n, n]), upper,
                       count, n, b_shape[-1])
    return reshape(g, x, batch + b_shape[-2:])


@register("aten::cholesky_inverse.default")
def aten_cholesky_inverse(g, self, upper=False):
    """cholesky_inverse(Tensor self, bool upper=False) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.cholesky_inverse.default, (self, upper))
    if folded is not None:
        return folded[0]
    shape = matrix_shape(self, "cholesky_inverse")
    n = square_size(shape, "cholesky_inverse")
    batch = shape[:-2]
    count = math.prod(batch)
    x = cholesky_solve(g, identity(g, count, n, self.dtype), flatten(g, self, batch, [n, n]), upper, count, n, n)
    return unflatten(g, x, batch, [n, n])


# -- handlers: matrix functions -------------------------------------------------------------------------


@register("aten::linalg_matrix_power.default", "aten::matrix_power.default")
def aten_linalg_matrix_power(g, self, n):
    """linalg_matrix_power(Tensor self, int n) -> Tensor"""
    if n < 0:
        self, n = aten_linalg_inv(g, self), -n
    if n == 0:
        shape = matrix_shape(self, "matrix_power", dtypes=(self.dtype,))
        size = square_size(shape, "matrix_power")
        return g.op("Expand", g.const(torch.eye(size, dtype=self.dtype)), g.const(shape, dtype=I64))
    if n == 1:
        return g.op("Identity", self)
    # eager's order of products: a binary decomposition of n, bits from the lowest
    if n in (2, 3):
        square = matmul(g, self, self)
        return square if n == 2 else matmul(g, square, self)
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = self if z is None else matmul(g, z, z)
        if bit:
            result = z if result is None else matmul(g, result, z)
    return result


@register("aten::linalg_tensorinv.default")
def aten_linalg_tensorinv(g, self, ind=2):
    """linalg_tensorinv(Tensor self, int ind=2) -> Tensor"""
    if not self.is_static:
        raise NotImplementedError("linalg_tensorinv is exported for static shapes only")
    shape = list(self.shape)
    front, back = math.prod(shape[:ind]), math.prod(shape[ind:])
    out_shape = shape[ind:] + shape[:ind]
    if front * back == 0:
        return fill(g, out_shape, 0, self.dtype)
    return reshape(g, aten_linalg_inv(g, reshape(g, self, [front, back])), out_shape)


@register("aten::linalg_tensorsolve.default")
def aten_linalg_tensorsolve(g, self, other, dims=None):
    """linalg_tensorsolve(Tensor self, Tensor other, int[]? dims=None) -> Tensor"""
    if not self.is_static or not other.is_static:
        raise NotImplementedError("linalg_tensorsolve is exported for static shapes only")
    shape, rank = list(self.shape), self.rank
    if dims:
        moved = [d % rank for d in dims]
        perm = [d for d in range(rank) if d not in moved] + moved
        self, shape = g.op("Transpose", self, perm=perm), [shape[d] for d in perm]
        self.shape = tuple(shape)
    result_shape = shape[other.rank:]
    size = math.prod(result_shape)
    if size == 0:
        return fill(g, result_shape, 0, self.dtype)
    x = aten_linalg_solve(g, reshape(g, self, [size, size]), reshape(g, other, [size]))
    return reshape(g, x, result_shape)


# -- matrix exponential --------------------------------------------------------------------------------------
# Eager's algorithm (ATen LinearAlgebra.cpp after Bader, Blanes & Casas, "Computing the matrix exponential
# with an optimized Taylor polynomial approximation", 2019): an optimized Taylor polynomial of degree
# 1, 2, 4, 8, 12 or 18 chosen by the 1-norm, degree 18 with scaling and squaring above the last threshold.
# Its coefficients, thresholds and order of operations are eager's, rounded to the working dtype as
# eager's are: a float32 result that cancels (a small entry of a matrix with large ones) then rounds as
# eager's does. Computing in float64 would come closer to the exact exponential and further from eager.

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


def matrix_product(g: GraphBuilder, a: Value, b: Value, n: int) -> Value:
    """a @ b for [B, n, n] stacks, rounded as eager's bmm rounds it. Eager multiplies small matrices
    (n^3 < 400) with its own loop, summing the products in index order (baddbmm_cpu_kernel), and leaves
    larger ones to BLAS. MatMul sums in the runtime's own order, and squaring magnifies a difference of
    one rounding beyond float32 tolerances wherever the exponential cancels; so a small product is that
    loop unrolled, a larger one MatMul, whose order is as much the runtime's as eager's is BLAS's."""
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

    def __init__(self, g: GraphBuilder, a: Value, n: int) -> None:
        self.g, self.n = g, n
        self.made = {1: a}

    def __getitem__(self, k: int) -> Value:
        if k not in self.made:
            left, right = {2: (1, 1), 3: (1, 2), 6: (3, 3)}[k]
            self.made[k] = matrix_product(self.g, self[left], self[right], self.n)
        return self.made[k]


def combination(g: GraphBuilder, terms: list[Value | None], coefficients, n: int, dtype: torch.dtype) -> Value:
    """sum_j c_j terms_j, summed in order as eager's _compute_linear_combination; a None term is I. Zero
    coefficients are left out (adding an exact 0 changes nothing)."""
    out = None
    for term, c in zip(terms, coefficients):
        if c == 0:
            continue
        if term is None:
            product = g.const(torch.eye(n, dtype=dtype) * rounded(c, dtype))
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


@register("aten::matrix_exp.default", "aten::linalg_matrix_exp.default")
def aten_matrix_exp(g, self):
    """matrix_exp(Tensor self) -> Tensor"""
    shape = matrix_shape(self, "matrix_exp", dtypes=(torch.float16, torch.bfloat16, torch.float32, torch.float64))
    n = square_size(shape, "matrix_exp")
    batch = shape[:-2]
    if 0 in shape:
        return fill(g, shape, 0, self.dtype)
    if n == 1:
        return g.op("Exp", self)  # as eager
    count = math.prod(batch)
    dtype = torch.float64 if self.dtype == torch.float64 else torch.float32
    thetas = MEXP_THETAS[dtype]
    a = flatten(g, cast(g, self, dtype), batch, [n, n])
    # the 1-norm: the largest column sum of magnitudes
    col_sums = g.op("MatMul", g.const(torch.ones(1, n, dtype=dtype)), g.op("Abs", a))  # [count, 1, n]
    col_sums = reshape(g, col_sums, [count, n, 1])
    widest = g.op("ArgMax", col_sums, axis=1, keepdims=0)
    norm = gather_rows(g, col_sums, widest, count, n, 1)  # [count, 1, 1]
    # s = max(0, ceil(log2(norm / theta_18))); 0 for a non-finite norm, whose result is not finite anyway
    s = g.op("Ceil", g.op("Div", g.op("Log", g.op("Div", norm, g.const(thetas[-1], dtype=dtype))),
                          g.const(math.log(2.0), dtype=dtype)))
    finite = g.op("And", g.op("Greater", s, g.const(0, dtype=dtype)),
                  g.op("Less", norm, g.const(math.inf, dtype=dtype)))
    s = g.op("Where", finite, s, g.const(0, dtype=dtype))
    # s is 0 below theta_18, so the scaled stack is the input exactly wherever a lower degree is chosen
    powers = MatrixPowers(g, g.op("Mul", a, g.op("Pow", g.const(0.5, dtype=dtype), s)), n)
    squarings = cast(g, s, I64)

    def step(body: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
        (r,) = state
        return [body.op("Where", body.op("Less", i, squarings), matrix_product(body, r, r, n), r)]

    trips = g.op("ReduceMax", squarings, keepdims=0)
    result = loop(g, trips, [mexp_t18(g, powers, dtype)], step, name="squaring")[0]
    if count == 1:
        # eager picks the degree by the norm for a single matrix only (a batch always takes degree 18);
        # degree 18 from theta_12 on, each lower degree up to its theta
        approximants = (mexp_t1, mexp_t2, mexp_t4, mexp_t8, mexp_t12)
        result = g.op("Where", g.op("Less", norm, g.const(thetas[4], dtype=dtype)),
                      mexp_t12(g, powers, dtype), result)
        for theta, approximant in reversed(list(zip(thetas[:4], approximants))):
            result = g.op("Where", g.op("Greater", norm, g.const(theta, dtype=dtype)), result,
                          approximant(g, powers, dtype))
    # a matrix with a NaN is all NaN, as eager
    nans = g.op("MatMul", g.op("MatMul", g.const(torch.ones(1, n, dtype=dtype)), cast(g, g.op("IsNaN", a), dtype)),
                g.const(torch.ones(n, 1, dtype=dtype)))
    result = g.op("Where", g.op("Greater", nans, g.const(0, dtype=dtype)), g.const(math.nan, dtype=dtype), result)
    return cast(g, unflatten(g, result, batch, [n, n]), self.dtype)


# -- Householder QR ----------------------------------------------------------------------------------------


def reflector(g: GraphBuilder, a: Value, j: Value, rows: Value) -> Value:
    """v_j [batch, m, 1] of LAPACK's packed reflectors: 0 above row j, 1 at j, a[:, j] below."""
    one, zero = g.const(1, dtype=a.dtype), g.const(0, dtype=a.dtype)
    return g.op("Where", g.op("Greater", rows, j), g.op("Gather", a, index1(g, j), axis=2),
                g.op("Where", g.op("Equal", rows, j), one, zero))


def apply_reflectors(g: GraphBuilder, a: Value, taus: Value, c: Value, batch: int, m: int, k: int, *, left: bool,
                     transpose: bool) -> Value:
    """LAPACK ormqr: Q C or Q^T C (left), C Q or C Q^T, for Q = H_0 ... H_{k-1}, H_j = I - tau_j v_j v_j^T
    with the v_j packed in a [batch, m, >=k] and taus [batch, k]; C [batch, m, s] (left) or [batch, s, m]."""
    rows = arange_col(g, m)
    last_first = left != transpose  # Q C = H_0 (H_1 (... (H_{k-1} C))); C Q = ((C H_0) H_1) ...

    def step(body: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
        (x,) = state
        j = body.op("Sub", body.const(k - 1, dtype=I64), i) if last_first else i
        v = reflector(body, a, j, rows)
        t = reshape(body, body.op("Gather", taus, index1(body, j), axis=1), [batch, 1, 1])
        if left:
            update = body.op("Mul", body.op("Mul", v, t), body.op("MatMul", transposed(body, v), x))
        else:
            update = body.op("Mul", body.op("Mul", body.op("MatMul", x, v), t), transposed(body, v))
        return [body.op("Sub", x, update)]

    return loop(g, k, [c], step, name="ormqr")[0]


def geqrf_loop(g: GraphBuilder, a: Value, batch: int, m: int, n: int) -> tuple[Value, Value]:
    """LAPACK geqr2 on a [batch, m, n] stack: (R above the diagonal with the reflectors below, taus
    [batch, min(m, n)]). Column j's reflector (dlarfg) maps it to beta e_j, beta = -sign(alpha) ||x||
    (alpha = x_j, +0 counting as positive), tau = (beta - alpha) / beta, v = x / (alpha - beta) below j;
    a column already zero below j takes tau = 0 and stays."""
    rows, cols = arange_col(g, m), arange_row(g, n)
    zero, one = g.const(0, dtype=a.dtype), g.const(1, dtype=a.dtype)
    ones = g.const(torch.ones(1, m, dtype=a.dtype))

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

    r, taus = loop(g, min(m, n), [a], step, name="geqrf", scan_outputs=1)
    return r, g.op("Transpose", taus, perm=[1, 0])


def geqrf(g: GraphBuilder, self: Value, what: str) -> tuple[Value, Value, list[int], int, int]:
    """(packed QR, taus) on flattened stacks, with the batch shape and m, n."""
    shape = matrix_shape(self, what)
    batch, (m, n) = shape[:-2], shape[-2:]
    count = math.prod(batch)
    r, taus = geqrf_loop(g, flatten(g, self, batch, [m, n]), count, m, n)
    return r, taus, batch, m, n


@register("aten::geqrf.default")
def aten_geqrf(g, self):
    """geqrf(Tensor self) -> (Tensor a, Tensor tau)"""
    folded = shape_only(g, torch.ops.aten.geqrf.default, (self,))
    if folded is not None:
        return tuple(folded)
    r, taus, batch, m, n = geqrf(g, self, "geqrf")
    return unflatten(g, r, batch, [m, n]), reshape(g, taus, batch + [min(m, n)])


def qr(g: GraphBuilder, A: Value, mode: str, what: str) -> tuple[Value, Value]:
    """linalg.qr: Q from the reflectors applied to the identity's first columns, R the upper triangle."""
    if mode not in ("reduced", "complete", "r"):
        raise NotImplementedError(f"{what}: unknown mode {mode!r}")
    folded = shape_only(g, torch.ops.aten.linalg_qr.default, (A, mode))
    if folded is not None:
        return tuple(folded)
    packed, taus, batch, m, n = geqrf(g, A, what)
    count, k = math.prod(batch), min(m, n)
    rows = m if mode == "complete" else k
    r = packed if rows == m else g.op("Gather", packed, g.const(list(range(rows)), dtype=I64), axis=1)
    r = unflatten(g, masked(g, triu_mask(g, rows, n, 0), r), batch, [rows, n])
    if mode == "r":
        return fill(g, [0], 0, A.dtype), r
    eye = g.op("Expand", g.const(torch.eye(m, rows, dtype=A.dtype)), g.const([count, m, rows], dtype=I64))
    q = apply_reflectors(g, packed, taus, eye, count, m, k, left=True, transpose=False)
    return unflatten(g, q, batch, [m, rows]), r


@register("aten::linalg_qr.default")
def aten_linalg_qr(g, A, mode="reduced"):
    """linalg_qr(Tensor A, str mode="reduced") -> (Tensor Q, Tensor R)"""
    return qr(g, A, mode, "linalg_qr")


@register("aten::qr.default")
def aten_qr(g, self, some=True):
    """qr(Tensor self, bool some=True) -> (Tensor Q, Tensor R)"""
    return qr(g, self, "reduced" if some else "complete", "qr")


@register("aten::linalg_householder_product.default")
def aten_linalg_householder_product(g, input, tau):
    """linalg_householder_product(Tensor input, Tensor tau) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.linalg_householder_product.default, (input, tau))
    if folded is not None:
        return folded[0]
    shape = matrix_shape(input, "linalg_householder_product")
    if not tau.is_static or tau.dtype != input.dtype:
        raise NotImplementedError("linalg_householder_product with a dynamic or differently typed tau")
    batch, (m, n), k = shape[:-2], shape[-2:], tau.shape[-1]
    count = math.prod(batch)
    eye = g.op("Expand", g.const(torch.eye(m, n, dtype=input.dtype)), g.const([count, m, n], dtype=I64))
    if k == 0:
        return unflatten(g, eye, batch, [m, n])
    q = apply_reflectors(g, flatten(g, input, batch, [m, n]), reshape(g, tau, [count, k]), eye, count, m, k,
                         left=True, transpose=False)
    return unflatten(g, q, batch, [m, n])


@register("aten::ormqr.default")
def aten_ormqr(g, self, input2, input3, left=True, transpose=False):
    """ormqr(Tensor self, Tensor input2, Tensor input3, bool left=True, bool transpose=False) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.ormqr.default, (self, input2, input3, left, transpose))
    if folded is not None:
        return folded[0]
    a_shape, c_shape = matrix_shape(self, "ormqr"), matrix_shape(input3, "ormqr")
    if not input2.is_static or len({self.dtype, input2.dtype, input3.dtype}) != 1:
        raise NotImplementedError("ormqr with a dynamic tau or mixed dtypes")
    m, k = a_shape[-2], input2.shape[-1]
    batch = broadcast_batch(a_shape[:-2], list(input2.shape[:-1]), c_shape[:-2])
    if k == 0:
        return g.op("Identity", input3)
    count = math.prod(batch)
    x = apply_reflectors(g, flatten(g, self, batch, a_shape[-2:]), reshape(g, g.op("Expand", input2, g.const(
        batch + [k], dtype=I64)), [count, k]), flatten(g, input3, batch, c_shape[-2:]), count, m, k, left=left,
        transpose=transpose)
    return reshape(g, x, batch + c_shape[-2:])


# -- Jacobi: symmetric eigenvalues and singular values ---------------------------------------------------------

JACOBI_SWEEPS = 40  # a bound only: the loops stop once every pair meets the tolerance (quadratic convergence)


def round_robin(n: int) -> tuple[list[list[int]], list[list[int]]]:
    """The n - 1 rounds (n even) of a round-robin tournament as pairs p < q: every pair of indices meets
    once per sweep, and the pairs of a round are disjoint, so their rotations commute."""
    players, ps, qs = list(range(n)), [], []
    for _ in range(n - 1):
        pairs = [(players[i], players[n - 1 - i]) for i in range(n // 2)]
        ps.append([min(p) for p in pairs])
        qs.append([max(p) for p in pairs])
        players = [players[0], players[-1], *players[1:-1]]
    return ps, qs


def padded_even(g: GraphBuilder, x: Value, batch: int, rows: int, cols: int, *, both: bool) -> tuple[Value, int]:
    """x with a zero column (and row, when `both`) appended when cols is odd; the new column count."""
    if cols % 2 == 0:
        return x, cols
    x = g.op("Concat", x, fill(g, [batch, rows, 1], 0, x.dtype), axis=2)
    if both:
        x = g.op("Concat", x, fill(g, [batch, 1, cols + 1], 0, x.dtype), axis=1)
    return x, cols + 1


def diagonal_of(g: GraphBuilder, x: Value, n: int) -> Value:
    """The diagonals of a [batch, n, n] stack as [batch, n, 1]."""
    return g.op("MatMul", masked(g, g.const(torch.eye(n, dtype=torch.bool)), x), g.const(torch.ones(n, 1, dtype=x.dtype)))


def jacobi(g: GraphBuilder, x: Value, batch: int, m: int, n: int, *, one_sided: bool,
           vectors: bool = False) -> list[Value]:
    """Cyclic Jacobi in round-robin order on a [batch, m, n] stack (n even). Two-sided (m == n, x
    symmetric): x <- J^T x J until it is diagonal, the rotated entries set to zero. One-sided (Hestenes):
    x <- x J until its columns are orthogonal. Each round rotates n/2 disjoint pairs (p, q) at once with
    the rotation zeroing the pair's entry of the symmetric S = x (or x^T x); a pair whose
    |s_pq| <= tol sqrt(|s_pp s_qq|) is left alone, and the loop stops when every pair is. Returns
    [x], or [x, V] with V the product of the rotations when `vectors` is set."""
    dtype = x.dtype
    ps, qs = round_robin(n)
    rounds = len(ps)
    tol = g.const(torch.finfo(dtype).eps * (m if one_sided else n), dtype=dtype)
    pairs_p, pairs_q = g.const(ps, dtype=I64), g.const(qs, dtype=I64)
    idx, eye = arange_row(g, n), g.const(torch.eye(n, dtype=dtype))
    offdiagonal = g.const(~torch.eye(n, dtype=torch.bool))
    zero, one = g.const(0, dtype=dtype), g.const(1, dtype=dtype)
    ones = g.const(torch.ones(n, 1, dtype=dtype))

    def step(body: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
        x = state[0]
        s = body.op("MatMul", transposed(body, x), x) if one_sided else x
        d = diagonal_of(body, s, n)  # [batch, n, 1]
        # not converged while some off-diagonal entry is above tolerance
        bound = body.op("Mul", tol, body.op("Sqrt", body.op("Abs", body.op("Mul", d, transposed(body, d)))))
        above = body.op("And", offdiagonal, body.op("Greater", body.op("Abs", s), bound))
        again = cast(body, body.op("ReduceMax", cast(body, above, torch.float32), keepdims=0), torch.bool)
        r = body.op("Sub", i, body.op("Mul", body.op("Div", i, body.const(rounds, dtype=I64)), body.const(rounds, dtype=I64)))
        r1 = index1(body, r)
        ep = cast(body, body.op("Equal", reshape(body, body.op("Gather", pairs_p, r1, axis=0), [n // 2, 1]), idx), dtype)
        eq = cast(body, body.op("Equal", reshape(body, body.op("Gather", pairs_q, r1, axis=0), [n // 2, 1]), idx), dtype)
        s_pp, s_qq = body.op("MatMul", ep, d), body.op("MatMul", eq, d)  # [batch, n/2, 1]
        s_pq = body.op("MatMul", body.op("Mul", body.op("MatMul", ep, s), eq), ones)
        skip = body.op("Not", body.op("Greater", body.op("Abs", s_pq),
                                      body.op("Mul", tol, body.op("Sqrt", body.op("Abs", body.op("Mul", s_pp, s_qq))))))
        # t = tan(theta) zeroing s_pq: the smaller root of t^2 + 2 tau t - 1 = 0
        tau = body.op("Div", body.op("Sub", s_qq, s_pp), body.op("Mul", body.const(2, dtype=dtype),
                                                                  body.op("Where", skip, one, s_pq)))
        sign = body.op("Where", body.op("Less", tau, zero), body.const(-1, dtype=dtype), one)
        t = body.op("Div", sign, body.op("Add", body.op("Abs", tau),
                                          body.op("Sqrt", body.op("Add", one, body.op("Mul", tau, tau)))))
        t = body.op("Where", skip, zero, t)
        c = body.op("Reciprocal", body.op("Sqrt", body.op("Add", one, body.op("Mul", t, t))))
        sn = body.op("Mul", t, c)
        # J = diag(c at p and q) + s at (p, q) and -s at (q, p)
        cvec = body.op("MatMul", transposed(body, c), body.op("Add", ep, eq))  # [batch, 1, n]
        svec = body.op("MatMul", transposed(body, sn), body.op("Sub", ep, eq))
        partner = body.op("Add", body.op("MatMul", body.op("Transpose", ep, perm=[1, 0]), eq),
                          body.op("MatMul", body.op("Transpose", eq, perm=[1, 0]), ep))
        j = body.op("Add", body.op("Mul", eye, transposed(body, cvec)), body.op("Mul", partner, transposed(body, svec)))
        if one_sided:
            x = body.op("MatMul", x, j)
        else:
            x = body.op("MatMul", body.op("MatMul", transposed(body, j), x), j)
            x = body.op("Where", cast(body, partner, torch.bool), zero, x)
        return [x, body.op("MatMul", state[1], j), again] if vectors else [x, again]

    state = [x, identity(g, batch, n, dtype)] if vectors else [x]
    return loop(g, JACOBI_SWEEPS * rounds, state, step, name="jacobi", stop=True)


def sort_rows(g: GraphBuilder, x: Value, batch: int, n: int, *, descending: bool) -> Value:
    """x [batch, n] sorted along its rows, stable: each value's rank counts the values before it, and a
    one-hot of the ranks permutes by MatMul (TopK's k changed form at opset 10)."""
    xi, xj = reshape(g, x, [batch, n, 1]), reshape(g, x, [batch, 1, n])
    before = g.op("Greater" if descending else "Less", xj, xi)
    tie = g.op("Not", g.op("Or", g.op("Less", xj, xi), g.op("Greater", xj, xi)))
    earlier = g.const(torch.ones(n, n, dtype=torch.bool).tril(-1))  # [i, j]: j < i
    count = g.op("Or", before, g.op("And", tie, earlier))
    rank = cast(g, g.op("MatMul", cast(g, count, x.dtype), g.const(torch.ones(n, 1, dtype=x.dtype))), I64)
    onehot = cast(g, g.op("Equal", arange_col(g, n), reshape(g, rank, [batch, 1, n])), x.dtype)
    return reshape(g, g.op("MatMul", onehot, xi), [batch, n])


def symmetric(g: GraphBuilder, a: Value, n: int, upper: bool) -> Value:
    """The symmetric matrices given by the lower (or upper) triangle of a [batch, n, n] stack."""
    half = masked(g, (triu_mask if upper else tril_mask)(g, n, n, 0), a)
    strict = masked(g, (triu_mask if upper else tril_mask)(g, n, n, 1 if upper else -1), a)
    return g.op("Add", half, transposed(g, strict))


def eigvalsh(g: GraphBuilder, A: Value, upper: bool, what: str) -> Value:
    """Eigenvalues (ascending) of the symmetric matrices given by one triangle of A."""
    shape = matrix_shape(A, what)
    n = square_size(shape, what)
    batch = shape[:-2]
    count = math.prod(batch)
    sym, size = padded_even(g, symmetric(g, flatten(g, A, batch, [n, n]), n, upper), count, n, n, both=True)
    d = reshape(g, diagonal_of(g, jacobi(g, sym, count, size, size, one_sided=False)[0], size), [count, size])
    if size != n:
        d = g.op("Gather", d, g.const(list(range(n)), dtype=I64), axis=1)
    return reshape(g, sort_rows(g, d, count, n, descending=False), batch + [n])


def svdvals(g: GraphBuilder, A: Value, what: str) -> Value:
    """Singular values (descending) by one-sided Jacobi on the taller orientation of A: the norms of the
    orthogonalized columns."""
    shape = matrix_shape(A, what)
    batch, (m, n) = shape[:-2], shape[-2:]
    count, k = math.prod(batch), min(m, n)
    a = flatten(g, A, batch, [m, n])
    if m < n:
        a, m, n = transposed(g, a), n, m
    a, size = padded_even(g, a, count, m, n, both=False)
    a = jacobi(g, a, count, m, size, one_sided=True)[0]
    norms = reshape(g, g.op("Sqrt", g.op("MatMul", g.const(torch.ones(1, m, dtype=A.dtype)), g.op("Mul", a, a))),
                    [count, size])
    if size != k:
        norms = g.op("Gather", norms, g.const(list(range(k)), dtype=I64), axis=1)
    return reshape(g, sort_rows(g, norms, count, k, descending=True), batch + [k])


@register("aten::linalg_eigvalsh.default")
def aten_linalg_eigvalsh(g, self, UPLO="L"):
    """linalg_eigvalsh(Tensor self, str UPLO="L") -> Tensor"""
    if UPLO not in ("L", "U"):
        raise NotImplementedError(f"linalg_eigvalsh: UPLO {UPLO!r}")
    folded = shape_only(g, torch.ops.aten.linalg_eigvalsh.default, (self, UPLO))
    if folded is not None:
        return folded[0]
    return eigvalsh(g, self, UPLO == "U", "linalg_eigvalsh")


@register("aten::linalg_svdvals.default")
def aten_linalg_svdvals(g, A, *, driver=None):
    """linalg_svdvals(Tensor A, *, str? driver=None) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.linalg_svdvals.default, (A,))
    if folded is not None:
        return folded[0]
    return svdvals(g, A, "linalg_svdvals")


# -- matrix norms and condition numbers ------------------------------------------------------------------------


def singular_value_norm(g: GraphBuilder, A: Value, ord, dim: list[int], keepdim: bool, dtype) -> Value:
    """The 2-norm (largest singular value), its -2 counterpart (smallest) or the nuclear norm (sum) over
    two dims of A, as eager: those dims moved last, svdvals, then amax / amin / sum."""
    x = cast(g, A, scalar_type(dtype)) if dtype is not None else A
    shape = matrix_shape(x, "linalg_matrix_norm")
    rank = len(shape)
    d0, d1 = norm_dims(dim, rank)
    perm = [d for d in range(rank) if d not in (d0, d1)] + [d0, d1]
    if perm != list(range(rank)):
        x = g.op("Transpose", x, perm=perm)
        x.shape = tuple(shape[d] for d in perm)
    batch, k = [shape[d] for d in perm[:-2]], min(shape[d0], shape[d1])
    out_shape = [1 if d in (d0, d1) else s for d, s in enumerate(shape)] if keepdim else batch
    if k == 0 or math.prod(batch) == 0:
        return fill(g, out_shape, 0, x.dtype)  # eager's empty sum; amax / amin of nothing raise there
    values = aten_linalg_svdvals(g, x)
    if ord == "nuc":
        result = g.op("MatMul", values, g.const(torch.ones(k, 1, dtype=x.dtype)))
    else:
        result = g.op("Gather", values, g.const([0 if ord > 0 else k - 1], dtype=I64), axis=len(batch))
    return reshape(g, result, out_shape)


def matrix_norm(g: GraphBuilder, A: Value, ord, dim: list[int], keepdim: bool, dtype) -> Value:
    """linalg.matrix_norm: 'fro' and the +-1 / +-inf norms by reductions, +-2 and 'nuc' from singular values."""
    if ord == "fro":
        return vector_norm(g, A, 2, dim, keepdim, dtype)
    if ord == "nuc" or ord in (2, -2):
        return singular_value_norm(g, A, ord, dim, keepdim, dtype)
    if not isinstance(ord, (int, float)) or abs(ord) not in (1, math.inf):
        raise NotImplementedError(f"linalg_matrix_norm: order {ord!r}")
    d0, d1 = norm_dims(dim, A.rank)
    if A.is_static and 0 in (A.shape[d0], A.shape[d1]):  # eager's norm of an empty matrix is 0
        shape = [1 if d in (d0, d1) else s for d, s in enumerate(A.shape)] if keepdim else \
            [s for d, s in enumerate(A.shape) if d not in (d0, d1)]
        return fill(g, shape, 0, scalar_type(dtype) or A.dtype)
    if abs(ord) == math.inf:  # the inf-norm is the 1-norm of the transpose
        d0, d1 = d1, d0
    if not keepdim and d0 < d1:
        d1 -= 1
    sums = vector_norm(g, A, 1, [d0], keepdim, dtype)
    return g.reduce("ReduceMax" if ord > 0 else "ReduceMin", sums, [d1], keepdim)


def linalg_norm(g: GraphBuilder, self: Value, ord, dim, keepdim: bool, dtype) -> Value:
    """linalg.norm: a matrix norm for an order over two dims (or a 2-D input), else a vector norm."""
    if isinstance(ord, str) or (ord is not None and ((dim is not None and len(dim) == 2) or
                                                     (dim is None and self.rank == 2))):
        return matrix_norm(g, self, ord, list(dim) if dim is not None else [0, 1], keepdim, dtype)
    return vector_norm(g, self, 2 if ord is None else ord, dim, keepdim, dtype)


def cond(g: GraphBuilder, self: Value, p) -> Value:
    """linalg.cond: sigma_max / sigma_min for p = None or +-2, else norm(A) norm(A^-1) with a singular A's
    inverse taken as infinite and a NaN product as infinity."""
    if p is None or p in (2, -2):
        folded = shape_only(g, torch.ops.aten.linalg_cond.default, (self, p))
        if folded is not None:
            return folded[0]
        shape = matrix_shape(self, "linalg_cond")
        batch, k = shape[:-2], min(shape[-2:])
        values = aten_linalg_svdvals(g, self)
        first = g.op("Gather", values, g.const([0], dtype=I64), axis=len(batch))
        last = g.op("Gather", values, g.const([k - 1], dtype=I64), axis=len(batch))
        ratio = g.op("Div", last, first) if p == -2 else g.op("Div", first, last)
        return reshape(g, ratio, batch)
    folded = shape_only(g, torch.ops.aten.linalg_cond.p_str if isinstance(p, str) else torch.ops.aten.linalg_cond.default,
                        (self, p))
    if folded is not None:
        return folded[0]
    inverse_, info = aten_linalg_inv_ex(g, self)
    singular = g.op("Greater", reshape(g, info, list(self.shape[:-2]) + [1, 1]), g.const(0, dtype=torch.int32))
    inverse_ = g.op("Where", singular, g.const(math.inf, dtype=self.dtype), inverse_)
    product = g.op("Mul", matrix_norm(g, self, p, [-2, -1], False, None),
                   matrix_norm(g, inverse_, p, [-2, -1], False, None))
    return g.op("Where", g.op("IsNaN", product), g.const(math.inf, dtype=product.dtype), product)


@register("aten::linalg_matrix_norm.default")
def aten_linalg_matrix_norm(g, self, ord, dim=[-2, -1], keepdim=False, *, dtype=None):
    """linalg_matrix_norm(Tensor self, Scalar ord, int[] dim=[-2,-1], bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return matrix_norm(g, self, ord, dim, keepdim, dtype)


@register("aten::linalg_matrix_norm.str_ord")
def aten_linalg_matrix_norm_str_ord(g, self, ord="fro", dim=[-2, -1], keepdim=False, *, dtype=None):
    """linalg_matrix_norm.str_ord(Tensor self, str ord="fro", int[] dim=[-2,-1], bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return matrix_norm(g, self, ord, dim, keepdim, dtype)


@register("aten::linalg_norm.default")
def aten_linalg_norm(g, self, ord=None, dim=None, keepdim=False, *, dtype=None):
    """linalg_norm(Tensor self, Scalar? ord=None, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return linalg_norm(g, self, ord, dim, keepdim, dtype)


@register("aten::linalg_norm.ord_str")
def aten_linalg_norm_ord_str(g, self, ord, dim=None, keepdim=False, *, dtype=None):
    """linalg_norm.ord_str(Tensor self, str ord, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return linalg_norm(g, self, ord, dim, keepdim, dtype)


@register("aten::nuclear_norm.default")
def aten_nuclear_norm(g, self, keepdim=False):
    """nuclear_norm(Tensor self, bool keepdim=False) -> Tensor"""
    return singular_value_norm(g, self, "nuc", [0, 1], keepdim, None)


@register("aten::nuclear_norm.dim")
def aten_nuclear_norm_dim(g, self, dim, keepdim=False):
    """nuclear_norm.dim(Tensor self, int[2] dim, bool keepdim=False) -> Tensor"""
    return singular_value_norm(g, self, "nuc", dim, keepdim, None)


@register("aten::linalg_cond.default")
def aten_linalg_cond(g, self, p=None):
    """linalg_cond(Tensor self, Scalar? p=None) -> Tensor"""
    return cond(g, self, p)


@register("aten::linalg_cond.p_str")
def aten_linalg_cond_p_str(g, self, p):
    """linalg_cond.p_str(Tensor self, str p) -> Tensor"""
    return cond(g, self, p)


# -- matrix rank -------------------------------------------------------------------------------------------


def cutoff(g: GraphBuilder, atol, rtol, top: Value, m: int, n: int) -> Value:
    """max(atol, rtol * top), top [..., 1] the largest singular value: atol defaults to 0 and rtol to
    eps * max(m, n), or to 0 where atol > 0. atol and rtol are floats, None, or tensors broadcasting
    with the batch shape."""
    dtype = top.dtype

    def tolerance(x, default: float) -> Value:
        if x is None:
            return g.const(default, dtype=dtype)
        if isinstance(x, Value):
            if not x.is_static:
                raise NotImplementedError("a tolerance tensor of dynamic shape")
            return reshape(g, cast(g, x, dtype), list(x.shape) + [1])
        return g.const(float(x), dtype=dtype)

    default_rtol = torch.finfo(dtype).eps * max(m, n)
    a = tolerance(atol, 0.0)
    if rtol is None and atol is not None:
        r = g.op("Where", g.op("Greater", a, g.const(0, dtype=dtype)), g.const(0, dtype=dtype),
                 g.const(default_rtol, dtype=dtype))
    else:
        r = tolerance(rtol, default_rtol)
    return g.op("Max", a, g.op("Mul", r, top))


def matrix_rank(g: GraphBuilder, A: Value, atol, rtol, hermitian: bool, what: str) -> Value:
    """The number of singular values (absolute eigenvalues when `hermitian`) above
    max(atol, rtol * the largest); atol defaults to 0 and rtol to eps * max(m, n), or 0 where atol > 0.
    atol and rtol are floats, None or tensors broadcasting with the batch."""
    shape = matrix_shape(A, what)
    batch, (m, n) = shape[:-2], shape[-2:]
    if 0 in shape:
        return fill(g, batch, 0, I64)
    if hermitian:
        values = g.op("Abs", eigvalsh(g, A, False, what))
        k = n
        top = g.op("Max", g.op("Gather", values, g.const([0], dtype=I64), axis=len(batch)),
                   g.op("Gather", values, g.const([k - 1], dtype=I64), axis=len(batch)))
    else:
        values, k = aten_linalg_svdvals(g, A), min(m, n)
        top = g.op("Gather", values, g.const([0], dtype=I64), axis=len(batch))
    bound = cutoff(g, atol, rtol, top, m, n)
    above = cast(g, g.op("Greater", values, bound), A.dtype)
    count = g.op("MatMul", above, g.const(torch.ones(k, 1, dtype=A.dtype)))
    return cast(g, reshape(g, count, batch), I64) if batch else cast(g, reshape(g, count, []), I64)


@register("aten::linalg_matrix_rank.atol_rtol_tensor")
def aten_linalg_matrix_rank_atol_rtol_tensor(g, input, *, atol=None, rtol=None, hermitian=False):
    """linalg_matrix_rank.atol_rtol_tensor(Tensor input, *, Tensor? atol=None, Tensor? rtol=None, bool hermitian=False) -> Tensor"""
    return matrix_rank(g, input, atol, rtol, hermitian, "linalg_matrix_rank")


@register("aten::linalg_matrix_rank.atol_rtol_float")
def aten_linalg_matrix_rank_atol_rtol_float(g, self, *, atol=None, rtol=None, hermitian=False):
    """linalg_matrix_rank.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor"""
    return matrix_rank(g, self, atol, rtol, hermitian, "linalg_matrix_rank")


@register("aten::linalg_matrix_rank.default")
def aten_linalg_matrix_rank(g, self, tol, hermitian=False):
    """linalg_matrix_rank(Tensor self, float tol, bool hermitian=False) -> Tensor"""
    return matrix_rank(g, self, tol, 0.0, hermitian, "linalg_matrix_rank")


@register("aten::linalg_matrix_rank.tol_tensor")
def aten_linalg_matrix_rank_tol_tensor(g, input, tol, hermitian=False):
    """linalg_matrix_rank.tol_tensor(Tensor input, Tensor tol, bool hermitian=False) -> Tensor"""
    return matrix_rank(g, input, tol, 0.0, hermitian, "linalg_matrix_rank")


# -- LDL^T with Bunch-Kaufman pivoting ----------------------------------------------------------------------

BUNCH_KAUFMAN_ALPHA = (1 + math.sqrt(17)) / 8


def pick(g: GraphBuilder, x: Value, index: Value, batch: int, n: int) -> Value:
    """x[b, 0, index[b]] of a [batch, 1, n] stack, index [batch, 1, 1]: [batch, 1, 1]."""
    offsets = g.const((torch.arange(batch) * n).reshape(batch, 1))
    flat = g.op("Gather", reshape(g, x, [batch * n]), g.op("Add", reshape(g, index, [batch, 1]), offsets), axis=0)
    return reshape(g, flat, [batch, 1, 1])


def largest(g: GraphBuilder, x: Value, batch: int, n: int) -> tuple[Value, Value]:
    """(max, first index of it) over the last axis of a [batch, 1, n] stack, both [batch, 1, 1]."""
    index = g.op("ArgMax", x, axis=2, keepdims=1)
    return pick(g, x, index, batch, n), index


def swap_indices(g: GraphBuilder, a: Value, b: Value, n: int) -> Value:
    """[batch, n] int64: 0..n-1 with a and b ([batch, 1, 1]) exchanged."""
    idx = arange_row(g, n)
    a, b = reshape(g, a, [-1, 1]), reshape(g, b, [-1, 1])
    return g.op("Where", g.op("Equal", idx, a), b, g.op("Where", g.op("Equal", idx, b), a,
                                                         g.op("Add", idx, g.op("Mul", a, g.const(0, dtype=I64)))))


def sytf2_loop(g: GraphBuilder, a: Value, batch: int, n: int) -> tuple[Value, Value, Value]:
    """LAPACK sytf2 (lower) on a [batch, n, n] stack of symmetric matrices (read from the lower
    triangle): (L and D packed in the lower triangle, LAPACK's pivots [batch, n] int64, info [batch]).
    Each matrix keeps its own column k: a 2x2 pivot advances it by two, so the loop runs n times at
    most. The trailing block is kept symmetric (its upper half mirrored from the lower one), so the
    symmetric interchanges read what LAPACK's lower storage holds."""
    dtype = a.dtype
    rows, cols = arange_col(g, n), arange_row(g, n)
    zero, one = g.const(0, dtype=dtype), g.const(1, dtype=dtype)
    lower = tril_mask(g, n, n, 0)
    alpha = g.const(BUNCH_KAUFMAN_ALPHA, dtype=dtype)
    last = g.const(n - 1, dtype=I64)

    def column(body: GraphBuilder, w: Value, j: Value) -> Value:
        """Column j ([batch, 1, 1]) of the symmetric trailing block, as [batch, n, 1]."""
        return transposed(body, gather_rows(body, w, reshape(body, j, [batch, 1]), batch, n, n))

    def step(body: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
        w, k, pivots, info = state
        kb = reshape(body, k, [batch, 1, 1])
        active = body.op("Less", kb, body.const(n, dtype=I64))
        kb = body.op("Where", active, kb, last)
        row_k = gather_rows(body, w, reshape(body, kb, [batch, 1]), batch, n, n)  # [batch, 1, n]
        absakk = body.op("Abs", pick(body, row_k, kb, batch, n))
        below = body.op("Greater", cols, kb)
        colmax, imax = largest(body, body.op("Where", below, body.op("Abs", row_k), body.const(-1, dtype=dtype)), batch, n)
        colmax = body.op("Max", colmax, zero)
        singular = body.op("Not", body.op("Greater", body.op("Max", absakk, colmax), zero))  # NaN counts too
        row_imax = gather_rows(body, w, reshape(body, imax, [batch, 1]), batch, n, n)
        others = body.op("And", body.op("Not", body.op("Less", cols, kb)), body.op("Not", body.op("Equal", cols, imax)))
        rowmax, _ = largest(body, body.op("Where", others, body.op("Abs", row_imax), body.const(-1, dtype=dtype)), batch, n)
        abs_imax = body.op("Abs", pick(body, row_imax, imax, batch, n))
        alpha_col = body.op("Mul", alpha, colmax)
        keep = body.op("Or", body.op("Not", body.op("Less", absakk, alpha_col)),
                       body.op("Not", body.op("Less", absakk, body.op("Mul", alpha_col, body.op("Div", colmax, body.op(
                           "Where", singular, one, rowmax))))))
        keep = body.op("Or", singular, keep)
        one_by_one = body.op("Or", keep, body.op("Not", body.op("Less", abs_imax, body.op("Mul", alpha, rowmax))))
        two = body.op("Not", one_by_one)
        kk = body.op("Where", two, body.op("Add", kb, body.const(1, dtype=I64)), kb)
        kp = body.op("Where", keep, kb, imax)
        # interchange rows and columns kk and kp of the trailing block
        order = swap_indices(body, kk, kp, n)
        trailing_cols = body.op("Not", body.op("Less", cols, kb))
        trailing_rows = body.op("Not", body.op("Less", rows, kb))
        before = w
        w = body.op("Where", trailing_cols, gather_rows(body, w, order, batch, n, n), w)
        w = body.op("Where", trailing_rows, transposed(body, gather_rows(body, transposed(body, w), order, batch, n, n)), w)
        # 1x1: A22 -= x (d^-1 x)^T, x scaled by d^-1
        ak = column(body, w, kb)
        below_rows = body.op("Greater", rows, kb)
        x = body.op("Where", below_rows, ak, zero)
        d11 = body.op("Reciprocal", body.op("Where", singular, one, pick(body, transposed(body, ak), kb, batch, n)))
        rest = body.op("And", below_rows, below)
        w1 = body.op("Where", rest, body.op("Sub", w, body.op("Mul", x, body.op("Mul", d11, transposed(body, x)))), w)
        w1 = body.op("Where", body.op("And", below_rows, body.op("Equal", cols, kb)), body.op("Mul", ak, d11), w1)
        # 2x2: the block [[a_kk, a_k1k], [a_k1k, a_k1k1]] eliminated from the rows after k + 1
        k1 = body.op("Add", kb, body.const(1, dtype=I64))
        k1c = body.op("Where", body.op("Less", k1, body.const(n, dtype=I64)), k1, last)
        ak1 = column(body, w, k1c)
        d21 = pick(body, transposed(body, ak), k1c, batch, n)
        d21 = body.op("Where", two, d21, one)
        e11 = body.op("Div", pick(body, transposed(body, ak1), k1c, batch, n), d21)
        e22 = body.op("Div", pick(body, transposed(body, ak), kb, batch, n), d21)
        t = body.op("Reciprocal", body.op("Sub", body.op("Mul", e11, e22), one))
        d21 = body.op("Div", t, d21)
        after = body.op("Greater", rows, k1c)
        wk = body.op("Where", after, body.op("Mul", d21, body.op("Sub", body.op("Mul", e11, ak), ak1)), zero)
        wkp1 = body.op("Where", after, body.op("Mul", d21, body.op("Sub", body.op("Mul", e22, ak1), ak)), zero)
        rest2 = body.op("And", after, body.op("Greater", cols, k1c))
        update = body.op("Sub", body.op("Sub", w, body.op("Mul", ak, transposed(body, wk))), body.op("Mul", ak1, transposed(body, wkp1)))
        w2 = body.op("Where", rest2, update, w)
        w2 = body.op("Where", body.op("And", after, body.op("Equal", cols, kb)), wk, w2)
        w2 = body.op("Where", body.op("And", after, body.op("Equal", cols, k1c)), wkp1, w2)
        updated = body.op("Where", two, w2, w1)
        updated = body.op("Where", lower, updated, transposed(body, updated))  # keep the trailing block symmetric
        w = body.op("Where", body.op("And", active, body.op("Not", singular)), updated, before)
        # pivots: kp + 1 for a 1x1 block, -(kp + 1) at both rows of a 2x2 one
        code = body.op("Add", kp, body.const(1, dtype=I64))
        code = body.op("Where", two, body.op("Neg", code), code)
        at = body.op("Or", body.op("Equal", cols, kb), body.op("And", two, body.op("Equal", cols, k1)))
        flat_active = reshape(body, active, [batch, 1])
        pivots = body.op("Where", body.op("And", reshape(body, active, [batch, 1, 1]), at), code,
                         reshape(body, pivots, [batch, 1, n]))
        fails = body.op("And", flat_active, reshape(body, singular, [batch, 1]))
        info = first_failure(body, info, fails, reshape(body, kb, [batch]))
        step_size = body.op("Where", reshape(body, two, [batch]), body.const(2, dtype=I64), body.const(1, dtype=I64))
        k = body.op("Where", reshape(body, active, [batch]), body.op("Add", k, step_size), k)
        return [w, k, reshape(body, pivots, [batch, n]), info]

    start = g.op("Where", lower, a, transposed(g, a))
    zeros = g.const(torch.zeros(batch, dtype=I64))
    w, _, pivots, info = loop(g, n, [start, zeros, g.const(torch.zeros(batch, n, dtype=I64)), zeros], step, name="sytf2")
    return masked(g, lower, w), pivots, info


def ldl_factor(g: GraphBuilder, A: Value, what: str) -> tuple[Value, Value, Value]:
    shape = matrix_shape(A, what)
    n = square_size(shape, what)
    batch = shape[:-2]
    count = math.prod(batch)
    ld, pivots, info = sytf2_loop(g, flatten(g, A, batch, [n, n]), count, n)
    return (unflatten(g, ld, batch, [n, n]), reshape(g, cast(g, pivots, torch.int32), batch + [n]),
            reshape(g, cast(g, info, torch.int32), batch))


@register("aten::linalg_ldl_factor_ex.default")
def aten_linalg_ldl_factor_ex(g, self, *, hermitian=False, check_errors=False):
    """linalg_ldl_factor_ex(Tensor self, *, bool hermitian=False, bool check_errors=False) -> (Tensor LD, Tensor pivots, Tensor info)"""
    folded = shape_only(g, torch.ops.aten.linalg_ldl_factor_ex.default, (self,), {"hermitian": hermitian})
    if folded is not None:
        return tuple(folded)
    return ldl_factor(g, self, "linalg_ldl_factor_ex")


@register("aten::linalg_ldl_factor.default")
def aten_linalg_ldl_factor(g, self, *, hermitian=False):
    """linalg_ldl_factor(Tensor self, *, bool hermitian=False) -> (Tensor LD, Tensor pivots)"""
    return aten_linalg_ldl_factor_ex(g, self, hermitian=hermitian)[:2]


def sytrs(g: GraphBuilder, ld: Value, pivots: Value, rhs: Value, batch: int, n: int, k: int) -> Value:
    """LAPACK sytrs (lower): X with A X = rhs from sytrf's packed L, D and pivots ([batch, n] int64):
    a forward pass through the blocks of P L D, then a backward one through L^T P^T, each matrix
    stepping by its own block sizes."""
    dtype = ld.dtype
    rows = arange_col(g, n)
    zero, one = g.const(0, dtype=dtype), g.const(1, dtype=dtype)
    codes = reshape(g, pivots, [batch, 1, n])
    ld_t = transposed(g, ld)  # row j of ld_t is column j of L

    def block(body: GraphBuilder, kb: Value) -> tuple[Value, Value]:
        """(is a 2x2 block, zero-based interchange row) at kb."""
        code = pick(body, codes, kb, batch, n)
        two = body.op("Less", code, body.const(0, dtype=I64))
        return two, body.op("Sub", body.op("Where", two, body.op("Neg", code), code), body.const(1, dtype=I64))

    def row(body: GraphBuilder, x: Value, j: Value, cols: int) -> Value:
        return gather_rows(body, x, reshape(body, j, [batch, 1]), batch, n, cols)

    def column_below(body: GraphBuilder, j: Value, start: Value) -> Value:
        """Column j of L below row `start`, as [batch, n, 1]."""
        return body.op("Where", body.op("Greater", rows, start), transposed(body, row(body, ld_t, j, n)), zero)

    def entry(body: GraphBuilder, i: Value, j: Value) -> Value:
        return pick(body, row(body, ld_t, j, n), i, batch, n)

    def clamp(body: GraphBuilder, j: Value) -> Value:
        inside = body.op("And", body.op("Less", j, body.const(n, dtype=I64)), body.op("Not", body.op("Less", j, body.const(0, dtype=I64))))
        return body.op("Where", inside, j, body.const(0, dtype=I64)), inside

    def forward(body: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
        before, kcur = state
        kb, active = clamp(body, reshape(body, kcur, [batch, 1, 1]))
        two, kp = block(body, kb)
        k1, _ = clamp(body, body.op("Add", kb, body.const(1, dtype=I64)))
        x = gather_rows(body, before, swap_indices(body, body.op("Where", two, k1, kb), kp, n), batch, n, k)
        # 1x1: x[k+1:] -= l_k x[k]; x[k] /= d
        xk = row(body, x, kb, k)
        x1 = body.op("Sub", x, body.op("Mul", column_below(body, kb, kb), xk))
        x1 = body.op("Where", body.op("Equal", rows, kb),
                     body.op("Mul", xk, body.op("Reciprocal", entry(body, kb, kb))), x1)
        # 2x2: x[k+2:] -= l_k x[k] + l_k1 x[k+1], then the 2x2 D block solved
        xk1 = row(body, x, k1, k)
        x2 = body.op("Sub", x, body.op("Mul", column_below(body, kb, k1), xk))
        x2 = body.op("Sub", x2, body.op("Mul", column_below(body, k1, k1), xk1))
        akm1k = body.op("Where", two, entry(body, k1, kb), one)
        akm1 = body.op("Div", entry(body, kb, kb), akm1k)
        ak = body.op("Div", entry(body, k1, k1), akm1k)
        denom = body.op("Sub", body.op("Mul", akm1, ak), one)
        bkm1, bk = body.op("Div", xk, akm1k), body.op("Div", xk1, akm1k)
        x2 = body.op("Where", body.op("Equal", rows, kb), body.op("Div", body.op("Sub", body.op("Mul", ak, bkm1), bk), denom), x2)
        x2 = body.op("Where", body.op("Equal", rows, k1), body.op("Div", body.op("Sub", body.op("Mul", akm1, bk), bkm1), denom), x2)
        x = body.op("Where", active, body.op("Where", two, x2, x1), before)
        size = body.op("Where", reshape(body, two, [batch]), body.const(2, dtype=I64), body.const(1, dtype=I64))
        return [x, body.op("Where", reshape(body, active, [batch]), body.op("Add", kcur, size), kcur)]

    def backward(body: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
        x, kcur = state
        kb, active = clamp(body, reshape(body, kcur, [batch, 1, 1]))
        two, kp = block(body, kb)
        km1, _ = clamp(body, body.op("Sub", kb, body.const(1, dtype=I64)))
        # x[k] -= l_k^T x[k+1:] (and x[k-1] -= l_{k-1}^T x[k+1:] for a 2x2 block), then the interchange
        lk = column_below(body, kb, kb)
        lkm1 = column_below(body, km1, kb)
        xk = body.op("Sub", row(body, x, kb, k), body.op("MatMul", transposed(body, lk), x))
        xkm1 = body.op("Sub", row(body, x, km1, k), body.op("MatMul", transposed(body, lkm1), x))
        y = body.op("Where", body.op("Equal", rows, kb), xk, x)
        y = body.op("Where", body.op("And", two, body.op("Equal", rows, km1)), xkm1, y)
        y = gather_rows(body, y, swap_indices(body, kb, kp, n), batch, n, k)
        x = body.op("Where", active, y, x)
        size = body.op("Where", reshape(body, two, [batch]), body.const(2, dtype=I64), body.const(1, dtype=I64))
        return [x, body.op("Where", reshape(body, active, [batch]), body.op("Sub", kcur, size), kcur)]

    x, _ = loop(g, n, [rhs, g.const(torch.zeros(batch, dtype=I64))], forward, name="sytrs_forward")
    x, _ = loop(g, n, [x, g.const(torch.full((batch,), n - 1, dtype=I64))], backward, name="sytrs_backward")
    return x


@register("aten::linalg_ldl_solve.default")
def aten_linalg_ldl_solve(g, LD, pivots, B, *, hermitian=False):
    """linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False) -> Tensor"""
    folded = shape_only(g, torch.ops.aten.linalg_ldl_solve.default, (LD, pivots, B), {"hermitian": hermitian})
    if folded is not None:
        return folded[0]
    ld_shape, b_shape = matrix_shape(LD, "linalg_ldl_solve"), matrix_shape(B, "linalg_ldl_solve")
    n = square_size(ld_shape, "linalg_ldl_solve")
    if B.dtype != LD.dtype or not pivots.is_static:
        raise NotImplementedError("linalg_ldl_solve with mixed dtypes or dynamic pivots")
    batch = broadcast_batch(ld_shape[:-2], list(pivots.shape[:-1]), b_shape[:-2])
    count = math.prod(batch)
    codes = reshape(g, g.op("Expand", cast(g, pivots, I64), g.const(batch + [n], dtype=I64)), [count, n])
    x = sytrs(g, masked(g, tril_mask(g, n, n, 0), flatten(g, LD, batch, [n, n])), codes,
              flatten(g, B, batch, b_shape[-2:]), count, n, b_shape[-1])
    return reshape(g, x, batch + b_shape[-2:])


# -- pseudo-inverse ---------------------------------------------------------------------------------------------


def first_rows(g: GraphBuilder, x: Value, rows: int, axis: int) -> Value:
    return g.op("Gather", x, g.const(list(range(rows)), dtype=I64), axis=axis)


def pinv(g: GraphBuilder, A: Value, atol, rtol, hermitian: bool, what: str) -> Value:
    """linalg.pinv: V diag(1/sigma) U^T over the singular values above the cutoff, from one-sided Jacobi
    (A V = U diag(sigma), so it is V diag(1/sigma^2) (A V)^T); for `hermitian`, Q diag(1/lambda) Q^T over
    the eigenvalues of the lower triangle's symmetric matrix whose magnitude is above it."""
    shape = matrix_shape(A, what)
    batch, (m, n) = shape[:-2], shape[-2:]
    if 0 in shape:
        return fill(g, batch + [n, m], 0, A.dtype)
    count, dtype = math.prod(batch), A.dtype
    zero, one = g.const(0, dtype=dtype), g.const(1, dtype=dtype)
    a = flatten(g, A, batch, [m, n])
    if hermitian:
        sym, size = padded_even(g, symmetric(g, a, n, False), count, n, n, both=True)
        d, q = jacobi(g, sym, count, size, size, one_sided=False, vectors=True)
        lam = transposed(g, diagonal_of(g, d, size))  # [count, 1, size]
        magnitude = g.op("Abs", lam)
        keep = g.op("Greater", magnitude, cutoff(g, atol, rtol, largest(g, magnitude, count, size)[0], m, n))
        w = g.op("Where", keep, g.op("Reciprocal", g.op("Where", keep, lam, one)), zero)
        result = g.op("MatMul", g.op("Mul", q, w), transposed(g, q))
        if size != n:
            result = first_rows(g, first_rows(g, result, n, 1), n, 2)
        return unflatten(g, result, batch, [n, m])
    tall = m >= n
    rows, cols = (m, n) if tall else (n, m)
    x, size = padded_even(g, a if tall else transposed(g, a), count, rows, cols, both=False)
    x, v = jacobi(g, x, count, rows, size, one_sided=True, vectors=True)
    squares = g.op("MatMul", g.const(torch.ones(1, rows, dtype=dtype)), g.op("Mul", x, x))  # [count, 1, size]
    sigma = g.op("Sqrt", squares)
    keep = g.op("Greater", sigma, cutoff(g, atol, rtol, largest(g, sigma, count, size)[0], m, n))
    w = g.op("Where", keep, g.op("Reciprocal", g.op("Where", keep, squares, one)), zero)
    result = g.op("MatMul", g.op("Mul", v, w), transposed(g, x))  # [count, size, rows]
    if size != cols:
        result = first_rows(g, result, cols, 1)
    return unflatten(g, result if tall else transposed(g, result), batch, [n, m])


@register("aten::linalg_pinv.atol_rtol_tensor")
def aten_linalg_pinv_atol_rtol_tensor(g, self, *, atol=None, rtol=None, hermitian=False):
    """linalg_pinv.atol_rtol_tensor(Tensor self, *, Tensor? atol=None, Tensor? rtol=None, bool hermitian=False) -> Tensor"""
    return pinv(g, self, atol, rtol, hermitian, "linalg_pinv")


@register("aten::linalg_pinv.atol_rtol_float")
def aten_linalg_pinv_atol_rtol_float(g, self, *, atol=None, rtol=None, hermitian=False):
    """linalg_pinv.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor"""
    return pinv(g, self, atol, rtol, hermitian, "linalg_pinv")


@register("aten::linalg_pinv.default")
def aten_linalg_pinv(g, self, rcond, hermitian=False):
    """linalg_pinv(Tensor self, float rcond, bool hermitian=False) -> Tensor"""
    return pinv(g, self, 0.0, rcond, hermitian, "linalg_pinv")


@register("aten::linalg_pinv.rcond_tensor")
def aten_linalg_pinv_rcond_tensor(g, self, rcond, hermitian=False):
    """linalg_pinv.rcond_tensor(Tensor self, Tensor rcond, bool hermitian=False) -> Tensor"""
    return pinv(g, self, 0.0, rcond, hermitian, "linalg_pinv")


@register("aten::pinverse.default")
def aten_pinverse(g, self, rcond=1e-15):
    """pinverse(Tensor self, float rcond=1.0000000000000001e-15) -> Tensor"""
    return pinv(g, self, 0.0, rcond, False, "pinverse")
