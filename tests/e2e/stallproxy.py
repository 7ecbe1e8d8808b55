#!/usr/bin/env python3
"""A TCP proxy on loopback that a fault test controls, between Kiln and the API server.

    stallproxy.py LISTEN_PORT UPSTREAM_HOST:UPSTREAM_PORT PORT_FILE

It forwards bytes both ways (TLS passes through untouched). Signals turn it into the faults
a production network has without closing anything, which TCP alone cannot see:
  SIGUSR1  black hole: every connection open now, and every connection accepted from now on,
           is held open with its bytes dropped both ways, forever (a stalled proxy or load
           balancer: the kernel still acknowledges everything, keep-alive probes included).
  SIGUSR2  open again: connections accepted from now on are forwarded; the black-holed ones
           stay black holes until their client closes them.
Bytes read on a black-holed connection are dropped, never delivered late, so what a client
wrote into one never reaches the API server. Each change and connection is logged to stdout
with a counter (for the test's report). Writes the chosen port to PORT_FILE once listening.
"""
import signal
import socket
import sys
import threading
import time

lock = threading.Lock()
conns = []  # [client_socket, upstream_socket, holed]
holed_now = False
accepted = 0


def log(msg):
    print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)


def pump(conn, src, dst, from_client):
    while True:
        try:
            data = src.recv(65536)
        except OSError:
            data = b""
        with lock:
            holed = conn[2]
        if not data:
            # A black hole shows the client nothing, not even the server closing.
            if holed and not from_client:
                return
            break
        if holed:
            continue
        try:
            dst.sendall(data)
        except OSError:
            break
    for s in (conn[0], conn[1]):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(listener, upstream):
    global accepted
    while True:
        client, _ = listener.accept()
        try:
            up = socket.create_connection(upstream)
        except OSError as e:
            log(f"upstream connect failed: {e}")
            client.close()
            continue
        with lock:
            conn = [client, up, holed_now]
            conns.append(conn)
            accepted += 1
            n, holed = accepted, conn[2]
        log(f"accepted connection {n}{' (black hole)' if holed else ''}")
        threading.Thread(target=pump, args=(conn, client, up, True), daemon=True).start()
        threading.Thread(target=pump, args=(conn, up, client, False), daemon=True).start()


def on_hole(signum, frame):
    global holed_now
    with lock:
        holed_now = True
        for c in conns:
            c[2] = True
        n = len(conns)
    log(f"black hole: {n} connections so far, new ones too")


def on_open(signum, frame):
    global holed_now
    with lock:
        holed_now = False
    log("open: new connections are forwarded")


def main():
    port, upstream, port_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    host, up_port = upstream.rsplit(":", 1)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    signal.signal(signal.SIGUSR1, on_hole)
    signal.signal(signal.SIGUSR2, on_open)
    with open(port_file, "w") as f:
        f.write(f"{listener.getsockname()[1]}\n")
    log(f"listening on {listener.getsockname()[1]}, forwarding to {upstream}")
    t = threading.Thread(target=serve, args=(listener, (host, int(up_port))), daemon=True)
    t.start()
    while t.is_alive():
        t.join(1)  # the main thread stays free to run the signal handlers


if __name__ == "__main__":
    main()
