# ruff: noqa  (the recipe as published, its own style kept)
# pytorch/tutorials recipes_source/recipes/timer_quick_start.py (BSD-3-Clause), stored
# commit 1faab41. Changed: the prose is cut to the section titles; ``min_run_time=0.05``
# instead of 1; sections 3-6 (C++ snippets, ``collect_callgrind``: torch compiles its C++
# bindings and runs Valgrind, which shardflow does not have -- both refuse, see the test)
# are left out. Otherwise as published; it runs as a script.
"""
Timer quick start
=================
"""

# 1. Defining a Timer

from torch.utils.benchmark import Timer

timer = Timer(
    # The computation which will be run in a loop and timed.
    stmt="x * y",

    # `setup` will be run before calling the measurement loop, and is used to
    # populate any state which is needed by `stmt`
    setup="""
        x = torch.ones((128,))
        y = torch.ones((128,))
    """,

    # Alternatively, ``globals`` can be used to pass variables from the outer scope.
    # 
    #    globals={
    #        "x": torch.ones((128,)),
    #        "y": torch.ones((128,)),
    #    },

    # Control the number of threads that PyTorch uses. (Default: 1)
    num_threads=1,
)

# 2. Wall time: ``Timer.blocked_autorange(...)``

# Measurement objects store the results of multiple repeats, and provide
# various utility features.
from torch.utils.benchmark import Measurement

m: Measurement = timer.blocked_autorange(min_run_time=0.05)
print(m)
