"""Global tensors: the op x sbp table of ``_global_cases`` on a mesh, against one process.

``argv[0]``: ``1d`` (all ranks in a row: 2 or 3, with uneven splits of 5 and 7 over 3) or
``2x2`` (4 ranks). Prints ``cases ran N refused M of K cases`` (the test wants N > 0 and the
same N on every rank)."""

import warnings

from shardflow.distributed import placement

from ._global_cases import cases


def main(argv):
    warnings.simplefilter("ignore")  # the fallback rules warn; what they compute is checked
    mesh = placement("cpu") if argv[0] == "1d" else placement("cpu", [[0, 1], [2, 3]])
    print("cases", cases(mesh), flush=True)
