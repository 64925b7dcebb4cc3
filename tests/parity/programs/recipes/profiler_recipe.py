# ruff: noqa  (the recipe as published, its own style kept)
# pytorch/tutorials recipes_source/recipes/profiler_recipe.py (BSD-3-Clause), stored commit
# 13be508. Changed: the prose and the sample outputs are cut to the section titles;
# torchvision.models is the parity tests' ResNet-18 stand-in (torchvision's layout at 1/8 of
# the widths, recipes/_resnet_standin.py); the inputs are 2x3x32x32 instead of 5x3x224x224;
# where no CUDA/XPU device is found the recipe prints its message and calls sys.exit(0),
# which ends it on a CPU machine before the memory, trace, stack and schedule sections:
# here it prints the message and goes on with device = 'cpu' (ProfilerActivity.CPU only);
# the schedule's trace files go to "trace_<step>.json" in the working directory instead of
# "/tmp/trace_<step>.json". Nothing else; it runs as a script.
"""
PyTorch Profiler
====================================
"""

######################################################################
# 1. Import all necessary libraries

import torch
import torchvision.models as models
from torch.profiler import profile, record_function, ProfilerActivity


######################################################################
# 2. Instantiate a simple Resnet model

model = models.resnet18()
inputs = torch.randn(2, 3, 32, 32)

######################################################################
# 3. Using profiler to analyze execution time

with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    with record_function("model_inference"):
        model(inputs)

print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))

print(prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total", row_limit=10))

######################################################################
# Profiler can also be used to analyze performance of models executed on GPUs:
# Users could switch between cpu, cuda and xpu
activities = [ProfilerActivity.CPU]
if torch.cuda.is_available():
    device = 'cuda'
    activities += [ProfilerActivity.CUDA]
elif torch.xpu.is_available():
    device = 'xpu'
    activities += [ProfilerActivity.XPU]
else:
    print('Neither CUDA nor XPU devices are available to demonstrate profiling on acceleration devices')
    device = 'cpu'  # (the recipe: import sys; sys.exit(0))

sort_by_keyword = device + "_time_total"

model = models.resnet18().to(device)
inputs = torch.randn(2, 3, 32, 32).to(device)

with profile(activities=activities, record_shapes=True) as prof:
    with record_function("model_inference"):
        model(inputs)

print(prof.key_averages().table(sort_by=sort_by_keyword, row_limit=10))

######################################################################
# 4. Using profiler to analyze memory consumption

model = models.resnet18()
inputs = torch.randn(2, 3, 32, 32)

with profile(activities=[ProfilerActivity.CPU],
        profile_memory=True, record_shapes=True) as prof:
    model(inputs)

print(prof.key_averages().table(sort_by="self_cpu_memory_usage", row_limit=10))

print(prof.key_averages().table(sort_by="cpu_memory_usage", row_limit=10))

######################################################################
# 5. Using tracing functionality

model = models.resnet18().to(device)
inputs = torch.randn(2, 3, 32, 32).to(device)

with profile(activities=activities) as prof:
    model(inputs)

prof.export_chrome_trace("trace.json")

######################################################################
# 6. Examining stack traces
sort_by_keyword = "self_" + device + "_time_total"

with profile(
    activities=activities,
    with_stack=True,
) as prof:
    model(inputs)

# Print aggregated stats
print(prof.key_averages(group_by_stack_n=5).table(sort_by=sort_by_keyword, row_limit=2))

######################################################################
# 7. Using profiler to analyze long-running jobs

from torch.profiler import schedule

my_schedule = schedule(
    skip_first=10,
    wait=5,
    warmup=1,
    active=3,
    repeat=2)

sort_by_keyword = "self_" + device + "_time_total"

def trace_handler(p):
    output = p.key_averages().table(sort_by=sort_by_keyword, row_limit=10)
    print(output)
    p.export_chrome_trace("trace_" + str(p.step_num) + ".json")

with profile(
    activities=activities,
    schedule=torch.profiler.schedule(
        wait=1,
        warmup=1,
        active=2),
    on_trace_ready=trace_handler
) as p:
    for idx in range(8):
        model(inputs)
        p.step()

######################################################################
# Memory Timeline Visualization
with profile(activities=[ProfilerActivity.CPU],
        profile_memory=True, record_shapes=True, with_stack=True) as prof:
    model(inputs)

# Add the memory timeline export right after:
prof.export_memory_timeline("memory_timeline.html")
