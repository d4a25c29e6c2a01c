"""A mixture-of-experts router step, as one callable an `op:` bench can name.

tokens x hidden @ hidden x experts, a softmax over the experts, the top `k` of them:
the gate of a MoE layer. `benches/ops-moe-router.yaml` times it; its check compares the
weights with this same function on float64 inputs (the chosen experts may differ on near
ties).
"""

from __future__ import annotations

from typing import Any


def router_step(hidden: Any, gate: Any, k: int) -> tuple[Any, Any]:
    """(weights, experts): each token's `k` largest routing probabilities and their
    expert indices."""
    import torch  # the bench's cells need torch; importing this module must not

    logits = hidden @ gate
    # fp32 at least: a bf16 softmax over 256 experts loses the small weights
    wide = torch.promote_types(logits.dtype, torch.float32)
    probabilities = torch.softmax(logits, dim=-1, dtype=wide)
    weights, experts = torch.topk(probabilities, k, dim=-1)
    return weights.to(hidden.dtype), experts
