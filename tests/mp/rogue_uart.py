"""A rogue device spliced into a UART wire (processes mode: an AF_UNIX socketpair per
wire): a process of its own between the host's end and link 1's, passing every byte on
both ways as received, and writing the frames it reads from stdin (one per line: the frame
in hex) toward the node, only between whole frames of the host's stream (the host's bytes
go on up to their last delimiter; a frame cut by a read waits for its end). A line "sync"
is answered "ok" once everything before it is written.

    python tests/mp/rogue_uart.py HOST_FD NODE_FD     (both inherited)
"""
import os
import select
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bus_protocol import framing            # noqa: E402


def write_all(fd, data):
    mv = memoryview(data)
    while mv:
        try:
            mv = mv[os.write(fd, mv):]
        except BlockingIOError:
            select.select([], [fd], [], 0.01)


def main(host, node):
    os.set_blocking(host, False)
    os.set_blocking(node, False)
    held = b""   # the host's bytes after its last delimiter: part of a frame
    stdin = sys.stdin.fileno()
    lines = b""
    fds = [stdin, host, node]
    while stdin in fds:
        for fd in select.select(fds, [], [], 1.0)[0]:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:             # that side is gone: the relay stops passing it on
                fds.remove(fd)
                continue
            if fd == node:
                write_all(host, data)
            elif fd == host:
                held += data
                cut = held.rfind(b"\x00") + 1
                if cut:
                    write_all(node, held[:cut])
                    held = held[cut:]
            else:
                lines += data
                *whole, lines = lines.split(b"\n")
                for line in whole:
                    line = line.strip()
                    if line == b"sync":
                        sys.stdout.write("ok\n")
                        sys.stdout.flush()
                    elif line:
                        write_all(node, framing.uart_frame(bytes.fromhex(line.decode())))
    os.close(host)
    os.close(node)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
