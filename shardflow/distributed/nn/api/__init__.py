"""``torch.distributed.nn.api``'s path (re-exports only)."""
