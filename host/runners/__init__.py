"""Runners: one control loop, several ways to move its frames (docs/design.md §13).
inprocess: firmware objects in this process, synthetic clock."""
