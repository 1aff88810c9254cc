"""The image's build steps, read from the Dockerfile (no Docker daemon runs here): what the
built server needs at run time is made at build time."""

from __future__ import annotations

from tests.support.server import REPO


def test_the_image_collects_the_static_files_whitenoise_serves():
    steps = (REPO / "Dockerfile").read_text()
    run = next(line for line in steps.splitlines() if "collectstatic" in line)
    assert run.startswith("RUN ") and "--noinput" in run
    assert steps.index("COPY . .") < steps.index("collectstatic")
