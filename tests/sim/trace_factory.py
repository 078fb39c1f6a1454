"""The simulator's snapshot recorder, for the tests' scenarios (it lives in
`gpu_runner.sim.recording`, where the sample snapshot is recorded too)."""

from gpu_runner.sim.recording import RecordingDevice, write_snapshot

__all__ = ["RecordingDevice", "write_snapshot"]
