"""./inv report between two hosts (--server-host, --client-host) or on a fleet of pairs (--fleet): its options
checked, then the study run there (copylab.study.link, copylab.study.fleet)."""

from __future__ import annotations

from pathlib import Path

from copylab.error_catalogue import FLEET_WITH_HOSTS, HOSTS_GO_TOGETHER, HOSTS_WITH_DATA, REPORT_SSH_CONFIG_UNREADABLE
from copylab.paths import REPORT

HOST_OPTIONS = ("server_host", "client_host", "server_address", "ssh_config", "fleet")


def asked(given: dict[str, str | None]) -> bool:
    """Whether the report's options ask for hosts (two, or a fleet)."""
    return any(given.get(name) is not None for name in HOST_OPTIONS)


def report_on_hosts(given: dict[str, str | None], budget_s: float, text: dict[str, str]) -> int:
    """The report between two hosts, or the fleet's comparison; GIVEN: the report's options."""
    from copylab.study import pipeline
    from copylab.study.fleet import Study, report_fleet
    from copylab.study.link import Link, checked

    if given.get("data") is not None or given.get("more") is not None:
        raise HOSTS_WITH_DATA.error()
    ssh_config = given.get("ssh_config")
    if ssh_config is not None and not Path(ssh_config).is_file():
        raise REPORT_SSH_CONFIG_UNREADABLE.error(path=ssh_config)
    fleet = given.get("fleet")
    if fleet is not None:
        if any(given.get(name) for name in ("server_host", "client_host", "server_address")):
            raise FLEET_WITH_HOSTS.error()
        pdf = report_fleet(Path(fleet), ssh_config, Study(budget_s))
        print(f"fleet report: {pdf}")
        return 0
    server, client = given.get("server_host"), given.get("client_host")
    if server is None or client is None:
        raise HOSTS_GO_TOGETHER.error()
    link = checked(Link(server, client, given.get("server_address"), ssh_config))
    stores = pipeline.measure(budget_s, link)
    pipeline.analyse(stores)
    pdf = pipeline.render(stores, REPORT / "report.pdf", **text)
    print(f"report: {pdf} (and as a web page: {pdf.with_suffix('.html')}), for the link {link.name()}")
    return 0
