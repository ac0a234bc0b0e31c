"""The spectral and symmetric-indefinite algorithms of the linalg handlers, in ONNX ops: one-sided Jacobi
SVD with round-robin sweeps, symmetric eigendecomposition, pseudo-inverse, Bunch-Kaufman LDL^T and its
solve. No handlers here."""

from __future__ import annotations

import math

import torch

from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import SymInt, cast, fill, loop, reshape, sym_prod
from aten2onnx.symbolic._linalg import (
    I64,
    arange_col,
    arange_row,
    as_i64,
    eye,
    first_failure,
    first_indices,
    flatten,
    gather_rows,
    identity,
    index1,
    masked,
    matrix_shape,
    row_offsets,
    same_size,
    size_max,
    size_min,
    size_mul,
    size_sub,
    sizes,
    square_size,
    transposed,
    tril_mask,
    triu_mask,
    unflatten,
    zeros,
)

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


def round_robin_pairs(g: GraphBuilder, r: Value, n: Value) -> tuple[Value, Value]:
    """Round r's pairs ([n/2] int64 p < q) of `round_robin` for a symbolic even n, computed: after r
    rounds, player 0 stays and seat j >= 1 holds 1 + ((j - 1 - r) mod (n - 1))."""
    one = g.const(1, dtype=I64)
    rounds = g.op("Sub", n, one)
    seats = g.op("Range", g.const(0, dtype=I64), g.op("Div", n, g.const(2, dtype=I64)), one)

    def player(j: Value) -> Value:
        turned = g.op("Mod", g.op("Add", g.op("Sub", g.op("Sub", j, one), r), rounds), rounds)
        return g.op("Where", g.op("Equal", j, g.const(0, dtype=I64)), j, g.op("Add", turned, one))

    a, b = player(seats), player(g.op("Sub", rounds, seats))
    return g.op("Where", g.op("Less", a, b), a, b), g.op("Where", g.op("Less", a, b), b, a)


def pad_to(g: GraphBuilder, x: Value, batch: SymInt, rows: SymInt, cols: SymInt, to_rows: SymInt,
           to_cols: SymInt) -> Value:
    """A [batch, rows, cols] stack with zero columns, then rows, appended up to [batch, to_rows, to_cols]
    (a symbolic size may append none)."""
    if not same_size(cols, to_cols):
        x = g.op("Concat", x, fill(g, [batch, rows, size_sub(g, to_cols, cols)], 0, x.dtype), axis=2)
    if not same_size(rows, to_rows):
        x = g.op("Concat", x, fill(g, [batch, size_sub(g, to_rows, rows), to_cols], 0, x.dtype), axis=1)
    return x


def even(g: GraphBuilder, n: SymInt) -> SymInt:
    """n rounded up to even."""
    if isinstance(n, int):
        return n + n % 2
    return g.op("Add", n, g.op("Mod", n, g.const(2, dtype=I64)))


def padded_even(g: GraphBuilder, x: Value, batch: SymInt, rows: SymInt, cols: SymInt, *,
                both: bool) -> tuple[Value, SymInt]:
    """x with a zero column (and row, when `both`) appended when cols is odd; the new column count."""
    size = even(g, cols)
    if isinstance(size, int) and size == cols:
        return x, cols
    return pad_to(g, x, batch, rows, cols, size if both else rows, size), size


def diagonal_of(g: GraphBuilder, x: Value, n: SymInt) -> Value:
    """The diagonals of a [batch, n, n] stack as [batch, n, 1]."""
    return g.op("MatMul", masked(g, eye(g, n, n, torch.bool), x), ones(g, n, 1, x.dtype))


def ones(g: GraphBuilder, rows: SymInt, cols: SymInt, dtype: torch.dtype) -> Value:
    if isinstance(rows, int) and isinstance(cols, int):
        return g.const(torch.ones(rows, cols, dtype=dtype))
    return fill(g, [rows, cols], 1, dtype)


def scaled_eps(g: GraphBuilder, dtype: torch.dtype, k: SymInt) -> Value:
    """eps * k in dtype."""
    if isinstance(k, int):
        return g.const(torch.finfo(dtype).eps * k, dtype=dtype)
    return g.op("Mul", g.const(torch.finfo(dtype).eps, dtype=dtype), cast(g, k, dtype))


def jacobi(g: GraphBuilder, x: Value, batch: SymInt, m: SymInt, n: SymInt, *, one_sided: bool,
           vectors: bool = False) -> list[Value]:
    """Cyclic Jacobi in round-robin order on a [batch, m, n] stack (n even). Two-sided (m == n, x
    symmetric): x <- J^T x J until it is diagonal, the rotated entries set to zero. One-sided (Hestenes):
    x <- x J until its columns are orthogonal. Each round rotates n/2 disjoint pairs (p, q) at once with
    the rotation zeroing the pair's entry of the symmetric S = x (or x^T x); a pair whose
    |s_pq| <= tol sqrt(|s_pp s_qq|) is left alone, and the loop stops when every pair is. Returns
    [x], or [x, V] with V the product of the rotations when `vectors` is set."""
    dtype = x.dtype
    rounds = size_sub(g, n, 1)
    if isinstance(n, int):
        ps, qs = round_robin(n)
        pairs_p, pairs_q = g.const(ps, dtype=I64), g.const(qs, dtype=I64)
    tol = scaled_eps(g, dtype, m if one_sided else n)
    idx, identity_n = arange_row(g, n), eye(g, n, n, dtype)
    offdiagonal = g.op("Not", eye(g, n, n, torch.bool)) if not isinstance(n, int) else \
        g.const(~torch.eye(n, dtype=torch.bool))
    zero, one = g.const(0, dtype=dtype), g.const(1, dtype=dtype)
    column_of_ones = ones(g, n, 1, dtype)
    half = n // 2 if isinstance(n, int) else -1

    def step(body: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
        x = state[0]
        s = body.op("MatMul", transposed(body, x), x) if one_sided else x
        d = diagonal_of(body, s, n)  # [batch, n, 1]
        # not converged while some off-diagonal entry is above tolerance
        bound = body.op("Mul", tol, body.op("Sqrt", body.op("Abs", body.op("Mul", d, transposed(body, d)))))
        above = body.op("And", offdiagonal, body.op("Greater", body.op("Abs", s), bound))
        again = cast(body, body.op("ReduceMax", cast(body, above, torch.float32), keepdims=0), torch.bool)
        r = body.op("Sub", i, body.op("Mul", body.op("Div", i, as_i64(body, rounds)), as_i64(body, rounds)))
        if isinstance(n, int):
            r1 = index1(body, r)
            p, q = body.op("Gather", pairs_p, r1, axis=0), body.op("Gather", pairs_q, r1, axis=0)
        else:
            p, q = round_robin_pairs(body, r, n)
        ep = cast(body, body.op("Equal", reshape(body, p, [half, 1]), idx), dtype)
        eq = cast(body, body.op("Equal", reshape(body, q, [half, 1]), idx), dtype)
        s_pp, s_qq = body.op("MatMul", ep, d), body.op("MatMul", eq, d)  # [batch, n/2, 1]
        s_pq = body.op("MatMul", body.op("Mul", body.op("MatMul", ep, s), eq), column_of_ones)
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
        j = body.op("Add", body.op("Mul", identity_n, transposed(body, cvec)),
                    body.op("Mul", partner, transposed(body, svec)))
        if one_sided:
            x = body.op("MatMul", x, j)
        else:
            x = body.op("MatMul", body.op("MatMul", transposed(body, j), x), j)
            x = body.op("Where", cast(body, partner, torch.bool), zero, x)
        return [x, body.op("MatMul", state[1], j), again] if vectors else [x, again]

    state = [x, identity(g, batch, n, dtype)] if vectors else [x]
    return loop(g, size_mul(g, JACOBI_SWEEPS, rounds), state, step, name="jacobi", stop=True)


def sort_rows(g: GraphBuilder, x: Value, batch: SymInt, n: SymInt, *, descending: bool) -> Value:
    """x [batch, n] sorted along its rows, stable: each value's rank counts the values before it, and a
    one-hot of the ranks permutes by MatMul (TopK's k changed form at opset 10)."""
    xi, xj = reshape(g, x, [batch, n, 1]), reshape(g, x, [batch, 1, n])
    before = g.op("Greater" if descending else "Less", xj, xi)
    tie = g.op("Not", g.op("Or", g.op("Less", xj, xi), g.op("Greater", xj, xi)))
    earlier = tril_mask(g, n, n, -1)  # [i, j]: j < i
    count = g.op("Or", before, g.op("And", tie, earlier))
    rank = cast(g, g.op("MatMul", cast(g, count, x.dtype), ones(g, n, 1, x.dtype)), I64)
    onehot = cast(g, g.op("Equal", arange_col(g, n), reshape(g, rank, [batch, 1, n])), x.dtype)
    return reshape(g, g.op("MatMul", onehot, xi), [batch, n])


def symmetric(g: GraphBuilder, a: Value, n: SymInt, upper: bool) -> Value:
    """The symmetric matrices given by the lower (or upper) triangle of a [batch, n, n] stack."""
    half = masked(g, (triu_mask if upper else tril_mask)(g, n, n, 0), a)
    strict = masked(g, (triu_mask if upper else tril_mask)(g, n, n, 1 if upper else -1), a)
    return g.op("Add", half, transposed(g, strict))


def eigvalsh(g: GraphBuilder, A: Value, upper: bool, what: str) -> Value:
    """Eigenvalues (ascending) of the symmetric matrices given by one triangle of A."""
    shape = matrix_shape(g, A, what)
    n = square_size(shape, what)
    batch = shape[:-2]
    count = sym_prod(g, batch)
    sym, size = padded_even(g, symmetric(g, flatten(g, A, batch, [n, n]), n, upper), count, n, n, both=True)
    d = reshape(g, diagonal_of(g, jacobi(g, sym, count, size, size, one_sided=False)[0], size), [count, size])
    if not same_size(size, n):
        d = g.op("Gather", d, first_indices(g, n), axis=1)
    return reshape(g, sort_rows(g, d, count, n, descending=False), batch + [n])


def svdvals(g: GraphBuilder, A: Value, what: str) -> Value:
    """Singular values (descending) by one-sided Jacobi on the taller orientation of A: the norms of the
    orthogonalized columns."""
    shape = matrix_shape(g, A, what)
    batch, (m, n) = shape[:-2], shape[-2:]
    count, k = sym_prod(g, batch), size_min(g, m, n)
    a = flatten(g, A, batch, [m, n])
    a, m, n = taller(g, a, count, m, n)
    a, size = padded_even(g, a, count, m, n, both=False)
    a = jacobi(g, a, count, m, size, one_sided=True)[0]
    norms = reshape(g, g.op("Sqrt", g.op("MatMul", ones(g, 1, m, A.dtype), g.op("Mul", a, a))), [count, size])
    if not isinstance(size, int):
        # the zero columns of a padding to square may end anywhere: the k largest norms, sorted
        norms = g.op("Gather", sort_rows(g, norms, count, size, descending=True), first_indices(g, k), axis=1)
        return reshape(g, norms, batch + [k])
    if size != k:
        norms = g.op("Gather", norms, first_indices(g, k), axis=1)
    return reshape(g, sort_rows(g, norms, count, k, descending=True), batch + [k])


def taller(g: GraphBuilder, a: Value, batch: SymInt, m: SymInt, n: SymInt) -> tuple[Value, SymInt, SymInt]:
    """A [batch, m, n] stack in an orientation with at least as many rows as columns, for one-sided
    Jacobi: transposed when m < n. Where that is not known when the graph is built (m and n symbolic),
    padded with zeros to square [max, max] instead: the padding adds zero singular values only (a zero
    column stays zero under the rotations), which sort last."""
    if isinstance(m, int) and isinstance(n, int):
        return (transposed(g, a), n, m) if m < n else (a, m, n)
    if same_size(m, n):
        return a, m, n
    size = size_max(g, m, n)
    return pad_to(g, a, batch, m, n, size, size), size, size


def cutoff(g: GraphBuilder, atol, rtol, top: Value, m: SymInt, n: SymInt) -> Value:
    """max(atol, rtol * top), top [..., 1] the largest singular value: atol defaults to 0 and rtol to
    eps * max(m, n), or to 0 where atol > 0. atol and rtol are floats, None, or tensors broadcasting
    with the batch shape."""
    dtype = top.dtype

    def tolerance(x, default: float) -> Value:
        if x is None:
            return g.const(default, dtype=dtype)
        if isinstance(x, Value):
            if x.shape is None:
                raise NotImplementedError("a tolerance tensor of unknown rank")
            return reshape(g, cast(g, x, dtype), sizes(g, x) + [1])
        return g.const(float(x), dtype=dtype)

    default_rtol = scaled_eps(g, dtype, size_max(g, m, n))
    a = tolerance(atol, 0.0)
    if rtol is None and atol is not None:
        r = g.op("Where", g.op("Greater", a, g.const(0, dtype=dtype)), g.const(0, dtype=dtype), default_rtol)
    elif rtol is None:
        r = default_rtol
    else:
        r = tolerance(rtol, 0.0)
    return g.op("Max", a, g.op("Mul", r, top))


BUNCH_KAUFMAN_ALPHA = (1 + math.sqrt(17)) / 8


def pick(g: GraphBuilder, x: Value, index: Value, batch: SymInt, n: SymInt) -> Value:
    """x[b, 0, index[b]] of a [batch, 1, n] stack, index [batch, 1, 1]: [batch, 1, 1]."""
    offsets = row_offsets(g, batch, n)
    flat = g.op("Gather", reshape(g, x, [size_mul(g, batch, n)]), g.op("Add", reshape(g, index, [batch, 1]), offsets),
                axis=0)
    return reshape(g, flat, [batch, 1, 1])


def largest(g: GraphBuilder, x: Value, batch: SymInt, n: SymInt) -> tuple[Value, Value]:
    """(max, first index of it) over the last axis of a [batch, 1, n] stack, both [batch, 1, 1]."""
    index = g.op("ArgMax", x, axis=2, keepdims=1)
    return pick(g, x, index, batch, n), index


def swap_indices(g: GraphBuilder, a: Value, b: Value, n: SymInt) -> Value:
    """[batch, n] int64: 0..n-1 with a and b ([batch, 1, 1]) exchanged."""
    idx = arange_row(g, n)
    a, b = reshape(g, a, [-1, 1]), reshape(g, b, [-1, 1])
    return g.op("Where", g.op("Equal", idx, a), b, g.op("Where", g.op("Equal", idx, b), a,
                                                         g.op("Add", idx, g.op("Mul", a, g.const(0, dtype=I64)))))


def sytf2_loop(g: GraphBuilder, a: Value, batch: SymInt, n: SymInt) -> tuple[Value, Value, Value]:
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
    last, size = as_i64(g, size_sub(g, n, 1)), as_i64(g, n)

    def column(body: GraphBuilder, w: Value, j: Value) -> Value:
        """Column j ([batch, 1, 1]) of the symmetric trailing block, as [batch, n, 1]."""
        return transposed(body, gather_rows(body, w, reshape(body, j, [batch, 1]), batch, n, n))

    def step(body: GraphBuilder, i: Value, state: list[Value]) -> list[Value]:
        w, k, pivots, info = state
        kb = reshape(body, k, [batch, 1, 1])
        active = body.op("Less", kb, size)
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
        k1c = body.op("Where", body.op("Less", k1, size), k1, last)
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
    first = zeros(g, batch)
    no_pivots = g.const(torch.zeros(batch, n, dtype=I64)) if isinstance(batch, int) and isinstance(n, int) else \
        fill(g, [batch, n], 0, I64)
    w, _, pivots, info = loop(g, n, [start, first, no_pivots, first], step, name="sytf2")
    return masked(g, lower, w), pivots, info


def ldl_factor(g: GraphBuilder, A: Value, what: str) -> tuple[Value, Value, Value]:
    shape = matrix_shape(g, A, what)
    n = square_size(shape, what)
    batch = shape[:-2]
    count = sym_prod(g, batch)
    ld, pivots, info = sytf2_loop(g, flatten(g, A, batch, [n, n]), count, n)
    return (unflatten(g, ld, batch, [n, n]), reshape(g, cast(g, pivots, torch.int32), batch + [n]),
            reshape(g, cast(g, info, torch.int32), batch))


def sytrs(g: GraphBuilder, ld: Value, pivots: Value, rhs: Value, batch: SymInt, n: SymInt, k: SymInt) -> Value:
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

    def row(body: GraphBuilder, x: Value, j: Value, cols: SymInt) -> Value:
        return gather_rows(body, x, reshape(body, j, [batch, 1]), batch, n, cols)

    def column_below(body: GraphBuilder, j: Value, start: Value) -> Value:
        """Column j of L below row `start`, as [batch, n, 1]."""
        return body.op("Where", body.op("Greater", rows, start), transposed(body, row(body, ld_t, j, n)), zero)

    def entry(body: GraphBuilder, i: Value, j: Value) -> Value:
        return pick(body, row(body, ld_t, j, n), i, batch, n)

    def clamp(body: GraphBuilder, j: Value) -> Value:
        inside = body.op("And", body.op("Less", j, as_i64(body, n)), body.op("Not", body.op("Less", j, body.const(0, dtype=I64))))
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

    x, _ = loop(g, n, [rhs, zeros(g, batch)], forward, name="sytrs_forward")
    if isinstance(batch, int) and isinstance(n, int):
        last = g.const(torch.full((batch,), n - 1, dtype=I64))
    else:
        last = g.op("Add", zeros(g, batch), as_i64(g, size_sub(g, n, 1)))
    x, _ = loop(g, n, [x, last], backward, name="sytrs_backward")
    return x


def first_rows(g: GraphBuilder, x: Value, rows: SymInt, axis: int) -> Value:
    return g.op("Gather", x, first_indices(g, rows), axis=axis)


def pinv(g: GraphBuilder, A: Value, atol, rtol, hermitian: bool, what: str) -> Value:
    """linalg.pinv: V diag(1/sigma) U^T over the singular values above the cutoff, from one-sided Jacobi
    (A V = U diag(sigma), so it is V diag(1/sigma^2) (A V)^T); for `hermitian`, Q diag(1/lambda) Q^T over
    the eigenvalues of the lower triangle's symmetric matrix whose magnitude is above it."""
    shape = matrix_shape(g, A, what)
    batch, (m, n) = shape[:-2], shape[-2:]
    if 0 in shape:
        return fill(g, batch + [n, m], 0, A.dtype)
    count, dtype = sym_prod(g, batch), A.dtype
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
        if not same_size(size, n):
            result = first_rows(g, first_rows(g, result, n, 1), n, 2)
        return unflatten(g, result, batch, [n, m])
    if isinstance(m, int) and isinstance(n, int):
        tall = m >= n
        rows, cols = (m, n) if tall else (n, m)
        x = a if tall else transposed(g, a)
    else:
        # the pseudo-inverse of A padded with zeros to square is pinv(A) padded likewise (see `taller`)
        tall, (x, rows, cols) = True, taller(g, a, count, m, n)
    x, size = padded_even(g, x, count, rows, cols, both=False)
    x, v = jacobi(g, x, count, rows, size, one_sided=True, vectors=True)
    squares = g.op("MatMul", ones(g, 1, rows, dtype), g.op("Mul", x, x))  # [count, 1, size]
    sigma = g.op("Sqrt", squares)
    keep = g.op("Greater", sigma, cutoff(g, atol, rtol, largest(g, sigma, count, size)[0], m, n))
    w = g.op("Where", keep, g.op("Reciprocal", g.op("Where", keep, squares, one)), zero)
    result = g.op("MatMul", g.op("Mul", v, w), transposed(g, x))  # [count, size, rows]
    if isinstance(size, int):
        if size != cols:
            result = first_rows(g, result, cols, 1)
    else:
        result = first_rows(g, result, n, 1)
        if not same_size(rows, m):
            result = first_rows(g, result, m, 2)
    return unflatten(g, result if tall else transposed(g, result), batch, [n, m])
