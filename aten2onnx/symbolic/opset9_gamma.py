"""Opset-9 base, gamma-family special functions: lgamma, digamma, polygamma, zeta, incomplete gamma, erfinv,
ndtri, erfcx, log_ndtr; computed in float64 by series and rational approximations in elementwise ops."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast, loop, opmath, result_type, to_float
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


# -- the regularized incomplete gamma functions -----------------------------------------------------------

def temme(a: F64, x: F64, lower: bool) -> F64:
    """P (lower) or Q by Temme's uniform asymptotic expansion in 1/a (DLMF 8.12), for large a with x near a:
    its k-th coefficient is c_k(eta) = sum_n _TEMME_D[k][n] eta^n, summed until the terms stop shrinking."""
    g = a.g
    sigma = (x - a) / a
    eta2 = F64(g, g.op("Max", (-2.0 * (log1p(sigma) - sigma)).v, g.const(0.0, dtype=torch.float64)))
    eta = (x > a).pick(eta2.sqrt(), (x < a).pick(-eta2.sqrt(), 0.0))
    sgn = -1.0 if lower else 1.0
    res = 0.5 * erfc(sgn * eta * (a / 2.0).sqrt())
    powers = F64(g, append_axis(g, eta.v)) ** F64(g, g.const([float(n) for n in range(25)], dtype=torch.float64))
    total, afac, old = const(g, 0.0), const(g, 1.0), const(g, math.inf)
    stopped = nowhere(a)
    for row in _TEMME_D:
        ck = F64(g, g.op("MatMul", powers.v, g.const(list(row), dtype=torch.float64)))
        term = ck * afac
        absterm = abs(term)
        grew = absterm > old
        add = ~stopped & ~grew
        total = add.pick(total + term, total)
        stopped = stopped | grew | (add & (absterm < MACHEP * abs(total)))
        old = absterm
        afac = afac / a
    return res + sgn * (-0.5 * a * eta * eta).exp() * total / (2 * math.pi * a).sqrt()


def igam_fac(a: F64, x: F64, lgamma_a: F64) -> F64:
    """x^a e^-x / Gamma(a), by the Lanczos form where x is near a (less cancellation)."""
    far = abs(a - x) > 0.4 * abs(a)
    ax = a * x.log() - x - lgamma_a
    direct = (ax < -709.782712893384).pick(0.0, ax.exp())
    fac = a + (LANCZOS_G - 0.5)
    res = (fac / math.e).sqrt() / lanczos_sum(a)
    moderate = (a < 200.0) & (x < 200.0)
    numfac = (x - a - (LANCZOS_G - 0.5)) / fac
    res = res * moderate.pick((a - x).exp() * (x / fac) ** a,
                              (a * (log1p(numfac) - numfac) + x * (0.5 - LANCZOS_G) / fac).exp())
    return far.pick(direct, res)


def incomplete_gamma(a: F64, x: F64, lower: bool) -> F64:
    """P(a, x) (lower) or Q(a, x) = 1 - P: Temme's expansion for large a near x; otherwise P by its power
    series, Q by its continued fraction (x > 1.1 and x >= a) or by a series free of cancellation; the
    three iterated together in one ONNX Loop, each element until its own sum converges."""
    g = a.g
    a0, x0 = a, x = full(a, x)
    special = (x < 0.0) | (a < 0.0) | a.eq(0.0) | x.eq(0.0) | a.isinf() | x.isinf() | a.isnan() | x.isnan()
    a, x = special.pick(1.0, a), special.pick(1.0, x)  # harmless values, that the loop finishes with
    ratio = abs(x - a) / a
    asym = ((a > 20.0) & (a < 200.0) & (ratio < 0.3)) | ((a > 200.0) & (ratio < 4.5 / a.sqrt()))
    series_for_q = choose(x > 1.1, x < a, choose(x <= 0.5, -0.4 / x.log() < a, x * 1.1 < a))
    fraction_for_q = (x > 1.1) & ~(x < a)
    if lower:
        complement = (x > 1.0) & (x > a)
        use_p = ~asym & ~complement
        use_cf = ~asym & complement & fraction_for_q
        use_qs = ~asym & complement & ~fraction_for_q
    else:
        use_p = ~asym & series_for_q
        use_cf = ~asym & ~series_for_q & fraction_for_q
        use_qs = ~asym & ~series_for_q & ~fraction_for_q
    lgamma_a = lgamma(a)
    fac = igam_fac(a, x, lgamma_a)
    zero = zeros(x)

    # Loop state: P series (c, ans), Q series (fac, sum), continued fraction (pkm1, pkm2, qkm1, qkm2, ans),
    # and whether each is still running.
    def step(body: GraphBuilder, i: Value, carried: list[Value]) -> list[Value]:
        ab, xb = a.within(body), x.within(body)
        p_c, p_ans, q_fac, q_sum, pkm1, pkm2, qkm1, qkm2, cf_ans = (F64(body, v) for v in carried[:9])
        p_on, q_on, cf_on = (Mask(body, v) for v in carried[9:])
        n = F64.of(body, i) + 1.0
        # P: r = a + n; c *= x / r; ans += c until c <= MACHEP * ans.
        c1 = p_c * (xb / (ab + n))
        ans1 = p_ans + c1
        p_next = p_on & ~(c1 <= MACHEP * ans1) & ~c1.isnan()
        # Q series: fac *= -x / n; term = fac / (a + n); sum += term until |term| <= MACHEP |sum|.
        f1 = q_fac * (-xb / n)
        term = f1 / (ab + n)
        sum1 = q_sum + term
        q_next = q_on & ~(abs(term) <= MACHEP * abs(sum1)) & ~term.isnan() & (n < 1999.0)
        # Continued fraction, with its numerators and denominators rescaled when they grow large.
        y = 1.0 - ab + n
        z = xb + y + 1.0 + n
        yc = y * n
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        nonzero = ~qk.eq(0.0)
        r = pk / nonzero.pick(qk, 1.0)
        t = nonzero.pick(abs((cf_ans - r) / r), 1.0)
        ans2 = nonzero.pick(r, cf_ans)
        scale = (abs(pk) > 2.0 ** 52).pick(2.0 ** -52, 1.0)
        cf_next = cf_on & ~(t <= MACHEP) & ~t.isnan()
        keep = [(p_on, c1, p_c), (p_on, ans1, p_ans), (q_on, f1, q_fac), (q_on, sum1, q_sum),
                (cf_on, pk * scale, pkm1), (cf_on, pkm1 * scale, pkm2), (cf_on, qk * scale, qkm1),
                (cf_on, qkm1 * scale, qkm2), (cf_on, ans2, cf_ans)]
        running = p_next | q_next | cf_next
        return [on.pick(new, old).v for on, new, old in keep] + [p_next.v, q_next.v, cf_next.v, running.any()]

    p_on = use_p & ~fac.eq(0.0)
    cf_on = use_cf & ~fac.eq(0.0)
    one = zero + 1.0
    y0 = 1.0 - a
    z0 = x + y0 + 1.0
    state = [one, one, one, zero, x + 1.0, one, z0 * x, x, (x + 1.0) / (z0 * x)]
    carried = [s.v for s in state] + [p_on.v, use_qs.v, cf_on.v]
    out = loop(g, 2000, carried, step, name="igamma", keep_going=(p_on | use_qs | cf_on).any(), stop=True)
    p_ans, q_sum, cf_ans = F64(g, out[1]), F64(g, out[3]), F64(g, out[8])
    p_series = p_ans * fac / a
    logx = x.log()
    q_series = -expm1(a * logx - lgamma(a + 1.0)) - (a * logx - lgamma_a).exp() * q_sum
    q_fraction = cf_ans * fac
    q_iter = use_cf.pick(q_fraction, q_series)
    if lower:
        value = use_p.pick(p_series, 1.0 - q_iter)
    else:
        value = use_p.pick(1.0 - p_series, q_iter)
    return edges(a0, x0, asym.pick(temme(a, x, lower), value), lower)


def edges(a: F64, x: F64, value: F64, lower: bool) -> F64:
    """The incomplete gamma's boundary values, which ATen (after SciPy) gives before computing anything."""
    hi, lo = (1.0, 0.0) if lower else (0.0, 1.0)
    out = x.isinf().pick(hi, value)
    out = a.isinf().pick(x.isinf().pick(math.nan, lo), out)
    out = x.eq(0.0).pick(lo, out)
    out = a.eq(0.0).pick((x > 0.0).pick(hi, math.nan), out)
    return ((x < 0.0) | (a < 0.0) | a.isnan() | x.isnan()).pick(math.nan, out)


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


def igamma(g: GraphBuilder, self, other, lower: bool) -> Value:
    dtype = result_type(self, other)
    return cast(g, incomplete_gamma(F64.of(g, self), F64.of(g, other), lower).v, dtype)


@register("aten::igamma.default")
def aten_igamma(g, self, other):
    """igamma(Tensor self, Tensor other) -> Tensor"""
    return igamma(g, self, other, lower=True)


@register("aten::igammac.default")
def aten_igammac(g, self, other):
    """igammac(Tensor self, Tensor other) -> Tensor"""
    return igamma(g, self, other, lower=False)


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


# Temme's coefficients d_k,n (as in SciPy's igam.h and ATen's Math.h), row k: the powers of eta.
_TEMME_D = (
    (-0.3333333333333333, 0.08333333333333333, -0.014814814814814815, 0.0011574074074074073, 0.0003527336860670194,
     -0.0001787551440329218, 3.919263178522438e-05, -2.1854485106799924e-06, -1.85406221071516e-06,
     8.296711340953087e-07, -1.7665952736826078e-07, 6.707853543401498e-09, 1.0261809784240309e-08,
     -4.382036018453353e-09, 9.14769958223679e-10, -2.551419399494625e-11, -5.830772132550426e-11,
     2.4361948020667415e-11, -5.0276692801141755e-12, 1.1004392031956135e-13, 3.3717632624009856e-13,
     -1.392388722418162e-13, 2.8534893807047445e-14, -5.139111834242572e-16, -1.9752288294349442e-15),
    (-0.001851851851851852, -0.003472222222222222, 0.0026455026455026454, -0.0009902263374485596,
     0.00020576131687242798, -4.018775720164609e-07, -1.8098550334489977e-05, 7.64916091608111e-06,
     -1.6120900894563446e-06, 4.647127802807434e-09, 1.378633446915721e-07, -5.752545603517705e-08,
     1.1951628599778148e-08, -1.7543241719747647e-11, -1.0091543710600413e-09, 4.162792991842583e-10,
     -8.56390702649298e-11, 6.067215101604758e-14, 7.1624989648114856e-12, -2.933186643771437e-12,
     5.996696365683689e-13, -2.1671786527323313e-16, -4.978339972369262e-14, 2.0291628823713425e-14,
     -4.13125571381061e-15),
    (0.004133597883597883, -0.0026813271604938273, 0.0007716049382716049, 2.0093878600823047e-06,
     -0.00010736653226365161, 5.2923448829120125e-05, -1.2760635188618728e-05, 3.423578734096138e-08,
     1.3721957309062932e-06, -6.298992138380055e-07, 1.4280614206064242e-07, -2.0477098421990866e-10,
     -1.409252991086752e-08, 6.228974084922022e-09, -1.3670488396617112e-09, 9.428356159014678e-13,
     1.2872252400089318e-10, -5.5645956134363323e-11, 1.197593554636698e-11, -4.1689782251838634e-15,
     -1.0940640427884595e-12, 4.662239946390136e-13, -9.905105763906907e-14, 1.8931876768373515e-17,
     8.859221872591127e-15),
    (0.0006494341563786008, 0.00022947209362139917, -0.0004691894943952557, 0.00026772063206283885,
     -7.561801671883977e-05, -2.396505113867297e-07, 1.1082654115347302e-05, -5.6749528269915965e-06,
     1.4230900732435883e-06, -2.7861080291528143e-11, -1.6958404091930278e-07, 8.099464905388083e-08,
     -1.9111168485973655e-08, 2.3928620439808118e-12, 2.0620131815488797e-09, -9.460496661855133e-10,
     2.1541049775774907e-10, -1.388823336813903e-14, -2.1894761681963938e-11, 9.790998951171684e-12,
     -2.178219188018096e-12, 6.208819573407901e-17, 2.126978363279737e-13, -9.344688791517433e-14,
     2.045367122678285e-14),
    (-0.0008618882909167117, 0.0007840392217200666, -0.0002990724803031902, -1.4638452578843418e-06,
     6.641498215465122e-05, -3.968365047179435e-05, 1.1375726970678419e-05, 2.507497226237533e-10,
     -1.6954149536558305e-06, 8.907507532205309e-07, -2.292934834000805e-07, 2.956794137544049e-11,
     2.8865829742708783e-08, -1.4189739437803219e-08, 3.4463580499464896e-09, -2.3024517174528067e-13,
     -3.9409233028046403e-10, 1.86023389685045e-10, -4.356323005056618e-11, 1.278600101629623e-15,
     4.67927502665792e-12, -2.149246470613483e-12, 4.908815614809652e-13, -6.33859148489156e-18,
     -5.045332069080094e-14),
    (-0.00033679855336635813, -6.972813758365858e-05, 0.0002772753244959392, -0.00019932570516188847,
     6.797780477937208e-05, 1.419062920643967e-07, -1.3594048189768693e-05, 8.018470256334202e-06,
     -2.291481176508095e-06, -3.252473551298454e-10, 3.4652846491085265e-07, -1.8447187191171344e-07,
     4.8240967037894184e-08, -1.7989466721743514e-14, -6.306194500013523e-09, 3.162417628774568e-09,
     -7.840924253697429e-10, 5.192679165254041e-15, 9.358944242306784e-11, -4.513426216163278e-11,
     1.0799129993116828e-11, -3.661886712685252e-17, -1.210902069055155e-12, 5.680743584990564e-13,
     -1.3249659916340829e-13),
    (0.0005313079364639922, -0.0005921664373536939, 0.0002708782096718045, 7.902353232660328e-07,
     -8.153969367561969e-05, 5.61168275310625e-05, -1.8329116582843375e-05, -3.0796134506033047e-09,
     3.465155368803609e-06, -2.0291327396058603e-06, 5.788792863149004e-07, 2.338630673826657e-13,
     -8.828600746330484e-08, 4.7435958880408125e-08, -1.2545415020710382e-08, 8.649648858010293e-14,
     1.6846058979264062e-09, -8.575492823577594e-10, 2.1598224929232125e-10, -7.613230520476153e-16,
     -2.6639822008536144e-11, 1.3065700536611057e-11, -3.1799163902367977e-12, 4.710976121367431e-18,
     3.6902800842763465e-13),
    (0.00034436760689237765, 5.171790908260592e-05, -0.00033493161081142234, 0.0002812695154763237,
     -0.00010976582244684731, -1.2741009095484485e-07, 2.7744451511563645e-05, -1.8263488805711332e-05,
     5.7876949497350525e-06, 4.93875893393627e-10, -1.0595367014026043e-06, 6.166714376110408e-07,
     -1.7562973359060463e-07, -1.297447328701544e-12, 2.695423606288966e-08, -1.4578352908731272e-08,
     3.887645959386175e-09, -3.881002251019412e-17, -5.327994173877286e-10, 2.7437977643314844e-10,
     -6.995796092070568e-11, 2.589986387486848e-17, 8.856689099669639e-12, -4.403168815871311e-12,
     1.0865561947091654e-12),
    (-0.0006526239185953094, 0.0008394987206720873, -0.000438297098541721, -6.969091458420552e-07,
     0.00016644846642067547, -0.00012783517679769218, 4.629953263691304e-05, 4.557909867922708e-09,
     -1.0595271125805195e-05, 6.783342904865167e-06, -2.1075476666258803e-06, -1.7213731432817144e-11,
     3.773587741611098e-07, -2.1867506700122867e-07, 6.220228804018927e-08, 6.597703826733e-16,
     -9.590386497425686e-09, 5.213214492280807e-09, -1.3991589583935709e-09, 5.382058999060575e-16,
     1.9484714275467745e-10, -1.0127287556389682e-10, 2.6077347197254926e-11, -5.090418699993299e-18,
     -3.3721464474854593e-12),
    (-0.0005967612901927463, -7.204895416020011e-05, 0.0006782308837667328, -0.0006401475260262758,
     0.00027750107634328704, 1.819700838046515e-07, -8.479507117068503e-05, 6.105192082501531e-05,
     -2.1073920183404862e-05, -8.858589014125599e-10, 4.5284535953805374e-06, -2.8427815022504407e-06,
     8.708234177864641e-07, 3.6886101871706966e-12, -1.534469519070206e-07, 8.862466778790695e-08,
     -2.5184812301826817e-08, -1.0225912098215092e-14, 3.896947075815478e-09, -2.1267304792235634e-09,
     5.737013552805138e-10, -1.887749850169741e-19, -8.093153869465787e-11, 4.23827232834492e-11,
     -1.1002224534207727e-11),
    (0.0013324454494800656, -0.0019144384985654776, 0.0011089369134596636, 9.9324041226423e-07,
     -0.0005087450129309319, 0.00042735056665392886, -0.000168588537679108, -8.1301893922785e-09,
     4.5284402370562144e-05, -3.127053674781734e-05, 1.044986828530338e-05, 4.8435226265680926e-11,
     -2.148256587345626e-06, 1.329369701097492e-06, -4.029569309210103e-07, -1.756787766632329e-13,
     7.014504316366825e-08, -4.040787734999483e-08, 1.1474026743371962e-08, 3.9642746853563326e-18,
     -1.7804938269892715e-09, 9.748026254873165e-10, -2.6405338676507616e-10, 5.794875163403742e-18,
     3.764774955354384e-11),
    (0.001579727660730835, 0.00016251626278391583, -0.0020633421035543276, 0.00213896861856891,
     -0.0010108559391263003, -3.99127055299192e-07, 0.0003623502508476469, -0.00028143901463712157,
     0.00010449513336495887, 2.12114184918303e-09, -2.5779417251947842e-05, 1.7281818956040464e-05,
     -5.641377387290428e-06, -1.1024320105776174e-11, 1.1223224418895176e-06, -6.869339637952674e-07,
     2.0653236975414888e-07, 4.6714772409838506e-14, -3.5609886164949055e-08, 2.0470855345905963e-08,
     -5.809173863328336e-09, -1.332821287582869e-16, 9.035460439133513e-10, -4.959878251733084e-10,
     1.3481607129399748e-10),
    (-0.004072512119514016, 0.00640336283380807, -0.004041016108167662, -2.183732802866233e-06, 0.002174044180125464,
     -0.001970044051841889, 0.0008359546974796246, 1.9445447567109655e-08, -0.000257793871204217,
     0.00019009987368139304, -6.769649993743896e-05, -1.4440629666426571e-10, 1.5712512518742267e-05,
     -1.0304008744776892e-05, 3.304517767401387e-06, 7.982976024232571e-13, -6.4097794149313e-07,
     3.8894624761300054e-07, -1.161834764494887e-07, -2.816808630596451e-15, 1.9878012911297094e-08,
     -1.1407719956357511e-08, 3.2355857064185554e-09, 4.175946829345594e-20, -5.042311271810582e-10),
    (-0.0059475779383993, -0.0005401647678926045, 0.00879104135507679, -0.009857631558785612, 0.005013469503102154,
     1.2807521786221875e-06, -0.0020626019342754685, 0.0017109128573523059, -0.000676953127141338,
     -6.901154567656214e-09, 0.00018855128143995903, -0.0001339521566349197, 4.626318303352804e-05,
     4.003423061332135e-11, -1.0255652921494033e-05, 6.612086372797651e-06, -2.0913022027253007e-06,
     -2.0951775649603836e-13, 3.975602904199325e-07, -2.395621197881589e-07, 7.118288338214586e-08,
     8.925574873053455e-16, -1.2101547235064675e-08, 6.935061824833439e-09, -1.96614644538561e-09),
    (0.01740202778752271, -0.029527880945699123, 0.020045875571402798, 7.0289515966903405e-06, -0.012375421071343148,
     0.011976293444235253, -0.0054156038466518525, -6.329089339641862e-08, 0.0018855118129005065,
     -0.001473473274825001, 0.0005551581009770838, 5.240683441255066e-10, -0.00014357913535784837,
     9.91812932249433e-05, -3.346083474947831e-05, -3.575583729109899e-12, 7.1560851960630075e-06,
     -4.551680262815553e-06, 1.4236576649271474e-06, 1.8803149082089665e-14, -2.662340389892921e-07,
     1.5950642189595716e-07, -4.71875146738411e-08, -6.510787295875518e-17, 7.979509102674624e-09),
    (0.03024912416090589, 0.0024817436002649977, -0.049939134373457025, 0.05991564300930787, -0.03248320760162339,
     -5.721296865210344e-06, 0.015085251778569354, -0.013261324005088445, 0.0055515262632426145,
     3.026318225703001e-08, -0.0017229548406756724, 0.0012893570099929638, -0.00046845138348319875,
     -1.830259937893045e-10, 0.00011449739014822654, -7.737856522124447e-05, 2.5625836246985202e-05,
     1.0766165333192815e-12, -5.324680928242262e-06, 3.349634863064464e-06, -1.0381253128684019e-06,
     -5.608909920621128e-15, 1.9150821930676592e-07, -1.1418365800203487e-07, 3.3654425209171787e-08),
    (-0.09905102088015905, 0.17954011706123485, -0.12989606383463778, -3.1478872752284355e-05, 0.09051063527684813,
     -0.0928288244111844, 0.04441211283987781, 2.7779236316835886e-07, -0.017229543805449696, 0.014182925050891573,
     -0.005621416163374734, -2.39598509186381e-09, 0.0016029634366079909, -0.0011606784674435774,
     0.00041001337768153875, 1.836580075409066e-11, -9.58442565636559e-05, 6.364306233776471e-05,
     -2.076250624489065e-05, -1.1806020912804483e-13, 4.213180823912065e-06, -2.626224133701247e-06,
     8.077062049493066e-07, 6.012591212363273e-16, -1.472973737401884e-07),
    (-0.19994542198219728, -0.015056113040026424, 0.36470239469348487, -0.4643519231173355, 0.26640934719197895,
     3.403826602714719e-05, -0.13784338709329624, 0.1276467178337056, -0.056213828755200985, -1.753150885483011e-07,
     0.019235592956768112, -0.015088821281095314, 0.005740185445135012, 1.0622382710310225e-09,
     -0.0015335082692563998, 0.0010819320643228215, -0.0003737251019394566, -6.617090972903199e-12,
     8.426361738090962e-05, -5.515070682748348e-05, 1.776953644834807e-05, 3.882792321020553e-14,
     -3.53513697488768e-06, 2.186583213004527e-06, -6.68128494476256e-07),
    (0.7243860850402943, -1.3918010932653375, 1.0654143352413967, 0.0001876173868950258, -0.827055011761527,
     0.8935243334782842, -0.44971003995291337, -1.6107401567546651e-06, 0.1923559016527109, -0.1659770216004261,
     0.06888222268181433, 1.3910091724608687e-08, -0.02146911561508663, 0.016228980898865892, -0.005979601617258426,
     -1.1287469112826745e-10, 0.0015167451119784856, -0.00104786342935539, 0.0003553907288912642,
     8.170432211180152e-13, -7.77730134424524e-05, 5.029141389700772e-05, -1.6035083867000518e-05,
     1.2469354315487606e-14, 3.1369106244517616e-06),
    (1.6668949727276812, 0.1165462765994632, -3.3288393225018904, 4.469232548286404, -2.6977693045875806,
     -0.0002600667859891061, 1.5389017615694538, -1.4937962361134611, 0.6888196463323315, 1.3077482004552384e-06,
     -0.2576296332559629, 0.21097676102125448, -0.08371440835921988, -7.792042888135476e-09, 0.0242679230648336,
     -0.017813678334552312, 0.006397033038890006, 4.943080709048052e-11, -0.0015554602758465635,
     0.0010561196919903215, -0.000352771844604729, 9.300233464502246e-14, 7.528585502655717e-05,
     -4.818651556915635e-05, 1.5227271505597605e-05),
    (-6.618829886137293, 13.397985455142589, -10.789350606845145, -0.0014352254537875018, 9.23336945961898,
     -10.456552819547769, 5.510552602903347, 1.2024439690716742e-05, -2.5762961164755818, 2.320744274538718,
     -1.0045728797216285, -1.0207833290021913e-07, 0.3397509217116947, -0.2672051745075747, 0.10235252851562705,
     8.432973048487163e-10, -0.027998284958442594, 0.020066274144976814, -0.007055436891508624,
     1.9402238183698188e-12, 0.0016562888105449611, -0.0011082898580743682, 0.0003654545161310169,
     -5.129003202697179e-11, -7.634010369686903e-05),
    (-17.112706061976095, -1.1208044642899115, 37.131966511885445, -52.29827102534896, 33.058589696624615,
     0.002479129897620022, -20.61089403411526, 20.88672775145582, -10.045703956517752, -1.2238783449063012e-05,
     4.077013427422114, -3.473667358470195, 1.4329352617312006, 7.135991441187971e-08, -0.4479725715911561,
     0.3411266608064446, -0.12699786326594922, -2.895367726908153e-10, 0.03312577627825986, -0.023274087021036102,
     0.008039999350364889, -1.177805216235265e-09, -0.001832162489107167, 0.0012108282933588664,
     -0.0003947994124682252),
    (73.89033153567425, -156.80141270402274, 132.2177542759164, 0.013692876877324546, -123.66496885920151,
     146.2068939106273, -80.36558772486535, -0.00011259851148881298, 40.77013219617994, -38.21034001327303,
     17.19522294277362, 9.351970795516835e-07, -6.271615990774704, 5.116899907185264, -2.0319658112299095,
     -4.950721558276154e-09, 0.596263972943326, -0.44220765337238094, 0.16079998700166273, -2.4733786203223403e-08,
     -0.040307574759979765, 0.02784905074709787, -0.009475185899205422, 6.419922235909132e-06, 0.002125018077469946),
    (212.1683709838252, 13.107863022633868, -496.9828593287175, 731.215952669692, -482.1382172089085,
     -0.028817248692894887, 326.167203029471, -343.8934028008712, 171.95193870816232, 0.00014038077378096157,
     -75.2594195897599, 66.51969984520935, -28.447519748152462, -7.613702615875392e-07, 9.540223710530437,
     -7.517530111331138, 2.894399756887196, -4.66121949995382e-07, -0.8061514959879409, 0.5848300657063102,
     -0.20845408972964957, 0.00014765818959305816, 0.05100043386375302, -0.03306625214188366, 0.015109265210467774),
    (-989.5964309832236, 2192.555536090523, -1928.3586782723355, -0.15925738122215252, 1956.9985945919857,
     -2407.2514765081555, 1375.6149959336497, 0.0012920735237496668, -752.5941715948055, 731.7166874220871,
     -341.37023466220063, -9.985739026060805e-06, 133.56313181291574, -112.76295161252794, 46.31039609820446,
     -7.923738713361476e-06, -14.510726927018647, 11.111771248100563, -4.169081794527089, 0.0031008219800117806,
     1.1220095449981469, -0.7605237992614992, 0.36262236505085255, 0.2216867741940747, 0.48683443692930506),
)
