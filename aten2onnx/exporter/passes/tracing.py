"""Rewrites applied while torch.export traces the model (capture.py enters them), for calls it cannot
capture as eager writes them: the call is traced as an equivalent that reads no tensor value into Python."""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Any, Callable, Iterator

import torch
from torch.nn.modules import transformer
from torch.overrides import TorchFunctionMode


@contextlib.contextmanager
def causal_masks_taken_as_given() -> Iterator[None]:
    """Transformer modules given a mask and no is_causal hint compare the mask with a causal one and read
    the answer as a Python bool, which torch.export cannot trace. The answer only lets attention drop a
    mask equal to the causal one for the is_causal path, whose values are the same; kept, the mask stays
    an input of the graph, right for whatever mask a run is given. So during capture a mask is causal
    only when the caller says so."""
    def given(mask: torch.Tensor | None, is_causal: bool | None = None, size: int | None = None) -> bool:
        return is_causal is True

    detect = transformer._detect_is_causal_mask
    transformer._detect_is_causal_mask = given
    try:
        yield
    finally:
        transformer._detect_is_causal_mask = detect


@contextlib.contextmanager
def data_dependent_sizes_from_zero() -> Iterator[None]:
    """A custom op's fake kernel that makes a size read from data with the deprecated
    `ctx.create_unbacked_symint()` (torchvision's nms, the count of boxes kept) gets a size that may be 0
    or 1, as `ctx.new_dynamic_size()` gives: the deprecated call's default floor of 2 makes torch.export
    assume, and its program assert, that at least two boxes survive, which an input keeping one breaks.
    A floor the kernel states itself is kept."""
    from torch._library.fake_impl import FakeImplCtx

    legacy = FakeImplCtx.create_unbacked_symint

    def from_zero(self: FakeImplCtx, *, min: int = 0, max: int | None = None) -> torch.SymInt:
        return self.new_dynamic_size(min=min, max=max)

    FakeImplCtx.create_unbacked_symint = from_zero
    try:
        yield
    finally:
        FakeImplCtx.create_unbacked_symint = legacy


def _max_pool1d_shape(self, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    """max_pool1d's output, by ATen's size formula in SymInts (ceil mode drops a last window that would start
    in the right padding, as a symbolic choice)."""
    k, s = kernel_size[0], (stride or kernel_size)[0]
    p, d = padding[0] if padding else 0, dilation[0] if dilation else 1
    size = self.shape[-1]
    length = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode:
        length = torch.sym_ite((length - 1) * s >= size + p, length - 1, length)
    return self.new_empty((*self.shape[:-1], length))


def _recurrent_shape(states: int):
    """aten::lstm / gru / rnn_*.input's outputs (output, *new states), by shape alone."""
    def shape(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
        hx = list(hx) if isinstance(hx, (list, tuple)) else [hx]
        length, batch = (input.shape[1], input.shape[0]) if batch_first else (input.shape[0], input.shape[1])
        features = hx[0].shape[-1] * (2 if bidirectional else 1)
        output = input.new_empty((batch, length, features) if batch_first else (length, batch, features))
        return (output, *(h.new_empty(h.shape) for h in hx[:states]))
    return shape


def _on_fake_tensors(op: Any, key: Any, shape: Callable[..., Any], kernel: Callable[..., Any] | None):
    """op's kernel for key during capture: on fake tensors its outputs by shape (where `shape` gives them),
    else the kernel it had (its Python one, or its C++ one)."""
    def traced(*args, **kwargs):
        if torch._guards.detect_fake_mode(args) is not None:
            out = shape(*args, **kwargs)
            if out is not None:
                return out
        return kernel(*args, **kwargs) if kernel is not None else op._op_dk(key, *args, **kwargs)
    return traced


@contextlib.contextmanager
def shapes_without_kernels() -> Iterator[None]:
    """Ops torch.export keeps as one op each but computes example outputs for by running a kernel that fixes a
    dynamic size: aten::lstm, gru, rnn_tanh and rnn_relu (.input), whose Python kernel loops over the time
    steps, and max_pool1d, whose C++ kernel reads its length as a number (each silently made the length
    static). During capture, on fake tensors, their outputs are made from the shapes alone, so the sizes stay
    symbolic (ONNX's LSTM, GRU, RNN and MaxPool take them as they come); on real tensors they run as before."""
    from torch._C import DispatchKey

    aten = torch.ops.aten
    shapes = {aten.lstm.input: _recurrent_shape(2), aten.gru.input: _recurrent_shape(1),
              aten.rnn_tanh.input: _recurrent_shape(1), aten.rnn_relu.input: _recurrent_shape(1),
              aten.max_pool1d.default: _max_pool1d_shape}
    keys = (DispatchKey.Autograd, DispatchKey.CompositeImplicitAutograd)
    replaced = [(op, key, op.py_kernels.get(key)) for op in shapes for key in keys
                if key in op.py_kernels or torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), key)]
    for op, key, kernel in replaced:
        op.py_kernels[key] = _on_fake_tensors(op, key, shapes[op], kernel)
        op._dispatch_cache.clear()
    try:
        yield
    finally:
        for op, key, kernel in replaced:
            if kernel is None:
                op.py_kernels.pop(key, None)
            else:
                op.py_kernels[key] = kernel
            op._dispatch_cache.clear()


def _cross_map_lrn2d(self: torch.nn.CrossMapLRN2d, input: torch.Tensor) -> torch.Tensor:
    """nn.CrossMapLRN2d as its legacy autograd Function computes it, the same operations in the same order
    (a running sum of the squares over the channels, whose first channel, by an off-by-one of the original,
    is never taken out again), without the tensors it resizes and fills in place, which fixed every dim."""
    if input.dim() != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
    channels = input.size(1)
    square = torch.pow(input, 2)
    pre_pad = int((self.size - 1) / 2 + 1)
    scale = torch.zeros_like(square.select(1, 0))
    for c in range(min(pre_pad, channels)):
        scale = scale + square.select(1, c)
    scales = [scale]
    for c in range(1, channels):
        if c < channels - pre_pad + 1:
            scale = scale + square.select(1, c + pre_pad - 1)
        if c > pre_pad:
            scale = scale - square.select(1, c - pre_pad)
        scales.append(scale)
    return torch.pow(torch.stack(scales, 1) * (self.alpha / self.size) + self.k, -self.beta) * input


def _adaptive_log_softmax(self: torch.nn.AdaptiveLogSoftmaxWithLoss, input_: torch.Tensor,
                          target_: torch.Tensor) -> Any:
    """nn.AdaptiveLogSoftmaxWithLoss's forward from the log-probabilities of every class (as its log_prob
    computes them): eager picks each cluster's rows by nonzero() of the target and skips a cluster no row
    falls in, sizes read from data; here every row's cluster is computed and its target's log-probability
    gathered, the same sums (a cluster's log-softmax plus the head's for the cluster). A target outside
    [0, n_classes), which eager raises on, gives NaN (a graph cannot raise)."""
    from torch.nn.modules.adaptive import _ASMoutput

    if target_.dim() not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target_.dim() == 1 and input_.dim() != 2:
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size {input_.size()}")
    if target_.dim() == 0 and input_.dim() != 1:
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size {input_.size()}")
    batched = target_.dim() > 0
    input = input_ if batched else input_.unsqueeze(0)
    target = target_ if batched else target_.unsqueeze(0)
    valid = (target >= 0) & (target < self.n_classes)
    # the log-probabilities of every class, as log_prob computes them (concatenated, not written into slices)
    head = torch.nn.functional.log_softmax(self.head(input), dim=1)
    pieces = [head[:, :self.shortlist_size]]
    for i, tail in enumerate(self.tail):
        cluster = torch.nn.functional.log_softmax(tail(input), dim=1)
        pieces.append(cluster + head[:, self.shortlist_size + i].unsqueeze(1))
    log_prob = torch.cat(pieces, 1)
    output = log_prob.gather(1, torch.where(valid, target, 0).unsqueeze(1)).squeeze(1)
    output = torch.where(valid, output, math.nan)
    loss = (-output).mean()
    return _ASMoutput(output if batched else output.squeeze(0), loss)


# layer class -> (a forward torch.export captures with dynamic dims, whether it rounds as eager's does)
_LAYER_EQUIVALENTS: dict[type, tuple[Callable[..., Any], bool]] = {
    torch.nn.CrossMapLRN2d: (_cross_map_lrn2d, True),
    torch.nn.AdaptiveLogSoftmaxWithLoss: (_adaptive_log_softmax, False),
}


class LayerEquivalents:
    """torch.nn layers whose forward torch.export cannot capture with dynamic dims, traced as equivalents
    during capture (the classes' own forward put back after): CrossMapLRN2d's legacy Function resizes
    tensors in place (every dim fixed); AdaptiveLogSoftmaxWithLoss branches on how many targets fall in
    each cluster (a size read from data). A subclass with a forward of its own keeps it."""

    def __init__(self, inexact: list[str] | None = None) -> None:
        self.inexact = inexact if inexact is not None else []
        self._kept: list[tuple[type, Any]] = []

    def __enter__(self) -> "LayerEquivalents":
        for layer, (equivalent, exact) in _LAYER_EQUIVALENTS.items():
            self._kept.append((layer, layer.__dict__["forward"]))
            layer.forward = self._traced(layer, equivalent, exact)
        return self

    def __exit__(self, *exc: Any) -> None:
        for layer, forward in self._kept:
            layer.forward = forward
        self._kept.clear()

    def _traced(self, layer: type, equivalent: Callable[..., Any], exact: bool) -> Callable[..., Any]:
        name = f"torch.nn.{layer.__name__}"

        @functools.wraps(equivalent)
        def forward(module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
            if not exact:
                self.inexact.append(name)
            return equivalent(module, *args, **kwargs)
        return forward


_FAKE_QUANTIZE = ("aten::fake_quantize_per_tensor_affine_cachemask",
                  "aten::_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
                  "aten::fake_quantize_per_channel_affine_cachemask")


def _output_and_mask(self: torch.Tensor, *args) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.empty_like(self), torch.empty_like(self, dtype=torch.bool)


@functools.cache
def fake_kernels() -> None:
    """Fake kernels for ATen ops that torch ships without one, so torch.export can trace them: the
    cachemask forms that torch.fake_quantize_per_tensor_affine and _per_channel_affine (and the
    torch.ao FakeQuantize modules) dispatch to, each an output like the input and a bool mask.
    Registered once, for the process; an op torch has since given a fake kernel is left as it is."""
    for name in _FAKE_QUANTIZE:
        if not torch._C._dispatch_has_kernel_for_dispatch_key(name, "Meta"):
            try:
                torch.library.register_fake(name)(_output_and_mask)
            except RuntimeError:  # torch registered one since this was written
                pass


def _cov(input: torch.Tensor, *, correction: int = 1, fweights: torch.Tensor | None = None,
         aweights: torch.Tensor | None = None) -> torch.Tensor:
    """torch.cov as tensor ops (ATen's cov checks its arguments with data-dependent comparisons,
    which torch.export cannot trace; the weights' sign and integrality are not checked here)."""
    x = input if input.dim() == 2 else input.reshape(1, -1)
    weights = fweights if aweights is None else aweights if fweights is None else fweights * aweights
    if weights is None:
        avg = x.mean(1, keepdim=True)
        norm = x.shape[1] - correction
    else:
        w_sum = weights.sum()
        avg = (x * weights).sum(1, keepdim=True) / w_sum
        norm = w_sum if correction == 0 else w_sum - correction if aweights is None else \
            w_sum - correction * (weights * aweights).sum() / w_sum
    norm = torch.clamp(torch.as_tensor(norm, dtype=avg.dtype), min=0)  # ATen warns and uses 0
    xm = x - avg
    c = xm @ (xm if weights is None else xm * weights).transpose(0, 1).conj()
    return (c / norm).squeeze()


def _corrcoef(input: torch.Tensor) -> torch.Tensor:
    """torch.corrcoef by _cov, as ATen computes it."""
    c = _cov(input)
    if c.dim() == 0:
        return c / c
    std = torch.sqrt(torch.diagonal(c))
    c = c / std[:, None] / std[None, :]
    return torch.clamp(c, -1, 1) if not c.is_complex() else torch.complex(torch.clamp(c.real, -1, 1), torch.clamp(c.imag, -1, 1))


def _gaussian_nll_loss(input: torch.Tensor, target: torch.Tensor, var: torch.Tensor, full: bool = False,
                       eps: float = 1e-6, reduction: str = "mean") -> torch.Tensor:
    """F.gaussian_nll_loss with a tensor var, as torch computes it, but for the check that var has no
    negative entry: torch raises on `torch.any(var < 0)`, a bool read from data, which torch.export can
    only carry as a runtime assertion, and an exported graph drops those (dead_code.ASSERTIONS: ONNX has
    no op that stops a run). Dropped, the graph would clamp a negative var to eps and return a finite
    loss where eager raises; instead the whole result is NaN then, which no valid input gives (var is
    clamped to eps > 0 before the log). The shape checks read sizes only, so they stay as torch has them."""
    negative = torch.any(var < 0)
    if var.size() != input.size():
        if input.size()[:-1] == var.size():  # one var per row of the last dim
            var = torch.unsqueeze(var, -1)
        elif not (input.ndim == var.ndim
                  and sum(y for x, y in zip(input.size(), var.size(), strict=True) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # torch clamps a clone in place under no_grad, so that the gradient passes unclamped, and adds the
    # constant in place; an exported graph has no gradient, and out of place the values are the same
    var = var.clamp(min=eps)
    loss = 0.5 * (torch.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    loss = loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss
    return torch.where(negative, math.nan, loss)


def _narrow(input: torch.Tensor, dim: int, start: torch.Tensor, length: int) -> torch.Tensor:
    """narrow at a start held in a 0-d tensor. narrow.Tensor reads the start inside ATen, where
    torch.export cannot bind it to the graph (PendingUnbackedSymbolNotFound); here `.item()` reads it in
    the graph, and the rest is narrow.default's: a negative start counts from the end, the range is
    checked as eager checks it (runtime assertions, which an exported graph drops like every
    torch._check), and the result is a slice, a view of input, so writes through it reach input."""
    dim = dim + input.dim() if dim < 0 else dim
    size = input.shape[dim]
    value = start.long().item()  # as narrow.Tensor reads it: item<int64_t>()
    torch._check_index((-size <= value) & (value <= size),
                       lambda: f"start out of range (expected to be in range of [{-size}, {size}], but got {value})")
    value = torch.sym_ite(value < 0, value + size, value)
    torch._check(value >= 0)
    torch._check(length >= 0, lambda: "narrow(): length must be non-negative.")
    torch._check(value + length <= size, lambda: f"start ({value}) + length ({length}) exceeds dimension size ({size}).")
    out = input[(slice(None),) * dim + (slice(value, value + length),)]
    torch._check(out.shape[dim] == length)  # the slice's size is the length, not a new unbacked symbol
    return out


def _lengths(lengths: torch.Tensor | list[int] | tuple[int, ...], batch: int, device: torch.device) -> torch.Tensor:
    """ctc_loss's input or target lengths, given as a tensor ((N) or () unbatched) or as ints, as int64 [N]."""
    if isinstance(lengths, torch.Tensor):
        return lengths.to(device, torch.int64).reshape(batch)
    # as_tensor, not tensor: torch.tensor's constant comes with a detach_, an in-place op in the graph
    return torch.as_tensor(lengths, dtype=torch.int64, device=device).reshape(batch)


def _logsumexp(*terms: torch.Tensor) -> torch.Tensor:
    """log(exp(a) + exp(b) + ...) as ATen's CTC kernel sums it: from the largest term, which is taken as
    0 where every term is -inf (here clamped to the lowest float: exp(-inf - m) is still 0)."""
    m = functools.reduce(torch.maximum, terms).clamp(min=torch.finfo(terms[0].dtype).min)
    return torch.log(functools.reduce(torch.add, [torch.exp(x - m) for x in terms])) + m


def _ctc_loss(log_probs: torch.Tensor, targets: torch.Tensor, input_lengths: torch.Tensor | list[int],
              target_lengths: torch.Tensor | list[int], blank: int = 0, reduction: str = "mean",
              zero_infinity: bool = False) -> torch.Tensor:
    """F.ctc_loss as ATen's CPU kernel computes it, in tensor ops of static shapes. aten._ctc_loss sizes
    its alphas by the longest target, read from data (no meta kernel); here every target is padded to a
    static bound S (the padded targets' width, or the whole concatenation, or the longest of int
    lengths) and the forward algorithm runs over the extended labels (blank, l1, blank, ..., blank) of
    2 * S + 1 positions for the whole batch at once, the time loop unrolled over a static length and a
    scan over a dynamic one (which stays dynamic), a sequence's alphas held from its input length on.
    Positions past a target's end are blanks, and no alpha reads a later position, so the padding does not
    reach the result. Eager's checks of lengths against sizes read data: an exported graph cannot raise, so
    they are not made."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    steps, batch, classes = lp.shape
    device = lp.device
    inputs, lengths = _lengths(input_lengths, batch, device), _lengths(target_lengths, batch, device)
    targets = targets.to(device, torch.int64)  # as eager moves them
    width = targets.shape[-1]  # 2-D: the padded width; 1-D: the concatenation, which holds every target
    if not isinstance(target_lengths, torch.Tensor):
        width = min(width, max(target_lengths, default=0))
    width = max(width, 1)
    positions, sequence = torch.arange(width, device=device), torch.arange(batch, device=device)
    if targets.numel() == 0:
        labels = torch.full((batch, width), blank, device=device)
    elif targets.dim() == 2:
        labels = targets[:, :width]
    else:  # a sequence's labels start where the ones before it end
        before = sequence[None, :] < sequence[:, None]
        starts = torch.where(before, lengths, 0).sum(1)
        labels = targets[(starts[:, None] + positions).clamp(max=targets.numel() - 1)]
    labels = torch.where(positions < lengths[:, None], labels, blank)
    size = 2 * width + 1
    extended = torch.stack([torch.full_like(labels, blank), labels], -1).reshape(batch, 2 * width)
    extended = torch.cat([extended, torch.full((batch, 1), blank, device=device)], 1)
    # each step's log-probabilities of the extended labels, [T, N, 2S + 1], by one Gather
    columns = (sequence[:, None] * classes + extended).reshape(-1)
    emitted = lp.reshape(steps, batch * classes).index_select(1, columns).reshape(steps, batch, size)
    never = torch.full((batch, 2), -math.inf, dtype=lp.dtype, device=device)
    # a label may follow the label two positions back (skipping a blank) where the two differ
    skip = torch.cat([never, torch.where(extended[:, 2:] != extended[:, :-2], 0.0, -math.inf).to(lp.dtype)], 1)
    alpha = emitted[0] + torch.where(torch.arange(size, device=device) < 2, 0.0, -math.inf).to(lp.dtype)
    running = torch.arange(steps, device=device)[:, None, None] < inputs[None, :, None]

    def advance(alpha: torch.Tensor, emitted_t: torch.Tensor, running_t: torch.Tensor) -> torch.Tensor:
        shifted = torch.cat([never, alpha], 1)
        step = _logsumexp(alpha, shifted[:, 1:-1], shifted[:, :-2] + skip) + emitted_t
        return torch.where(running_t, step, alpha)

    if isinstance(steps, int):  # a static length: the steps unrolled
        for t in range(1, steps):
            alpha = advance(alpha, emitted[t], running[t])
    else:  # a dynamic one: a scan over the steps (ONNX Scan), which keeps it dynamic
        from torch._higher_order_ops.scan import scan

        def combine(alpha: torch.Tensor, step: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
            alpha = advance(alpha, *step)
            return alpha, alpha.new_empty(0)

        # every step scanned, the first too (onnxruntime's Scan fails on zero steps, which a length of 1
        # would leave), from log-probabilities 0 at the first position and -inf elsewhere: one step from
        # there gives the first step's alphas above, each term the same (a sum with log(1) = 0 or -inf)
        before = torch.cat([torch.zeros((batch, 1), dtype=lp.dtype, device=device),
                            torch.full((batch, size - 1), -math.inf, dtype=lp.dtype, device=device)], 1)
        alpha, _ = scan(combine, before, [emitted, running])
    # the likelihood sums the alphas ending on the last label and on the blank after it
    last = sequence * size + 2 * lengths
    alpha = alpha.reshape(-1)
    on_label = torch.where(lengths > 0, alpha.index_select(0, (last - 1).clamp(min=0)), -math.inf)
    loss = -_logsumexp(alpha.index_select(0, last), on_label)
    # no input: eager's likelihood is 1 for an empty target, 0 for any other
    loss = torch.where(inputs > 0, loss, torch.where(lengths > 0, math.inf, 0.0).to(lp.dtype))
    if zero_infinity:
        loss = torch.where(loss == math.inf, 0.0, loss)
    if reduction == "mean":
        return (loss / lengths.clamp(min=1).to(lp.dtype)).mean()
    if reduction == "sum":
        return loss.sum()
    return loss if batched else loss.squeeze(0)


def _floating_var(args: tuple, kwargs: dict) -> bool:
    """Whether a gaussian_nll_loss call's var is a floating tensor (a number needs nothing; eager
    rejects an integer tensor when it clamps it in place)."""
    var = args[2] if len(args) > 2 else kwargs.get("var")
    return isinstance(var, torch.Tensor) and var.is_floating_point()


def _tensor_start(args: tuple, kwargs: dict) -> bool:
    """Whether a narrow call starts at a 0-d integer tensor (any other tensor start is eager's error)."""
    start = args[2] if len(args) > 2 else kwargs.get("start")
    return (isinstance(start, torch.Tensor) and start.dim() == 0 and start.dtype != torch.bool
            and not start.dtype.is_floating_point and not start.dtype.is_complex)


def _fractional_pools() -> dict[Callable[..., Any], Callable[..., Any]]:
    """torch.nn.functional's fractional max pools (the function that picks by return_indices, and each it
    picks from), each with the function whose signature it has."""
    F = torch.nn.functional
    two, three = F.fractional_max_pool2d_with_indices, F.fractional_max_pool3d_with_indices
    return {F.fractional_max_pool2d: two, two: two, F._fractional_max_pool2d: two,
            F.fractional_max_pool3d: three, three: three, F._fractional_max_pool3d: three}


def _fractional_max_pool(func: Callable[..., Any], signed: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """A fractional max pool as torch.nn.functional computes it, the pooling itself as aten2onnx's own
    fractional_max_pool (ATen's kernel in eager), which takes symbolic output sizes; given output_ratio, the
    size per spatial dim is int(size * ratio) as torch computes it, taken symbolically (the truncated float
    product). Random samples, when not given, are drawn as torch draws them."""
    import inspect

    from aten2onnx import _fractional_pool  # noqa: F401  (defines aten2onnx::fractional_max_pool)

    F = torch.nn.functional
    spatial = 2 if signed is F.fractional_max_pool2d_with_indices else 3
    bound = inspect.signature(signed).bind(*args, **kwargs)
    bound.apply_defaults()
    given = bound.arguments
    input = given["input"]

    def each(v: Any) -> list[Any]:
        return list(v) if isinstance(v, (list, tuple)) else [v] * spatial

    if given["output_size"] is not None:
        size = each(given["output_size"])
    else:
        size = [torch.sym_int(input.size(d - spatial) * r) for d, r in enumerate(each(given["output_ratio"]))]
    samples = given["_random_samples"]
    if samples is None:
        batch = 1 if input.dim() == spatial + 1 else input.size(0)
        samples = torch.rand(batch, input.size(-spatial - 1), spatial, dtype=input.dtype, device=input.device)
    output, indices = torch.ops.aten2onnx.fractional_max_pool(input, each(given["kernel_size"]), size, samples)
    # the _with_indices functions always give both, the _ ones the output alone, the others as asked
    with_indices = {signed: True, F._fractional_max_pool2d: False, F._fractional_max_pool3d: False}.get(
        func, given["return_indices"])
    return (output, indices) if with_indices else output


class DataDependentChecks(TorchFunctionMode):
    """Functions torch.export cannot trace because they compute a Python bool from tensor values
    (aten.equal has no fake kernel: its output depends on data), traced as equivalents during
    non-strict capture. torch.equal and torch.allclose become tensor ops read back with `.item()`,
    a symbolic bool the graph carries: returned, it is a graph output; branched on, torch.export
    reports the branch. torch.cov and torch.corrcoef (which call equal to check arguments) become
    their formulas. one_hot without num_classes and tensor_split at indices held in a tensor read
    their sizes from data: they become symbolic sizes. gaussian_nll_loss raises on negative variances
    read from data: its result becomes NaN there. narrow at a start held in a tensor reads the start
    where torch.export does not see it: the start becomes a symbolic int. ctc_loss sizes its work by
    the longest target: it becomes the forward algorithm over a static bound of it. Fractional max pooling
    takes its output size as plain ints (one given output_ratio, computed from the input's size, became the
    example's constant) and its 3-D meta kernel fixes every dim: it becomes aten2onnx::fractional_max_pool,
    whose sizes stay symbolic."""

    def __init__(self, inexact: list[str] | None = None) -> None:
        super().__init__()
        # the calls traced as a formula of their own, which may round differently from eager's kernel
        self.inexact = inexact if inexact is not None else []
        self._fractional = _fractional_pools()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.equal, torch.Tensor.equal):
            a, b = args
            if a.shape != b.shape:
                return False
            return torch.eq(a, b).all().item()
        if func in (torch.allclose, torch.Tensor.allclose):
            return torch.isclose(*args, **kwargs).all().item()
        if func is torch.nn.functional.one_hot and (args[1:] or [kwargs.get("num_classes", -1)])[0] == -1:
            # the class count is the data's maximum + 1: a symbolic size the graph computes
            x = args[0]
            classes = x.max().item() + 1
            torch._check(classes >= 1)
            return (x.unsqueeze(-1) == torch.arange(classes, device=x.device)).long()
        if func in (torch.tensor_split, torch.Tensor.tensor_split) and isinstance(args[1], torch.Tensor) \
                and args[1].dim() == 1:
            # split points read from a tensor: symbolic ints (a 0-d tensor, a count of sections, would
            # make the number of outputs depend on data, which no graph can have)
            x, indices, *rest = args
            return func(x, indices.tolist(), *rest, **kwargs)
        if func in (torch.cov, torch.Tensor.cov):
            self.inexact.append("torch.cov")
            return _cov(*args, **kwargs)
        if func in (torch.corrcoef, torch.Tensor.corrcoef):
            self.inexact.append("torch.corrcoef")
            return _corrcoef(*args, **kwargs)
        if func is torch.nn.functional.gaussian_nll_loss and _floating_var(args, kwargs):
            self.inexact.append("torch.nn.functional.gaussian_nll_loss")
            return _gaussian_nll_loss(*args, **kwargs)
        if func in (torch.narrow, torch.Tensor.narrow) and _tensor_start(args, kwargs):
            return _narrow(*args, **kwargs)
        if func in self._fractional and args and isinstance(args[0], torch.Tensor) \
                and ((args[2:3] or [kwargs.get("output_size")])[0] is not None
                     or (args[3:4] or [kwargs.get("output_ratio")])[0] is not None):
            return _fractional_max_pool(func, self._fractional[func], args, kwargs)
        if func is torch.nn.functional.ctc_loss:
            self.inexact.append("torch.nn.functional.ctc_loss")
            return _ctc_loss(*args, **kwargs)
        return func(*args, **kwargs)
