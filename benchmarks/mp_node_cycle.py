# Run under MicroPython: the unix port (make bench), a board through mpremote
# (`linkteam budget --measure-on PORT` runs it on a flashed board), or an emulated
# Cortex-M (make mcu-bench: host/tools/mcu.py freezes it into the firmware and calls main()).
# One link agent (link 3 of 10) behind a ChainNode with in-memory ports. Prints:
#   RAM init N            gc.mem_alloc() held by the firmware's modules, agent and node
#                         (after gc.collect(); measured from before the first import)
#   ALLOC ...             bytes allocated per control cycle (median, gc disabled), and
#                         by the node alone (ALLOC node: the agent taking nothing)
#   PHASE name us         interquartile mean per poll round, us (1 us = 1000 instructions
#                         on QEMU with -icount shift=0):
#     sync      JOINT_STATE + SYNC in, SYNC passed on, joint sampled, A_i(q) built
#     k_hop     K_{i-1} in, assertions and K_i out
#     goal_hop  GOAL in (and passed on), TORQUE out
#     forward   one frame from down, not for this node, passed up
#     cycle     sync + k_hop + goal_hop (the agent's own work in one control cycle)
#     overheard main(checks=True): K_{i-2} in (the neighbour check's input), in its cycle
#     cycle_status, cycle_timing   a cycle that also sends STATUS, or TIMING (each every
#               12th tick at the node's slot, after the torque; median of three)
#     idle_poll a poll round with nothing arrived (how soon a board loop sees a frame)
#   GC pause us           one gc.collect() with the heap as the cycles leave it
#   HOP k_us / goal_us / fwd_us   (medians, whole us) for host/tools/budget.py
import gc
import io
import sys
import time

try:
    _root = (__file__.rsplit("/", 1)[0] if "/" in __file__ else ".") + "/.."
except NameError:
    _root = "."
sys.path.insert(0, _root)

N = 10
TICKS = 4    # distinct prebuilt ticks, reused round robin: the input costs no RAM per cycle


NB_DH = ["revolute", 0.0, 0.0, 0.75, 0.0]   # link 2's DH, as link 3's neighbour check has it


def config(checks=False):
    """Link 3's; `checks`: with the neighbour check (depth 1) and the bridge on."""
    cfg = {"link": 3, "n_links": N, "dh": {"type": "revolute", "a": 0.75},
           "q_low": -3.1416, "q_high": 3.1416, "u_sat": 1e6, "mass": 10.0,
           "centroid": [-0.375, 0.0, 0.0], "behaviours": {"proxy": {"weight": 1.0}}}
    if checks:
        cfg["neighbours"] = {"dh": [NB_DH], "period": 1 / 120.0}
    return cfg


class Port:
    """A byte-stream port whose readinto and write are C methods (io.BytesIO), as a
    board's machine.UART's are, so the counts are the node's own work. feed() hands it
    one prebuilt read; nothing is allocated per cycle."""

    def __init__(self):
        self._out = io.BytesIO()
        self.write = self._out.write
        self.readinto = io.BytesIO(b"").readinto

    def feed(self, src):
        src[0].seek(0)
        self.readinto = src[1]
        self._out.seek(0)


AUTH_KEY = bytes(range(32))   # main(auth=True): the GOAL protected (bus_protocol/SPEC.md §9)


def inputs(ticks=range(TICKS), auth=False, checks=False):
    """Per tick: (JOINT_STATE + SYNC, K_2, GOAL, a TORQUE of link 7 passing up); with
    `checks` K_2 is what link 2 composed from K_1, and K_1 (to link 2, overheard: passed on
    by link 2 before it composes K_2) comes last in the tuple; with `auth` the GOAL protected."""
    from bus_protocol import framing
    from bus_protocol import messages as m
    if auth:
        from bus_protocol.mac import Hmac
        hm = Hmac(AUTH_KEY)

    def wire(mtype, src, dst, values):
        return framing.uart_frame(m.encode(mtype, src, dst, 1, values))

    def src(data):
        b = io.BytesIO(data)
        return b, b.readinto
    pre = []
    for k in ticks:
        js = wire(m.JOINT_STATE, 0, 3, (k, 0.1, 0.2, 0, 0., 0., 0., 0., 0., 0.))
        sy = wire(m.SYNC, 0, 255, (k,))
        kk = wire(m.KINEMATIC, 2, 3, (k, 1., 0., 0., 0., 1.5, 0., 0., 0., 0.1, 0., 0., 0., 0.2))
        k1 = None
        if checks:   # K_1 and K_2 of links 1, 2 at q = 0.1, qd = 0.2 (the check passes)
            from firmware import kinematic_bus as kb
            link = (kb.REVOLUTE,) + tuple(NB_DH[1:])
            ks = [(k,) + tuple(x for part in K for x in part) for K in kb.chain([link] * 2, [0.1] * 2, [0.2] * 2)]
            k1 = src(wire(m.KINEMATIC, 1, 2, ks[1]))
            kk = wire(m.KINEMATIC, 2, 3, ks[2])
        gg = wire(m.GOAL, 0, 255, (k, 0, 7.5, 0., 0., 10., 20., 0., 0., 0., 3.))
        if auth:
            gg = framing.uart_frame(m.protect(m.encode(m.GOAL, 0, 255, 1, (k, 0, 7.5, 0., 0., 10., 20., 0., 0., 0., 3.)),
                                              hm, 0, 0))
        fw = wire(m.TORQUE, 7, 0, (k, 1.0, 1, 0., 0., 0., 0., 0., 0.))
        pre.append((src(js + sy), src(kk), src(gg), src(fw)) + ((k1,) if checks else ()))
    return pre


def _iqm(v):
    """Interquartile mean: robust to a stray timer reading, finer than the 1 us tick."""
    v = sorted(v)
    q = len(v) // 4
    v = v[q:len(v) - q]
    return sum(v) / len(v)


def _med(v):
    v = sorted(v)
    return v[len(v) // 2]


def clock():
    """-> (stamp(), diff(later, earlier) -> ticks, microseconds per tick). time.ticks_us,
    except on QEMU's Cortex-M boards (make mcu-bench): there the SysTick down-counter
    itself, 25 MHz, so 40 ns = 40 instructions under -icount shift=0 where ticks_us
    rounds to 1 us (it reloads every 1 ms: every phase measured is shorter)."""
    if sys.platform != "qemu":
        return time.ticks_us, time.ticks_diff, 1.0
    import machine
    mem32 = machine.mem32

    def stamp():
        return mem32[0xE000E018]   # SYST_CVR

    def diff(later, earlier):
        return (earlier - later) % 25000
    return stamp, diff, 0.04


def main(cycles=300 if sys.platform in ("linux", "darwin") else 100, auth=False, checks=False):   # a board's heap: fewer
    """auth: the node checks host commands (firmware/auth.py) and the GOAL is protected;
    its freshness is wound back, untimed, before each cycle (the inputs repeat).
    `checks`: the agent with its neighbour check (depth 1) and bridge, its node passing
    it link 2's input K_1 (the phases named ..._checks)."""
    stamp, tdiff, us_per_tick = clock()
    ticks_us = time.ticks_us
    gc.collect()
    a0 = gc.mem_alloc()
    from firmware.agent import LinkAgent
    from firmware.hal.sim import SimHAL
    from firmware.node import ChainNode
    up, down = Port(), Port()
    agent = LinkAgent(config(checks), SimHAL())
    guard = None
    if auth:
        from firmware import auth as auth_mod
        guard = auth_mod.guard(agent, {"auth": {"key": AUTH_KEY}})
    node = ChainNode(agent, up, down, overhear=1 if checks else 0)   # a board's buffer sizes (firmware/boards/mcu.py)
    gc.collect()
    a2 = gc.mem_alloc()
    print("RAM after init: gc.mem_alloc() %d bytes" % a2)
    print("RAM init %d" % (a2 - a0))
    pre = inputs(auth=auth, checks=checks)
    ph = ([], [], [], [], [], [], [])
    suffix = "_checks" if checks else ""
    alloc = []

    def one(k, timed):
        p = pre[k % TICKS]
        # one by one: a 4-target assignment from 4 values builds a tuple (32 bytes on a board)
        js_sy = p[0]
        kk = p[1]
        gg = p[2]
        fw = p[3]
        k1 = p[4] if checks else None
        b0 = gc.mem_alloc()
        up.feed(js_sy)
        t0 = stamp()
        node.poll()
        t1 = stamp()
        t10 = t9 = t1
        if k1 is not None:   # link 2's input, overheard (it arrives before K_2)
            up.feed(k1)
            t9 = stamp()
            node.poll()
            t10 = stamp()
        up.feed(kk)
        t2 = stamp()
        node.poll()
        t3 = stamp()
        up.feed(gg)
        if guard is not None:
            guard.rewind()
        t4 = stamp()
        node.poll()
        t5 = stamp()
        down.feed(fw)
        t6 = stamp()
        node.poll()
        t7 = stamp()
        node.poll()
        t8 = stamp()
        b1 = gc.mem_alloc()
        if timed:
            ph[0].append(tdiff(t1, t0) - zero)
            ph[1].append(tdiff(t3, t2) - zero)
            ph[2].append(tdiff(t5, t4) - zero)
            ph[3].append(tdiff(t7, t6) - zero)
            ph[6].append(tdiff(t10, t9) - (zero if k1 is not None else 0))
            ph[4].append(tdiff(t1, t0) + tdiff(t3, t2) + tdiff(t5, t4) - 3 * zero + ph[6][-1])
            ph[5].append(tdiff(t8, t7) - zero)
            alloc.append(b1 - b0)

    for k in range(4):      # warm up: first-call caches, lists at their final size
        one(k, False)
    zero = []                 # the cost of reading the clock itself, taken off every phase
    for _ in range(9):
        t0 = stamp()
        t1 = stamp()
        zero.append(tdiff(t1, t0))
    zero = _med(zero)
    gc.collect()
    gc.disable()
    for k in range(cycles):
        # every cycle starts from the same heap: the cost of an allocation depends on
        # how far the allocator must search, and collecting only when the heap runs low
        # made the same phase vary by up to ~50k instructions from build to build
        gc.collect()
        one(k, True)
    print("ALLOC%s per control cycle (median of %d): %d bytes" % (suffix, len(alloc), _med(alloc)))
    for name, v in zip(("sync", "k_hop", "goal_hop", "forward", "cycle", "idle_poll", "overheard"), ph):
        if checks or name != "overheard":
            print("PHASE %s%s %.3f" % (name, suffix, _iqm(v) * us_per_tick))
    if checks:
        from firmware.neighbours import I_NB_OK
        print("checked", agent.I[I_NB_OK], "skip", agent.skip)
        return
    print("ALLOC node per control cycle: %d bytes" % node_alloc(node, agent, one))
    for name, v in zip(("cycle_status", "cycle_timing"), periodic(agent, node, up, stamp, tdiff, zero)):
        print("PHASE %s %.3f" % (name, v * us_per_tick))
    # the longest collection: the heap as far as the cycles fill it with their garbage
    k = 0
    while gc.mem_free() > 4096 + 2 * max(alloc) and k < 2000:
        one(k, False)
        k += 1
    t0 = ticks_us()
    gc.collect()
    t1 = ticks_us()
    gc.enable()
    print("GC pause %d us (heap %d bytes, after %d cycles without collection)"
          % (time.ticks_diff(t1, t0), gc.mem_alloc() + gc.mem_free(), k))
    print("HOP k_us %d" % round(_med(ph[1]) * us_per_tick))
    print("HOP goal_us %d" % round(_med(ph[2]) * us_per_tick))
    print("HOP fwd_us %d" % round(_med(ph[3]) * us_per_tick))
    print("torque", agent.u[0], "bad", agent.decoder.bad)


def periodic(agent, node, up, stamp, tdiff, zero):
    """-> (cycle with STATUS, cycle with TIMING), medians of three each: 36 consecutive
    ticks after the agent's (the benchmark's four ticks repeat: TIMING never comes)."""
    from firmware.cycle import I_EVERY, I_EVERY_AT, I_TICK
    from firmware.services import TIMING_SLOTS
    t0 = agent.I[I_TICK] + 1
    status, timing = [], []
    for k in range(36):
        pre = inputs(range(t0 + k, t0 + k + 1), getattr(agent, "auth", None) is not None)[0]   # one tick's at a time: a board's heap
        if getattr(agent, "auth", None) is not None:
            agent.auth.rewind()
        gc.collect()
        dt = 0
        for src in pre[:3]:
            up.feed(src)
            a = stamp()
            node.poll()
            b = stamp()
            dt += tdiff(b, a) - zero
        tick = t0 + k
        if tick % agent.I[I_EVERY] == agent.I[I_EVERY_AT]:
            status.append(dt)
        if tick % TIMING_SLOTS == agent.finish.slot and tick >= TIMING_SLOTS - 1:
            timing.append(dt)
    return _med(status), _med(timing)


def node_alloc(node, agent, one, cycles=12):
    """Bytes the node itself allocates per control cycle (median): the same poll rounds
    with the agent taking nothing, and one frame of the agent's sent through the node."""
    import gc
    from bus_protocol import messages as m
    frame = bytearray(m.MAX_FRAME)
    n = m.encode_into(frame, m.TORQUE, 3, 0, 1, (1, 1.0, 1, 0., 0., 0., 0., 0., 0.))

    def nothing(buf, n=None):
        pass
    agent.receive = nothing
    v = []
    for k in range(cycles):
        gc.collect()
        b0 = gc.mem_alloc()
        one(k, False)
        node.send(frame, n)
        v.append(gc.mem_alloc() - b0)
    del agent.receive       # the class's method again
    if getattr(agent, "auth", None) is not None:
        agent.receive = agent.auth.receive   # behind its check again (main(auth=True))
    return _med(v)


# the firmware's modules an agent on linkcore (the benchmark's config) and its node import,
# leaves first; firmware.linkstate holds linkcore's code and tables
MODULES = ("bus_protocol.messages", "firmware.accel.thumb", "firmware.accel", "bus_protocol.framing",
           "firmware.accel.forward", "firmware.hal",
           "firmware.behaviours", "firmware.safety", "firmware.services", "firmware.linkstate",
           "firmware.injection", "firmware.cycle", "firmware.arbitration", "firmware.commands",
           "firmware.quiet", "firmware.agent", "firmware.hal.sim", "firmware.node")


def ram_by_module():
    """[(name, bytes)]: gc.mem_alloc() growth per module imported (each with what it holds
    that no module before it did), then the agent and the node objects (with any module
    they imported on first need, named)."""
    import gc
    out = []
    gc.collect()
    a = gc.mem_alloc()
    for name in MODULES:
        __import__(name)
        gc.collect()
        b = gc.mem_alloc()
        out.append((name, b - a))
        a = b
    before = set(sys.modules)
    from firmware.agent import LinkAgent
    from firmware.hal.sim import SimHAL
    from firmware.node import ChainNode
    agent = LinkAgent(config(), SimHAL())
    node = ChainNode(agent, Port(), Port())
    gc.collect()
    more = sorted(k for k in sys.modules if k not in before)
    out.append(("agent and node objects" + "".join(" + " + k for k in more), gc.mem_alloc() - a))
    return out


class MpyFS:
    """A read-only filesystem over {path: .mpy bytes}, mounted with vfs.mount(): the
    firmware imported from .mpy files into RAM, as from a board's flash filesystem
    (make mcu-bench measures RAM after init both ways)."""

    def __init__(self, files):
        self.files = files
        self.dirs = set()
        for p in files:
            d = p.rsplit("/", 1)[0]
            while d:
                self.dirs.add(d)
                d = d.rsplit("/", 1)[0]

    def mount(self, readonly, mkfs):
        pass

    def umount(self):
        pass

    def stat(self, path):
        if path in self.dirs or path in ("", "/"):
            return (0x4000, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        if path in self.files:
            return (0x8000, 0, 0, 0, 0, 0, len(self.files[path]), 0, 0, 0)
        raise OSError(2)

    def open(self, path, mode):
        import io
        if path not in self.files:
            raise OSError(2)
        return io.BytesIO(self.files[path])


def with_native(files):
    """The native module linkcore importable from .mpy files in RAM ({path: bytes},
    host/tools/mcu.py's mcu_mpy_files.NATIVE), as from a board's flash filesystem: the
    agent then runs its float work and hot frames in C (firmware/linkstate.py). On the
    emulated boards this .mpy is imported in place of the linkcore built into the
    firmware (an extensible built-in module)."""
    import vfs
    sys.modules.pop("linkcore", None)
    vfs.mount(MpyFS(files), "/native")
    sys.path.append("/native")


def without_native():
    """No linkcore, not even the one built into the emulated boards' firmware: the
    firmware's `import linkcore` gives None, so it runs the pure Python (a board whose
    firmware carries no linkcore and whose filesystem has no linkcore.mpy)."""
    sys.modules["linkcore"] = None


def _path(first):
    """sys.path: `first`, and linkcore's place if with_native() mounted it."""
    sys.path[:] = [first] + [p for p in sys.path if p == "/native"]


def main_mpy(files, cycles=100):
    """main() with firmware/ and bus_protocol/ imported from .mpy files, not frozen."""
    import vfs
    vfs.mount(MpyFS(files), "/mpy")
    _path("/mpy")
    main(cycles)


def main_romfs(image, cycles=100):
    """main() with the same .mpy files imported from a ROMFS image (vfs.VfsRom over the
    image, frozen into flash: a board's `mpremote romfs deploy`): their bytecode is
    executed where it lies, not copied into RAM."""
    import vfs
    vfs.mount(vfs.VfsRom(image), "/rom")
    _path("/rom")
    main(cycles)


def modules_mpy(files):
    """RAM per module imported from .mpy files (make mcu-bench: what the .mpy figure holds)."""
    import vfs
    vfs.mount(MpyFS(files), "/mpy")
    _path("/mpy")
    for name, b in ram_by_module():
        print("RAM module %s: %d" % (name, b))


if __name__ == '__main__':
    main()
