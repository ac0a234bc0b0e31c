"""Opset-9 base, Bessel and Airy functions by piecewise Chebyshev and rational approximations (float64
inside). The orthogonal polynomials (opset9_polynomials) share its numerics."""

from __future__ import annotations

import functools
import math

import torch

from aten2onnx import registry
from aten2onnx.ir import GraphBuilder, Value
from aten2onnx.symbolic._helpers import cast
from aten2onnx.symbolic.opset9_math import float_result, is_zero

register = functools.partial(registry.register, opset=9)

F64 = torch.float64

# -- coefficients (Cephes, as torch's ATen/native/Math.h uses them; first the highest order) ---------

_I0_A = (
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-09,
    -1.30002500998624804212e-08, 6.04699502254191894932e-08, -2.67079385394061173391e-07,
    1.11738753912010371815e-06, -4.41673835845875056359e-06, 1.64484480707288970893e-05,
    -5.75419501008210370398e-05, 1.88502885095841655729e-04, -5.76375574538582365885e-04,
    1.63947561694133579842e-03, -4.32430999505057594430e-03, 1.05464603945949983183e-02,
    -2.37374148058994688156e-02, 4.93052842396707084878e-02, -9.49010970480476444210e-02,
    1.71620901522208775349e-01, -3.04682672343198398683e-01, 6.76795274409476084995e-01,
)
_I0_B = (
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-09, 2.26666899049817806459e-08, 2.04891858946906374183e-07,
    2.89137052083475648297e-06, 6.88975834691682398426e-05, 3.36911647825569408990e-03,
    8.04490411014108831608e-01,
)
_I1_A = (
    2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16,
    -1.10559694773538630805e-15, 7.60068429473540693410e-15, -5.04218550472791168711e-14,
    3.22379336594557470981e-13, -1.98397439776494371520e-12, 1.17361862988909016308e-11,
    -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-09,
    9.38153738649577178388e-09, -4.44505912879632808065e-08, 2.00329475355213526229e-07,
    -8.56872026469545474066e-07, 3.47025130813767847674e-06, -1.32731636560394358279e-05,
    4.78156510755005422638e-05, -1.61760815825896745588e-04, 5.12285956168575772895e-04,
    -1.51357245063125314899e-03, 4.15642294431288815669e-03, -1.05640848946261981558e-02,
    2.47264490306265168283e-02, -5.29459812080949914269e-02, 1.02643658689847095384e-01,
    -1.76416518357834055153e-01, 2.52587186443633654823e-01,
)
_I1_B = (
    7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17,
    -3.20952592199342395980e-17, 2.96262899764595013876e-16, 3.30820231092092828324e-16,
    -1.88035477551078244854e-15, -3.81440307243700780478e-15, 1.04202769841288027642e-14,
    4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
    -7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11,
    3.25260358301548823856e-11, -1.89749581235054123450e-11, -5.58974346219658380687e-10,
    -3.83538038596423702205e-09, -2.63146884688951950684e-08, -2.51223623787020892529e-07,
    -3.88256480887769039346e-06, -1.10588938762623716291e-04, -9.76109749136146840777e-03,
    7.78576235018280120474e-01,
)
_K0_A = (
    1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
    1.90451637722020886025e-09, 2.53479107902614945675e-07, 2.28621210311945178607e-05,
    1.26461541144692592338e-03, 3.59799365153615016266e-02, 3.44289899924628486886e-01,
    -5.35327393233902768720e-01,
)
_K0_B = (
    5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
    -1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
    6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
    -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
    1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
    -1.69753450938905987466e-09, 8.57403401741422608519e-09, -4.66048989768794782956e-08,
    2.76681363944501510342e-07, -1.83175552271911948767e-06, 1.39498137188764993662e-05,
    -1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02,
    2.44030308206595545468e+00,
)
_K1_A = (
    -7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
    -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
    -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
    -3.53155960776544875667e-01, 1.52530022733894777053e+00,
)
_K1_B = (
    -5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
    1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
    -7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
    3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
    -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
    2.01504975519703286596e-09, -1.03457624656780970260e-08, 5.74108412545004946722e-08,
    -3.50196060308781257119e-07, 2.40648494783721712015e-06, -1.93619797416608296024e-05,
    1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01,
    2.72062619048444266945e+00,
)
_J0_PP = (
    7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
    5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
    9.99999999999999997821e-01,
)
_J0_PQ = (
    9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
    5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
    1.00000000000000000218e+00,
)
_J0_QP = (
    -1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
    -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
    -5.14105326766599330220e+01, -6.05014350600728481186e+00,
)
_J0_QQ = (
    6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
    7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
    2.42005740240291393179e+02,
)
_J0_RP = (
    -4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
    9.70862251047306323952e+15,
)
_J0_RQ = (
    4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
    1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
    3.18121955943204943306e+16, 1.71086294081043136091e+18,
)
_J1_PP = (
    7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
    5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
    1.00000000000000000254e+00,
)
_J1_PQ = (
    5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
    5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
    9.99999999999999997461e-01,
)
_J1_QP = (
    5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
    3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
    2.11688757100572135698e+02, 2.52070205858023719784e+01,
)
_J1_QQ = (
    7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
    9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
    3.36093607810698293419e+02,
)
_J1_RP = (
    -8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
    3.68295732863852883286e+15,
)
_J1_RQ = (
    6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
    2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
    8.95222336184627338078e+16, 5.32278620332680085395e+18,
)
_Y0_YP = (
    1.55924367855235737965e+04, -1.46639295903971606143e+07, 5.43526477051876500413e+09,
    -9.82136065717911466409e+11, 8.75906394395366999549e+13, -3.46628303384729719441e+15,
    4.42733268572569800351e+16, -1.84950800436986690637e+16,
)
_Y0_YQ = (
    1.04128353664259848412e+03, 6.26107330137134956842e+05, 2.68919633393814121987e+08,
    8.64002487103935000337e+10, 2.02979612750105546709e+13, 3.17157752842975028269e+15,
    2.50596256172653059228e+17,
)
_Y1_YP = (
    1.26320474790178026440e+09, -6.47355876379160291031e+11, 1.14509511541823727583e+14,
    -8.12770255501325109621e+15, 2.02439475713594898196e+17, -7.78877196265950026825e+17,
)
_Y1_YQ = (
    5.94301592346128195359e+02, 2.35564092943068577943e+05, 7.34811944459721705660e+07,
    1.87601316108706159478e+10, 3.88231277496238566008e+12, 6.20557727146953693363e+14,
    6.87141087355300489866e+16, 3.97270608116560655612e+18,
)
_AIRY_AN = (
    3.46538101525629032477e-01, 1.20075952739645805542e+01, 7.62796053615234516538e+01,
    1.68089224934630576269e+02, 1.59756391350164413639e+02, 7.05360906840444183113e+01,
    1.40264691163389668864e+01, 9.99999999999999995305e-01,
)
_AIRY_AD = (
    5.67594532638770212846e-01, 1.47562562584847203173e+01, 8.45138970141474626562e+01,
    1.77318088145400459522e+02, 1.64234692871529701831e+02, 7.14778400825575695274e+01,
    1.40959135607834029598e+01, 1.00000000000000000470e+00,
)
_AIRY_AFN = (
    -1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
    -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
    -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08,
)
_AIRY_AFD = (
    1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
    9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
    4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07,
)
_AIRY_AGN = (
    1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
    9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
    5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
    8.11789239554389293311e-08, 3.41551784765923618484e-10,
)
_AIRY_AGD = (
    9.30892908077441974853e+00, 1.98352928718312140417e+01, 1.55646628932864612953e+01,
    5.47686069422975497931e+00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
    4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
    4.91834570062930015649e-09,
)

_TWO_OVER_PI = 0.636619772367581343075535053490057448
_SQRT_TWO_OVER_PI = 0.797884560802865355879892119868763737
_AIRY_SCALE = 5.64189583547756286948e-01  # 1 / sqrt(pi)
_AIRY_SERIES_TERMS = 15  # |x| < 2.09: the 15th terms are below 1e-22 of the sum


# -- shared numerics ------------------------------------------------------------------------------


def _dtypes(*operands) -> tuple[torch.dtype, torch.dtype]:
    """The result dtype, and the dtype eager computes in (float for half and bfloat16)."""
    out = float_result(*operands)
    return out, (torch.float32 if out in (torch.float16, torch.bfloat16) else out)


def _input(g: GraphBuilder, x: Value) -> tuple[Value, Value, torch.dtype]:
    """x in eager's dtype and in float64 (converted through eager's, as eager converts ints), and the
    result dtype."""
    out, work = _dtypes(x)
    x_t = cast(g, x, work)
    return x_t, cast(g, x_t, F64), out


def _k(g: GraphBuilder, value: float, like: Value) -> Value:
    return g.const(value, like=like)


def _not_above(g: GraphBuilder, x: Value, bound: float) -> Value:
    """x <= bound, NaN included (every branch carries NaN through)."""
    return g.op("Not", g.op("Greater", x, _k(g, bound, x)))


def _pick(g: GraphBuilder, cond: Value, x: Value, other: float) -> Value:
    """x where cond, else a harmless constant: keeps the branch not taken finite."""
    return g.op("Where", cond, x, _k(g, other, x))


def _horner(g: GraphBuilder, z: Value, coeffs: tuple[float, ...]) -> Value:
    out = _k(g, coeffs[0], z)
    for c in coeffs[1:]:
        out = g.op("Add", g.op("Mul", out, z), _k(g, c, z))
    return out


def _chbevl(g: GraphBuilder, y: Value, coeffs: tuple[float, ...]) -> Value:
    """Cephes' chbevl: the Chebyshev series sum' c_i T_i(y / 2) by Clenshaw's recurrence."""
    b0, b1, b2 = _k(g, coeffs[0], y), None, None
    for c in coeffs[1:]:
        b2, b1 = b1, b0
        b0 = g.op("Mul", y, b1)
        if b2 is not None:
            b0 = g.op("Sub", b0, b2)
        b0 = g.op("Add", b0, _k(g, c, y))
    return g.op("Mul", _k(g, 0.5, y), g.op("Sub", b0, b2))


def _odd(g: GraphBuilder, x: Value, value: Value) -> Value:
    """value for x >= 0, -value for x < 0."""
    return g.op("Where", g.op("Less", x, _k(g, 0.0, x)), g.op("Neg", value), value)


def _isinf(g: GraphBuilder, x: Value) -> Value:
    """IsInf by comparison (IsInf is opset 10)."""
    return g.op("Greater", g.op("Abs", x), _k(g, torch.finfo(x.dtype).max, x))


# -- modified Bessel functions ----------------------------------------------------------------------


def _i_inner(g: GraphBuilder, a: Value, order: int) -> Value:
    """exp(-a) I_order(a) for 0 <= a <= 8: a Chebyshev series in a / 2 - 2 (times a for I1)."""
    y = g.op("Sub", g.op("Div", a, _k(g, 2.0, a)), _k(g, 2.0, a))
    inner = _chbevl(g, y, _I0_A if order == 0 else _I1_A)
    return inner if order == 0 else g.op("Mul", inner, a)


def _i_series(g: GraphBuilder, a: Value, order: int) -> Value:
    """exp(-a) I_order(a) for a >= 0: Chebyshev expansions on [0, 8] and in 32/a beyond."""
    small = _not_above(g, a, 8.0)
    a_small, a_big = _pick(g, small, a, 0.0), g.op("Where", small, _k(g, 8.0, a), a)
    y = g.op("Sub", g.op("Div", _k(g, 32.0, a), a_big), _k(g, 2.0, a))
    outer = g.op("Div", _chbevl(g, y, _I0_B if order == 0 else _I1_B), g.op("Sqrt", a_big))
    return g.op("Where", small, _i_inner(g, a_small, order), outer)


def bessel_i(g: GraphBuilder, x: Value, order: int, *, scaled: bool) -> Value:
    """I0/I1, or exp(-|x|) times them. The series in float64; exp(|x|) in eager's dtype, so it
    overflows where eager's does."""
    x_t, x64, out = _input(g, x)
    value = cast(g, _i_series(g, g.op("Abs", x64), order), x_t.dtype)
    if not scaled:
        value = g.op("Mul", g.op("Exp", g.op("Abs", x_t)), value)
    if order == 1:
        value = _odd(g, x_t, value)
    return cast(g, value, out)


def _i_small(g: GraphBuilder, x: Value, order: int) -> Value:
    """I0/I1 for 0 < x <= 8."""
    return g.op("Mul", g.op("Exp", x), _i_inner(g, x, order))


def bessel_k(g: GraphBuilder, x: Value, order: int, *, scaled: bool) -> Value:
    """K0/K1, or exp(x) times them: on (0, 2] a Chebyshev series in x^2 plus log(x/2) I(x); beyond,
    a series in 8/x; inf at 0 and NaN below."""
    _, x, out = _input(g, x)
    small = _not_above(g, x, 2.0)
    xs, xb = _pick(g, small, x, 1.0), g.op("Where", small, _k(g, 4.0, x), x)
    cheb = _chbevl(g, g.op("Sub", g.op("Mul", xs, xs), _k(g, 2.0, x)), _K0_A if order == 0 else _K1_A)
    log_i = g.op("Mul", g.op("Log", g.op("Mul", _k(g, 0.5, x), xs)), _i_small(g, xs, order))
    inner = g.op("Sub", cheb, log_i) if order == 0 else g.op("Add", log_i, g.op("Div", cheb, xs))
    outer = g.op("Div", _chbevl(g, g.op("Sub", g.op("Div", _k(g, 8.0, x), xb), _k(g, 2.0, x)),
                                _K0_B if order == 0 else _K1_B), g.op("Sqrt", xb))
    if scaled:
        inner = g.op("Mul", inner, g.op("Exp", xs))
    else:
        outer = g.op("Mul", g.op("Exp", g.op("Neg", xb)), outer)
    value = g.op("Where", small, inner, outer)
    value = g.op("Where", g.op("Less", x, _k(g, 0.0, x)), _k(g, math.nan, x), value)
    value = g.op("Where", is_zero(g, x), _k(g, math.inf, x), value)
    return cast(g, value, out)


@register("aten::i0.default")
def aten_i0(g, self):
    """i0(Tensor self) -> Tensor"""
    return bessel_i(g, self, 0, scaled=False)


@register("aten::special_i0e.default")
def aten_special_i0e(g, self):
    """special_i0e(Tensor self) -> Tensor"""
    return bessel_i(g, self, 0, scaled=True)


@register("aten::special_i1.default")
def aten_special_i1(g, self):
    """special_i1(Tensor self) -> Tensor"""
    return bessel_i(g, self, 1, scaled=False)


@register("aten::special_i1e.default")
def aten_special_i1e(g, self):
    """special_i1e(Tensor self) -> Tensor"""
    return bessel_i(g, self, 1, scaled=True)


@register("aten::special_modified_bessel_i0.default")
def aten_special_modified_bessel_i0(g, self):
    """special_modified_bessel_i0(Tensor self) -> Tensor"""
    return bessel_i(g, self, 0, scaled=False)


@register("aten::special_modified_bessel_i1.default")
def aten_special_modified_bessel_i1(g, self):
    """special_modified_bessel_i1(Tensor self) -> Tensor"""
    return bessel_i(g, self, 1, scaled=False)


@register("aten::special_modified_bessel_k0.default")
def aten_special_modified_bessel_k0(g, self):
    """special_modified_bessel_k0(Tensor self) -> Tensor"""
    return bessel_k(g, self, 0, scaled=False)


@register("aten::special_modified_bessel_k1.default")
def aten_special_modified_bessel_k1(g, self):
    """special_modified_bessel_k1(Tensor self) -> Tensor"""
    return bessel_k(g, self, 1, scaled=False)


@register("aten::special_scaled_modified_bessel_k0.default")
def aten_special_scaled_modified_bessel_k0(g, x):
    """special_scaled_modified_bessel_k0(Tensor x) -> Tensor"""
    return bessel_k(g, x, 0, scaled=True)


@register("aten::special_scaled_modified_bessel_k1.default")
def aten_special_scaled_modified_bessel_k1(g, x):
    """special_scaled_modified_bessel_k1(Tensor x) -> Tensor"""
    return bessel_k(g, x, 1, scaled=True)


# -- Bessel functions of the first and second kind ----------------------------------------------------


def _j_small(g: GraphBuilder, x: Value, order: int) -> Value:
    """J0/J1 for |x| <= 5: a rational function of x^2 with the first two zeros factored out."""
    z = g.op("Mul", x, x)
    if order == 0:
        zeros, rp, rq = (5.78318596294678452118e+00, 3.04712623436620863991e+01), _J0_RP, _J0_RQ
    else:
        zeros, rp, rq = (1.46819706421238932572e+01, 4.92184563216946036703e+01), _J1_RP, _J1_RQ
    value = g.op("Mul", g.op("Sub", z, _k(g, zeros[0], z)), g.op("Sub", z, _k(g, zeros[1], z)))
    value = g.op("Mul", value, g.op("Div", _horner(g, z, rp), _horner(g, z, rq)))
    if order == 1:
        return g.op("Mul", value, x)
    tiny = g.op("Less", g.op("Abs", x), _k(g, 1e-5, x))
    return g.op("Where", tiny, g.op("Sub", _k(g, 1.0, x), g.op("Div", z, _k(g, 4.0, x))), value)


def _hankel(g: GraphBuilder, x_t: Value, order: int, *, second_kind: bool) -> Value:
    """J or Y for x > 5 from Hankel's asymptotic form with rational P and Q in (5/x)^2; the phase
    x - (2 order + 1) pi / 4 is taken in eager's dtype, as eager rounds it."""
    x = cast(g, x_t, F64)
    pp, pq, qp, qq = (_J0_PP, _J0_PQ, _J0_QP, _J0_QQ) if order == 0 else (_J1_PP, _J1_PQ, _J1_QP, _J1_QQ)
    shift = 0.785398163397448309615660845819875721 if order == 0 else 2.356194490192344928846982537459627163
    phase = cast(g, g.op("Sub", x_t, _k(g, shift, x_t)), F64)
    w = g.op("Div", _k(g, 5.0, x), x)
    z = g.op("Mul", w, w)
    p = g.op("Div", _horner(g, z, pp), _horner(g, z, pq))
    q = g.op("Mul", w, g.op("Div", _horner(g, z, qp), _horner(g, z, qq)))
    cos, sin = g.op("Cos", phase), g.op("Sin", phase)
    if second_kind:
        value = g.op("Add", g.op("Mul", p, sin), g.op("Mul", q, cos))
    else:
        value = g.op("Sub", g.op("Mul", p, cos), g.op("Mul", q, sin))
    return g.op("Div", g.op("Mul", value, _k(g, _SQRT_TWO_OVER_PI, x)), g.op("Sqrt", x))


def bessel_j(g: GraphBuilder, x: Value, order: int) -> Value:
    """J0/J1: a rational function for |x| <= 5, Hankel's form beyond (J1 odd, J0 even)."""
    x_t, x64, out = _input(g, x)
    a_t = g.op("Abs", x_t)
    small = _not_above(g, a_t, 5.0)
    inner = _j_small(g, _pick(g, small, x64, 0.0), order)
    outer = _hankel(g, g.op("Where", small, _k(g, 10.0, a_t), a_t), order, second_kind=False)
    if order == 1:
        outer = _odd(g, x64, outer)
    return cast(g, g.op("Where", small, inner, outer), out)


def bessel_y(g: GraphBuilder, x: Value, order: int) -> Value:
    """Y0/Y1: for 0 < x <= 5 a rational function plus (2/pi) log(x) J(x) (Y1: and -2/(pi x));
    -inf at 0 and NaN below."""
    x_t, x, out = _input(g, x)
    small = _not_above(g, x_t, 5.0)
    xs = _pick(g, small, x, 1.0)
    z = g.op("Mul", xs, xs)
    log = g.op("Log", xs)
    if order == 0:
        rational = g.op("Div", _horner(g, z, _Y0_YP), _horner(g, z, _Y0_YQ))
        singular = g.op("Mul", g.op("Mul", _k(g, _TWO_OVER_PI, x), log), _j_small(g, xs, 0))
    else:
        rational = g.op("Mul", xs, g.op("Div", _horner(g, z, _Y1_YP), _horner(g, z, _Y1_YQ)))
        singular = g.op("Sub", g.op("Mul", _j_small(g, xs, 1), log), g.op("Div", _k(g, 1.0, x), xs))
        singular = g.op("Mul", _k(g, _TWO_OVER_PI, x), singular)
    inner = g.op("Add", rational, singular)
    outer = _hankel(g, g.op("Where", small, _k(g, 10.0, x_t), x_t), order, second_kind=True)
    value = g.op("Where", small, inner, outer)
    value = g.op("Where", g.op("Less", x, _k(g, 0.0, x)), _k(g, math.nan, x), value)
    value = g.op("Where", is_zero(g, x), _k(g, -math.inf, x), value)
    return cast(g, value, out)


@register("aten::special_bessel_j0.default")
def aten_special_bessel_j0(g, self):
    """special_bessel_j0(Tensor self) -> Tensor"""
    return bessel_j(g, self, 0)


@register("aten::special_bessel_j1.default")
def aten_special_bessel_j1(g, self):
    """special_bessel_j1(Tensor self) -> Tensor"""
    return bessel_j(g, self, 1)


@register("aten::special_bessel_y0.default")
def aten_special_bessel_y0(g, self):
    """special_bessel_y0(Tensor self) -> Tensor"""
    return bessel_y(g, self, 0)


@register("aten::special_bessel_y1.default")
def aten_special_bessel_y1(g, self):
    """special_bessel_y1(Tensor self) -> Tensor"""
    return bessel_y(g, self, 1)


# -- Airy Ai ------------------------------------------------------------------------------------------


def _airy_oscillating(g: GraphBuilder, x_t: Value) -> Value:
    """Ai(x) for x < -2.09: modulus and phase expansions in 1/zeta, zeta = (2/3) (-x)^(3/2); the phase
    zeta + pi/4 is taken in eager's dtype, as eager rounds it."""
    x = cast(g, x_t, F64)
    root = g.op("Sqrt", g.op("Neg", x))
    zeta = g.op("Div", g.op("Mul", g.op("Mul", _k(g, -2.0, x), x), root), _k(g, 3.0, x))
    z = g.op("Div", _k(g, 1.0, x), zeta)
    z2 = g.op("Mul", z, z)
    # float32 sqrt through float64 is correctly rounded, as eager's std::sqrt is (torch.sqrt need not be)
    root_t = cast(g, root, x_t.dtype)
    phase_t = g.op("Mul", g.op("Mul", _k(g, -2.0, x_t), x_t), root_t)
    phase_t = g.op("Add", g.op("Div", phase_t, _k(g, 3.0, x_t)), _k(g, 0.25 * math.pi, x_t))
    phase = cast(g, phase_t, F64)
    f = g.op("Div", g.op("Mul", z2, _horner(g, z2, _AIRY_AFN)), _horner(g, z2, _AIRY_AFD))
    f = g.op("Add", _k(g, 1.0, x), f)
    h = g.op("Div", g.op("Mul", z, _horner(g, z2, _AIRY_AGN)), _horner(g, z2, _AIRY_AGD))
    wave = g.op("Sub", g.op("Mul", g.op("Sin", phase), f), g.op("Mul", g.op("Cos", phase), h))
    return g.op("Mul", g.op("Div", _k(g, _AIRY_SCALE, x), g.op("Sqrt", root)), wave)


def _airy_decaying(g: GraphBuilder, x: Value) -> Value:
    """Ai(x) for x >= 2.09: exp(-zeta) / (2 sqrt(pi) x^(1/4)) times a rational function of 1/zeta."""
    zeta = g.op("Div", g.op("Mul", g.op("Mul", _k(g, 2.0, x), x), g.op("Sqrt", x)), _k(g, 3.0, x))
    w = g.op("Div", _k(g, 1.0, x), zeta)
    ratio = g.op("Div", _horner(g, w, _AIRY_AN), _horner(g, w, _AIRY_AD))
    scale = g.op("Mul", g.op("Mul", _k(g, 2.0, x), g.op("Sqrt", g.op("Sqrt", x))), g.op("Exp", zeta))
    return g.op("Div", g.op("Mul", _k(g, _AIRY_SCALE, x), ratio), scale)


def _airy_series(g: GraphBuilder, x: Value) -> Value:
    """Ai(x) for |x| < 2.09 from its Maclaurin series: c1 f(x) - c2 g(x), f and g power series in x^3."""
    z = g.op("Mul", g.op("Mul", x, x), x)
    f, h = _k(g, 1.0, x), x
    m, n = _k(g, 1.0, x), x
    for j in range(_AIRY_SERIES_TERMS):
        m = g.op("Div", g.op("Mul", m, z), _k(g, float((3 * j + 2) * (3 * j + 3)), x))
        n = g.op("Div", g.op("Mul", n, z), _k(g, float((3 * j + 3) * (3 * j + 4)), x))
        f, h = g.op("Add", f, m), g.op("Add", h, n)
    return g.op("Sub", g.op("Mul", _k(g, 0.355028053887817239260, x), f),
                g.op("Mul", _k(g, 0.258819403792806798405, x), h))


@register("aten::special_airy_ai.default")
def aten_special_airy_ai(g, x):
    """special_airy_ai(Tensor x) -> Tensor"""
    x_t, x64, out = _input(g, x)
    left = g.op("Less", x_t, _k(g, -2.09, x_t))
    right = g.op("Not", g.op("Less", x_t, _k(g, 2.09, x_t)))
    middle = g.op("Not", g.op("Or", left, right))
    value = g.op("Where", left, _airy_oscillating(g, _pick(g, left, x_t, -3.0)),
                 g.op("Where", right, _airy_decaying(g, _pick(g, right, x64, 3.0)),
                      _airy_series(g, _pick(g, middle, x64, 0.0))))
    value = g.op("Where", g.op("Greater", x_t, _k(g, 103.892, x_t)), _k(g, 0.0, x64), value)
    value = g.op("Where", _isinf(g, x64), _k(g, math.nan, x64), value)
    return cast(g, value, out)
