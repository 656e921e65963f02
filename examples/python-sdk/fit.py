"""A small model fitted with PyTorch: y = 3x + 1 from noisy samples. `fit` is what
launch_fit.py runs on a GPU of the cluster through cohort.launch; it returns plain numbers."""

import os

import torch


def fit(steps=200, lr=0.1, seed=0):
    torch.manual_seed(seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.rand(256, 1, device=device)
    y = 3 * x + 1 + 0.01 * torch.randn(256, 1, device=device)
    model = torch.nn.Linear(1, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for step in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            print(f"cohort-metric step={step} loss={loss.item():.6f}", flush=True)
    return {"weight": model.weight.item(), "bias": model.bias.item(), "loss": loss.item(),
            "device": device, "gpus": os.environ.get("CUDA_VISIBLE_DEVICES", "")}
