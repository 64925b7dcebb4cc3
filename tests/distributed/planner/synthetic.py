"""Hand-made step traces for the planner's tests: a stack of Linear layers whose costs can be
computed by hand (no model is run)."""

from __future__ import annotations

from dataclasses import dataclass

from shardflow.distributed.planner.trace import OpRecord, ParamRecord, StepTrace


@dataclass
class LinearStack:
    """``layers`` Linear(C, C) layers (no bias) on ``rows`` rows per sample; each layer's
    input needs grad (so every backward has dX and dW); ``retained`` bytes kept per layer
    per sample. ``pair=True`` makes each layer a column-parallel Linear(C, 2C) followed by a
    row-parallel Linear(2C, C) (Megatron's MLP), under ``tp_plan()``."""

    layers: int = 4
    C: int = 64
    rows: int = 8
    retained: float = 0.0
    pair: bool = False

    def at(self, batch: int = 1, **_dims) -> StepTrace:
        M = batch * self.rows
        ops, params, serial = [], [], 0
        for i in range(self.layers):
            mods = [(f"h.{i}.fc", self.C, 2 * self.C), (f"h.{i}.proj", 2 * self.C, self.C)] if self.pair \
                else [(f"h.{i}.fc", self.C, self.C)]
            for mod, k, n in mods:
                ops.append(OpRecord(name="linear", in_shapes=[(M, k), (n, k)], out_shapes=[(M, n)], itemsize=4,
                                    module=mod, layer=i, params={1: f"{mod}.weight"}, needs_grad=True,
                                    inputs_grad=[True, True], batch_dep=True, dp_reduce=[1],
                                    retained=self.retained * batch, in_ids=[serial], out_ids=[serial + 1]))
                serial += 1
                params.append(ParamRecord(f"{mod}.weight", (n, k), i, mod))
        return StepTrace(ops=ops, params=params, n_layers=self.layers, stack_path="h",
                         forward_retained=sum(o.retained for o in ops), backward_extra=0.0,
                         grad_bytes=sum(4 * p.shape[0] * p.shape[1] for p in params), batch=batch)

    def n_params(self) -> int:
        return sum(p.shape[0] * p.shape[1] for p in self.at().params)

    @staticmethod
    def tp_plan() -> dict:
        from shardflow.distributed.tensor_parallel import ColwiseParallel, RowwiseParallel

        return {"h.*.fc": ColwiseParallel(), "h.*.proj": RowwiseParallel()}
