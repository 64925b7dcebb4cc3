"""``torch.library`` (custom operators) and ``torch.ops`` against torch 2.13 (CPU).

The reference program is PyTorch's "Python custom operators" tutorial
(pytorch/tutorials advanced_source/python_custom_ops.py): a ``crop`` operator with a fake
kernel and a gradient formula written with a second operator (``paste``), ``opcheck`` on its
examples, and a mutating ``numpy_sin``. The tutorial crops with PIL through torchvision
(not installed here); the operators below do the same crop and paste with NumPy slicing, and
every step is run on torch and on shardflow by the same code (``lib`` is the module).
Each test uses its own namespaces: operators stay registered for the process, as in torch.
"""

import itertools
from collections.abc import Sequence
from typing import Optional

import numpy as np
import pytest
import torch

import shardflow as sf

_ns = itertools.count()


def _fresh(prefix="sflib"):
    return f"{prefix}{next(_ns)}_{np.random.randint(1 << 30)}"


def _tutorial(lib, ns):
    T = lib.Tensor

    @lib.library.custom_op(f"{ns}::crop", mutates_args=())
    def crop(pic: T, box: Sequence[int]) -> T:
        x0, y0, x1, y1 = box
        return lib.from_numpy(pic.detach().numpy()[:, y0:y1, x0:x1].copy()).to(pic.device, pic.dtype)

    @crop.register_fake
    def _(pic, box):
        x0, y0, x1, y1 = box
        return pic.new_empty(pic.shape[0], y1 - y0, x1 - x0)

    @lib.library.custom_op(f"{ns}::paste", mutates_args=())
    def paste(im1: T, im2: T, coord: Sequence[int]) -> T:
        a = im1.detach().numpy().copy()
        x0, y0 = coord
        a[:, y0:y0 + im2.shape[1], x0:x0 + im2.shape[2]] = im2.detach().numpy()
        return lib.from_numpy(a)

    @paste.register_fake
    def _(im1, im2, coord):
        return lib.empty_like(im1)

    def backward(ctx, grad_output):
        grad_input = grad_output.new_zeros(ctx.pic_shape)
        return paste(grad_input, grad_output, ctx.coords), None

    def setup_context(ctx, inputs, output):
        pic, box = inputs
        ctx.coords = box[:2]
        ctx.pic_shape = pic.shape

    crop.register_autograd(backward, setup_context=setup_context)
    return crop, paste


def test_tutorial_crop_values_gradients_and_opcheck_match_torch():
    results = []
    for lib in (torch, sf):
        ns = _fresh()
        crop, _ = _tutorial(lib, ns)
        img = lib.ones(3, 12, 12)
        img *= lib.linspace(0, 1, steps=12) * lib.linspace(0, 1, steps=12).unsqueeze(-1)
        img = img.requires_grad_()
        out = crop(img, (1, 2, 5, 9))
        w = lib.arange(out.numel(), dtype=lib.float32).reshape(out.shape)
        (out * w).sum().backward()
        assert type(out.grad_fn).__name__ == f"GeneratedBackwardFor_{ns}_crop_defaultBackward"
        via_ops = getattr(lib.ops, ns).crop.default(img.detach(), (0, 0, 2, 2))
        reports = [lib.library.opcheck(crop, ex) for ex in (
            [lib.randn(3, 16, 16), [0, 0, 10, 10]],
            [lib.randn(3, 20, 20, requires_grad=True), [10, 0, 20, 10]],
            [lib.randn(3, 18, 18, dtype=lib.double), [3, 4, 12, 15]],
        )]
        results.append((out.detach().numpy(), img.grad.numpy(), via_ops.numpy(), reports,
                        str(crop._opoverload._schema).split("::")[1]))
    (o1, g1, v1, r1, s1), (o2, g2, v2, r2, s2) = results
    np.testing.assert_allclose(o2, o1, rtol=1e-6)
    np.testing.assert_allclose(g2, g1)
    np.testing.assert_allclose(v2, v1, rtol=1e-6)
    assert r1 == r2 and all(r == dict.fromkeys(r, "SUCCESS") for r in r2) and len(r2[0]) == 4
    assert s1 == s2 == "crop(Tensor pic, SymInt[] box) -> Tensor"


def test_tutorial_mutating_numpy_sin_matches_torch():
    for lib in (torch, sf):
        ns = _fresh()

        @lib.library.custom_op(f"{ns}::numpy_sin", mutates_args={"output"}, device_types="cpu")
        def numpy_sin(input: lib.Tensor, output: lib.Tensor) -> None:
            np.sin(input.numpy(), out=output.numpy())

        x, out = lib.randn(3), lib.empty(3)
        v = out._version
        assert numpy_sin(x, out) is None
        assert lib.allclose(out, x.sin()) and out._version == v + 1
        for ex in ([lib.randn(3), lib.empty(3)], [lib.randn(0, 3), lib.empty(0, 3)],
                   [lib.randn(1, 2, 3, 4, dtype=lib.double), lib.empty(1, 2, 3, 4, dtype=lib.double)]):
            assert set(lib.library.opcheck(numpy_sin, ex).values()) == {"SUCCESS"}
        assert str(numpy_sin._opoverload._schema).endswith("numpy_sin(Tensor input, Tensor(a1!) output) -> ()")


def test_infer_schema_matches_torch():
    def schemas(lib):
        T = lib.Tensor

        def f(x: T, box: Sequence[int], s: float = 1.0, o: Optional[T] = None, flag: bool = False,  # noqa: UP045  (typing.Optional, as programs write it)
              name: str = "a") -> T: ...

        def g(x: T, d: lib.dtype, dev: lib.device, l: list[T], lo: list[Optional[T]], fl: list[float],  # noqa: UP045  (typing.Optional, as programs write it)
              b: list[bool], oi: Optional[int] = None, i: int = 3) -> list[T]: ...  # noqa: UP045  (typing.Optional, as programs write it)

        def h(x: T, y: T, z: T) -> tuple[T, int]: ...

        def k(x: T, *, alpha: float = 2.0) -> T: ...

        def u(x: T | None, n: int | None = None) -> T: ...

        inf = lib.library.infer_schema
        return [inf(f, mutates_args=()), inf(g, mutates_args=()), inf(h, mutates_args=("z", "y")),
                inf(h, mutates_args="unknown"), inf(h, mutates_args=(), op_name="foo"), inf(k, mutates_args=()),
                inf(u, mutates_args=())]

    assert schemas(sf) == schemas(torch)


@pytest.mark.parametrize("case", ["no_annotation", "unknown_mutated", "bad_type", "bad_return", "varargs"])
def test_infer_schema_errors_match_torch(case):
    def run(lib):
        T = lib.Tensor
        fns = {
            "no_annotation": (lambda x: x, ()),
            "unknown_mutated": (_annotated(T, 2), ("w",)),
            "bad_type": (_with_ann({"x": T, "s": set, "return": T}), ()),
            "bad_return": (_with_ann({"x": T, "return": dict}), ()),
            "varargs": (_varargs(T), ()),
        }
        fn, mut = fns[case]
        with pytest.raises(ValueError) as info:
            lib.library.infer_schema(fn, mutates_args=mut)
        return str(info.value).split(" ")[:4]

    assert run(sf) == run(torch)


def _annotated(T, n):
    def f(x: T, y: T) -> T: ...
    return f


def _with_ann(ann):
    names = [k for k in ann if k != "return"]
    f = eval(f"lambda {', '.join(names)}: None")
    f.__annotations__ = dict(ann)
    return f


def _varargs(T):
    def f(x: T, *args: T) -> T: ...
    return f


def test_custom_op_without_autograd_raises_at_backward_as_torch():
    msgs = []
    for lib in (torch, sf):
        ns = _fresh()

        @lib.library.custom_op(f"{ns}::sq", mutates_args=())
        def sq(x: lib.Tensor) -> lib.Tensor:
            return x * x

        x = lib.randn(3, requires_grad=True)
        y = sq(x)
        assert y.requires_grad
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        msgs.append(str(info.value).replace(ns, "NS"))
        # opcheck: no fake kernel -> test_faketensor fails; an input needing grad -> the aot test
        with pytest.raises(Exception, match="test_faketensor failed with There was no fake impl registered"):
            lib.library.opcheck(sq, (lib.randn(3),))
        sq.register_fake(lambda x: lib.empty_like(x))
        with pytest.raises(Exception, match="test_aot_dispatch_dynamic failed with Trying to backward through"):
            lib.library.opcheck(sq, (lib.randn(3, requires_grad=True),))
    assert msgs[0] == msgs[1]


def test_register_autograd_keyword_only_inputs_and_gradient_count_match_torch():
    for lib in (torch, sf):
        ns = _fresh()

        @lib.library.custom_op(f"{ns}::kw", mutates_args=())
        def kw(x: lib.Tensor, *, alpha: float = 2.0) -> lib.Tensor:
            return x * alpha

        def sc(ctx, inputs, keyword_only_inputs, output):
            ctx.alpha = keyword_only_inputs["alpha"]

        kw.register_autograd(lambda ctx, g: g * ctx.alpha, setup_context=sc)
        x = lib.ones(2, requires_grad=True)
        kw(x, alpha=3.0).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]
        assert str(kw._opoverload._schema).endswith("kw(Tensor x, *, float alpha=2.) -> Tensor")

        @lib.library.custom_op(f"{ns}::two", mutates_args=())
        def two(x: lib.Tensor, y: lib.Tensor) -> lib.Tensor:
            return x * y

        two.register_autograd(lambda ctx, g: g)
        with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
            two(x, x).sum().backward()


def test_output_aliasing_an_input_and_undeclared_mutation_are_caught_as_torch():
    for lib in (torch, sf):
        ns = _fresh()

        @lib.library.custom_op(f"{ns}::alias", mutates_args=())
        def alias(x: lib.Tensor) -> lib.Tensor:
            return x

        with pytest.raises(RuntimeError, match="may not alias any inputs"):
            alias(lib.ones(2))

        @lib.library.custom_op(f"{ns}::mut", mutates_args=())
        def mut(x: lib.Tensor) -> None:
            x.add_(1)

        with pytest.raises(Exception, match="test_schema failed with Argument x is not defined as mutable but was mutated"):
            lib.library.opcheck(mut, (lib.ones(2),))

        @lib.library.custom_op(f"{ns}::wrongfake", mutates_args=())
        def wf(x: lib.Tensor) -> lib.Tensor:
            return x * 2

        wf.register_fake(lambda x: x.new_empty(x.shape[0] + 1))
        with pytest.raises(Exception, match="found mismatched tensor metadata: Shapes"):
            lib.library.opcheck(wf, (lib.randn(3),))


def test_library_define_impl_and_register_autograd_match_torch():
    out = []
    for lib in (torch, sf):
        ns = _fresh()
        L = lib.library.Library(ns, "DEF")
        L.define("mysin(Tensor x) -> Tensor")
        L.impl("mysin", lambda x: x.sin(), "CompositeImplicitAutograd")
        lib.library.define(f"{ns}::cube", "(Tensor x) -> Tensor")

        @lib.library.impl(f"{ns}::cube", "cpu")
        def _(x):
            return x ** 3

        def bw(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

        lib.library.register_autograd(f"{ns}::cube", bw, setup_context=lambda ctx, inputs, output:
                                      ctx.save_for_backward(inputs[0]))
        frag = lib.library.Library(ns, "FRAGMENT")
        frag.define("scale(Tensor x, float alpha=2.0) -> Tensor")
        frag.impl("scale", lambda x, alpha=2.0: x * alpha, "CompositeImplicitAutograd")
        ops = getattr(lib.ops, ns)
        x = lib.tensor([0.5, 2.0], requires_grad=True)
        (ops.mysin(x) + ops.cube(x) + ops.scale(x, alpha=3.0)).sum().backward()
        with pytest.raises(RuntimeError, match="Only a single TORCH_LIBRARY can be used"):
            lib.library.Library(ns, "DEF")
        with pytest.raises(ValueError, match="Unsupported kind: FOO"):
            lib.library.Library(ns, "FOO")
        with pytest.raises(RuntimeError, match="with the same name and overload name multiple times"):
            frag.define("scale(Tensor x) -> Tensor")
        with pytest.raises(RuntimeError, match="expected at most 2 argument"):
            ops.scale(x, 1.0, 2.0)
        with pytest.raises(RuntimeError, match="Unknown keyword argument 'beta'"):
            ops.scale(x, beta=1.0)
        with pytest.raises(AttributeError, match="has no attribute 'nope'"):
            ops.nope
        out.append((x.grad.numpy(), str(ops.cube), ops.cube.overloads(), ops.cube._qualified_op_name.split("::")[1],
                    ops.cube.default.name().split("::")[1], str(ops.scale.default._schema).split("::")[1]))
        L._destroy() if hasattr(L, "_destroy") else None
    (g1, *m1), (g2, *m2) = out
    np.testing.assert_allclose(g2, g1, rtol=1e-6)
    assert m1[2:] == m2[2:] and m1[1] == m2[1]


def test_cpu_kernel_without_autograd_warns_and_differentiates_through_the_kernel_as_torch():
    grads = []
    for lib in (torch, sf):
        ns = _fresh()
        L = lib.library.Library(ns, "DEF")
        L.define("mysin(Tensor x) -> Tensor")
        L.impl("mysin", lambda x: x.sin(), "CPU")
        x = lib.ones(2, requires_grad=True)
        with pytest.warns(UserWarning, match="an autograd kernel was not registered"):
            getattr(lib.ops, ns).mysin(x).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


def test_missing_kernel_for_the_device_raises_not_implemented_as_torch():
    for lib in (torch, sf):
        ns = _fresh()

        @lib.library.custom_op(f"{ns}::c", mutates_args=(), device_types="cuda")
        def c(x: lib.Tensor) -> lib.Tensor:
            return x * 2

        with pytest.raises(NotImplementedError, match=f"Could not run '{ns}::c' with arguments from the 'CPU' backend"):
            c(lib.ones(2))
        c.register_kernel("cpu")(lambda x: x * 3)
        assert c(lib.ones(2)).tolist() == [3.0, 3.0]


def test_custom_op_argument_errors_match_torch():
    for lib in (torch, sf):
        with pytest.raises(TypeError, match="mutates_args"):
            lib.library.custom_op(f"{_fresh()}::f")
        with pytest.raises(ValueError):
            lib.library.custom_op("nonamespace", mutates_args=())(_annotated(lib.Tensor, 1))


def test_aten_namespace_reaches_the_builtin_ops():
    x, y = np.arange(3.0, dtype=np.float32), np.ones(3, dtype=np.float32)
    for name, overload in (("add", "Tensor"), ("mul", "Tensor"), ("exp", "default")):
        args = (x, y) if name != "exp" else (x,)
        got = getattr(getattr(sf.ops.aten, name), overload)(*map(sf.tensor, args))
        want = getattr(getattr(torch.ops.aten, name), overload)(*map(torch.tensor, args))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert not hasattr(sf.ops, "no_such_namespace_anywhere")
    with pytest.raises(AttributeError):
        sf.ops.aten.no_such_op


def test_refused_registrations_say_what_to_use():
    ns = _fresh()

    @sf.library.custom_op(f"{ns}::f", mutates_args=())
    def f(x: sf.Tensor) -> sf.Tensor:
        return x + 1

    for call in (lambda: f.register_autocast("cpu", sf.float16), lambda: sf.library.triton_op("a::b", mutates_args=()),
                 lambda: sf.library.Library("aten", "IMPL"), lambda: sf.library.get_ctx()):
        with pytest.raises(NotImplementedError):
            call()


def test_tensor_list_inputs_get_gradients_as_torch():
    grads = []
    for lib in (torch, sf):
        ns = _fresh()

        @lib.library.custom_op(f"{ns}::cat2", mutates_args=())
        def cat2(xs: list[lib.Tensor], s: float) -> lib.Tensor:
            return lib.cat(xs) * s

        def setup_context(ctx, inputs, output):
            ctx.s = inputs[1]

        cat2.register_autograd(lambda ctx, g: ([g[:2] * ctx.s, g[2:] * 2 * ctx.s], None), setup_context=setup_context)
        a, b = lib.ones(2, requires_grad=True), lib.ones(3, requires_grad=True)
        y = cat2([a, b], 3.0)
        (y * lib.arange(5.0)).sum().backward()
        grads.append((y.detach().numpy(), a.grad.numpy(), b.grad.numpy()))
    for got, want in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, want)


def test_fake_kernel_runs_for_meta_tensors():
    ns = _fresh()
    crop, _ = _tutorial(sf, ns)
    out = crop(sf.empty(3, 8, 8, device="meta"), (1, 2, 5, 7))
    assert out.device.type == "meta" and tuple(out.shape) == (3, 5, 4)


def test_opcheck_tolerances_and_sampling_operators_as_torch():
    for lib in (torch, sf):
        ns = _fresh()

        @lib.library.custom_op(f"{ns}::noisy", mutates_args=())
        def noisy(x: lib.Tensor) -> lib.Tensor:
            return x + lib.rand_like(x)

        noisy.register_fake(lambda x: lib.empty_like(x))
        # the runs opcheck compares draw the same numbers
        assert lib.library.opcheck(noisy, (lib.randn(3),)) == dict.fromkeys(
            ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic"), "SUCCESS")
        with pytest.raises(ValueError, match="if you specify one of rtol/atol, you must specify both"):
            lib.library.opcheck(noisy, (lib.randn(3),), rtol=1.0)
        report = lib.library.opcheck(noisy, (lib.randn(3),), test_utils="test_faketensor", raise_exception=False)
        assert report == {"test_faketensor": "SUCCESS"}


def test_opcheck_output_comparison_uses_rtol_atol():
    ns = _fresh()
    calls = []

    @sf.library.custom_op(f"{ns}::drift", mutates_args=())
    def drift(x: sf.Tensor) -> sf.Tensor:  # a different result on each call
        calls.append(1)
        return x + 1e-3 * len(calls)

    drift.register_fake(lambda x: sf.empty_like(x))
    with pytest.raises(sf.library.OpCheckError, match="outputs differ beyond"):
        sf.library.opcheck(drift, (sf.randn(3),), test_utils="test_aot_dispatch_dynamic")
    assert sf.library.opcheck(drift, (sf.randn(3),), test_utils="test_aot_dispatch_dynamic", rtol=0.0,
                              atol=1e-2) == {"test_aot_dispatch_dynamic": "SUCCESS"}


def test_registrations_made_with_lib_end_with_that_library_as_torch():
    import gc

    for lib in (torch, sf):
        ns = _fresh()
        owner = lib.library.Library(ns, "DEF")
        owner.define("twice(Tensor x) -> Tensor")
        owner.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")
        temp = lib.library.Library(ns, "FRAGMENT")
        lib.library.register_autograd(f"{ns}::twice", lambda ctx, g: g * 2, lib=temp)
        x = lib.ones(2, requires_grad=True)
        getattr(lib.ops, ns).twice(x).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]
        del temp
        gc.collect()
        # the formula went with its Library: the kernel is differentiated through, with the
        # "no autograd kernel" warning (torch warns at backward, shardflow at the call)
        x = lib.ones(2, requires_grad=True)
        with pytest.warns(UserWarning, match="an autograd kernel was not registered"):
            getattr(lib.ops, ns).twice(x).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]
        del owner
        gc.collect()
        assert not hasattr(getattr(lib.ops, ns), "twice")
