"""Telemetry over AHP: the ahp-otlp channels (otlp_channels.py) and what feeds them."""

from .otlp_channels import CAPABILITIES, KIND, Telemetry, TelemetrySettings

__all__ = ["CAPABILITIES", "KIND", "Telemetry", "TelemetrySettings"]
