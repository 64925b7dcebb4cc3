"""``torch.utils.collect_env``: the environment report bug templates ask for (``python -m
torch.utils.collect_env``; ``get_pretty_env_info()`` in programs that log their setup), in
torch's layout and field names (``SystemEnv``), describing shardflow's environment.

What is reported: the shardflow version (torch's "PyTorch version" line, since programs parse
it), the compilers, OS, libc and Python found the way torch finds them (``gcc --version``,
``lsb_release`` / ``/etc/os-release``, ``platform``), whether CUDA is available to shardflow
(CuPy and a device) with CuPy's CUDA runtime version and ``nvidia-smi``'s GPUs and driver,
``lscpu``'s CPU description, and the ``pip list`` lines of the packages that matter (torch's
patterns plus shardflow's own dependencies: ``shardflow``, ``cupy``, ``mpi4py``,
``ml_dtypes``, ``safetensors``). Fields that do not apply are torch's words: cuDNN, ROCm,
MIOpen, XPU and XNNPACK are never used by shardflow ("No CUDA" / "N/A" / False).
"""

from __future__ import annotations

import platform
import re
import subprocess
import sys
from collections import namedtuple

__all__ = ["SystemEnv", "get_env_info", "get_pretty_env_info", "main", "run", "env_info_fmt"]

SystemEnv = namedtuple("SystemEnv", [
    "torch_version", "is_debug_build", "cuda_compiled_version", "gcc_version", "clang_version", "cmake_version",
    "os", "libc_version", "python_version", "python_platform", "is_cuda_available", "cuda_runtime_version",
    "cuda_module_loading", "nvidia_driver_version", "nvidia_gpu_models", "cudnn_version", "is_xpu_available",
    "pip_version", "pip_packages", "conda_packages", "hip_compiled_version", "hip_runtime_version",
    "miopen_runtime_version", "caching_allocator_config", "is_xnnpack_available", "cpu_info"])

PIP_PATTERNS = ["mypy", "flake8", "onnx"]
COMMON_PATTERNS = ["torch", "numpy", "triton", "optree", "shardflow", "cupy", "mpi4py", "ml_dtypes", "safetensors"]

env_info_fmt = """
PyTorch version: {torch_version}
Is debug build: {is_debug_build}
CUDA used to build PyTorch: {cuda_compiled_version}
ROCM used to build PyTorch: {hip_compiled_version}

OS: {os}
GCC version: {gcc_version}
Clang version: {clang_version}
CMake version: {cmake_version}
Libc version: {libc_version}

Python version: {python_version}
Python platform: {python_platform}
Is CUDA available: {is_cuda_available}
CUDA runtime version: {cuda_runtime_version}
CUDA_MODULE_LOADING set to: {cuda_module_loading}
GPU models and configuration: {nvidia_gpu_models}
Nvidia driver version: {nvidia_driver_version}
cuDNN version: {cudnn_version}
Is XPU available: {is_xpu_available}
HIP runtime version: {hip_runtime_version}
MIOpen runtime version: {miopen_runtime_version}
Is XNNPACK available: {is_xnnpack_available}
Caching allocator config: {caching_allocator_config}

CPU:
{cpu_info}

Versions of relevant libraries:
{pip_packages}
{conda_packages}
""".strip()


def run(command):
    """``(return code, stdout, stderr)`` of ``command`` (a list, or a string run by the shell);
    return code 127 when the program does not exist."""
    try:
        p = subprocess.run(command, capture_output=True, shell=isinstance(command, str), timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return 127, "", str(e)
    return p.returncode, p.stdout.decode(errors="replace").strip(), p.stderr.decode(errors="replace").strip()


def _first_match(command, pattern):
    rc, out, _ = run(command)
    if rc != 0:
        return None
    match = re.search(pattern, out)
    return match.group(1) if match else None


def _all(command):
    rc, out, _ = run(command)
    return out if rc == 0 else None


def _os() -> str | None:
    machine = platform.machine()
    if sys.platform.startswith("linux"):
        desc = _first_match(["lsb_release", "-a"], r"Description:\t(.*)")
        if desc is None:
            try:
                with open("/etc/os-release") as f:
                    desc = re.search(r'PRETTY_NAME="(.*)"', f.read()).group(1)
            except (OSError, AttributeError):
                desc = None
        return f"{desc} ({machine})" if desc else f"{platform.system()} ({machine})"
    if sys.platform == "darwin":
        return f"macOS {platform.mac_ver()[0]} ({machine})"
    return f"{platform.system()} {platform.release()} ({machine})"


def _cuda():
    """(available, CuPy's CUDA runtime version, the CUDA shardflow was built with: None, as
    shardflow is pure Python) for shardflow."""
    from ..backend.xp import cuda_is_available

    if not cuda_is_available():
        return False, None, None
    import cupy

    def version(v):
        return f"{v // 1000}.{(v % 1000) // 10}"

    return True, version(cupy.cuda.runtime.runtimeGetVersion()), None  # CuPy's build version: not asked


def _pip_packages():
    out = _all([sys.executable, "-mpip", "list", "--format=freeze", "--disable-pip-version-check"])
    if out is None:
        return "pip3", None
    patterns = PIP_PATTERNS + COMMON_PATTERNS
    return "pip3", "\n".join(line for line in out.splitlines() if any(name in line for name in patterns))


def get_env_info() -> SystemEnv:
    """The environment, as torch's ``SystemEnv`` (see the module docstring)."""
    from .. import __version__
    from .._config import env

    cuda, runtime, compiled = _cuda()
    gpus = _all(["nvidia-smi", "-L"]) if cuda else None
    driver = _first_match(["nvidia-smi"], r"Driver Version: (.*?) ") if cuda else None
    pip_version, pip_list = _pip_packages()
    cpu_info = _all(["lscpu"]) if sys.platform.startswith("linux") else platform.processor() or None
    return SystemEnv(
        torch_version=str(__version__), is_debug_build=False, cuda_compiled_version=compiled,
        gcc_version=_first_match(["gcc", "--version"], r"gcc (.*)"),
        clang_version=_first_match(["clang", "--version"], r"clang version (.*)"),
        cmake_version=_first_match(["cmake", "--version"], r"cmake (.*)"),
        os=_os(), libc_version="-".join(platform.libc_ver()) or None,
        python_version=f"{sys.version.replace(chr(10), ' ')} ({sys.maxsize.bit_length() + 1}-bit runtime)",
        python_platform=platform.platform(), is_cuda_available=cuda, cuda_runtime_version=runtime,
        cuda_module_loading=(env("CUDA_MODULE_LOADING") or "LAZY") if cuda else "N/A",
        nvidia_driver_version=driver, nvidia_gpu_models=gpus, cudnn_version=None, is_xpu_available=False,
        pip_version=pip_version, pip_packages=pip_list, conda_packages=_all("conda list 2>/dev/null | grep -E "
                                                                              "'torch|numpy|cupy|mpi4py'"),
        hip_compiled_version="N/A", hip_runtime_version="N/A", miopen_runtime_version="N/A",
        caching_allocator_config="", is_xnnpack_available=False, cpu_info=cpu_info)


def pretty_str(envinfo: SystemEnv) -> str:
    """torch's text for ``envinfo``: missing values "Could not collect", CUDA fields "No CUDA"
    without a device, package lines prefixed with ``[pip3]`` / ``[conda]``."""
    d = envinfo._asdict()
    if d["nvidia_gpu_models"] and "\n" in d["nvidia_gpu_models"]:
        d["nvidia_gpu_models"] = f"\n{d['nvidia_gpu_models']}\n"
    if not envinfo.is_cuda_available and all(d[k] is None for k in ("cuda_runtime_version", "nvidia_gpu_models",
                                                                     "nvidia_driver_version")):
        for k in ("cuda_runtime_version", "nvidia_gpu_models", "nvidia_driver_version", "cudnn_version"):
            d[k] = "No CUDA"
        if envinfo.cuda_compiled_version is None:
            d["cuda_compiled_version"] = "None"
    d = {k: ("Could not collect" if v is None else v) for k, v in d.items()}
    for key, tag in (("pip_packages", f"[{envinfo.pip_version}] "), ("conda_packages", "[conda] ")):
        text = "No relevant packages" if d[key] == "" else d[key]
        d[key] = "\n".join(tag + line for line in text.split("\n"))
    d["cpu_info"] = envinfo.cpu_info
    d["caching_allocator_config"] = envinfo.caching_allocator_config or "N/A"
    return env_info_fmt.format(**d)


def get_pretty_env_info() -> str:
    """The report as text (what ``python -m torch.utils.collect_env`` prints)."""
    return pretty_str(get_env_info())


def main() -> None:
    print("Collecting environment information...")
    print(get_pretty_env_info())


if __name__ == "__main__":
    main()
