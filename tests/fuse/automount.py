"""A direct-mount autofs daemon as systemd runs one for an fstab line with x-systemd.automount:
it mounts autofs on MOUNTPOINT with its own process group as the daemon's, waits for the first
access, runs the mount command in that process group (systemd runs mount(8) so), then tells the
kernel the mount is ready, or failed when the command failed or did not end in TIMEOUT seconds.

Usage: automount.py MOUNTPOINT TIMEOUT COMMAND... ; prints "armed" once the autofs mount is up,
and "mounted" or "failed: ..." once the access was answered."""

import fcntl
import os
import struct
import subprocess
import sys

# linux/auto_fs.h: _IO(0x93, 0x60), 0x61 and 0x62; packet type 5 is a direct mount's
# "missing" request; the wait queue token follows the 8-byte header.
AUTOFS_IOC_READY, AUTOFS_IOC_FAIL, AUTOFS_IOC_CATATONIC = 0x9360, 0x9361, 0x9362
MISSING_DIRECT = 5

mountpoint, timeout, command = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
os.setsid()
reader, writer = os.pipe()
options = f"fd={writer},pgrp={os.getpgrp()},minproto=5,maxproto=5,direct"
subprocess.run(["mount", "-t", "autofs", "-o", options, "automount", mountpoint],
               pass_fds=(writer,), check=True)
os.close(writer)
# In the daemon's process group, opening the mount point does not trigger it.
autofs = os.open(mountpoint, os.O_RDONLY | os.O_DIRECTORY)
print("armed", flush=True)
packet = os.read(reader, 512)
_version, kind, token = struct.unpack_from("=iiI", packet)
assert kind == MISSING_DIRECT, kind
try:
    subprocess.run(command, check=True, timeout=timeout, stdin=subprocess.DEVNULL)
    fcntl.ioctl(autofs, AUTOFS_IOC_READY, token)
    print("mounted", flush=True)
except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
    fcntl.ioctl(autofs, AUTOFS_IOC_FAIL, token)
    print(f"failed: {e}", flush=True)
# No further access waits for this daemon (a retried one after a failure would wait for ever).
fcntl.ioctl(autofs, AUTOFS_IOC_CATATONIC, 0)
