"""`linkteam replay RUN_DIR [--speed X]`: a recorded run's run.mcap played into the live
server (server.Server), at its recorded pace times `speed`."""
import sys
import time
from pathlib import Path

from host.telemetry import MCAP_NAME
from host.telemetry.server import Server
from host.telemetry.topics import SCHEMAS


def messages(path):
    """(topic, log time ns, payload) of an MCAP file, in log-time order."""
    from mcap.reader import make_reader
    with open(path, "rb") as f:
        for _, channel, message in make_reader(f).iter_messages(log_time_order=True):
            yield channel.topic, message.log_time, message.data


def play(path, server, speed=1.0, clock=time.monotonic, sleep=time.sleep):
    """Publish every message of `path` at its recorded time / speed -> messages published."""
    n, start, t0 = 0, None, None
    for topic, ns, payload in messages(path):
        if topic not in server.channel_of:
            continue
        if start is None:
            start, t0 = clock(), ns
        lag = start + (ns - t0) * 1e-9 / speed - clock()
        if lag > 0:
            sleep(lag)
        server.publish(topic, ns, payload)
        n += 1
    return n


def main(run_dir, speed, address, port, wait_s):
    path = Path(run_dir) / MCAP_NAME
    if not path.exists():
        sys.stderr.write("linkteam: %s: no %s (a run recorded before telemetry, or not a run directory)\n"
                         % (run_dir, MCAP_NAME))
        return 2
    if speed <= 0:
        sys.stderr.write("linkteam: --speed must be above 0\n")
        return 2
    server = Server(SCHEMAS, address, port)
    server.start()
    try:
        sys.stderr.write("replay %s: http://%s:%d/ (Foxglove: ws://%s:%d)\n" % (path, address, server.port,
                                                                             address, server.port))
        if wait_s > 0:
            server.subscribed.wait(wait_s)
        n = play(path, server, speed)
        server.flush()
        st = server.stats()
        sys.stderr.write("replayed %d messages; dropped %d\n" % (n, st["dropped"]))
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0
