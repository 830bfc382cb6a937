"""The floor's fork server (``bench/floor_app.py``): forks one child per request and says when it
ended. ``argv``: the channel's descriptor and the steps, which say what it imports first."""

from __future__ import annotations

import gc
import os
import socket
import sys

channel = socket.socket(fileno=int(sys.argv[1]))
steps = sys.argv[2]
if steps.startswith("authoring"):
    import tradewind  # noqa: F401  (what every DAG file imports)
elif steps.startswith("worker"):
    pass
if steps != "fork":
    from tradewind.loader import load_dag_file

    load_dag_file(__import__("pathlib").Path(os.environ["FLOOR_DAG_FILE"]))
gc.freeze()  # as Tradewind's server does: the children's collector leaves these pages alone

while True:
    request, fds, _flags, _address = socket.recv_fds(channel, 64, 1)
    if not request:
        break
    pid = os.fork()
    if pid == 0:
        if fds:
            comms = socket.socket(fileno=fds[0])
            comms.sendall(b'{"type": "SucceedTask", "id": 1}')
            comms.recv(64)
        os._exit(0)
    for fd in fds:
        os.close(fd)
    os.waitpid(pid, 0)
    channel.send(b"ended")
