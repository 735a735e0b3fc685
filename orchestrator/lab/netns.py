"""A private network namespace for a local sweep's Ray: its ports reach nothing outside this machine's
process tree.

    with private_network() as why_not:     # None: isolated; else the reason it is not
        ray.init(...); ...; ray.shutdown()

Ray 2.60's gRPC servers (GCS, raylet, workers) listen on every interface whatever node address
they are given, and there is no setting to bind them to loopback. So a local sweep moves its Ray
into a new network namespace whose only interface is loopback: `unshare(CLONE_NEWNET)` on the
driver's thread before `ray.init` (Ray's processes and the driver's own gRPC threads are started
from this thread afterwards and inherit it), `lo` brought up, and `setns` back to the original
namespace after `ray.shutdown`, so the rest of the process (a test session, say) is unaffected.
`ss -ltnp` in the machine's namespace then shows no listener of benchctl's Ray at all.

This needs CAP_SYS_ADMIN (root). Otherwise, or if the kernel refuses, the sweep runs in the
machine's namespace as before, where Ray's token authentication (on by default for local Ray in
2.60) is what keeps other machines out; the caller says so in one line.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import socket
import struct
from collections.abc import Iterator

CLONE_NEWNET = 0x40000000  # <sched.h>
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1  # <linux/sockios.h>, <net/if.h>


def _loopback_up() -> None:
    """`ip link set lo up`, without needing iproute2."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, request)[:18])[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))


@contextlib.contextmanager
def private_network() -> Iterator[str | None]:
    """Run the block in a fresh network namespace (loopback only); yields None, or why it could not."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        yield "not running as root"
        return
    libc = ctypes.CDLL(None, use_errno=True)
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        if libc.unshare(CLONE_NEWNET) != 0:
            yield f"unshare(CLONE_NEWNET) refused: {os.strerror(ctypes.get_errno())}"
            return
        try:
            _loopback_up()
            yield None
        finally:
            if libc.setns(home, CLONE_NEWNET) != 0:  # back where we were; cannot fail for root
                raise OSError(ctypes.get_errno(), "setns back to the original network namespace failed")
    finally:
        os.close(home)
