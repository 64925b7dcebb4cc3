"""The main job with ``--device cuda`` on CuPy's host stand-in: ``shardflow train gpt`` builds
the model and batches on the "device", trains, evaluates and samples, and its losses track
the CPU run (tests/gpu/test_train_cuda.py runs the same check on a GPU)."""

from ..gpu.test_train_cuda import check_train_gpt_tracks_cpu


def test_train_gpt_on_host_cuda_tracks_cpu(tmp_path):
    check_train_gpt_tracks_cpu(tmp_path, steps=4, corpus_bytes=20000,
                               model_args=("--n-layer", "2", "--n-embd", "32", "--n-head", "2",
                                           "--block-size", "32", "--batch-size", "4"))


def test_bad_pipeline_config_on_cuda_is_refused_with_the_fix(tmp_path, capsys):
    # --pp runs on cuda (tests/host_cuda/test_pipeline_host_cuda.py); a layout parallelize
    # refuses is still refused before anything is built, naming the flags and the fix
    from shardflow.cli.train import main

    out = tmp_path / "x"
    assert main(["gpt", "--device", "cuda", "--pp", "3", "--n-layer", "4", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "pp=3 does not divide the model's 4 layers" in err and "--pp 3 " in err, err
    assert "not wired on the GPU" not in err and not out.exists()
