"""The main job with ``--device cuda`` on CuPy's host stand-in: ``shardflow train gpt`` builds
the model and batches on the "device", trains, evaluates and samples, and its losses track
the CPU run (tests/gpu/test_train_cuda.py runs the same check on a GPU)."""

from ..gpu.test_train_cuda import check_train_gpt_tracks_cpu


def test_train_gpt_on_host_cuda_tracks_cpu(tmp_path):
    check_train_gpt_tracks_cpu(tmp_path, steps=4, corpus_bytes=20000,
                               model_args=("--n-layer", "2", "--n-embd", "32", "--n-head", "2",
                                           "--block-size", "32", "--batch-size", "4"))


def test_pipeline_on_cuda_is_refused_with_the_fix(capsys):
    from shardflow.cli.train import main

    assert main(["gpt", "--device", "cuda", "--pp", "3", "--batch-size", "36", "--max-steps", "1"]) == 2
    assert "pipeline parallelism is not wired on the GPU yet; drop --pp" in capsys.readouterr().err
