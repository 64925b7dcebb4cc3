# PyTorch's examples/time_sequence_prediction/generate_sine_wave.py
# (github.com/pytorch/examples, BSD-3-Clause, as stored at commit 2b456e8): N sine waves of
# length L with random phase, saved to traindata.pt with torch.save. Changed: the sizes
# (L = 1000, N = 100 became L = 40, N = 6: 3 test and 3 training waves).
import numpy as np
import torch

np.random.seed(2)

T = 20
L = 40
N = 6

x = np.empty((N, L), "int64")
x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
data = np.sin(x / 1.0 / T).astype("float64")
torch.save(data, open("traindata.pt", "wb"))
