"""What a host over SSH is, as the manifest records it: its CPU, kernel and memory, and the network card that
carries the sweep's traffic there, with its driver (ethtool -i), MTU and offloads (ethtool -k)."""

from __future__ import annotations

from collections.abc import Callable

from copylab.record.manifest import Host, Link
from copylab.testbeds import congestion

# The offloads that decide whether MSG_ZEROCOPY pages reach the NIC uncopied, as ethtool -k names them.
OFFLOADS = (
    "scatter-gather",
    "tx-checksumming",
    "tcp-segmentation-offload",
    "generic-segmentation-offload",
    "generic-receive-offload",
    "large-receive-offload",
)


def _script(role: str, address: str) -> str:
    """A shell script printing KEY=VALUE lines about the host, and offload:NAME=STATE lines about the interface
    that holds ADDRESS (the server's end) or routes to it (the client's)."""
    interface = (
        f"ip -o addr show to {address} | awk '{{print $2; exit}}'"
        if role == "server"
        else f"ip -o route get {address} | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p'"
    )
    return f"""
echo "hostname=$(hostname)"; echo "kernel=$(uname -r)"
echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "cores=$(nproc)"; echo "memory_kb=$(sed -n 's/^MemTotal: *\\([0-9]*\\) kB/\\1/p' /proc/meminfo)"
v=$(systemd-detect-virt 2>/dev/null)
[ -n "$v" ] || {{ grep -qw hypervisor /proc/cpuinfo && v="unknown hypervisor" || v="none detected"; }}
echo "virt=$v"
echo "congestion=$(cat {congestion.DEFAULT} 2>/dev/null)"
i=$({interface}); echo "interface=$i"
[ -n "$i" ] || exit 0
echo "mtu=$(cat /sys/class/net/$i/mtu)"
if command -v ethtool >/dev/null; then
  echo "driver=$(ethtool -i $i 2>/dev/null | sed -n 's/^driver: //p')"
  ethtool -k $i 2>/dev/null | sed -n 's/^\\([a-z-]*\\): \\(.*\\)/offload:\\1=\\2/p'
else
  echo "driver=$(basename "$(readlink /sys/class/net/$i/device/driver 2>/dev/null)" 2>/dev/null)"
fi
"""


def describe_host(run_script: Callable[[str], str], role: str, address: str) -> tuple[Host, Link | None]:
    """The host RUN_SCRIPT runs a shell script on, and the interface that carries ADDRESS's traffic there (None:
    no interface does)."""
    lines = run_script(_script(role, address)).splitlines()
    values = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("offload:"))
    offloads = {
        key.removeprefix("offload:"): value
        for key, value in (line.split("=", 1) for line in lines if line.startswith("offload:"))
        if key.removeprefix("offload:") in OFFLOADS
    }
    memory_kb = values.get("memory_kb", "")
    host = Host(
        hostname=values.get("hostname", "unknown"),
        kernel=values.get("kernel", "unknown"),
        cpu_model=values.get("cpu") or "unknown",
        cores=int(values.get("cores") or 0),
        memory_gib=round(int(memory_kb) / 2**20, 1) if memory_kb.isdigit() else float("nan"),
        virtualization=values.get("virt", "unknown"),
        congestion_default=values.get("congestion") or None,
    )
    if not values.get("interface"):
        return host, None
    mtu = values.get("mtu", "")
    link = Link(values["interface"], values.get("driver") or None, int(mtu) if mtu.isdigit() else None, offloads)
    return host, link
