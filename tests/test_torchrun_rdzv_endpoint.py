"""torchrun's ``--rdzv-endpoint host:port`` with the static rendezvous (its default backend)
becomes the job's ``MASTER_ADDR`` / ``MASTER_PORT`` (pytorch/examples' distributed/ddp
run_example.sh prints them: torch's ranks see ``localhost`` / ``5972``); shardflow's
``distributed.run`` ignored the endpoint (``127.0.0.1`` / ``29500``). The whole launch against
torchrun: tests/parity/test_public_programs_more_i.py."""

import pytest

from shardflow.distributed import run

torch = pytest.importorskip("torch")
from torch.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint  # noqa: E402
from torch.distributed.run import config_from_args, get_args_parser  # noqa: E402

ARGV = ["--nnodes=1", "--nproc_per_node=2", "--rdzv_id=101", "--rdzv_endpoint=localhost:5972",
        "example.py"]


def test_static_endpoint_is_the_master_address():
    config, _, _ = config_from_args(get_args_parser().parse_args(ARGV))
    assert config.rdzv_backend == "static" and config.rdzv_endpoint == "localhost:5972"
    host, port = parse_rendezvous_endpoint("localhost:5972", -1)
    _, env = run.shardflow_run_argv(ARGV)
    assert env == {"MASTER_ADDR": host, "MASTER_PORT": str(port)}
    # the endpoint wins over --master-addr/--master-port, as torch's static rendezvous takes it
    _, env = run.shardflow_run_argv(["--master_addr=h", "--master_port=1", *ARGV])
    assert env == {"MASTER_ADDR": "localhost", "MASTER_PORT": "5972"}
    # other backends and --standalone keep their own rendezvous: the endpoint is not the master
    assert run.shardflow_run_argv(["--rdzv-backend=c10d", *ARGV])[1] == {}
    assert run.shardflow_run_argv(["--standalone", *ARGV])[1] == {}


def test_static_endpoint_without_a_port_is_refused():
    import inspect

    from torch.distributed.elastic.rendezvous import static_tcp_rendezvous

    assert parse_rendezvous_endpoint("localhost", -1) == ("localhost", -1)
    assert "Port is absent in endpoint" in inspect.getsource(static_tcp_rendezvous)  # torch refuses it
    with pytest.raises(ValueError, match="the static rendezvous needs host:port"):
        run.shardflow_run_argv(["--rdzv_endpoint=localhost", "example.py"])
