"""Recurrent layers: RNN, GRU and LSTM with every direction, activation, layout and sequence_lens,
stepped in Python over torch matmuls (ONNX's gate orders and activations differ from torch.nn's)."""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

from aten2onnx.runtime.kernel import Kernel, kernel

# activation name -> (number of alpha/beta parameters it takes, their defaults, builder)
_ACTIVATIONS: dict[str, tuple[tuple[float, ...], Callable[..., Callable[[torch.Tensor], torch.Tensor]]]] = {
    "relu": ((), lambda: torch.relu),
    "tanh": ((), lambda: torch.tanh),
    "sigmoid": ((), lambda: torch.sigmoid),
    "softsign": ((), lambda: F.softsign),
    "softplus": ((), lambda: F.softplus),
    "affine": ((1.0, 0.0), lambda a, b: lambda x: a * x + b),
    "leakyrelu": ((0.01,), lambda a: lambda x: F.leaky_relu(x, a)),
    "thresholdedrelu": ((1.0,), lambda a: lambda x: torch.where(x > a, x, 0.0)),
    "scaledtanh": ((1.0, 1.0), lambda a, b: lambda x: a * torch.tanh(b * x)),
    "hardsigmoid": ((0.2, 0.5), lambda a, b: lambda x: torch.clamp(a * x + b, 0.0, 1.0)),
    "elu": ((1.0,), lambda a: lambda x: F.elu(x, a)),
}


def _activations(names: list[str], alphas: list[float], betas: list[float]) -> list[Callable]:
    """The activation functions, taking alpha/beta values in order for those that have parameters."""
    fns = []
    ai = bi = 0
    for name in names:
        key = name.lower()
        if key not in _ACTIVATIONS:
            raise ValueError(f"unknown activation {name!r}; known: {sorted(_ACTIVATIONS)}")
        defaults, build = _ACTIVATIONS[key]
        params = []
        if len(defaults) >= 1:
            params.append(alphas[ai] if ai < len(alphas) else defaults[0])
            ai += 1
        if len(defaults) == 2:
            params.append(betas[bi] if bi < len(betas) else defaults[1])
            bi += 1
        fns.append(build(*params))
    return fns


class _Recurrent(Kernel):
    """Shared planning: gates per direction, activations per direction, layout and clipping."""

    gates: int
    default_activations: tuple[str, ...]

    def setup(self, activation_alpha: list[float] | None = None, activation_beta: list[float] | None = None,
              activations: list[str] | None = None, clip: float | None = None, direction: str = "forward",
              hidden_size: int | None = None, layout: int = 0, **extra) -> None:
        if direction not in ("forward", "reverse", "bidirectional"):
            raise ValueError(f"direction must be forward, reverse or bidirectional, not {direction!r}")
        self.directions = ["forward", "reverse"] if direction == "bidirectional" else [direction]
        per = len(self.default_activations)
        names = activations or list(self.default_activations) * len(self.directions)
        if len(names) != per * len(self.directions):
            raise ValueError(f"{len(names)} activations given; expected {per} per direction")
        fns = _activations(names, activation_alpha or [], activation_beta or [])
        self.fns = [fns[i * per:(i + 1) * per] for i in range(len(self.directions))]
        self.clip = clip
        self.layout = layout
        self.setup_extra(**extra)

    def setup_extra(self) -> None:
        pass

    def _pre(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.clip is None else torch.clamp(x, -self.clip, self.clip)

    def run(self, x, w, r, b=None, sequence_lens=None, initial_h=None, initial_c=None, p=None):
        if self.layout:
            x = x.transpose(0, 1)
            initial_h = None if initial_h is None else initial_h.transpose(0, 1)
            initial_c = None if initial_c is None else initial_c.transpose(0, 1)
        seq, batch = x.shape[0], x.shape[1]
        hidden = r.shape[-1]
        lens = None if sequence_lens is None else sequence_lens.to(torch.int64).tolist()
        ys, hs, cs = [], [], []
        for d, direction in enumerate(self.directions):
            h = initial_h[d] if initial_h is not None else x.new_zeros(batch, hidden)
            c = initial_c[d] if initial_c is not None else x.new_zeros(batch, hidden)
            bias = b[d] if b is not None else x.new_zeros(2 * self.gates * hidden)
            peep = p[d] if p is not None else None
            xs = x
            if direction == "reverse":
                xs = _reverse(x, lens)
            y = x.new_zeros(seq, batch, hidden)
            for t in range(seq):
                h_new, c_new = self.step(xs[t], h, c, w[d], r[d], bias[:self.gates * hidden],
                                         bias[self.gates * hidden:], peep, self.fns[d])
                if lens is not None:
                    alive = torch.tensor([t < n for n in lens], device=x.device).unsqueeze(1)
                    h_new = torch.where(alive, h_new, h)
                    c_new = torch.where(alive, c_new, c)
                    y[t] = torch.where(alive, h_new, 0.0)
                else:
                    y[t] = h_new
                h, c = h_new, c_new
            if direction == "reverse":
                y = _reverse(y, lens)
            ys.append(y)
            hs.append(h)
            cs.append(c)
        y = torch.stack(ys, 1)  # [seq, dirs, batch, hidden]
        y_h, y_c = torch.stack(hs), torch.stack(cs)
        if self.layout:
            y, y_h, y_c = y.permute(2, 0, 1, 3), y_h.transpose(0, 1), y_c.transpose(0, 1)
        return (y, y_h, y_c)[:self.n_outputs]


def _reverse(x: torch.Tensor, lens: list[int] | None) -> torch.Tensor:
    """x [seq, batch, ...] reversed in time, within each batch entry's own length."""
    if lens is None:
        return torch.flip(x, (0,))
    out = x.clone()
    for i, n in enumerate(lens):
        out[:n, i] = torch.flip(x[:n, i], (0,))
    return out


@kernel("RNN", since=7)  # 14: the layout attribute (batch-major X, Y, Y_h)
class RNN(_Recurrent):
    gates, default_activations, n_outputs = 1, ("Tanh",), 2

    def step(self, x, h, c, w, r, wb, rb, p, fns):
        return fns[0](self._pre(x @ w.T + h @ r.T + wb + rb)), c


@kernel("GRU", since=7)  # 14: the layout attribute (batch-major X, Y, Y_h)
class GRU(_Recurrent):
    gates, default_activations, n_outputs = 3, ("Sigmoid", "Tanh"), 2

    def setup_extra(self, linear_before_reset: int = 0) -> None:
        self.linear_before_reset = bool(linear_before_reset)

    def step(self, x, h, c, w, r, wb, rb, p, fns):
        f, g = fns
        wz, wr, wh = w.chunk(3)
        rz, rr, rh = r.chunk(3)
        wbz, wbr, wbh = wb.chunk(3)
        rbz, rbr, rbh = rb.chunk(3)
        z = f(self._pre(x @ wz.T + h @ rz.T + wbz + rbz))
        rt = f(self._pre(x @ wr.T + h @ rr.T + wbr + rbr))
        if self.linear_before_reset:
            ht = g(self._pre(x @ wh.T + rt * (h @ rh.T + rbh) + wbh))
        else:
            ht = g(self._pre(x @ wh.T + (rt * h) @ rh.T + rbh + wbh))
        return (1 - z) * ht + z * h, c


@kernel("LSTM", since=7)  # 14: the layout attribute (batch-major X, Y, Y_h, Y_c)
class LSTM(_Recurrent):
    gates, default_activations, n_outputs = 4, ("Sigmoid", "Tanh", "Tanh"), 3

    def setup_extra(self, input_forget: int = 0) -> None:
        self.input_forget = bool(input_forget)

    def step(self, x, h, c, w, r, wb, rb, p, fns):
        f, g, hf = fns
        gates = x @ w.T + h @ r.T + wb + rb
        gi, go, gf, gc = gates.chunk(4, -1)
        pi, po, pf = p.chunk(3) if p is not None else (0.0, 0.0, 0.0)
        i = f(self._pre(gi + pi * c))
        forget = 1 - i if self.input_forget else f(self._pre(gf + pf * c))
        c_new = forget * c + i * g(self._pre(gc))
        o = f(self._pre(go + po * c_new))
        return o * hf(c_new), c_new
