#!/usr/bin/env python3
"""Play kubelet against csi-node-plugin, with the CSI spec's own csi.proto.

The client side shares nothing with the Rust code: its stubs are compiled at
run time (grpcio-tools) from the CSI specification's csi.proto, not from the
plugin's copy. The plugin talks to a csi-proxy-server this script starts.

    cargo build --features server --bin csi-proxy-server
    cargo build -p csi-node-plugin
    python3 -m pip install grpcio-tools      # if missing; brings grpcio
    scripts/csi-kubelet.py [--plugin BIN] [--server BIN] [--csi-proto FILE]

Where the spec's csi.proto comes from: --csi-proto FILE, else the copy of the
spec shipped in the crates.io package k8s-csi 0.4.0 (CSI v1.3.0's csi.proto,
as proto/csi/v1.3.0/api.proto), fetched with `cargo fetch` (Debian bookworm
has no package with csi.proto, nor does PyPI). Every field and RPC the plugin
serves is in v1.3.0 with the same numbers as in 1.9.

Checks, one line each: plugin info, capabilities, probe, node info; stage,
publish, stats, expand, unpublish, unstage of a disk volume (LUN 1 of the
simulated node), each twice; the same for an SMB volume and for two SMB
volumes on one share (the second keeps working after the first is gone);
every INVALID_ARGUMENT and NOT_FOUND case; a normal volume condition in
each stats reply, and its bytes read by the plugin itself (--local-root, the
simulated C: volume's directory): for the disk and for each share, what
statvfs gives there; the metrics at --metrics-address; Probe not ready once the
proxy is stopped; the SMB password never in the plugin's log; after SIGTERM
the plugin exits 0 and its socket is gone.
Ends with `csi-kubelet: N passed, 0 failed`; exit 1 on a failure, 2 on a
usage or environment problem.
"""

import argparse
import glob
import importlib
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRIVER = "windows.csi-node-plugin.example"
NODE_ID = "kubelet-test-node"
KUBELET = "c:\\var\\lib\\kubelet"
SMB_USER, SMB_PASSWORD = "smbuser", "Sm8-Passw0rd!"
TIMEOUT = 30.0  # seconds per call (a disk is partitioned and formatted)

# Stock channel options: gRPC C-core sends the socket path as :authority,
# which h2 (under tonic) would refuse; the plugin answers it because it
# serves through csi_proxy_client::authority::LocalAuthority.
CHANNEL_OPTIONS = []

PASSED = []


def check(ok, what):
    if not ok:
        print(f"FAIL: {what}")
        print(f"csi-kubelet: {len(PASSED)} passed, 1 failed")
        sys.exit(1)
    PASSED.append(what)
    print(f"ok   {what}")


def fetch_spec_proto(workdir):
    """The CSI spec's csi.proto from the crates.io package k8s-csi 0.4.0."""
    project = os.path.join(workdir, "fetch")
    os.makedirs(os.path.join(project, "src"))
    with open(os.path.join(project, "Cargo.toml"), "w") as f:
        f.write('[package]\nname = "csi-spec-fetch"\nversion = "0.0.0"\nedition = "2021"\n\n'
                '[dependencies]\nk8s-csi = "=0.4.0"\n\n[workspace]\n')
    open(os.path.join(project, "src", "lib.rs"), "w").close()
    subprocess.run(["cargo", "fetch", "--quiet"], cwd=project, check=True)
    cargo_home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    crates = glob.glob(os.path.join(cargo_home, "registry", "cache", "*", "k8s-csi-0.4.0.crate"))
    if not crates:
        sys.exit("k8s-csi-0.4.0.crate not in the cargo cache after cargo fetch")
    member = "k8s-csi-0.4.0/proto/csi/v1.3.0/api.proto"
    with tarfile.open(crates[0]) as tar:
        data = tar.extractfile(member).read()
    path = os.path.join(workdir, "spec-csi.proto")
    with open(path, "wb") as f:
        f.write(data)
    return path


def compile_stubs(proto, workdir):
    from grpc_tools import protoc
    import grpc_tools
    src = os.path.join(workdir, "proto")
    out = os.path.join(workdir, "stubs")
    os.makedirs(src)
    os.makedirs(out)
    shutil.copy(proto, os.path.join(src, "csi.proto"))
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    rc = protoc.main(["protoc", f"-I{src}", f"-I{include}", f"--python_out={out}",
                      f"--grpc_python_out={out}", "csi.proto"])
    if rc != 0:
        sys.exit(f"protoc failed on {proto}")
    sys.path.insert(0, out)
    return importlib.import_module("csi_pb2"), importlib.import_module("csi_pb2_grpc")


class Process:
    """A child process with its output in a file."""

    def __init__(self, name, argv, workdir):
        self.name = name
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, text=True)

    def output(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def wait_for(self, what, ready, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            if self.proc.poll() is not None:
                sys.exit(f"{self.name} exited ({self.proc.returncode}) before {what}:\n{self.output()}")
            time.sleep(0.05)
        sys.exit(f"{self.name}: no {what} after {timeout}s:\n{self.output()}")

    def stop(self, timeout=10.0):
        """SIGTERM; the exit status, or None if it had to be killed."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return None
        return self.proc.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plugin", default=os.path.join(ROOT, "target/debug/csi-node-plugin"))
    ap.add_argument("--server", default=os.path.join(ROOT, "target/debug/csi-proxy-server"))
    ap.add_argument("--csi-proto", help="the CSI spec's csi.proto (default: fetched, see above)")
    args = ap.parse_args()
    for binary in (args.plugin, args.server):
        if not os.access(binary, os.X_OK):
            print(f"not an executable: {binary} (cargo build first)", file=sys.stderr)
            sys.exit(2)
    try:
        import grpc
    except ImportError:
        print("needs grpcio-tools: python3 -m pip install grpcio-tools", file=sys.stderr)
        sys.exit(2)

    with tempfile.TemporaryDirectory(prefix="csi-kubelet-") as work:
        proto = args.csi_proto or fetch_spec_proto(work)
        pb, rpc = compile_stubs(proto, work)
        print(f"stubs from {proto if args.csi_proto else 'k8s-csi 0.4.0: CSI v1.3.0 csi.proto'}")

        proxy_dir = os.path.join(work, "proxy")
        sandbox = os.path.join(work, "sandbox")
        os.makedirs(proxy_dir)
        server = Process("csi-proxy-server", [args.server, "--socket-dir", proxy_dir,
                                              "--sandbox", sandbox, "--log-level", "warn"], work)
        plugin = None
        try:
            server.wait_for("ready line", lambda: "ready:" in server.output())
            socket = os.path.join(work, "csi.sock")
            metrics = f"127.0.0.1:{free_port()}"
            # The simulated C: volume's directory (the one holding kubelet's):
            # where the plugin reads the node's paths itself, as on Windows.
            c_drive = next(os.path.dirname(os.path.dirname(os.path.dirname(p))) for p in
                           glob.glob(os.path.join(sandbox, "volumes", "*", "var", "lib", "kubelet")))
            plugin = Process("csi-node-plugin", [
                args.plugin, "--endpoint", f"unix://{socket}",
                "--csi-proxy-socket-dir", proxy_dir, "--node-id", NODE_ID, "--local-root", c_drive,
                "--state-dir", os.path.join(work, "state"), "--metrics-address", metrics], work)
            plugin.wait_for("socket", lambda: os.path.exists(socket))
            channel = grpc.insecure_channel(f"unix:{socket}", options=CHANNEL_OPTIONS)
            grpc.channel_ready_future(channel).result(timeout=10)
            run_checks(grpc, pb, rpc, channel, sandbox)

            import urllib.request
            with urllib.request.urlopen(f"http://{metrics}/metrics", timeout=10) as reply:
                text = reply.read().decode()
            check('csi_calls_total{method="NodeStageVolume",code="Ok"}' in text
                  and 'csi_node_operations_total{operation="stage_disk",result="ok"}' in text,
                  "--metrics-address serves the CSI calls and node operations")
            # The proxy goes away: Probe must say so, for the livenessprobe sidecar.
            server.stop()
            probe = rpc.IdentityStub(channel).Probe(pb.ProbeRequest(), timeout=TIMEOUT)
            check(probe.HasField("ready") and not probe.ready.value,
                  "Probe: not ready once the proxy is gone")
            channel.close()

            log = plugin.output()
            check(SMB_PASSWORD not in log, "the SMB password is not in the plugin's log")
            check("NodeStageVolume" in log and "pv-disk" in log,
                  "the plugin logs each CSI call with its volume id")
            code = plugin.stop()
            check(code == 0, f"the plugin exits 0 on SIGTERM (got {code})")
            check(not os.path.exists(socket), "the plugin's socket is removed after SIGTERM")
        finally:
            if plugin:
                plugin.stop()
            server.stop()
    print(f"csi-kubelet: {len(PASSED)} passed, 0 failed")


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_checks(grpc, pb, rpc, channel, sandbox):
    identity = rpc.IdentityStub(channel)
    node = rpc.NodeStub(channel)
    OK = grpc.StatusCode.OK

    def call(method, request):
        """The status code and reply (None on error) of one call."""
        try:
            return OK, method(request, timeout=TIMEOUT)
        except grpc.RpcError as e:
            return e.code(), e.details()

    def expect(code, method, request, what):
        got, reply = call(method, request)
        check(got == code, f"{what}: {code.name}" + ("" if got == code else f" (got {got.name}: {reply})"))
        return reply

    # --- identity and node info
    info = identity.GetPluginInfo(pb.GetPluginInfoRequest(), timeout=TIMEOUT)
    check(info.name == DRIVER and info.vendor_version, f"GetPluginInfo: {info.name} {info.vendor_version}")
    caps = identity.GetPluginCapabilities(pb.GetPluginCapabilitiesRequest(), timeout=TIMEOUT)
    check(all(c.WhichOneof("type") for c in caps.capabilities), "GetPluginCapabilities")
    probe = identity.Probe(pb.ProbeRequest(), timeout=TIMEOUT)
    check(not probe.HasField("ready") or probe.ready.value, "Probe: ready")
    caps = node.NodeGetCapabilities(pb.NodeGetCapabilitiesRequest(), timeout=TIMEOUT)
    names = sorted(pb.NodeServiceCapability.RPC.Type.Name(c.rpc.type) for c in caps.capabilities)
    check(names == ["EXPAND_VOLUME", "GET_VOLUME_STATS", "STAGE_UNSTAGE_VOLUME", "VOLUME_CONDITION"],
          f"NodeGetCapabilities: {names}")
    got = node.NodeGetInfo(pb.NodeGetInfoRequest(), timeout=TIMEOUT).node_id
    check(got == NODE_ID, f"NodeGetInfo: node id {got}")

    # --- requests as kubelet makes them
    Mode = pb.VolumeCapability.AccessMode

    def capability(mode=Mode.SINGLE_NODE_WRITER, block=False):
        cap = pb.VolumeCapability(access_mode=pb.VolumeCapability.AccessMode(mode=mode))
        if block:
            cap.block.SetInParent()
        else:
            cap.mount.SetInParent()
        return cap

    def staging(pv):
        return f"{KUBELET}\\plugins\\kubernetes.io\\csi\\{DRIVER}\\{pv}\\globalmount"

    def target(pv):
        return f"{KUBELET}\\pods\\uid-{pv}\\volumes\\kubernetes.io~csi\\{pv}\\mount"

    def disk(pv, lun):
        return dict(volume_id=pv, publish_context={"lun": str(lun)},
                    volume_capability=capability())

    def smb(pv, source):
        return dict(volume_id=pv, volume_context={"source": source},
                    secrets={"username": SMB_USER, "password": SMB_PASSWORD, "domain": "CORP"},
                    volume_capability=capability(Mode.MULTI_NODE_MULTI_WRITER))

    def stage(pv, volume, twice=True):
        for n in range(2 if twice else 1):
            expect(OK, node.NodeStageVolume, pb.NodeStageVolumeRequest(
                staging_target_path=staging(pv), **volume), f"{pv}: NodeStageVolume #{n + 1}")

    def publish(pv, volume, twice=True):
        keep = {k: v for k, v in volume.items() if k != "secrets"}
        for n in range(2 if twice else 1):
            expect(OK, node.NodePublishVolume, pb.NodePublishVolumeRequest(
                staging_target_path=staging(pv), target_path=target(pv), **keep),
                f"{pv}: NodePublishVolume #{n + 1}")

    def stats(pv, is_disk):
        # The plugin reads the space itself (--local-root: the simulated C:
        # volume's directory, whose links the OS follows, as Windows follows
        # a mount point or an SMB link): what statvfs gives for the volume's
        # or the share's directory, not the proxy's figures (which know no
        # share's space at all).
        where = sandbox if is_disk else os.path.join(sandbox, "smb", "fileserver", "share")
        for n in range(2):
            reply = expect(OK, node.NodeGetVolumeStats, pb.NodeGetVolumeStatsRequest(
                volume_id=pv, volume_path=target(pv)), f"{pv}: NodeGetVolumeStats #{n + 1}")
            check(reply.HasField("volume_condition") and not reply.volume_condition.abnormal,
                  f"{pv}: volume condition normal ({reply.volume_condition.message!r})")
            usage = [u for u in reply.usage if u.unit == pb.VolumeUsage.BYTES]
            fs = os.statvfs(where)
            total, free, available = (fs.f_blocks * fs.f_frsize, fs.f_bfree * fs.f_frsize,
                                      fs.f_bavail * fs.f_frsize)
            # Free space may move between the two reads; 256 MiB of slack.
            near = lambda a, b: abs(a - b) < 256 << 20
            check(len(usage) == 1 and usage[0].total == total
                  and near(usage[0].used, total - free) and near(usage[0].available, available),
                  f"{pv}: usage in bytes read locally, as statvfs of {'the volume' if is_disk else 'the share'} "
                  f"({usage[0].total if usage else None} total, {total} expected)")

    def expand(pv, is_disk):
        for n in range(2):
            reply = expect(OK, node.NodeExpandVolume, pb.NodeExpandVolumeRequest(
                volume_id=pv, volume_path=target(pv), staging_target_path=staging(pv),
                capacity_range=pb.CapacityRange(required_bytes=1 << 30)),
                f"{pv}: NodeExpandVolume #{n + 1}")
            if is_disk:
                check(reply.capacity_bytes >= 1 << 30, f"{pv}: capacity {reply.capacity_bytes} bytes")

    def unpublish(pv):
        for n in range(2):
            expect(OK, node.NodeUnpublishVolume, pb.NodeUnpublishVolumeRequest(
                volume_id=pv, target_path=target(pv)), f"{pv}: NodeUnpublishVolume #{n + 1}")

    def unstage(pv):
        for n in range(2):
            expect(OK, node.NodeUnstageVolume, pb.NodeUnstageVolumeRequest(
                volume_id=pv, staging_target_path=staging(pv)), f"{pv}: NodeUnstageVolume #{n + 1}")
        expect(grpc.StatusCode.NOT_FOUND, node.NodeGetVolumeStats, pb.NodeGetVolumeStatsRequest(
            volume_id=pv, volume_path=staging(pv)), f"{pv}: stats after unstage")

    def life_cycle(pv, volume, is_disk):
        stage(pv, volume)
        publish(pv, volume)
        stats(pv, is_disk)
        expand(pv, is_disk)
        unpublish(pv)
        unstage(pv)

    # --- a disk (LUN 1 of the simulated node: blank, 32 GiB)
    life_cycle("pv-disk", disk("pv-disk", 1), True)

    # --- SMB: the controller made one directory per volume on the share
    share = os.path.join(sandbox, "smb", "fileserver", "share")
    for d in ("a", "b", "c"):
        os.makedirs(os.path.join(share, d), exist_ok=True)
    life_cycle("pv-smb", smb("pv-smb", "\\\\fileserver\\share\\a"), False)

    # --- two SMB volumes on one share: the first going must not break the second
    b, c = smb("pv-b", "\\\\fileserver\\share\\b"), smb("pv-c", "\\\\fileserver\\share\\c")
    stage("pv-b", b)
    stage("pv-c", c)
    publish("pv-b", b)
    publish("pv-c", c)
    unpublish("pv-b")
    unstage("pv-b")
    stats("pv-c", False)
    unpublish("pv-c")
    unstage("pv-c")

    # --- INVALID_ARGUMENT
    BAD = grpc.StatusCode.INVALID_ARGUMENT
    good = dict(disk("pv-x", 2), staging_target_path=staging("pv-x"))
    for what, change in [
        ("no volume id", dict(volume_id="")),
        ("no staging path", dict(staging_target_path="")),
        ("no capability", dict(volume_capability=None)),
        ("block access type", dict(volume_capability=capability(block=True))),
        ("multi-node access to a disk", dict(volume_capability=capability(Mode.MULTI_NODE_MULTI_WRITER))),
        ("no lun and no source", dict(publish_context={})),
    ]:
        fields = {k: v for k, v in dict(good, **change).items() if v is not None}
        expect(BAD, node.NodeStageVolume, pb.NodeStageVolumeRequest(**fields), f"NodeStageVolume, {what}")
    pub = dict(volume_id="pv-x", publish_context={"lun": "2"}, staging_target_path=staging("pv-x"),
               target_path=target("pv-x"), volume_capability=capability())
    for what, change in [
        ("no volume id", dict(volume_id="")),
        ("no staging path", dict(staging_target_path="")),
        ("no target path", dict(target_path="")),
        ("no capability", dict(volume_capability=None)),
        ("block access type", dict(volume_capability=capability(block=True))),
    ]:
        fields = {k: v for k, v in dict(pub, **change).items() if v is not None}
        expect(BAD, node.NodePublishVolume, pb.NodePublishVolumeRequest(**fields), f"NodePublishVolume, {what}")
    expect(BAD, node.NodeUnpublishVolume, pb.NodeUnpublishVolumeRequest(volume_id="pv-x"),
           "NodeUnpublishVolume, no target path")
    expect(BAD, node.NodeUnpublishVolume, pb.NodeUnpublishVolumeRequest(target_path=target("pv-x")),
           "NodeUnpublishVolume, no volume id")
    expect(BAD, node.NodeUnstageVolume, pb.NodeUnstageVolumeRequest(volume_id="pv-x"),
           "NodeUnstageVolume, no staging path")
    expect(BAD, node.NodeUnstageVolume, pb.NodeUnstageVolumeRequest(staging_target_path=staging("pv-x")),
           "NodeUnstageVolume, no volume id")
    expect(BAD, node.NodeGetVolumeStats, pb.NodeGetVolumeStatsRequest(volume_path=target("pv-x")),
           "NodeGetVolumeStats, no volume id")
    expect(BAD, node.NodeGetVolumeStats, pb.NodeGetVolumeStatsRequest(volume_id="pv-x"),
           "NodeGetVolumeStats, no volume path")
    expect(BAD, node.NodeExpandVolume, pb.NodeExpandVolumeRequest(
        volume_id="pv-x", volume_path=target("pv-x"), volume_capability=capability(block=True)),
        "NodeExpandVolume, block access type")
    expect(BAD, node.NodeExpandVolume, pb.NodeExpandVolumeRequest(volume_path=target("pv-x")),
           "NodeExpandVolume, no volume id")

    # --- NOT_FOUND
    GONE = grpc.StatusCode.NOT_FOUND
    expect(GONE, node.NodeGetVolumeStats, pb.NodeGetVolumeStatsRequest(
        volume_id="pv-x", volume_path=target("pv-x")), "NodeGetVolumeStats, no volume at the path")
    expect(GONE, node.NodeExpandVolume, pb.NodeExpandVolumeRequest(
        volume_id="pv-x", volume_path=target("pv-x")), "NodeExpandVolume, no volume at the path")


if __name__ == "__main__":
    main()
