"""Random weights for the reference models: a freshly initialised transformers model's
linear and embedding weights scaled up (std 0.02 x scale, so activations are of order
one and the references test something), its LayerNorms near 1 and its biases random."""
import torch


def randomised(model, seed, scale=8.0):
    """seed None: the generator as it stands (the caller seeded it before building the model)."""
    if seed is not None:
        torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or "layer_norm" in name:
                p.copy_((1 if name.endswith("weight") else 0) + 0.3 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.3 * torch.randn_like(p))
            else:
                p.mul_(scale)
    return model.eval()


def built(make, seed, scale=8.0):
    """make() under a fixed seed (its initial weights too), then randomised."""
    torch.manual_seed(seed)
    return randomised(make(), None, scale)
