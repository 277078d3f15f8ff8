# The board object (firmware/boards contract) for MCU back ends whose make(cfg) returns
# (hal, ports): {"node": "chain", "up", "down", "ring"} (UART daisy chain, firmware/hal/rp2_uart.py)
# or {"node": "bus", "port"} (CAN, firmware/hal/stm32_can.py).
import time

from firmware import node as node_mod

try:
    from machine import idle   # WFI: wakes on any interrupt (UART/CAN RX, the 1 ms tick)
except ImportError:            # CPython with test fakes
    def idle():
        time.sleep(0.0002)

try:
    _ticks_ms, _ticks_diff = time.ticks_ms, time.ticks_diff
except AttributeError:
    def _ticks_ms():
        return int(time.monotonic() * 1000)

    def _ticks_diff(a, b):
        return a - b


class McuBoard:
    closed = False   # a board's bus never goes away; silence is the agent's watchdog's job

    def __init__(self, name, make, cfg):
        self.name = name
        self.hal, self.ports = make(cfg)

    def node(self, agent):
        p = self.ports
        if p["node"] == "chain":
            return node_mod.ChainNode(agent, p["up"], p["down"], ring=p.get("ring", False))
        return node_mod.BusNode(agent, p["port"])

    def _input(self):
        p = self.ports
        if p["node"] == "chain":
            return p["up"].uart.any() or (p["down"] is not None and p["down"].uart.any())
        port = p["port"]
        port.pump()   # hand the controller the next queued frame while we wait
        return port.can.any(port.fifo)

    def wait(self, ms):
        """Sleep in machine.idle() until a port has input (True) or ms pass (False)."""
        t0 = _ticks_ms()
        while _ticks_diff(_ticks_ms(), t0) < ms:
            if self._input():
                return True
            idle()
        return False
