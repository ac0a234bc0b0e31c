"""Opset-9 base, gamma-family special functions: lgamma, digamma, polygamma, zeta, erfinv, ndtri, erfcx,
log_ndtr; computed in float64 by series and rational approximations in elementwise ops (the incomplete
gamma functions, on the same arithmetic, are in opset9_igamma)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast, loop, opmath, to_float
from aten2onnx.symbolic.opset9_math import float_result, is_inf
from aten2onnx.symbolic.opset9_special import append_axis

register = functools.partial(registry.register, opset=9)

# Every function here computes in float64 whatever the input dtype (onnxruntime has float64 kernels for
# the elementwise ops used, though not for Erf or Tan, which are therefore built from series here) and
# casts the result back. The algorithms follow ATen's (ATen/native/Math.h, after Cephes, SciPy and Boost),
# so that edge values (poles, infinities, NaN) come out as eager's do.

MACHEP = 1.11022302462515654042e-16  # 2**-53
SQRT_PI = math.sqrt(math.pi)


# -- float64 arithmetic on graph values ------------------------------------------------------------------


class F64:
    """A float64 graph value with arithmetic operators, so that the series below read as formulas.
    Python numbers in an expression become float64 constants. Comparisons give a `Mask`."""

    __slots__ = ("g", "v")

    def __init__(self, g: GraphBuilder, v: Value) -> None:
        self.g, self.v = g, v

    @classmethod
    def of(cls, g: GraphBuilder, x: Value) -> F64:
        return cls(g, cast(g, x, torch.float64))

    def value(self, other) -> Value:
        return graph_value(self.g, other)

    def _op(self, op_type: str, *others) -> F64:
        return F64(self.g, self.g.op(op_type, self.v, *(self.value(o) for o in others)))

    def _rop(self, op_type: str, other) -> F64:
        return F64(self.g, self.g.op(op_type, self.value(other), self.v))

    def __add__(self, o): return self._op("Add", o)
    def __radd__(self, o): return self._rop("Add", o)
    def __sub__(self, o): return self._op("Sub", o)
    def __rsub__(self, o): return self._rop("Sub", o)
    def __mul__(self, o): return self._op("Mul", o)
    def __rmul__(self, o): return self._rop("Mul", o)
    def __truediv__(self, o): return self._op("Div", o)
    def __rtruediv__(self, o): return self._rop("Div", o)
    def __pow__(self, o): return self._op("Pow", o)
    def __neg__(self): return self._op("Neg")
    def __abs__(self): return self._op("Abs")
    def __lt__(self, o): return Mask(self.g, self.g.op("Less", self.v, self.value(o)))
    def __gt__(self, o): return Mask(self.g, self.g.op("Greater", self.v, self.value(o)))
    def __le__(self, o): return ~(self > o) & self.ordered(o)
    def __ge__(self, o): return ~(self < o) & self.ordered(o)

    def ordered(self, o) -> Mask:
        """Neither operand NaN (Python numbers here never are)."""
        out = ~self.isnan()
        return out & ~o.isnan() if isinstance(o, F64) else out

    def eq(self, o) -> Mask:
        """== by Less/Greater (Equal takes floats from opset 11); NaN equals nothing."""
        return Mask(self.g, self.g.equal(self.v, self.value(o)))

    def exp(self): return self._op("Exp")
    def log(self): return self._op("Log")
    def sqrt(self): return self._op("Sqrt")
    def floor(self): return self._op("Floor")
    def ceil(self): return self._op("Ceil")
    def sin(self): return self._op("Sin")
    def cos(self): return self._op("Cos")
    def isnan(self): return Mask(self.g, self.g.op("IsNaN", self.v))
    def isinf(self): return Mask(self.g, is_inf(self.g, self.v))
    def is_integer(self): return self.eq(self.floor())

    def within(self, g: GraphBuilder) -> F64:
        """The same value used from a control-flow body."""
        return F64(g, self.v)


class Mask:
    """A bool graph value with &, | and ~."""

    __slots__ = ("g", "v")

    def __init__(self, g: GraphBuilder, v: Value) -> None:
        self.g, self.v = g, v

    def __and__(self, o): return Mask(self.g, self.g.op("And", self.v, o.v))
    def __or__(self, o): return Mask(self.g, self.g.op("Or", self.v, o.v))
    def __invert__(self): return Mask(self.g, self.g.op("Not", self.v))

    def pick(self, a, b) -> F64:
        """a where true, else b (either may be a Python number)."""
        return F64(self.g, self.g.op("Where", self.v, graph_value(self.g, a), graph_value(self.g, b)))

    def any(self) -> Value:
        """A 0-d bool: true where any element is (false for an empty tensor)."""
        flat = self.g.op("Reshape", self.v, self.g.const([-1], dtype=torch.int64))
        count = self.g.op("ReduceSum", cast(self.g, flat, torch.float64), keepdims=0)
        return self.g.op("Greater", count, self.g.const(0.0, dtype=torch.float64))


def graph_value(g: GraphBuilder, x: F64 | float) -> Value:
    return x.v if isinstance(x, F64) else g.const(float(x), dtype=torch.float64)


def const(g: GraphBuilder, value: float) -> F64:
    return F64(g, g.const(float(value), dtype=torch.float64))


def nowhere(x: F64) -> Mask:
    """All false, shaped like x."""
    return x.isnan() & ~x.isnan()


def zeros(x: F64) -> F64:
    """0.0 shaped like x (x * 0 would be NaN at infinities)."""
    return nowhere(x).pick(1.0, 0.0)


def choose(cond: Mask, a: Mask, b: Mask) -> Mask:
    return (cond & a) | (~cond & b)


def full(*xs: F64) -> list[F64]:
    """The operands expanded to their common shape (values carried by a Loop keep one shape)."""
    g = xs[0].g
    shape = g.op("Shape", functools.reduce(lambda a, b: a + b, xs).v)
    return [F64(g, g.op("Expand", x.v, shape)) for x in xs]


def polevl(x: F64, coeffs: Sequence[float]) -> F64:
    """sum(c[i] * x**(n - i)): coefficients from the highest power down (Horner)."""
    out = x * coeffs[0] + coeffs[1]
    for c in coeffs[2:]:
        out = out * x + c
    return out


def unary(g: GraphBuilder, fn: Callable[[F64], F64], self: Value) -> Value:
    """fn on self in float64, cast back; ints and bools give the default float dtype."""
    x = to_float(g, self)
    return cast(g, fn(F64.of(g, x)).v, x.dtype)


def log1p(v: F64) -> F64:
    """log(1 + v) without cancellation for small v: log(u) * v / (u - 1) with u = 1 + v rounded."""
    u = 1.0 + v
    return u.eq(1.0).pick(v, u.log() * v / (u - 1.0))


def expm1(v: F64) -> F64:
    """exp(v) - 1 without cancellation for small v: (u - 1) * v / log(u) with u = exp(v) (Kahan)."""
    u = v.exp()
    small = (u - 1.0).eq(0.0)
    return small.pick(v, (abs(v) > 0.5).pick(u - 1.0, (u - 1.0) * v / u.log()))


# -- error function family ---------------------------------------------------------------------------

# erf(x) = 2x/sqrt(pi) exp(-x^2) sum_n (2x^2)^n / (2n+1)!!: all terms positive; 40 terms reach full
# precision up to x = 2.5. Beyond, erfc by its continued fraction, 40 terms deep. The series runs in
# (x / 2.5)^2, which keeps its coefficients above float32's range: onnxruntime's optimizer drops an Add
# of a float64 constant that is zero as a float32.
SERIES_END = 2.5
_ERF_SERIES = [(2 * SERIES_END ** 2) ** n / math.prod(range(2 * n + 1, 0, -2)) for n in range(40)][::-1]
_ERFC_FRACTION_DEPTH = 40


def erf_scaled_series(x: F64) -> F64:
    """erf(x) * exp(x^2) / x for |x| <= SERIES_END."""
    w = x / SERIES_END
    return polevl(w * w, _ERF_SERIES) * (2 / SQRT_PI)


def erfcx_fraction(x: F64) -> F64:
    """exp(x^2) erfc(x) for x >= SERIES_END by the Laplace continued fraction
    1/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))."""
    t = x
    for k in range(_ERFC_FRACTION_DEPTH, 0, -1):
        t = x + (k / 2) / t
    return (1 / SQRT_PI) / t


def erfcx_nonnegative(u: F64) -> F64:
    near = u < SERIES_END
    us, uc = near.pick(u, 0.0), near.pick(SERIES_END, u)
    return near.pick((us * us).exp() - us * erf_scaled_series(us), erfcx_fraction(uc))


def erfcx(x: F64) -> F64:
    """exp(x^2) erfc(x); for x < 0 by erfcx(x) = 2 exp(x^2) - erfcx(-x), infinite below about -26.6."""
    neg = x < 0.0
    pos = erfcx_nonnegative(abs(x))
    return neg.pick(2.0 * (x * x).exp() - pos, pos)


def erfc(x: F64) -> F64:
    u = abs(x)
    tail = erfcx_nonnegative(u) * (-(u * u)).exp()
    return (x < 0.0).pick(2.0 - tail, tail)


def erf(x: F64) -> F64:
    u = abs(x)
    near = u < SERIES_END
    us, uc = near.pick(u, 0.0), near.pick(SERIES_END, u)
    head = us * (-(us * us)).exp() * erf_scaled_series(us)
    value = near.pick(head, 1.0 - erfcx_fraction(uc) * (-(uc * uc)).exp())
    return (x < 0.0).pick(-value, value)


def erfinv(y: F64) -> F64:
    """A rational first guess polished by two Newton steps on erf."""
    a = (0.886226899, -1.645349621, 0.914624893, -0.140543331)
    b = (-2.118377725, 1.442710462, -0.329097515, 0.012229801)
    c = (-1.970840454, -1.624906493, 3.429567803, 1.641345311)
    d = (3.543889200, 1.637067800)
    ya = abs(y)
    central = ya <= 0.7
    z = y * y
    inner = y * polevl(z, a[::-1]) / polevl(z, b[::-1] + (1.0,))
    w = (central | (ya >= 1.0)).pick(0.5, ya)
    t = (-((1.0 - w) / 2.0).log()).sqrt()
    outer = abs(polevl(t, c[::-1])) / polevl(t, d[::-1] + (1.0,))
    x = central.pick(inner, (y < 0.0).pick(-outer, outer))
    for _ in range(2):
        x = x - (erf(x) - y) / ((2 / SQRT_PI) * (-(x * x)).exp())
    x = ya.eq(1.0).pick((y < 0.0).pick(-math.inf, math.inf), x)
    return (ya > 1.0).pick(math.nan, x)


_NDTRI_P0 = (-5.99633501014107895267e1, 9.80010754185999661536e1, -5.66762857469070293439e1,
             1.39312609387279679503e1, -1.23916583867381258016e0)
_NDTRI_Q0 = (1.0, 1.95448858338141759834e0, 4.67627912898881538453e0, 8.63602421390890590575e1,
             -2.25462687854119370527e2, 2.00260212380060660359e2, -8.20372256168333339912e1,
             1.59056225126211695515e1, -1.18331621121330003142e0)
_NDTRI_P1 = (4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1,
             4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0,
             -1.40256079171354495875e-1, -3.50424626827848203418e-2, -8.57456785154685413611e-4)
_NDTRI_Q1 = (1.0, 1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1,
             1.50425385692907503408e1, 2.50464946208309415979e0, -1.42182922854787788574e-1,
             -3.80806407691578277194e-2, -9.33259480895457427372e-4)
_NDTRI_P2 = (3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0,
             1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2,
             3.01581553508235416007e-4, 2.65806974686737550832e-6, 6.23974539184983293730e-9)
_NDTRI_Q2 = (1.0, 6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0,
             2.16236993594496635890e-1, 1.34204006088543189037e-2, 3.28014464682127739104e-4,
             2.89247864745380683936e-6, 6.79019408009981274425e-9)


def ndtri(y0: F64) -> F64:
    """The standard normal quantile: a rational function of y - 1/2 in the middle, of
    1/sqrt(-2 log y) in the tails (Cephes)."""
    exp_m2 = 0.13533528323661269189
    upper = y0 > 1.0 - exp_m2
    y = upper.pick(1.0 - y0, y0)
    central = y > exp_m2
    yc = central.pick(y, 0.5) - 0.5
    y2 = yc * yc
    middle = (yc + yc * (y2 * polevl(y2, _NDTRI_P0) / polevl(y2, _NDTRI_Q0))) * math.sqrt(2 * math.pi)
    yt = (central | (y <= 0.0)).pick(exp_m2, y)
    x = (-2.0 * yt.log()).sqrt()
    z = 1.0 / x
    near = z * polevl(z, _NDTRI_P1) / polevl(z, _NDTRI_Q1)
    far = z * polevl(z, _NDTRI_P2) / polevl(z, _NDTRI_Q2)
    tail = x - x.log() / x - (x < 8.0).pick(near, far)
    out = central.pick(middle, upper.pick(tail, -tail))
    out = ((y0 < 0.0) | (y0 > 1.0)).pick(math.nan, out)
    out = y0.eq(1.0).pick(math.inf, out)
    return y0.eq(0.0).pick(-math.inf, out)


def log_ndtr(x: F64) -> F64:
    """log of the standard normal CDF; by erfcx in the left tail, where the CDF underflows."""
    t = x * (1 / math.sqrt(2))
    left = x < -1.0
    tl, tr = left.pick(t, -1.0), left.pick(0.0, t)
    return left.pick((erfcx(-tl) / 2.0).log() - tl * tl, log1p(-erfc(tr) / 2.0))


# -- gamma and its logarithmic derivatives -------------------------------------------------------------

# Boost's Lanczos approximation (lanczos13m53): Gamma(z) = L(z) ((z + g - 1/2) / e)^(z - 1/2) with
# L = P/Q, both of degree 12, coefficients from the highest power.
LANCZOS_G = 6.024680040776729583740234375
_LANCZOS_P = (0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
              19.51992788247617482847860966235652136208, 449.9445569063168119446858607650988409623,
              6955.999602515376140356310115515198987526, 75999.29304014542649875303443598909137092,
              601859.6171681098786670226533699352302507, 3481712.15498064590882071018964774556468,
              14605578.08768506808414169982791359218571, 43338889.32467613834773723740590533316085,
              86363131.28813859145546927288977868422342, 103794043.1163445451906271053616070238554,
              56906521.91347156388090791033559122686859)
_LANCZOS_Q = (1.0, 66.0, 1925.0, 32670.0, 357423.0, 2637558.0, 13339535.0, 45995730.0, 105258076.0, 150917976.0,
              120543840.0, 39916800.0, 0.0)


def lanczos_sum(z: F64) -> F64:
    """L(z) for z > 0: P(z)/Q(z) up to 1, and in powers of 1/z beyond (no overflow for large z)."""
    small = z <= 1.0
    zs, zl = small.pick(z, 1.0), small.pick(1.0, z)
    y = 1.0 / zl
    return small.pick(polevl(zs, _LANCZOS_P) / polevl(zs, _LANCZOS_Q),
                      polevl(y, _LANCZOS_P[::-1]) / polevl(y, _LANCZOS_Q[::-1]))


def lgamma(x: F64) -> F64:
    """log|Gamma(x)|: Lanczos from 1/2 up, the reflection formula below; +inf at the poles and +-inf."""
    small = x < 0.5
    z = small.pick(1.0 - x, x)
    lg = (z - 0.5) * ((z + (LANCZOS_G - 0.5)).log() - 1.0) + lanczos_sum(z).log()
    r = x - (x + 0.5).floor()
    reflected = (math.pi / abs((math.pi * r).sin())).log() - lg
    out = small.pick(reflected, lg)
    return (((x <= 0.0) & x.is_integer()) | x.isinf()).pick(math.inf, out)


_DIGAMMA_A = (8.33333333333333333333e-2, -2.10927960927960927961e-2, 7.57575757575757575758e-3,
              -4.16666666666666666667e-3, 3.96825396825396825397e-3, -8.33333333333333333333e-3,
              8.33333333333333333333e-2)
PSI_10 = 2.25175258906672110764


def digamma(x: F64) -> F64:
    """psi(x): shifted up past 10 by psi(x) = psi(x + 1) - 1/x, then the asymptotic series; reflected
    below 0 by psi(x) = psi(1 - x) - pi / tan(pi x). -inf at +0, +inf at -0, NaN at negative integers."""
    neg = x < 0.0
    w = neg.pick(1.0 - x, x)
    acc = const(x.g, 0.0)
    for _ in range(10):
        below = w < 10.0
        acc = acc - below.pick(1.0 / w, 0.0)
        w = below.pick(w + 1.0, w)
    zz = 1.0 / (w * w)
    asymptotic = acc + w.log() - 0.5 / w - zz * polevl(zz, _DIGAMMA_A)
    out = w.eq(10.0).pick(acc + PSI_10, asymptotic)
    r = x - x.ceil()  # the fractional part, of x's sign
    out = neg.pick(out - math.pi * (math.pi * r).cos() / (math.pi * r).sin(), out)
    out = (neg & x.is_integer()).pick(math.nan, out)
    return x.eq(0.0).pick((1.0 / x < 0.0).pick(math.inf, -math.inf), out)


def rounded_to(v: F64, dtype: torch.dtype) -> F64:
    """v rounded to dtype (and held in float64 again)."""
    return v if dtype == torch.float64 else F64(v.g, cast(v.g, cast(v.g, v.v, dtype), torch.float64))


def trigamma(x: F64, dtype: torch.dtype = torch.float64) -> F64:
    """psi'(x): six steps of psi'(x) = psi'(x + 1) + 1/x^2, then the asymptotic series; reflected below
    1/2 by psi'(x) = pi^2 / sin^2(pi x) - psi'(1 - x), with sin(pi x) as eager computes it in the input's
    dtype: pi and pi * x rounded to it, x not reduced first (so at a pole, a non-positive integer, sin is
    tiny but not 0 and the result huge but finite, as eager's; and far below 0, as rounded as eager's)."""
    small = x < 0.5
    w = small.pick(1.0 - x, x)
    acc = const(x.g, 0.0)
    for _ in range(6):
        acc = acc + 1.0 / (w * w)
        w = w + 1.0
    ixx = 1.0 / (w * w)
    acc = acc + (1.0 + 1.0 / (2.0 * w) + ixx * (1 / 6 - ixx * (1 / 30 - ixx * (1 / 42)))) / w
    pi = torch.tensor(math.pi, dtype=dtype).item()
    s = rounded_to(rounded_to(pi * x, dtype).sin(), dtype)
    return small.pick(pi * pi / (s * s) - acc, acc)


# Euler-Maclaurin tail coefficients of the Hurwitz zeta: (2k)! / B_2k.
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18)


def zeta(x: F64, q: F64) -> F64:
    """The Hurwitz zeta sum_k (k + q)^-x: terms summed directly (in an ONNX Loop, until q + k passes 9
    and at least 9 terms, or until they stop mattering), then the Euler-Maclaurin tail. inf at x = 1
    and at the poles q = 0, -1, ...; NaN for x < 1, and for q < 0 with x not an integer."""
    g = x.g
    x, q = full(x, q)
    pole = x.eq(1.0) | (~(x < 1.0) & (q <= 0.0) & q.is_integer())
    undefined = ~pole & ((x < 1.0) | ((q <= 0.0) & ~x.is_integer()))
    live = ~(pole | undefined)
    s = q ** -x

    def step(body: GraphBuilder, i: Value, carried: list[Value]) -> list[Value]:
        s, a, b = (F64(body, v) for v in carried[:3])
        active, converged = Mask(body, carried[3]), Mask(body, carried[4])
        xb = x.within(body)
        a1 = a + 1.0
        b1 = a1 ** -xb
        s1 = s + b1
        done = ((-MACHEP) * s1 < b1) & (b1 < MACHEP * s1)
        count = F64.of(body, i) + 1.0
        still = active & ~done & ((count < 9.0) | (a1 <= 9.0))
        return [active.pick(s1, s).v, active.pick(a1, a).v, active.pick(b1, b).v, still.v,
                (converged | (active & done)).v, still.any()]

    s, a, b, _, converged = loop(g, None, [s.v, q.v, zeros(s).v, live.v, nowhere(s).v], step, name="zeta",
                                 keep_going=live.any(), stop=True)
    s, w, b, finished = F64(g, s), F64(g, a), F64(g, b), Mask(g, converged) | ~live
    s = finished.pick(s, s + b * w / (x - 1.0) - 0.5 * b)
    a = const(g, 1.0)
    for i, coeff in enumerate(_ZETA_A):
        a = a * (x + 2.0 * i)
        b = b / w
        t = a * b / coeff
        s1 = s + t
        s = finished.pick(s, s1)
        finished = finished | (abs(t / s1) < MACHEP)
        a = a * (x + 2.0 * i + 1.0)
        b = b / w
    return pole.pick(math.inf, undefined.pick(math.nan, s))


# -- handlers ----------------------------------------------------------------------------------------------


@register("aten::lgamma.default")
def aten_lgamma(g, self):
    """lgamma(Tensor self) -> Tensor"""
    return unary(g, lgamma, self)


@register("aten::digamma.default")
def aten_digamma(g, self):
    """digamma(Tensor self) -> Tensor"""
    return unary(g, digamma, self)


@register("aten::polygamma.default")
def aten_polygamma(g, n, self):
    """polygamma(int n, Tensor self) -> Tensor"""
    if n < 0:
        raise NotImplementedError("polygamma(n, x) is defined for n >= 0 only")
    if n <= 1:
        # (eager computes half types' trigamma in float32)
        return unary(g, functools.partial(trigamma, dtype=opmath(to_float(g, self).dtype)) if n else digamma, self)
    # (-1)^(n+1) n! zeta(n + 1, x), with ATen's roundings: zeta stored at the input's dtype, times n! at
    # float32 (float64 for float64 inputs), where n! overflows from n = 35.
    x = to_float(g, self)
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    z = cast(g, cast(g, zeta(const(g, n + 1.0), F64.of(g, x)).v, x.dtype), compute)
    factorial = math.factorial(n)
    scale = factorial if factorial <= torch.finfo(compute).max else math.inf
    return cast(g, g.op("Mul", z, g.const((1.0 if n % 2 else -1.0) * scale, dtype=compute)), x.dtype)


@register("aten::special_polygamma.default")
def aten_special_polygamma(g, n, self):
    """special_polygamma(int n, Tensor self) -> Tensor"""
    return aten_polygamma(g, n, self)


@register("aten::mvlgamma.default")
def aten_mvlgamma(g, self, p):
    """mvlgamma(Tensor self, int p) -> Tensor"""
    if p < 1:
        raise NotImplementedError("mvlgamma needs p >= 1")
    x = to_float(g, self)
    # sum_j lgamma(x - j/2) over a new last axis, summed by MatMul with ones (no Reduce* axes form).
    terms = F64(g, append_axis(g, cast(g, x, torch.float64))) - F64(g, g.const([j / 2 for j in range(p)],
                                                                          dtype=torch.float64))
    total = F64(g, g.op("MatMul", lgamma(terms).v, g.const([1.0] * p, dtype=torch.float64)))
    return cast(g, (total + p * (p - 1) / 4 * math.log(math.pi)).v, x.dtype)


@register("aten::special_zeta.default", "aten::special_zeta.self_scalar", "aten::special_zeta.other_scalar")
def aten_special_zeta(g, self, other):
    """special_zeta(Tensor self, Tensor other) -> Tensor"""
    x, q = (F64.of(g, v) if isinstance(v, Value) else const(g, v) for v in (self, other))
    return cast(g, zeta(x, q).v, float_result(self, other))


@register("aten::erfinv.default")
def aten_erfinv(g, self):
    """erfinv(Tensor self) -> Tensor"""
    return unary(g, erfinv, self)


@register("aten::special_ndtri.default")
def aten_special_ndtri(g, self):
    """special_ndtri(Tensor self) -> Tensor"""
    return unary(g, ndtri, self)


@register("aten::special_erfcx.default")
def aten_special_erfcx(g, self):
    """special_erfcx(Tensor self) -> Tensor"""
    return unary(g, erfcx, self)


@register("aten::special_log_ndtr.default")
def aten_special_log_ndtr(g, self):
    """special_log_ndtr(Tensor self) -> Tensor"""
    return unary(g, log_ndtr, self)
