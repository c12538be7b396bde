#!/usr/bin/env bash
# Cocoon's one setup script for a fresh Debian 12 machine (run as root, or with
# sudo available). It is idempotent: packages already present are not
# reinstalled, and an existing build directory is reused.
#
#   ./setup.sh demo    install, build, and run a real sandboxed command,
#                      print its Outcome and verify its signed audit log
#   ./setup.sh test    install, build, and run every test: ctest, the unit
#                      tests under ASan+UBSan, every fuzzer for a bounded time,
#                      and a smoke run of the benchmarks
#   ./setup.sh build   install and build only
set -euo pipefail

repo=$(cd "$(dirname "$0")" && pwd)
build=${COCOON_BUILD_DIR:-$repo/build}
jobs=$(nproc)
# 20 s per fuzzer, one per core at a time (fuzz/run_all.sh), keeps the whole
# CI run inside its 30-minute budget on 2 cores.
fuzz_seconds=${COCOON_FUZZ_SECONDS:-20}
# Debug info: full (-g) by default. CI (.ci/run) asks for line tables only,
# which backtraces and sanitizer reports need and which compiles and links
# about a third faster on 2 cores.
gcc_flags=() asan_flags=()
if [[ ${COCOON_DEBUG_INFO:-full} == lines ]]; then
  gcc_flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
  asan_flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG"
              -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG")
fi

packages=(
  build-essential cmake pkg-config git ca-certificates
  antlr4 default-jre-headless libantlr4-runtime-dev
  nlohmann-json3-dev libseccomp-dev libssl-dev libsodium-dev libspdlog-dev libcap-dev libcli11-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  clang libclang-rt-14-dev
  # Cross-compiles the Windows applier against the real Win32 headers.
  g++-mingw-w64-x86-64-posix
  # Used by tests and benchmarks: real peers (both OCI runtimes run the
  # compiled bundle) and real SIEM ingestion.
  crun runc bubblewrap rsyslog iproute2 hyperfine passwd uidmap
  python3 perl ruby php-cli lua5.4 golang-go rustc
)

log() { printf '\n== [%ds] %s\n' "$SECONDS" "$*"; }  # seconds since the start

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

install_packages() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # Node.js may come from another packaging of the same program (a vendor
  # build that bundles npm conflicts with Debian's npm package): only ask apt
  # for what is missing as a command.
  command -v node >/dev/null || missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
  if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

configure() {  # dir, extra cmake args...
  local dir=$1; shift
  cmake -S "$repo" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" > "$dir.configure.log" 2>&1 \
    || { cat "$dir.configure.log"; exit 1; }
}

configure_and_build() {  # dir, extra cmake args...
  configure "$@"
  cmake --build "$1" -j "$jobs"
}

run_demo() {
  local cocoon=$build/cli/cocoon
  local demo=$build/demo
  rm -rf "$demo" && mkdir -p "$demo/work"
  log "cocoon check policies/*.cocoon"
  "$cocoon" check "$repo"/policies/*.cocoon "$repo"/policies/runtimes/*.cocoon
  log "cocoon explain policies/strict.cocoon"
  "$cocoon" explain "$repo/policies/strict.cocoon"
  if "$cocoon" --help | grep -q enforce; then
    log "cocoon audit keygen"
    "$cocoon" audit keygen --out "$demo/audit-key"
    log "cocoon enforce policies/strict.cocoon -- sh -c 'echo hello from the sandbox; id; ls /'"
    "$cocoon" enforce "$repo/policies/strict.cocoon" --work "$demo/work" --json \
      --audit-log "$demo/audit.ndjson" --audit-key "$demo/audit-key" \
      -- /bin/sh -c 'echo hello from the sandbox; id; ls /; echo result > /work/out.txt'
    log "cocoon audit verify"
    "$cocoon" audit verify "$demo/audit.ndjson" --trust "$demo/audit-key.pub"
  fi
}

run_tests() {
  log "unit, integration and security tests (ctest)"
  (cd "$build" && ctest --output-on-failure -j "$jobs" --timeout 600)

  # One clang build serves both: everything compiled with ASan + UBSan and
  # libFuzzer coverage; the unit tests and the fuzzers link from it.
  log "unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (clang)"
  # Only what runs here: the unit test binaries and the fuzzers (the
  # integration suites already ran above, against the gcc build).
  CC=clang CXX=clang++ configure "$build-asan" -DCOCOON_SANITIZE=ON -DCOCOON_FUZZ=ON -DCOCOON_BUILD_BENCH=OFF \
    ${asan_flags[@]+"${asan_flags[@]}"}
  cmake --build "$build-asan" -j "$jobs" --target cocoon_unit_tests cocoon_fuzzers
  (cd "$build-asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest --output-on-failure -j "$jobs" --timeout 900 -L unit)

  log "fuzzers, ${fuzz_seconds}s each"
  "$repo/fuzz/run_all.sh" "$build-asan" "$fuzz_seconds"

  if [[ -x "$repo/bench/run" ]]; then
    log "benchmark smoke run (no timing gate)"
    COCOON_BENCH_BUILD_DIR=$build "$repo/bench/run" --smoke
  fi
}

mode=${1:-}
case "$mode" in
  demo|test|build) ;;
  *) echo "usage: $0 demo|test|build" >&2; exit 2 ;;
esac
install_packages
log "building in $build"
configure_and_build "$build" ${gcc_flags[@]+"${gcc_flags[@]}"}
case "$mode" in
  demo) run_demo ;;
  test) run_tests ;;
  build) ;;
esac
