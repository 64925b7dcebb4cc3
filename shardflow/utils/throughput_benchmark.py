"""``torch.utils.throughput_benchmark``: ``ThroughputBenchmark(module)`` runs a module under an
inference-server-like load (``add_input`` a pool of inputs, ``benchmark(num_calling_threads,
num_warmup_iters, num_iters, profiler_output_path)``) and returns ``ExecutionStats``
(``latency_avg_ms``, ``num_iters``, ``iters_per_second``, ``total_time_seconds``, torch's
``str``); ``format_time`` as torch's.

As torch's: every calling thread runs ``num_warmup_iters`` calls first, then the threads share
``num_iters`` calls, each on an input drawn at random from the pool (under ``no_grad``: it is
an inference benchmark); the average latency is over all measured calls, and the totals follow
torch's formulas from it. With ``profiler_output_path`` the measured phase runs under
``shardflow.profiler.profile`` and its Chrome trace is written there. Deviation: torch's C++
threads run TorchScript modules without the GIL; here the threads are Python threads, so a
module's Python code runs one thread at a time (NumPy's kernels release the GIL, as
``nn.Module`` calls in torch's benchmark hold it).
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass

from ..autograd.grad_mode import no_grad

__all__ = ["format_time", "ExecutionStats", "ThroughputBenchmark"]


def format_time(time_us=None, time_ms=None, time_s=None) -> str:
    """A duration in the largest unit of s / ms / us that keeps it at least 1 (3 decimals)."""
    if sum([time_us is not None, time_ms is not None, time_s is not None]) != 1:
        raise AssertionError("Expected only one of time_us, time_ms, time_s is given.")
    if time_us is None:
        time_us = time_ms * 1e3 if time_ms is not None else time_s * 1e6
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


@dataclass
class _Config:
    num_calling_threads: int = 1
    num_warmup_iters: int = 10
    num_iters: int = 100
    profiler_output_path: str = ""


class ExecutionStats:
    """The result of ``ThroughputBenchmark.benchmark`` (torch's fields and text)."""

    def __init__(self, latency_avg_ms: float, num_iters: int, benchmark_config) -> None:
        self._latency_avg_ms = latency_avg_ms
        self._num_iters = num_iters
        self.benchmark_config = benchmark_config

    @property
    def latency_avg_ms(self) -> float:
        return self._latency_avg_ms

    @property
    def num_iters(self) -> int:
        return self._num_iters

    @property
    def iters_per_second(self) -> float:
        """Iterations per second across all calling threads."""
        return self.num_iters / self.total_time_seconds

    @property
    def total_time_seconds(self) -> float:
        return self.num_iters * (self.latency_avg_ms / 1000.0) / self.benchmark_config.num_calling_threads

    def __str__(self) -> str:
        return "\n".join([
            "Average latency per example: " + format_time(time_ms=self.latency_avg_ms),
            f"Total number of iterations: {self.num_iters}",
            f"Total number of iterations per second (across all threads): {self.iters_per_second:.2f}",
            "Total time: " + format_time(time_s=self.total_time_seconds),
        ])


class ThroughputBenchmark:
    """Benchmark ``module``'s calls on a pool of inputs (see the module docstring)."""

    def __init__(self, module) -> None:
        self._module = module
        self._inputs: list = []

    def run_once(self, *args, **kwargs):
        """One call of the module (to check the benchmark runs what it should)."""
        with no_grad():
            return self._module(*args, **kwargs)

    def add_input(self, *args, **kwargs) -> None:
        """Add one call's arguments to the pool the threads draw from."""
        self._inputs.append((args, kwargs))

    def benchmark(self, num_calling_threads=1, num_warmup_iters=10, num_iters=100, profiler_output_path=""):
        """Run the benchmark; returns ``ExecutionStats``."""
        if not self._inputs:
            raise RuntimeError("ThroughputBenchmark.benchmark: no inputs: call add_input(...) first")
        config = _Config(int(num_calling_threads), int(num_warmup_iters), int(num_iters), profiler_output_path)
        if config.num_calling_threads < 1:
            raise ValueError(f"num_calling_threads must be at least 1, got {config.num_calling_threads}")
        lock = threading.Lock()
        counter = [0]
        latencies: list[float] = []
        warmed = threading.Barrier(config.num_calling_threads + 1)
        start = threading.Event()
        errors: list[BaseException] = []

        def worker(seed):
            rng = random.Random(seed)
            try:
                with no_grad():
                    for _ in range(config.num_warmup_iters):
                        args, kwargs = rng.choice(self._inputs)
                        self._module(*args, **kwargs)
                    warmed.wait()
                    start.wait()
                    while True:
                        with lock:
                            if counter[0] >= config.num_iters:
                                return
                            counter[0] += 1
                        args, kwargs = rng.choice(self._inputs)
                        t0 = time.perf_counter()
                        self._module(*args, **kwargs)
                        elapsed = time.perf_counter() - t0
                        with lock:
                            latencies.append(elapsed)
            except BaseException as e:  # re-raised in the caller's thread
                errors.append(e)
                warmed.abort()

        threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(config.num_calling_threads)]
        for t in threads:
            t.start()
        try:
            warmed.wait()
        except threading.BrokenBarrierError:
            pass
        if not errors:
            self._measure(start, threads, config)
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        latency_ms = 1000.0 * sum(latencies) / max(len(latencies), 1)
        return ExecutionStats(latency_ms, len(latencies), config)

    @staticmethod
    def _measure(start, threads, config) -> None:
        if not config.profiler_output_path:
            start.set()
            for t in threads:
                t.join()
            return
        from ..profiler import profile

        with profile() as prof:
            start.set()
            for t in threads:
                t.join()
        prof.export_chrome_trace(config.profiler_output_path)
