"""The regression check of bench/run (issue 7): ratios, not absolute times.

This VM's absolute times move by 15-30% between runs minutes apart, so each
figure here is a ratio of two things measured side by side in the same run
(cocoon against bwrap, a filter against no filter, the breakout scan against
find, python under cocoon against bare python). report.py stores them in
latest.json and compares them with the previous run's. A ratio that got worse
by more than THRESHOLD is flagged; nothing gates on it.
"""

THRESHOLD = 0.20  # flag a ratio that moved the wrong way by more than 20%


def _case(section, name):
    for case in (section or {}).get("cases", []):
        if case.get("name") == name:
            return case
    return None


def _median_ratio(section, name, base, key="median_us"):
    a, b = _case(section, name), _case(section, base)
    if not a or not b or not b.get(key):
        return None
    return a[key] / b[key]


_NS_PER_UNIT = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def _ns(row):
    time = row.get("real_time")
    return None if time is None else time * _NS_PER_UNIT.get(row.get("time_unit", "ns"), 1)


def _bench_median_time(data, prefix):
    """real_time in ns of the first Google Benchmark row named
    `prefix...median` (or `prefix` itself when the run had no repetitions)."""
    rows = (data or {}).get("benchmarks", [])
    for row in rows:
        if row.get("name", "").startswith(prefix) and row.get("aggregate_name") == "median":
            return _ns(row)
    for row in rows:
        if row.get("name", "").startswith(prefix) and "aggregate_name" not in row:
            return _ns(row)
    return None


def _rate(data, prefix):
    for row in (data or {}).get("benchmarks", []):
        if row.get("name", "").startswith(prefix):
            return row.get("items_per_second")
    return None


def ratios(report):
    """name -> (value, 'lower' or 'higher' is better) for every ratio this
    report can give; missing cases are left out."""
    out = {}

    def put(name, value, better):
        if value is not None:
            out[name] = (value, better)

    launch = report.get("launch")
    for case in ("cocoon-enforce", "cocoon-enforce-precompiled", "cocoon-run"):
        put(f"{case} median / bwrap median", _median_ratio(launch, case, "bwrap"), "lower")
    put("isolation-floor median / bwrap median", _median_ratio(launch, "isolation-floor", "bwrap"), "lower")
    for case in ("cocoon-enforce", "cocoon-enforce-precompiled", "isolation-floor"):
        put(f"{case} median / bwrap-strict-tree median", _median_ratio(launch, case, "bwrap-strict-tree"), "lower")
    put("rootless cocoon-enforce median / bwrap-strict-tree median",
        _median_ratio(report.get("launch_rootless"), "cocoon-enforce", "bwrap-strict-tree"), "lower")
    put("cocoon-enforce median / isolation-floor median",
        _median_ratio(launch, "cocoon-enforce", "isolation-floor"), "lower")
    enforce, floor = _case(launch, "cocoon-enforce"), _case(launch, "floor")
    if enforce and floor and floor.get("median_us"):
        put("cocoon-enforce p99 / floor median", enforce["p99_us"] / floor["median_us"], "lower")
    put("cocoon run -r python / bare python3",
        _median_ratio(report.get("agents"), "cocoon-run-python", "python3-bare"), "lower")
    mcp = report.get("mcp")
    put("MCP execute_code / cocoon run (median)", _median_ratio(mcp, "mcp-execute-code", "cocoon-run"), "lower")
    seccomp = report.get("seccomp_runtime")
    for name in ("strict", "moby"):
        put(f"getpid under {name} / no filter",
            _median_ratio(seccomp, name, "none", key="getpid_ns"), "lower")
        put(f"ioctl under {name} / no filter",
            _median_ratio(seccomp, name, "none", key="ioctl_ns"), "lower")
    breakout = report.get("breakout_bench")
    for size in ("10002", "100002", "1000002"):
        scan = _bench_median_time(breakout, f"BM_BreakoutScan/{size}/")
        find = _bench_median_time(breakout, f"BM_FindSameChecks/{size}/")
        if scan and find:
            put(f"find / breakout scan, {int(size) - 2} entries", find / scan, "higher")
    # Verification against the machine's own Ed25519 speed: lines verified per
    # signature check the library's path (ctx:0, libsodium) does on one core in
    # the same run.
    audit = report.get("audit_bench")
    ed_verify_ns = _bench_median_time(audit, "BM_Ed25519/verify:1")
    signed = _rate(audit, "BM_Verify/sign_every:1/lines:20000/threads:1")
    if ed_verify_ns and signed:
        put("verify (every line signed, 1 thread) / Ed25519 verify rate", signed * ed_verify_ns / 1e9, "higher")
    return out


def regression_section(previous, current):
    """Markdown lines comparing `current` with `previous` (both report dicts)."""
    now = ratios(current)
    if not previous:
        return ["## Regression check", "", "No previous run to compare with.", ""]
    if not now:
        return ["## Regression check", "", "This run measured none of the ratios the check compares.", ""]
    before = ratios(previous)
    when = previous.get("machine", {}).get("date", "unknown")
    lines = ["## Regression check (ratios against the previous run)", "",
             f"Previous run: {when}. Each figure is a ratio measured side by side within one run; "
             f"a change of more than {THRESHOLD:.0%} the wrong way is flagged. Nothing gates on this.", "",
             "| ratio | previous | this run | change | |", "|---|---|---|---|---|"]
    for name, (value, better) in now.items():
        if name not in before or before[name][0] == 0:
            lines.append(f"| {name} | – | {value:.2f} | | new |")
            continue
        old = before[name][0]
        change = value / old - 1
        worse = change > THRESHOLD if better == "lower" else change < -THRESHOLD
        lines.append(f"| {name} | {old:.2f} | {value:.2f} | {change:+.0%} | {'**regressed?**' if worse else ''} |")
    lines.append("")
    return lines
