#!/usr/bin/env python3
"""Turns one bench/run's raw results into latest.json and latest.md.

Every figure comes from the files of this run; the report is stamped with the
kernel, CPU model, core count and date. Ratios, not absolute times, are what a
regression check should compare (the machine is noisy)."""
import datetime
import glob
import json
import os
import platform
import re
import shutil
import sys

import ratios


def machine():
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "kernel": platform.release(),
        "cpu": cpu,
        "cores": os.cpu_count(),
    }


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def ms(us):
    return f"{us / 1000:.2f} ms"


def launch_table(launch, title):
    cases = {c["name"]: c for c in launch.get("cases", [])}
    floor = cases.get("floor", {}).get("median_us") or cases.get("python3-bare", {}).get("median_us")
    bwrap = cases.get("bwrap", {}).get("median_us")
    bwrap_tree = cases.get("bwrap-strict-tree", {}).get("median_us")
    lines = [f"## {title}", "",
             f"{launch.get('iterations')} launches per case, interleaved.", "",
             "| case | median | p99 | × floor | × bwrap | × bwrap, strict's tree "
             "| max RSS (wait4: launcher or a reaped descendant) | failures |",
             "|---|---|---|---|---|---|---|---|"]
    for c in launch.get("cases", []):
        med = c["median_us"]
        rf = f"{med / floor:.2f}×" if floor else "–"
        rb = f"{med / bwrap:.2f}×" if bwrap else "–"
        rt = f"{med / bwrap_tree:.2f}×" if bwrap_tree else "–"
        lines.append(f"| `{c['name']}` | {ms(med)} | {ms(c['p99_us'])} | {rf} | {rb} | {rt} | "
                     f"{c.get('max_rss_kib', 0) / 1024:.1f} MiB | {c['failures']} |")
    if bwrap and bwrap_tree:
        lines += ["", "`bwrap` binds whole /usr, /bin, /lib, /lib64 and /etc; `bwrap-strict-tree` "
                  "(`bench/bwrap_args.py`) builds the tree the compiled strict plan describes: the same "
                  "read-only binds (strict binds single /etc files), tmpfs sizes, /dev/shm, masked /proc "
                  "paths, hostname and working directory, with `--unshare-all --die-with-parent "
                  "--new-session --proc --dev`. That is issue 4's \"bwrap with equivalent isolation\". "
                  "bwrap has no Landlock, cgroup or rlimit options, so neither case applies those layers "
                  "(the enforcer does)."]
    iso, enforce = cases.get("isolation-floor"), cases.get("cocoon-enforce")
    if iso and enforce:
        lines += ["", "`isolation-floor` is `bench/isolation_floor.cc`: the enforcer's isolation sequence on the "
                  "tree the compiled strict plan describes (same namespaces, mounts, cgroups, Landlock rules and "
                  "seccomp program) with nothing else: no policy, cache, plan, output capture or Outcome. "
                  f"`cocoon-enforce` spends {ms(enforce['median_us'] - iso['median_us'])} more at the median."]
    bare, py_floor, py_run = (cases.get(name) for name in ("python3-bare", "python3-isolation-floor",
                                                           "cocoon-run-python"))
    if bare and py_floor and py_run:
        lines += ["", "`python3-isolation-floor` runs the same python3 under `bench/isolation_floor` on strict's "
                  f"tree: {py_floor['median_us'] / bare['median_us']:.2f}× bare python3 before Cocoon does "
                  "anything of its own (issue 6 asks `cocoon run -r python` for 1.3×); `cocoon-run-python` "
                  f"spends {ms(py_run['median_us'] - py_floor['median_us'])} more at the median."]
    lines.append("")
    return lines


def mcp_table(mcp):
    lines = ["## Agents: MCP execute_code round trip vs cocoon run", "",
             f"{mcp.get('iterations')} of each, interleaved; the round trip is timed from the client "
             "(request line written to response line read) against one long-lived `cocoon mcp`.", "",
             "| case | median | p90 | p99 | failures |", "|---|---|---|---|---|"]
    for c in mcp.get("cases", []):
        lines.append(f"| `{c['name']}` | {ms(c['median_us'])} | {ms(c['p90_us'])} | {ms(c['p99_us'])} | "
                     f"{c['failures']} |")
    d = mcp.get("difference", {})
    if d:
        lines += ["", f"MCP minus `cocoon run`: median {ms(d['median_us'])}, p99 {ms(d['p99_us'])} "
                      f"(budget {ms(d.get('budget_us', 3000))})."]
    lines.append("")
    return lines


def gbench_table(name, data):
    lines = [f"## {name}", "", "| benchmark | time | counters |", "|---|---|---|"]
    for b in data.get("benchmarks", []):
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        skip = {"name", "run_name", "run_type", "repetitions", "repetition_index", "threads",
                "iterations", "real_time", "cpu_time", "time_unit", "family_index",
                "per_family_instance_index", "aggregate_name", "aggregate_unit", "label"}
        counters = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                             for k, v in b.items() if k not in skip)
        if b.get("label"):
            counters = (b["label"] + "; " + counters).strip("; ")
        lines.append(f"| `{b['name']}` | {b['real_time']:.4g} {b.get('time_unit', 'ns')} | {counters} |")
    lines.append("")
    return lines


def ratio(value, base):
    return f"{value / base:.2f}×" if value and base else "–"


def seccomp_runtime_table(data, sidecars):
    """Runtime ns per call under each filter, with its static shape."""
    cases = data.get("cases", [])
    none = next((c for c in cases if c["name"] == "none"), {})
    lines = ["## Seccomp runtime cost", "",
             f"Each case: a forked child sets no_new_privs and installs the filter as the enforcer does "
             f"(flags 0), checks the calls succeed, then times {data.get('batches')} batches of "
             f"{data.get('iterations')} `getpid` and {data.get('open_close_pairs')} `openat(/dev/null)`+`close` "
             f"pairs; {data.get('rounds')} rounds, cases interleaved; median batch quoted. "
             f"Kernel speculative-store-bypass state: {data.get('spec_store_bypass', '?')}.", "",
             "CPU time of the calls (CLOCK_THREAD_CPUTIME_ID). *insns run* is what Cocoon's userspace model of the "
             "kernel interpreter executes for each call; *kernel cache* says whether the kernel's seccomp action "
             "cache (Linux 5.11+) answers the call from its bitmap without running the program.", "",
             "`ioctl(FIONBIO)` is an extra call, not in issue 7: strict's argument rule on `ioctl` keeps it out "
             "of the cache, so it shows what running the program costs.", "",
             "| filter | BPF insns | worst path to ALLOW | insns run getpid / openat / close / ioctl | kernel cache | "
             "ns per getpid | × none | ns per open+close | × none | ns per ioctl | × none | "
             "libseccomp reference (insns, worst) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for c in cases:
        acts = c.get("actions", {})
        ex = c.get("executed", {})
        run = " / ".join(str(ex.get(k, "–")) for k in ("getpid", "openat", "close", "ioctl")) if ex else "–"
        gp = c.get("getpid_ns")
        oc = c.get("open_close_ns")
        gp_s = f"{gp:.1f}" if gp else "not timed"
        oc_s = f"{oc:.0f}" if oc else "not timed"
        io = c.get("ioctl_ns")
        io_s = f"{io:.1f}" if io else "not timed"
        side = sidecars.get(c["name"], {}).get("stats", {}).get("libseccomp")
        ref = f"{side['instructions']}, {side['worst_case_allow']}" if side else "–"
        kc = c.get("kernel_cached", {})
        cached = ("–" if not kc else "all calls" if all(kc.values())
                  else "all but " + ", ".join(k for k, v in kc.items() if not v))
        lines.append(f"| `{c['name']}` | {c.get('instructions', 0)} | {c.get('worst_case_allow', 0)} | {run} | "
                     f"{cached} | "
                     f"{gp_s} | {ratio(gp, none.get('getpid_ns'))} | {oc_s} | "
                     f"{ratio(oc, none.get('open_close_ns'))} | {io_s} | {ratio(io, none.get('ioctl_ns'))} | {ref} |")
        refused = {k: v for k, v in acts.items() if v != "allow"}
        if refused:
            notes.append(f"`{c['name']}` does not allow "
                         + ", ".join(f"`{k}` (returns {v})" for k, v in refused.items())
                         + ": those calls were not timed.")
        if c.get("error"):
            notes.append(f"`{c['name']}`: {c['error']}")
    lines.append("")
    if notes:
        lines += [f"- {n}" for n in notes] + [""]
    return lines


def kib(v):
    return f"{v / 1024:.1f} MiB" if isinstance(v, (int, float)) and v >= 0 else "–"


def memory_table(data, flood_bytes):
    lines = ["## Memory: supervisor peak RSS", "",
             f"{data.get('runs')} runs per case, interleaved. *supervisor* is the `cocoon` process's own VmHWM, "
             "read at its PTRACE_EVENT_EXIT stop (before the kernel frees its memory); *wait4 ru_maxrss* is the "
             "maximum of the supervisor's peak and of every descendant it reaped (the sandbox included), as "
             "wait4 reports it; *sandbox* is the Outcome's cgroup peak."
             + (f" The flood writes {flood_bytes / (1 << 20):.0f} MiB of zeros to stdout." if flood_bytes else ""),
             "",
             "| case | supervisor peak (median / max) | wait4 ru_maxrss (max) | sandbox peak | stdout written | "
             "captured | truncated | exit | wall (median) | failures |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    mib = lambda v: f"{v / (1 << 20):.2f} MiB" if isinstance(v, int) else "–"  # noqa: E731
    for c in data.get("cases", []):
        o = c.get("outcome", {})
        lines.append(
            f"| `{c['name']}` | {kib(c['supervisor_hwm_kib_median'])} / {kib(c['supervisor_hwm_kib_max'])} | "
            f"{kib(c['wait4_maxrss_kib_max'])} | {kib(o.get('peak_mem_kib', -1))} | "
            f"{mib(o.get('stdout_bytes'))} | {mib(o.get('stdout_captured'))} | "
            f"{ {True: 'yes', False: 'no'}.get(o.get('stdout_truncated'), '–')} | {c.get('exit_status')} | {c['wall_ms_median']:.0f} ms | "
            f"{c['failures']} |")
    lines.append("")
    return lines


def breakout_table(data):
    """Scan vs find side by side, from breakout_bench's medians."""
    rows = {}
    for b in data.get("benchmarks", []):
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        m = re.match(r"(BM_\w+)/(\d+)", b.get("run_name", b["name"]))
        if m:
            rows.setdefault(int(m.group(2)), {})[m.group(1)] = b["real_time"]
    lines = ["## Breakout scan vs find", "",
             "Same tree, same checks (symlinks, devices, fifos, sockets, hardlinks, setuid/setgid), warm cache, "
             "wall time, median of 3.", "",
             "| entries | scan | scan entries/s | scan, 1 thread | find | find entries/s | speedup (find / scan) |",
             "|---|---|---|---|---|---|---|"]
    for entries in sorted(rows):
        r = rows[entries]
        scan, one, find = r.get("BM_BreakoutScan"), r.get("BM_BreakoutScanOneThread"), r.get("BM_FindSameChecks")
        rate = lambda t: f"{entries / t * 1000:,.0f}" if t else "–"  # noqa: E731 (times are in ms)
        fmt = lambda t: f"{t:.1f} ms" if t else "–"  # noqa: E731
        lines.append(f"| {entries:,} | {fmt(scan)} | {rate(scan)} | {fmt(one)} | {fmt(find)} | {rate(find)} | "
                     f"{ratio(find, scan)} |")
    lines.append("")
    return lines


def main():
    raw, out_dir = sys.argv[1], sys.argv[2]
    smoke = "--smoke" in sys.argv
    report = {"machine": machine(), "smoke": smoke}
    md = ["# Cocoon benchmark results", ""]
    m = report["machine"]
    md += [f"Date {m['date']}; kernel {m['kernel']}; CPU {m['cpu']}; {m['cores']} cores."
           + (" SMOKE RUN: too few iterations to quote." if smoke else ""), ""]
    launch = load(os.path.join(raw, "launch.json"))
    if launch:
        report["launch"] = launch
        md += launch_table(launch, "Launch latency")
    rootless = load(os.path.join(raw, "launch_rootless.json"))
    if rootless:
        report["launch_rootless"] = rootless
        md += launch_table(rootless, "Launch latency, rootless (uid 65534)")
    if not shutil.which("firejail"):
        md += ["firejail is not installed on this machine: no `firejail --noprofile` case.", ""]
    hyper = load(os.path.join(raw, "hyperfine.json"))
    if hyper:
        report["hyperfine"] = hyper
        md += ["## hyperfine cross-check", "", "| command | median | mean ± σ |", "|---|---|---|"]
        for r in hyper.get("results", []):
            md.append(f"| `{r['command']}` | {r['median'] * 1000:.2f} ms | "
                      f"{r['mean'] * 1000:.2f} ± {r['stddev'] * 1000:.2f} ms |")
        md.append("")
    seccomp = load(os.path.join(raw, "seccomp_runtime.json"))
    if seccomp:
        sidecars = {os.path.basename(p)[len("sidecar-seccomp-"):-5]: load(p) or {}
                    for p in glob.glob(os.path.join(raw, "sidecar-seccomp-*.json"))}
        report["seccomp_runtime"] = seccomp
        report["seccomp_sidecars"] = sidecars
        md += seccomp_runtime_table(seccomp, sidecars)
    memory = load(os.path.join(raw, "memory.json"))
    if memory:
        flood_bytes = None
        try:
            flood_bytes = int(open(os.path.join(raw, "flood_bytes")).read())
        except (OSError, ValueError):
            pass
        report["memory"] = memory
        md += memory_table(memory, flood_bytes)
    breakout = load(os.path.join(raw, "breakout_bench.json"))
    if breakout:
        md += breakout_table(breakout)
    agents = load(os.path.join(raw, "agents.json"))
    if agents:
        report["agents"] = agents
        md += launch_table(agents, "Agents: cocoon run -r python vs bare python3")
    mcp = load(os.path.join(raw, "mcp.json"))
    if mcp:
        report["mcp"] = mcp
        md += mcp_table(mcp)
    for path in sorted(glob.glob(os.path.join(raw, "*_bench.json"))):
        name = os.path.basename(path)[:-5]
        data = load(path)
        if data:
            report[name] = data
            md += gbench_table(name, data)
    report["ratios"] = {name: value for name, (value, _) in ratios.ratios(report).items()}
    previous = load(os.path.join(out_dir, "latest.json"))
    if previous and previous.get("smoke") != smoke:
        previous = None  # a smoke run is no baseline for a full run, nor the reverse
    md += ratios.regression_section(previous, report)
    with open(os.path.join(out_dir, "latest.json"), "w") as f:
        json.dump(report, f, indent=2)
    with open(os.path.join(out_dir, "latest.md"), "w") as f:
        f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
