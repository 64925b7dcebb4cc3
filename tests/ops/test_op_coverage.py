"""Every public op has a spec.

A public op is a function exported by ``shardflow.ops`` (what ``shardflow.<name>`` re-exports);
aliases (``greater`` / ``gt``) share one function and count once. An op *has a spec* when
some spec's function calls it at top level (directly, as a Tensor method, an operator or
through ``nn.functional``) — recorded by running every spec once with each public op
wrapped in a counter. The few ops whose results are random or undefined cannot be compared
with PyTorch value by value; they are on ``CHECKED_ELSEWHERE`` with the test that checks
them (statistics, shapes, dtypes, seeding), and that list is itself checked: every entry is
a public op without a spec, and its test exists and calls it.

Also here: the blocked-kernel specs really do span several blocks with a ragged last one.
"""

import importlib
import inspect
import re
import types

import pytest

import shardflow
import shardflow.ops as ops
from shardflow.autograd import dispatch
from shardflow.ops.blocked import block_slices

from .specs import blocked as blocked_specs
from .test_op_reference import SPECS, _to

_RANDOM_OPS = "tests/ops/test_random_ops.py"
_COMPAT = "tests/ops/test_compat_ops.py"

# op -> "file::test" that checks it instead of a spec (random or undefined values)
CHECKED_ELSEWHERE = {
    "rand": f"{_RANDOM_OPS}::test_uniform_and_normal_factories",
    "rand_like": f"{_RANDOM_OPS}::test_uniform_and_normal_factories",
    "randn": f"{_RANDOM_OPS}::test_uniform_and_normal_factories",
    "randn_like": f"{_RANDOM_OPS}::test_uniform_and_normal_factories",
    "normal": f"{_RANDOM_OPS}::test_normal_broadcasts_mean_and_std",
    "randint": f"{_RANDOM_OPS}::test_integer_factories",
    "randint_like": f"{_RANDOM_OPS}::test_integer_factories",
    "randperm": f"{_RANDOM_OPS}::test_integer_factories",
    "bernoulli": f"{_RANDOM_OPS}::test_bernoulli_frequencies",
    "empty": f"{_RANDOM_OPS}::test_empty_shapes_and_dtypes",
    "empty_like": f"{_RANDOM_OPS}::test_empty_shapes_and_dtypes",
    "multinomial": "tests/ops/test_reduce_sort_matmul_misc.py::test_multinomial_with_replacement_frequencies",
    "dropout": "tests/ops/test_nn_ops_misc.py::test_dropout_statistics_and_backward_mask",
    "dropout1d": f"{_RANDOM_OPS}::test_channel_dropouts_drop_whole_channels",
    "dropout2d": "tests/ops/test_nn_ops_misc.py::test_dropout2d_zeroes_whole_channels",
    "dropout3d": f"{_RANDOM_OPS}::test_channel_dropouts_drop_whole_channels",
    "alpha_dropout": "tests/ops/test_nn_ops_misc.py::test_alpha_dropout_keeps_mean_and_variance",
    "feature_alpha_dropout": f"{_RANDOM_OPS}::test_feature_alpha_dropout_keeps_mean_and_variance",
    "poisson": "tests/distributions/test_random_draw_ops.py::test_poisson_and_binomial_match_torch_in_shape_dtype_and_graph",
    "binomial": "tests/distributions/test_random_draw_ops.py::test_poisson_and_binomial_match_torch_in_shape_dtype_and_graph",
    # torch 2.13 has no sparse kernel for these two (values checked on shardflow's COO tensors)
    "indices_copy": "tests/ops/test_view_copies.py::test_detach_copy_and_complex_and_sparse_parts",
    "values_copy": "tests/ops/test_view_copies.py::test_detach_copy_and_complex_and_sparse_parts",
    # removed in torch 1.9: they only raise torch's message
    **dict.fromkeys(("matrix_rank", "solve", "lstsq", "eig", "symeig"),
                    "tests/ops/test_removed_functions.py::test_functions_and_methods_raise_torchs_text"),
    # the compat-ops pass (tests/ops/test_compat_ops.py)
    "dropout_": f"{_COMPAT}::test_in_place_dropouts_write_into_the_input",
    "alpha_dropout_": f"{_COMPAT}::test_in_place_dropouts_write_into_the_input",
    "feature_alpha_dropout_": f"{_COMPAT}::test_in_place_dropouts_write_into_the_input",
    "feature_dropout": f"{_COMPAT}::test_in_place_dropouts_write_into_the_input",
    "feature_dropout_": f"{_COMPAT}::test_in_place_dropouts_write_into_the_input",
    "empty_permuted": f"{_COMPAT}::test_empty_permuted_and_new_empty_strided_have_torch_strides_and_shapes",
    "from_file": "tests/ops/test_storage.py::test_from_file_matches_torch",  # reads a file
    # integer index copies and the refusing blocked-layout constructors (sparse_compressed.py)
    **dict.fromkeys(("crow_indices_copy", "col_indices_copy", "ccol_indices_copy", "row_indices_copy"),
                    "tests/compat/test_names_s35_sparse_csr.py::test_csr_constructor_getters_layout_and_repr_match_torch"),
    **dict.fromkeys(("sparse_bsr_tensor", "sparse_bsc_tensor"),
                    "tests/compat/test_names_s35_sparse_csr.py::test_errors_match_torch"),
}


def _public_ops() -> dict:
    """{implementation function: [exported names]} for every function ``shardflow.ops`` exports."""
    found: dict = {}
    for name in dir(ops):
        f = getattr(ops, name)
        if name.startswith("_") or isinstance(f, types.ModuleType | type) or not callable(f):
            continue
        found.setdefault(getattr(f, "__wrapped__", f), []).append(name)
    return found


def _spec_coverage(public: dict) -> set:
    """The implementations some spec calls at top level."""
    covered, depth = set(), [0]

    def recording(impl, f):
        def wrapper(*args, **kwargs):
            if depth[0] == 0:
                covered.add(impl)
            depth[0] += 1
            try:
                return f(*args, **kwargs)
            finally:
                depth[0] -= 1

        return wrapper

    with pytest.MonkeyPatch.context() as mp:
        for impl, names in public.items():
            for name in names:
                mp.setattr(ops, name, recording(impl, getattr(ops, name)))
                if getattr(shardflow, name, None) is not None:
                    mp.setattr(shardflow, name, recording(impl, getattr(shardflow, name)))
        for key, f in list(dispatch.OPS.items()):
            impl = getattr(f, "__wrapped__", f)
            if impl in public:
                mp.setitem(dispatch.OPS, key, recording(impl, f))
        # ops reached as Tensor methods that tensor.py does not spell out (``x.exp()``):
        # the routed functions set on the class by ``dispatch.set_method_owner``
        for key in dispatch.method_names():
            f = getattr(shardflow.Tensor, key)
            impl = getattr(f, "__wrapped__", f)
            if impl in public:
                mp.setattr(shardflow.Tensor, key, recording(impl, f))
        # and the operators that call an op's two-argument form (``x * y``: Tensor.__mul__)
        for key, name in dispatch.operator_methods().items():
            impl = dispatch.plain(name)
            if impl in public:
                mp.setattr(shardflow.Tensor, key, recording(impl, getattr(shardflow.Tensor, key)))
        for spec in SPECS:
            depth[0] = 0
            spec.fn(shardflow, *_to(shardflow, spec.make_inputs(), spec))
    return covered


@pytest.fixture(scope="module")
def coverage():
    public = _public_ops()
    return public, _spec_coverage(public)


def _names(public, impls):
    return sorted(public[i][0] if len(public[i]) == 1 else "/".join(sorted(public[i])) for i in impls)


def test_every_public_op_has_a_spec(coverage):
    public, covered = coverage
    allowed = set(CHECKED_ELSEWHERE)
    missing = [i for i in public if i not in covered and not allowed & set(public[i])]
    assert not missing, (
        f"public ops without a spec in tests/ops/specs: {_names(public, missing)}; add an OpSpec that "
        "calls each (or, for random ops, a test and an entry in CHECKED_ELSEWHERE)"
    )


def test_checked_elsewhere_list_is_honest(coverage):
    public, covered = coverage
    by_name = {n: i for i, names in public.items() for n in names}
    for op, where in CHECKED_ELSEWHERE.items():
        assert op in by_name, f"CHECKED_ELSEWHERE names {op!r}, which is not a public op"
        assert by_name[op] not in covered, f"{op!r} has a spec now: remove it from CHECKED_ELSEWHERE"
        path, test_name = where.split("::")
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        test = getattr(module, test_name, None)
        assert test is not None, f"{where} (named for {op!r}) does not exist"
        assert re.search(rf"\b{op}\b", inspect.getsource(test)), f"{where} does not call {op!r}"


@pytest.mark.parametrize("shape,item", [
    (blocked_specs.GELU_SHAPE, 1),  # flat elements
    ((blocked_specs.LN_SHAPE[0], 1), blocked_specs.LN_SHAPE[1]),  # rows of 64
    ((18, 1), 128 * 128),  # SDPA unmasked: heads of 128 x 128 scores
    ((18, 1), 64 * 64),  # SDPA causal, first row half
    ((18, 1), 64 * 128),  # SDPA causal, second row half
])
def test_blocked_specs_span_several_blocks_with_a_ragged_last(shape, item):
    n = shape[0] * shape[1] if item == 1 else shape[0]
    blocks = block_slices(n, item)
    sizes = [b.stop - b.start for b in blocks]
    assert len(blocks) >= 2 and sizes[-1] < sizes[0], sizes
    assert blocked_specs.SDPA_SHAPE[0] * blocked_specs.SDPA_SHAPE[1] == 18
