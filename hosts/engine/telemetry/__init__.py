"""Telemetry over AHP: the ahp-otlp channels (otlp_channels.py) and what feeds them."""

from .otlp_channels import CAPABILITIES, KIND, SAID, Telemetry, TelemetrySettings

__all__ = ["CAPABILITIES", "KIND", "SAID", "Telemetry", "TelemetrySettings"]
