#!/usr/bin/env python3
"""Check csi-proxy-server with an independent gRPC client (Python grpcio).

Nothing of the Rust crate is used on the client side: the stubs are generated
from proto/**/*.proto with grpcio-tools into a temporary directory, and the
server binary is driven over its Unix sockets.

    cargo build --features server --bin csi-proxy-server
    python3 -m pip install --quiet grpcio-tools     # if missing; brings grpcio
    scripts/independent-client.py [--server target/debug/csi-proxy-server]

Steps:
  0. Generate the Python stubs, one output directory per proto file, and start
     the server with `--socket-dir` on a temporary directory; read the
     `<group>/<version> <socket>` lines and wait for `ready: serving N endpoints`.
     Every channel is a stock grpcio channel (no options): grpcio sends the
     percent-encoded socket path as the HTTP/2 :authority, which the server
     must accept (see csi_proxy_client::authority::LocalAuthority).
  1. For every service method found in the generated descriptors, call it with
     a default (empty) request and record the status code. Fails if any answer
     is UNIMPLEMENTED, if a call does not get an answer at all (deadline,
     UNAVAILABLE), or if the number of methods is not 139. Errors such as
     UNKNOWN for empty requests are expected and fine (answers other than OK
     and UNKNOWN are listed; -v lists all). Control: an undeclared method
     (/v1.Disk/NoSuchMethod) must give UNIMPLEMENTED.
  2. Stage the default node's blank disk on LUN 1 through the v1 APIs only:
     disk ListDiskLocations -> disk PartitionDisk -> volume ListVolumesOnDisk
     -> volume IsVolumeFormatted -> volume FormatVolume -> filesystem Mkdir of
     the staging path -> volume MountVolume -> volume GetVolumeIDFromTargetPath
     (must give back the same volume id). One line per step.
  3. SIGTERM the server; it must exit 0 and leave the socket directory empty.

Prints `independent client: 139/139 RPCs answered (none UNIMPLEMENTED);
staging flow ok` and exits 0 on success; exits 1 on any failure (2 on a usage
or environment problem). Runs in a few seconds.

Note on stub generation: every api.proto has a bare package (`package v1;`)
and several files share one, and the generated modules all register in
protobuf's default descriptor pool. The files are therefore compiled with
`-I proto` (descriptor file names `disk/v1/api.proto`, ... are unique; no
message or service name is declared twice within one package) and imported as
`disk.v1.api_pb2` etc., each from its own output directory.
"""

import argparse
import glob
import importlib
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

EXPECTED_RPCS = 139
EXPECTED_ENDPOINTS = 23
CALL_TIMEOUT = 5.0  # seconds per RPC
START_TIMEOUT = 20.0  # seconds until "ready"
STOP_TIMEOUT = 10.0  # seconds until exit after SIGTERM
STAGING_PATH = r"C:\var\lib\kubelet\plugins\x\globalmount"
STAGING_LUN = "1"

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Failure(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def check(cond, msg):
    if not cond:
        raise Failure(msg)


# --------------------------------------------------------------------------
# stubs


def generate_stubs(proto_root, out_root):
    """Compile every proto file into its own directory and import it.

    Returns [(key, pb2_module, grpc_module)] with key like "disk/v1"
    ("errors" for proto/errors.proto), sorted by key.
    """
    try:
        from grpc_tools import protoc
        import grpc_tools
    except ImportError:
        print("grpcio-tools is missing: python3 -m pip install grpcio-tools", file=sys.stderr)
        sys.exit(2)
    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    files = sorted(glob.glob(os.path.join(proto_root, "**", "*.proto"), recursive=True))
    check(files, f"no .proto files under {proto_root}")
    modules = []
    for path in files:
        rel = os.path.relpath(path, proto_root)  # disk/v1/api.proto
        key = os.path.dirname(rel).replace(os.sep, "/") or os.path.splitext(rel)[0]
        out = os.path.join(out_root, key.replace("/", "_"))
        os.makedirs(out)
        rc = protoc.main([
            "grpc_tools.protoc",
            f"-I{proto_root}",
            f"-I{well_known}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            rel,
        ])
        check(rc == 0, f"protoc failed on {rel} (exit {rc})")
        mod = os.path.splitext(rel)[0].replace(os.sep, ".") + "_pb2"  # disk.v1.api_pb2
        sys.path.insert(0, out)
        try:
            pb2 = importlib.import_module(mod)
            grpc_mod = importlib.import_module(mod + "_grpc")
        finally:
            sys.path.remove(out)
        modules.append((key, pb2, grpc_mod))
    return modules


# --------------------------------------------------------------------------
# server


class Server:
    def __init__(self, binary, socket_dir):
        self.socket_dir = socket_dir
        self.proc = subprocess.Popen(
            [binary, "--socket-dir", socket_dir, "--log-level", "warn"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines = queue.Queue()
        self.stderr = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr.append), daemon=True).start()

    @staticmethod
    def _pump(stream, sink):
        for line in stream:
            sink(line.rstrip("\n"))
        sink(None)

    def wait_ready(self):
        """Returns {"disk/v1": "/tmp/.../csi-proxy-disk-v1.sock", ...}."""
        endpoints = {}
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            left = deadline - time.monotonic()
            check(left > 0, f"server not ready after {START_TIMEOUT}s")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise Failure(f"server exited before ready (status {self.proc.wait()}): "
                              + " | ".join(l for l in self.stderr if l))
            if line.startswith("ready:"):
                check(line == f"ready: serving {len(endpoints)} endpoints",
                      f"ready line {line!r} does not match {len(endpoints)} endpoint lines")
                return endpoints
            gv, _, sock = line.partition(" ")
            check(sock and os.path.isabs(sock), f"unexpected server output {line!r}")
            endpoints[gv] = sock

    def stop(self):
        """SIGTERM; returns the exit status (None if it had to be killed)."""
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # only our own child, by pid
            self.proc.wait()
            return None


# --------------------------------------------------------------------------
# step 1: every method with an empty request


def sweep(grpc, modules, endpoints, channels):
    """Returns [(full method name, status code name)]."""
    results = []
    for key, pb2, grpc_mod in modules:
        for service in pb2.DESCRIPTOR.services_by_name.values():
            check(key in endpoints, f"no endpoint for {key} (service {service.full_name})")
            stub = getattr(grpc_mod, service.name + "Stub")(channels[key])
            for method in service.methods:
                request = getattr(pb2, method.input_type.name)()
                name = f"{key} {service.full_name}/{method.name}"
                try:
                    getattr(stub, method.name)(request, timeout=CALL_TIMEOUT)
                    code = grpc.StatusCode.OK
                    detail = ""
                except grpc.RpcError as err:
                    code = err.code()
                    detail = err.details() or ""
                results.append((name, code, detail))
    return results


# --------------------------------------------------------------------------
# step 2: staging through v1


def stage(grpc, mods, channels):
    disk_pb, disk_grpc = mods["disk/v1"]
    vol_pb, vol_grpc = mods["volume/v1"]
    fs_pb, fs_grpc = mods["filesystem/v1"]
    disk = disk_grpc.DiskStub(channels["disk/v1"])
    vol = vol_grpc.VolumeStub(channels["volume/v1"])
    fs = fs_grpc.FilesystemStub(channels["filesystem/v1"])
    t = CALL_TIMEOUT

    def call(step, fn, req):
        try:
            return fn(req, timeout=t)
        except grpc.RpcError as err:
            raise Failure(f"staging: {step}({_show(req)}) failed: {err.code().name}: {err.details()}")

    resp = call("ListDiskLocations", disk.ListDiskLocations, disk_pb.ListDiskLocationsRequest())
    hits = sorted(n for n, loc in resp.disk_locations.items() if loc.LUNID == STAGING_LUN)
    check(len(hits) == 1, f"staging: expected one disk on LUN {STAGING_LUN}, got {hits} "
          f"from {_show(resp)}")
    number = hits[0]
    loc = resp.disk_locations[number]
    log(f"  ListDiskLocations: {len(resp.disk_locations)} disks; LUN {STAGING_LUN} is disk {number} "
        f"(adapter {loc.Adapter!r}, bus {loc.Bus!r}, target {loc.Target!r})")

    call("PartitionDisk", disk.PartitionDisk, disk_pb.PartitionDiskRequest(disk_number=number))
    log(f"  PartitionDisk: disk {number} partitioned")

    resp = call("ListVolumesOnDisk", vol.ListVolumesOnDisk,
                vol_pb.ListVolumesOnDiskRequest(disk_number=number))
    check(len(resp.volume_ids) == 1,
          f"staging: ListVolumesOnDisk(disk {number}) gave {list(resp.volume_ids)}, expected one volume")
    volume_id = resp.volume_ids[0]
    log(f"  ListVolumesOnDisk: disk {number} has volume {volume_id}")

    resp = call("IsVolumeFormatted", vol.IsVolumeFormatted,
                vol_pb.IsVolumeFormattedRequest(volume_id=volume_id))
    check(not resp.formatted, f"staging: fresh volume {volume_id} reported as formatted")
    log(f"  IsVolumeFormatted: {volume_id} formatted={resp.formatted}")

    call("FormatVolume", vol.FormatVolume, vol_pb.FormatVolumeRequest(volume_id=volume_id))
    resp = call("IsVolumeFormatted", vol.IsVolumeFormatted,
                vol_pb.IsVolumeFormattedRequest(volume_id=volume_id))
    check(resp.formatted, f"staging: {volume_id} still unformatted after FormatVolume")
    log(f"  FormatVolume: {volume_id} formatted (IsVolumeFormatted now {resp.formatted})")

    call("Mkdir", fs.Mkdir, fs_pb.MkdirRequest(path=STAGING_PATH))
    resp = call("PathExists", fs.PathExists, fs_pb.PathExistsRequest(path=STAGING_PATH))
    check(resp.exists, f"staging: {STAGING_PATH} does not exist after Mkdir")
    log(f"  Mkdir: {STAGING_PATH} created (PathExists {resp.exists})")

    call("MountVolume", vol.MountVolume,
         vol_pb.MountVolumeRequest(volume_id=volume_id, target_path=STAGING_PATH))
    log(f"  MountVolume: {volume_id} mounted at {STAGING_PATH}")

    resp = call("GetVolumeIDFromTargetPath", vol.GetVolumeIDFromTargetPath,
                vol_pb.GetVolumeIDFromTargetPathRequest(target_path=STAGING_PATH))
    check(resp.volume_id == volume_id,
          f"staging: GetVolumeIDFromTargetPath({STAGING_PATH}) = {resp.volume_id!r}, "
          f"expected {volume_id!r}")
    log(f"  GetVolumeIDFromTargetPath: {STAGING_PATH} -> {resp.volume_id} (same id)")


def _show(msg):
    from google.protobuf import text_format
    return "{" + text_format.MessageToString(msg, as_one_line=True) + "}"


# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default=os.path.join(ROOT, "target", "debug", "csi-proxy-server"),
                    help="csi-proxy-server binary (default: target/debug/csi-proxy-server)")
    ap.add_argument("--proto", default=os.path.join(ROOT, "proto"), help="proto root (default: proto/)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every RPC's status in step 1")
    args = ap.parse_args()
    if not os.access(args.server, os.X_OK):
        print(f"server binary {args.server} not found; "
              "build it: cargo build --features server --bin csi-proxy-server", file=sys.stderr)
        return 2
    try:
        import grpc
    except ImportError:
        print("grpcio is missing: python3 -m pip install grpcio-tools", file=sys.stderr)
        return 2

    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="csi-independent-client-")
    socket_dir = os.path.join(tmp, "sockets")
    os.mkdir(socket_dir)
    server = None
    channels = {}
    try:
        modules = generate_stubs(args.proto, os.path.join(tmp, "stubs"))
        n_methods = sum(len(s.methods) for _, pb2, _ in modules
                        for s in pb2.DESCRIPTOR.services_by_name.values())
        n_services = sum(len(pb2.DESCRIPTOR.services_by_name) for _, pb2, _ in modules)
        log(f"stubs: {len(modules)} proto files, {n_services} services, {n_methods} methods")

        server = Server(args.server, socket_dir)
        endpoints = server.wait_ready()
        log(f"server: pid {server.proc.pid}, {len(endpoints)} endpoints in {socket_dir}")
        check(len(endpoints) == EXPECTED_ENDPOINTS,
              f"server reports {len(endpoints)} endpoints, expected {EXPECTED_ENDPOINTS}")
        for key, sock in endpoints.items():
            channels[key] = grpc.insecure_channel("unix:" + sock)

        # step 1
        results = sweep(grpc, modules, endpoints, channels)
        by_code = {}
        for _, code, _ in results:
            by_code[code.name] = by_code.get(code.name, 0) + 1
        for name, code, detail in results:
            if args.verbose or code not in (grpc.StatusCode.OK, grpc.StatusCode.UNKNOWN):
                log(f"  {name}: {code.name} {detail}")
        log("step 1: " + ", ".join(f"{k} {v}" for k, v in sorted(by_code.items())))
        unanswered = [(n, c, d) for n, c, d in results
                      if c in (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.DEADLINE_EXCEEDED,
                               grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)]
        check(not unanswered, "step 1: not answered: " +
              "; ".join(f"{n}: {c.name} {d}" for n, c, d in unanswered))
        # Control: the check above is only meaningful if this client does see
        # UNIMPLEMENTED when the server lacks a method.
        bogus = channels["disk/v1"].unary_unary("/v1.Disk/NoSuchMethod",
                                                request_serializer=lambda b: b,
                                                response_deserializer=lambda b: b)
        try:
            bogus(b"", timeout=CALL_TIMEOUT)
            code = grpc.StatusCode.OK
        except grpc.RpcError as err:
            code = err.code()
        check(code == grpc.StatusCode.UNIMPLEMENTED,
              f"step 1 control: /v1.Disk/NoSuchMethod gave {code.name}, expected UNIMPLEMENTED")
        log("step 1 control: /v1.Disk/NoSuchMethod -> UNIMPLEMENTED")
        check(len(results) == EXPECTED_RPCS,
              f"step 1: {len(results)} RPCs in the protos, expected {EXPECTED_RPCS}")
        answered = len(results)

        # step 2
        log("step 2: staging the blank disk on LUN 1 through v1")
        mods = {key: (pb2, g) for key, pb2, g in modules}
        stage(grpc, mods, channels)

        # step 3
        for ch in channels.values():
            ch.close()
        channels = {}
        status = server.stop()
        check(status == 0, f"step 3: server exit status after SIGTERM: {status}")
        left = os.listdir(socket_dir)
        check(not left, f"step 3: socket dir not empty after exit: {left}")
        log(f"step 3: SIGTERM -> exit 0, socket dir empty ({time.monotonic() - started:.1f}s in all)")

        log(f"independent client: {answered}/{EXPECTED_RPCS} RPCs answered (none UNIMPLEMENTED); "
            "staging flow ok")
        return 0
    except Failure as err:
        print(f"independent client: FAILED: {err}", file=sys.stderr)
        tail = [l for l in (server.stderr if server is not None else [])[-20:] if l]
        if tail:
            print("server stderr (last lines):\n  " + "\n  ".join(tail), file=sys.stderr)
        return 1
    finally:
        for ch in channels.values():
            ch.close()
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
