# PyTorch's examples/distributed/tensor_parallelism/log_utils.py (github.com/pytorch/examples
# at 836f798, BSD-3-Clause), as written: logging's basicConfig, get_logger, rank_log.
import logging

logging.basicConfig(
    format="%(asctime)s %(message)s", datefmt="%m/%d/%Y %I:%M:%S %p", level=logging.INFO
)

def get_logger():
    return logging.getLogger(__name__)


def rank_log(_rank, logger, msg):
    """helper function to log only on global rank 0"""
    if _rank == 0:
        logger.info(f" {msg}")
