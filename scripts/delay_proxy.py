#!/usr/bin/env python3
"""A TCP proxy that adds latency: every byte a server sends back is held DELAY_MS milliseconds
before it is passed on, at the pace it arrived (bandwidth kept), so each request/response round
trip through it takes DELAY_MS longer, as over a distant link. Requests pass at once.

    delay_proxy.py --listen PORT --to HOST:PORT --delay-ms D

Used by scripts/bench.sh (the remote section) in front of a loopback S3 server. Standard library
only. Prints "ready" on stdout once listening; stops on SIGTERM/SIGINT.
"""

import argparse
import asyncio
import signal
import sys
import time

CHUNK = 256 << 10


async def pump_now(reader, writer):
    """Client to server: passed on as it comes."""
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.write_eof()
        except (OSError, RuntimeError):
            pass


async def pump_late(reader, writer, delay):
    """Server to client: each piece leaves `delay` seconds after it arrived."""
    queue = asyncio.Queue()

    async def receive():
        try:
            while data := await reader.read(CHUNK):
                queue.put_nowait((time.monotonic() + delay, data))
        except (ConnectionError, asyncio.CancelledError):
            pass
        queue.put_nowait((time.monotonic() + delay, b""))

    receiving = asyncio.create_task(receive())
    try:
        while True:
            due, data = await queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        receiving.cancel()
        writer.close()


async def serve(args):
    host, _, port = args.to.rpartition(":")
    delay = args.delay_ms / 1000

    async def handle(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            pump_now(client_reader, server_writer),
            pump_late(server_reader, client_writer, delay),
        )
        server_writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", args.listen, backlog=1024)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
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
