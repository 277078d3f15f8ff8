# Board table: board name (config.json "board") -> module imported only on that board.
# A board module offers make_board(name, cfg) -> an object with
#   .hal             the HAL (firmware/hal/__init__.py surface; node sets .send)
#   .node(agent)     a firmware.node.ChainNode (UART chain) or BusNode (CAN) on its ports
#   .wait(ms)        block (never spin) until input, a due write, or ms pass
#   .ticks_ms()      optional: its millisecond clock (default time.ticks_ms)
#   .closed          True once the bus is gone (desktop processes exit then)
# To add a board: one line here and one module under firmware/hal/.
BOARDS = {
    "unix-pty": "firmware.hal.unix",   # desktop process, UART chain on ptys
    "unix-udp": "firmware.hal.unix",   # desktop process, CAN-FD medium on loopback UDP
    "rp2-uart": "firmware.hal.rp2_uart",    # RP2040/RP2350 node on a UART daisy chain
    "stm32-can": "firmware.hal.stm32_can",  # STM32 (pyb.CAN) node on CAN / CAN-FD
    "mps2-uart": "firmware.hal.cmsdk_uart",  # emulated Cortex-M (QEMU MPS2), UART chain and joint
}
# what each board runs on (sys.platform) and the "bus" settings of config.json it cannot
# boot without; `linkteam flash` checks both before it copies (host/tools/flash.py check_target)
PLATFORM = {"unix-pty": "linux", "unix-udp": "linux", "rp2-uart": "rp2", "stm32-can": "pyboard"}
BUS_NEEDS = {"unix-pty": ("up",), "unix-udp": ("base_port",), "rp2-uart": (), "stm32-can": ()}


def missing_bus(name, bus):
    """The bus settings board `name` needs and `bus` lacks."""
    return [k for k in BUS_NEEDS.get(name, ()) if k not in bus]


def make_board(cfg):
    name = cfg.get("board", "unix-pty")
    path = BOARDS.get(name)
    if path is None:
        raise ValueError("unknown board %r (known: %s)" % (name, ", ".join(sorted(BOARDS))))
    lack = missing_bus(name, cfg.get("bus", {}))
    if lack:
        raise ValueError("board %s needs bus setting %s in its config" % (name, ", ".join(lack)))
    mod = __import__(path, None, None, ("make_board",))
    return mod.make_board(name, cfg)
