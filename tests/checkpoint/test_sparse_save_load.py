"""``torch.save`` of a sparse COO tensor (GNN programs cache adjacency matrices) round-trips,
and the file is torch's: torch reads shardflow's and shardflow torch's (it raised "can't
convert a sparse tensor to numpy")."""
import io

import numpy as np
import torch

import shardflow as sf

IDX, VALS, SIZE = [[0, 1, 1, 2], [2, 0, 2, 1]], [3.0, 4.0, 5.0, 6.0], (3, 3)


def test_sparse_round_trip_and_torch_reads_it(tmp_path):
    path = tmp_path / "adj.pt"
    sf.save({"adj": sf.sparse_coo_tensor(sf.tensor(IDX), sf.tensor(VALS), SIZE), "n": 3}, path)
    got = sf.load(path)
    want = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VALS), SIZE).to_dense().numpy()
    assert got["adj"].is_sparse and got["n"] == 3
    np.testing.assert_array_equal(got["adj"].to_dense().numpy(), want)
    np.testing.assert_array_equal(torch.load(path)["adj"].to_dense().numpy(), want)


def test_torch_sparse_file_loads_coalesced():
    buf = io.BytesIO()
    torch.save(torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VALS), SIZE).coalesce(), buf)
    buf.seek(0)
    got = sf.load(buf)
    assert got.is_sparse and got.is_coalesced()
    assert got.indices().tolist() == [[0, 1, 1, 2], [2, 0, 2, 1]] and got.values().tolist() == VALS
