"""Runners: one control loop, several ways to move its frames (DESIGN 13).
inprocess: firmware objects in this process, synthetic clock."""
