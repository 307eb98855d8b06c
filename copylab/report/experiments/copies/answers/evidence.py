"""Part A in numbers: the copies each variant removes, as user CPU and as the kernel's own counts."""

from __future__ import annotations

from copylab.declarations.schema import RECEIVE_MODES
from copylab.formatting import (
    code,
    fmt_interval,
    fmt_num,
    fmt_pct,
    fmt_size,
    fmt_span,
)
from copylab.report.experiments.copies.basics.queries import choose_focus, copied_fraction_range, role, zero_copy_counts
from copylab.report.prose import config_label
from copylab.report.results import Results, declared, measured, metric_rows, present, value
from copylab.roles import Role


def copy_evidence(results: Results, counted: Results | None = None) -> str:
    """Part A in numbers: the packing copy as sender user CPU, and the kernel's deferred zero-copy copy; the kernel's
    copies to user space from COUNTED, the sweep that counted them (by default RESULTS)."""
    focus = choose_focus(results)
    parts = []
    baseline, one_copy, zero_copy = (
        role(results, Role.TWO_COPY),
        role(results, Role.ONE_COPY),
        role(results, Role.ZERO_COPY),
    )
    if baseline and one_copy:
        two_user, one_user = (
            value(results, "snd_user_ns_per_byte", impl, "stream", focus.size, focus.threads, focus.pinning)
            for impl in (baseline, one_copy)
        )
        if two_user and one_user:
            parts.append(
                "The packing copy runs in user space, so it shows up as the sender's user CPU time. At "
                f"{fmt_size(focus.size)} ({config_label(focus.threads, focus.pinning)}) {code(baseline)} spent "
                f"{fmt_interval(*two_user, 'ns')} of user CPU per byte sent, {code(one_copy)} "
                f"{fmt_interval(*one_user, 'ns')} (mean [95% CI] over trials). "
                + (
                    "The difference is the eliminated copy."
                    if one_user[2] < two_user[1]
                    else "The intervals overlap, so this sweep cannot resolve the eliminated copy at this size."
                )
            )
    counts = zero_copy_counts(results.trials, zero_copy) if zero_copy else None
    if zero_copy and counts is None:
        parts.append("No zero-copy completions were recorded in this sweep.")
    elif zero_copy and counts is not None:
        text = (
            f"Of the {counts['zc_completed']:,.0f} zero-copy sends whose completion was read "
            f"({counts['trials']:.0f} trials), {counts['zc_copied']:,.0f} ({fmt_pct(counts['copied_fraction'])}) "
            f"carried {code('SO_EE_CODE_ZEROCOPY_COPIED')}"
        )
        span = copied_fraction_range(results, zero_copy)
        if span is not None:
            text += f" (per configuration {fmt_span(fmt_pct(span[0]), fmt_pct(span[1]))})"
        parts.append(
            text + f"; the sender read {fmt_num(counts['notifications_per_send'])} notifications per send (one per "
            f"{fmt_num(1 / counts['notifications_per_send'])} sends), because the kernel coalesces consecutive "
            "completions into one range."
        )
    for name in present(results):
        other = zero_copy_counts(results.trials, name) if name != zero_copy else None
        if declared(results, name).zero_copy and other is not None:
            parts.append(
                f"{code(name)}: of {other['zc_completed']:,.0f} zero-copy sends whose notification arrived "
                f"({other['trials']:.0f} trials), {other['zc_copied']:,.0f} ({fmt_pct(other['copied_fraction'])}) "
                "were reported copied by the kernel, with "
                f"{fmt_num(other['notifications_per_send'])} notifications per send."
            )
    parts.append(kernel_copy_evidence(counted or results))
    if counted is not None and counted is not results:
        parts.append(
            "These counts come from the report's counts sweep: counting slows the traffic it counts, so the sweep "
            "whose throughput this report compares ran without it (docs/method.md: Kernel copy counts via bpftrace)."
        )
    return "\n\n".join(part for part in parts if part)


def _uncounted(results: Results) -> str:
    """Why RESULTS holds no count of the kernel's copies: the reason its rows give, else why ./inv report's counts
    sweep did not run, else that the sweep ran without counting."""
    missing = results.trials.get("kernel_copy_missing")
    reasons = sorted({r for r in missing.dropna() if "rcv_kernel_copy_bytes" in r}) if missing is not None else []
    if reasons:
        return str(reasons[0]).split("rcv_kernel_copy_bytes: ", 1)[1].split(";")[0]
    skipped = results.manifest.not_measured.get("counts")
    if skipped:
        return f"the report's counts sweep did not run, because {skipped}"
    if not results.manifest.parameters.kernel_copies:
        return "the sweep ran without them (`--kernel-copies` asks for them)"
    return "the sweep predates that count"


def kernel_copy_evidence(results: Results) -> str:
    """The receiver's kernel-to-user copy, counted with BPF: bytes copied per byte delivered, by receive mode."""
    metric = "rcv_kernel_copies_per_byte"
    by_mode = {mode: metric_rows(results, metric, workload="stream", receive=mode) for mode in RECEIVE_MODES}
    if all(rows.empty for rows in by_mode.values()):
        return f"The kernel's copies to user space were not counted: {_uncounted(results)}."
    per_mode = {
        mode: fmt_span(fmt_num(rows["mean"].min()), fmt_num(rows["mean"].max()))
        for mode, rows in by_mode.items()
        if not rows.empty
    }
    text = (
        "Counted in the kernel (BPF tracepoint `skb:skb_copy_datagram_iovec`, the client's namespace, measured "
        "window only), the bytes copied to the receiver's user space per byte delivered were, over every "
        "implementation and size: " + "; ".join(f"receiving by {code(mode)} {span}" for mode, span in per_mode.items())
    )
    if not by_mode["truncate"].empty and float(by_mode["truncate"]["mean"].max()) == 0:
        text += ": receiving with `MSG_TRUNC`, the kernel copied nothing to user space"
    sender = measured(results, "snd_kernel_copies_per_byte")
    return text + ("." if sender else "; the sender's copies could not be counted here (they need function probes).")
