"""``torch.func`` path: ``functional_call`` (a module called with given parameters and buffers,
``nn.utils.stateless``) and the function transforms, built on shardflow's eager autograd
rather than functorch's batching and dual tensors:

* ``vmap`` (``_vmap.py``): a loop over the mapped dimension (one ``func`` call per sample);
* ``grad``, ``grad_and_value``, ``vjp`` (``_grad.py``): ``autograd.grad`` on fresh inputs,
  with ``create_graph=True`` when the result is differentiated again (``_nesting.py``);
* ``jacrev``, ``jacfwd``, ``hessian``, ``jvp``, ``linearize`` (``_jacobian.py``): from
  reverse-mode Jacobians (one backward pass per output element);
* ``stack_module_state``, ``replace_all_batch_norm_modules_`` (``_stack_module_state.py``);
* ``functionalize``: the function itself (eager execution; see its docstring);
* ``debug_unwrap`` (``_debug_unwrap.py``): the tensor itself (no wrapper tensors here).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..nn.utils.stateless import _functional_call
from ._debug_unwrap import debug_unwrap
from ._grad import grad, grad_and_value, vjp
from ._jacobian import hessian, jacfwd, jacrev, jvp, linearize
from ._stack_module_state import replace_all_batch_norm_modules_, stack_module_state
from ._vmap import vmap

__all__ = ["debug_unwrap", "functional_call", "functionalize", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "replace_all_batch_norm_modules_", "stack_module_state", "vjp", "vmap"]


def functionalize(func, *, remove: str = "mutations"):
    """``func`` itself. torch's functionalize rewrites mutations into out-of-place ops for
    tracing compilers; shardflow executes eagerly, where the rewritten program computes the same
    outputs and leaves the same values in mutated inputs, so the function is returned as is."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are:\n     remove='mutations': all inplace and out= operators will be "
                           "removed from the program, and replaced with their out-of-place equivalents.\n     "
                           "remove='mutations_and_views': In addition to the above, all aliasing operators "
                           "{view} will be replaced with their non-aliasing counterparts, {view}_copy.\n")
    return func


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """``module(*args, **kwargs)`` with the tensors of ``parameter_and_buffer_dicts`` (one dict,
    or a sequence of dicts with disjoint keys) in place of the module's parameters and buffers,
    restored after the call (see ``shardflow.nn.utils.stateless``)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        values = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        keys = [k for d in parameter_and_buffer_dicts for k in d]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        values = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    return _functional_call(module, values, args, kwargs, tie_weights=tie_weights, strict=strict)
