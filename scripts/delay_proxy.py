#!/usr/bin/env python3
"""A TCP proxy that adds latency: every byte a server sends back is held DELAY_MS milliseconds
before it is passed on, at the pace it arrived (bandwidth kept), so each request/response round
trip through it takes DELAY_MS longer, as over a distant link. Requests pass at once.

    delay_proxy.py --listen PORT --to HOST:PORT --delay-ms D

Used by scripts/bench.sh (the remote section) in front of a loopback S3 server. Standard library
only, on asyncio's transports (no stream objects, one timer per connection): the proxy should
cost both sides of a measurement as little CPU as it can, since it shares the machine with them.
Prints "ready" on stdout once listening; stops on SIGTERM/SIGINT.
"""

import argparse
import asyncio
import collections
import signal
import sys

# A transport that holds more than this unsent pauses the one feeding it.
HIGH_WATER = 8 << 20


class Side(asyncio.Protocol):
    """One end of a proxied connection: what it receives goes to `peer`, at once (client to
    server) or `delay` seconds later (server to client)."""

    def __init__(self, loop, delay):
        self.loop = loop
        self.delay = delay
        self.transport = None
        self.peer = None
        # (due time, bytes) waiting to be passed on; b"" stands for the end of the stream.
        self.held = collections.deque()
        self.timer = None
        self.early = []

    def connection_made(self, transport):
        self.transport = transport
        transport.set_write_buffer_limits(high=HIGH_WATER)

    def data_received(self, data):
        self.forward(data)

    def eof_received(self):
        self.forward(b"")
        return True

    def connection_lost(self, exc):
        self.forward(b"")

    def forward(self, data):
        if self.peer is None or self.peer.transport is None:
            self.early.append(data)
            return
        if not self.delay:
            self.pass_on(data)
            return
        self.held.append((self.loop.time() + self.delay, data))
        if self.timer is None:
            self.timer = self.loop.call_at(self.held[0][0], self.release)

    def release(self):
        self.timer = None
        now = self.loop.time()
        while self.held and self.held[0][0] <= now:
            self.pass_on(self.held.popleft()[1])
        if self.held:
            self.timer = self.loop.call_at(self.held[0][0], self.release)

    def pass_on(self, data):
        out = self.peer.transport
        if out.is_closing():
            return
        if data:
            out.write(data)
        else:
            # The end of one direction ends the connection (HTTP needs no half-close); close()
            # sends what is buffered first.
            out.close()

    def joined(self, peer):
        """`peer` is connected: what arrived before goes on."""
        self.peer = peer
        for data in self.early:
            self.forward(data)
        self.early = []

    # Back-pressure: a peer that cannot keep up pauses this side's reading.
    def pause_writing(self):
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self):
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()


async def serve(args):
    host, _, port = args.to.rpartition(":")
    delay = args.delay_ms / 1000
    loop = asyncio.get_running_loop()

    def accepted():
        client = Side(loop, 0)

        async def connect():
            try:
                _, server = await loop.create_connection(lambda: Side(loop, delay), host, int(port))
            except OSError:
                client.transport.close()
                return
            # Server bytes go to the client late; client bytes to the server at once.
            server.joined(client)
            client.joined(server)

        loop.create_task(connect())
        return client

    server = await loop.create_server(accepted, "127.0.0.1", args.listen, backlog=1024)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("ready", flush=True)
    async with server:
        await stop.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", type=int, required=True)
    p.add_argument("--to", required=True, help="HOST:PORT of the server")
    p.add_argument("--delay-ms", type=float, required=True)
    args = p.parse_args()
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
