#!/bin/sh
# usage: launcher_needs_no_dynamic_loader.sh COCOON STATIC(ON|OFF)
# Nothing in the launcher may use the dynamic loader (cli/launch_dynamic.h):
# linked statically, dlopen and NSS would load a second libc into it; the
# audit log and allow-lists are handed to cocoon-full instead. With
# COCOON_STATIC_DEPS the launcher is static-pie: no program interpreter.
set -eu
launcher=$1
static=$2
# Our code's users of dlopen and NSS: the libcrypto loader and the audit log
# (audit/libcrypto.h, AuditLog::Open) and host name resolution. (A static
# glibc always carries its own dlopen, for iconv's gconv modules; what must
# never be linked is code of ours that calls it, or an NSS lookup.)
found=$(nm -C "$launcher" | grep -E ' (T|W|t|U) (cocoon::audit::LoadLibCrypto|cocoon::audit::AuditLog::Open|cocoon::enforcer::ResolveAllowList|getaddrinfo|gethostbyname|getpwuid_r|getpwnam_r|getpwuid|getpwnam|getgrgid_r|getgrnam_r)\b' || true)
if [ -n "$found" ]; then
  echo "FAIL: the launcher links what needs the dynamic loader (hand it to cocoon-full, cli/launch_dynamic.h):"
  echo "$found"
  exit 1
fi
if [ "$static" = ON ] && readelf -l "$launcher" | grep -q INTERP; then
  echo "FAIL: COCOON_STATIC_DEPS is ON but the launcher has a program interpreter (not static-pie)"
  exit 1
fi
echo "ok: no dlopen/NSS in the launcher (static-pie: $static)"
