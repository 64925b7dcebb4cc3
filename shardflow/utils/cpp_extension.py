"""``torch.utils.cpp_extension``: importable, with torch's names, so a program that keeps a C++
or CUDA extension as an optional fast path (``try: from torch.utils.cpp_extension import load
... except ...``) and a ``setup.py`` that names ``BuildExtension`` load; building one raises.

shardflow has no C++ extension ABI: there are no ``torch/extension.h`` headers, no ATen
``at::Tensor`` and no libtorch to link against, so ``load``, ``load_inline``,
``CppExtension``, ``CUDAExtension``, ``SyclExtension``, ``BuildExtension``,
``include_paths`` and ``library_paths`` raise NotImplementedError saying what to use instead:
an operator written in Python over NumPy/CuPy arrays (``torch.library.custom_op``, or a
``torch.autograd.Function``), a CUDA kernel compiled at run time with CuPy
(``cupy.RawKernel``, ``cupy.ElementwiseKernel``) on shardflow's CUDA arrays, or a compiled
NumPy kernel (numba, Cython) called from such an operator. ``CUDA_HOME``, ``ROCM_HOME`` and
``SYCL_HOME`` are None, what torch reports when it finds no toolkit, so programs take their
fallback path. ``is_ninja_available`` and ``verify_ninja_availability`` answer for this
machine, as torch's do.
"""

from __future__ import annotations

__all__ = ["get_default_build_root", "check_compiler_ok_for_platform", "get_compiler_abi_compatibility_and_version",
           "BuildExtension", "CppExtension", "CUDAExtension", "SyclExtension", "include_paths", "library_paths",
           "load", "load_inline", "is_ninja_available", "verify_ninja_availability",
           "remove_extension_h_precompiler_headers", "get_cxx_compiler", "check_compiler_is_gcc", "CUDA_HOME",
           "ROCM_HOME", "SYCL_HOME"]

CUDA_HOME = None  # no toolkit shardflow could build against (see the module docstring)
ROCM_HOME = None
SYCL_HOME = None

_INSTEAD = ("write the operator in Python over NumPy/CuPy arrays (torch.library.custom_op, or a "
            "torch.autograd.Function with forward/backward), compile a CUDA kernel at run time with CuPy "
            "(cupy.RawKernel / cupy.ElementwiseKernel on tensor.data of a CUDA tensor), or call a compiled "
            "NumPy kernel (numba, Cython) from such an operator")


def _refuse(what: str):
    raise NotImplementedError(f"torch.utils.cpp_extension.{what}: shardflow has no C++ extension ABI (no "
                              f"torch/extension.h, ATen or libtorch to build and link against), so C++/CUDA "
                              f"extensions cannot be built or loaded; instead, {_INSTEAD}")


def load(name, sources, *args, **kwargs):
    """Refused: shardflow builds no C++ extensions (see the module docstring)."""
    _refuse(f"load(name={name!r})")


def load_inline(name, cpp_sources, *args, **kwargs):
    """Refused: shardflow builds no C++ extensions (see the module docstring)."""
    _refuse(f"load_inline(name={name!r})")


def CppExtension(name, sources, *args, **kwargs):  # noqa: N802 - torch's name
    """Refused: an extension shardflow could not build (see the module docstring)."""
    _refuse(f"CppExtension(name={name!r})")


def CUDAExtension(name, sources, *args, **kwargs):  # noqa: N802 - torch's name
    """Refused: an extension shardflow could not build (see the module docstring)."""
    _refuse(f"CUDAExtension(name={name!r})")


def SyclExtension(name, sources, *args, **kwargs):  # noqa: N802 - torch's name
    """Refused: an extension shardflow could not build (see the module docstring)."""
    _refuse(f"SyclExtension(name={name!r})")


class BuildExtension:
    """torch's setuptools ``build_ext`` command; refused when setuptools makes it (or when
    ``with_options`` is called), as there is nothing it could build against."""

    def __init__(self, *args, **kwargs):
        _refuse("BuildExtension")

    @classmethod
    def with_options(cls, **options):
        _refuse("BuildExtension.with_options")


def include_paths(device_type: str = "cpu", torch_include_dirs: bool = True) -> list:
    """Refused: shardflow ships no C++ headers."""
    _refuse("include_paths()")


def library_paths(device_type: str = "cpu", torch_include_dirs: bool = True, cross_target_platform=None) -> list:
    """Refused: shardflow ships no C++ libraries."""
    _refuse("library_paths()")


def get_default_build_root() -> str:
    """Refused: there is no extension build directory (nothing is built)."""
    _refuse("get_default_build_root()")


def remove_extension_h_precompiler_headers() -> None:
    """Nothing to remove: shardflow never precompiles ``torch/extension.h``."""
    return None


def is_ninja_available() -> bool:
    """Whether the ``ninja`` build tool runs on this machine (torch's check: ``ninja --version``)."""
    import subprocess

    try:
        subprocess.check_output(["ninja", "--version"], stderr=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def verify_ninja_availability() -> None:
    """Raise torch's RuntimeError when ``ninja`` is missing."""
    if not is_ninja_available():
        raise RuntimeError("Ninja is required to load C++ extensions (pip install ninja)")


def get_cxx_compiler() -> str:
    """The C++ compiler torch would use: ``$CXX`` or ``c++``."""
    from .._config import env

    return env("CXX") or "c++"


def check_compiler_is_gcc(compiler) -> bool:
    """Whether ``compiler`` is GCC (its ``-v`` output names ``gcc version``), as torch's check."""
    import subprocess

    try:
        info = subprocess.check_output([compiler, "-v"], stderr=subprocess.STDOUT).decode(errors="replace")
    except (OSError, subprocess.SubprocessError):
        return False
    return "gcc version" in info and "clang" not in info


def check_compiler_ok_for_platform(compiler: str) -> bool:
    """Refused: shardflow builds nothing with the compiler."""
    _refuse("check_compiler_ok_for_platform()")


def get_compiler_abi_compatibility_and_version(compiler):
    """Refused: there is no libtorch ABI to be compatible with."""
    _refuse("get_compiler_abi_compatibility_and_version()")
