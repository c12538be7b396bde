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
import sys


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
    lines = [f"## {title}", "",
             f"{launch.get('iterations')} launches per case, interleaved.", "",
             "| case | median | p99 | × floor | × bwrap | supervisor max RSS | failures |",
             "|---|---|---|---|---|---|---|"]
    for c in launch.get("cases", []):
        med = c["median_us"]
        rf = f"{med / floor:.2f}×" if floor else "–"
        rb = f"{med / bwrap:.2f}×" if bwrap else "–"
        lines.append(f"| `{c['name']}` | {ms(med)} | {ms(c['p99_us'])} | {rf} | {rb} | "
                     f"{c.get('max_rss_kib', 0) / 1024:.1f} MiB | {c['failures']} |")
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
    hyper = load(os.path.join(raw, "hyperfine.json"))
    if hyper:
        report["hyperfine"] = hyper
        md += ["## hyperfine cross-check", "", "| command | median | mean ± σ |", "|---|---|---|"]
        for r in hyper.get("results", []):
            md.append(f"| `{r['command']}` | {r['median'] * 1000:.2f} ms | "
                      f"{r['mean'] * 1000:.2f} ± {r['stddev'] * 1000:.2f} ms |")
        md.append("")
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
    with open(os.path.join(out_dir, "latest.json"), "w") as f:
        json.dump(report, f, indent=2)
    with open(os.path.join(out_dir, "latest.md"), "w") as f:
        f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
