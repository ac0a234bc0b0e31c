"""Each built-in registration above opset 9 changes the translation: none computes exactly what the
entry below it computes (the same bytecode calling the same objects, or equivalent handlers), as a
registration that only re-spelled an op used to. How an op is spelled at an opset is the builder's
emitters' (ir/emitters.py), never a re-registration."""

from __future__ import annotations

import dis
import types

import torch

import aten2onnx.symbolic  # noqa: F401  (registers the built-in symbolics)
from aten2onnx.registry import REGISTRY


def consts(code):
    """A code object's constants, its docstring aside, nested code by name."""
    out = []
    for i, c in enumerate(code.co_consts):
        if i == 0 and isinstance(c, str):
            continue  # the docstring
        if isinstance(c, types.CodeType):
            out.append(("code", c.co_name))
        else:
            out.append(c)
    return out


def same_code(a, b, seen):
    if a.co_code != b.co_code or a.co_names != b.co_names or a.co_varnames != b.co_varnames \
            or a.co_freevars != b.co_freevars:
        return False
    if consts(a) != consts(b):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) and not same_code(x, y, seen):
            return False
    return True


def equivalent(f, h, seen=None):
    """Whether f computes what h does: the same bytecode, defaults and closure, each global it reads the
    same object or an equivalent function; or the same calls with module attributes resolved."""
    seen = seen if seen is not None else set()
    if f is h:
        return True
    if (id(f), id(h)) in seen:
        return True
    seen.add((id(f), id(h)))
    if not (isinstance(f, types.FunctionType) and isinstance(h, types.FunctionType)):
        return False
    if f.__defaults__ != h.__defaults__ or f.__kwdefaults__ != h.__kwdefaults__:
        return False
    if not same_code(f.__code__, h.__code__, seen):
        return same_calls(f, h, seen)
    if (f.__closure__ is None) != (h.__closure__ is None):
        return False
    if f.__closure__:
        for x, y in zip(f.__closure__, h.__closure__):
            if not equivalent(x.cell_contents, y.cell_contents, seen) and x.cell_contents != y.cell_contents:
                return False
    for name in _global_names(f.__code__):
        a, b = f.__globals__.get(name, f.__builtins__), h.__globals__.get(name, h.__builtins__)
        if a is b:
            continue
        if isinstance(a, types.FunctionType) and isinstance(b, types.FunctionType) and equivalent(a, b, seen):
            continue
        if isinstance(a, types.ModuleType) or isinstance(b, types.ModuleType):
            return False
        try:
            if a == b and type(a) is type(b) and not callable(a):
                continue
        except Exception:
            pass
        return False
    return True


def tokens(f):
    """f's instructions with globals and module attributes resolved to the objects they name."""
    out = []
    ins = list(dis.get_instructions(f))
    index = {i.offset: n for n, i in enumerate(ins)}
    for i in ins:
        if i.opname in ("CACHE", "PRECALL", "RESUME", "NOP", "PUSH_NULL"):
            continue
        if i.opname == "LOAD_GLOBAL":
            name = i.argval
            obj = f.__globals__.get(name, getattr(__builtins__, name, None))
            out.append(("OBJ", obj))
            continue
        if i.opname in ("LOAD_ATTR", "LOAD_METHOD") and out and out[-1][0] == "OBJ" and isinstance(out[-1][1], types.ModuleType):
            out[-1] = ("OBJ", getattr(out[-1][1], i.argval))
            continue
        arg = i.argval
        if i.opname.startswith(("JUMP", "POP_JUMP", "FOR_ITER")) and isinstance(arg, int):
            arg = index.get(arg, arg)
        if isinstance(arg, types.CodeType):
            arg = ("code", arg.co_name)
        out.append((i.opname.replace("LOAD_METHOD", "LOAD_ATTR"), arg))
    return out


def same_calls(f, h, seen):
    """f and h as the same instruction stream once globals and module attributes name their objects
    (`var(...)` in one module and `reduction.var(...)` in another call the same function)."""
    if f.__code__.co_varnames != h.__code__.co_varnames or any(isinstance(c, types.CodeType) for c in f.__code__.co_consts + h.__code__.co_consts):
        return False
    a, b = tokens(f), tokens(h)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x[0] != y[0]:
            return False
        if x[0] == "OBJ":
            if x[1] is y[1]:
                continue
            if isinstance(x[1], types.FunctionType) and isinstance(y[1], types.FunctionType) and equivalent(x[1], y[1], seen):
                continue
            return False
        if x[1] != y[1]:
            return False
    return True


def _global_names(code):
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return names




def test_no_registration_repeats_the_one_below_it():
    repeats = []
    for complex in (False, True):
        for key, versions in REGISTRY.builtin_handlers(complex=complex).items():
            opsets = sorted(versions)
            for lower, upper in zip(opsets, opsets[1:]):
                if equivalent(versions[upper], versions[lower]):
                    repeats.append(f"{key} at {upper} ({versions[upper].__module__}) repeats {lower}")
    assert repeats == []


def _base_sum(g, self):
    return g.reduce("ReduceSum", self, [0], False)


def _respelled_sum(g, self):
    return g.reduce("ReduceSum", self, [0], False)


def _other_sum(g, self):
    return g.reduce("ReduceSum", self, [1], False)


def test_the_comparison_sees_a_repeat_and_a_change():
    assert equivalent(_respelled_sum, _base_sum)
    assert not equivalent(_other_sum, _base_sum)
    assert equivalent(lambda g, x: torch.relu(x), lambda g, x: torch.relu(x))
    assert not equivalent(lambda g, x: torch.relu(x), lambda g, x: torch.tanh(x))
