"""Fits fit.py's model on one GPU of the cluster and prints what it learned, then runs the same
script as an ordinary job and reads its metrics: the Python SDK's two ways in.

    PYTHONPATH=../../python /usr/bin/python3 launch_fit.py     # from this directory
"""

import sys

import cohort

import fit

if __name__ == "__main__":
    # The function runs as a job with one GPU; the GPU is free again as soon as it returns.
    result = cohort.launch(fit.fit, kwargs={"steps": 300, "lr": 0.5}, gpus=1,
                           python=sys.executable, timeout=600)
    print(f"launch: weight {result['weight']:.2f} bias {result['bias']:.2f} "
          f"loss {result['loss']:.5f} on {result['device']} (GPUs {result['gpus']})")

    # The same code as a job of its own: submitted, waited for, its metrics read back.
    job = cohort.run([sys.executable, "-c", "import fit; print(fit.fit(steps=100))"], gpus=1,
                     name="fit")
    job.wait(timeout=600, check=True)
    losses = job.points("loss")
    print(f"job {job.id}: {job.state}, loss {losses[0][1]:.4f} at step {losses[0][0]} -> "
          f"{losses[-1][1]:.4f} at step {losses[-1][0]}")
