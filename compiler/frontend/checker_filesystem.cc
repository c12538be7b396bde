// Checker sections: network and filesystem.
#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <utility>

#include "compiler/frontend/checker_internal.h"

namespace cocoon::frontend::internal {
namespace {

int NetworkRank(ir::NetworkMode mode) {
  switch (mode) {
    case ir::NetworkMode::kOff: return 0;
    case ir::NetworkMode::kAllowList: return 1;
    case ir::NetworkMode::kOn: return 2;
  }
  return 2;
}

// RFC 1123 host names: labels of letters, digits and '-' (and '_', which
// real service names use), neither starting nor ending with '-'. A name
// whose last label is all digits is no name: resolvers read "256.1.1.1" or
// "1.2.3.4.5" as a malformed address, so the policy means nothing it shows.
bool ValidDnsName(const std::string& host) {
  if (host.empty() || host.size() > 253) return false;
  size_t start = 0;
  bool last_label_numeric = false;
  while (start <= host.size()) {
    size_t dot = host.find('.', start);
    std::string_view label = std::string_view(host).substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    last_label_numeric = true;
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
      if (!std::isdigit(static_cast<unsigned char>(c))) last_label_numeric = false;
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return !last_label_numeric;
}

bool ParseEndpoint(Layer& layer, const ast::Word& word, ir::NetworkEndpoint& out) {
  const std::string& text = word.text;
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 == text.size()) {
    layer.Error(word.span, "endpoint " + Quote(text) + " has no port; write host:port");
    return false;
  }
  std::string host = text.substr(0, colon);
  const std::string port_text = text.substr(colon + 1);
  uint64_t port = 0;
  // Decimal only: ParseInteger would read 0x1bb as 443, and 0443 is octal to
  // some readers (and 443 to others).
  const bool decimal = std::all_of(port_text.begin(), port_text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!decimal || port_text.front() == '0' || !ParseInteger(port_text, port) || port > 65535) {
    std::string hint;
    if (ParseInteger(port_text, port) && port >= 1 && port <= 65535) {
      hint = "write " + text.substr(0, colon + 1) + std::to_string(port);
    }
    layer.Error(word.span, "invalid port in " + Quote(text) + "; expected 1..65535 in decimal", hint);
    return false;
  }
  unsigned char buffer[16];
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (inet_pton(AF_INET6, host.c_str(), buffer) != 1) {
      layer.Error(word.span, "invalid IPv6 address " + Quote(host));
      return false;
    }
    // One spelling per address (RFC 5952: lower case, zeros compressed), so
    // that [::1] and [0:0:0:0:0:0:0:1] are found to be duplicates.
    char canonical[INET6_ADDRSTRLEN] = {};
    inet_ntop(AF_INET6, buffer, canonical, sizeof(canonical));
    host = canonical;
  } else if (host.find(':') != std::string::npos) {
    layer.Error(word.span, "IPv6 addresses go in brackets: [" + host + "]:" + std::to_string(port));
    return false;
  } else if (inet_pton(AF_INET, host.c_str(), buffer) != 1) {
    // The resolver (getaddrinfo, through inet_aton) reads "010.0.0.1" as
    // octal 8.0.0.1, "0x7f.1" and "2130706433" as 127.0.0.1: what the reader
    // of the policy takes for a name would be some other address.
    struct in_addr legacy {};
    if (inet_aton(host.c_str(), &legacy) != 0) {
      char canonical[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &legacy, canonical, sizeof(canonical));
      layer.Error(word.span, "host " + Quote(host) + " is an IPv4 address in octal, hex or shortened form (" +
                                 canonical + "); write it in dotted decimal: " + canonical + ":" + std::to_string(port));
      return false;
    }
    if (!ValidDnsName(host)) {
      layer.Error(word.span, "invalid host name or IPv4 address " + Quote(host),
                  "a name is labels of letters, digits and '-' (not at a label's start or end); an address is "
                  "four numbers 0..255");
      return false;
    }
    // DNS names are case-insensitive: one spelling, so that duplicates and
    // a parent's entries compare equal.
    for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  out = ir::NetworkEndpoint{host, static_cast<uint16_t>(port)};
  return true;
}

// An allow-list entry for an address that is not what it seems
// (docs/security.md, "Network allow-lists"): the broker lets a connect to
// loopback or the unspecified address run inside the sandbox's own network
// namespace, so such an entry never reaches the host; every other allowed
// address is connected to from the host, link-local ones (and the cloud
// metadata service among them) included.
void WarnAboutSpecialEndpoint(Layer& layer, const ast::Statement& entry, const ir::NetworkEndpoint& endpoint) {
  const std::string& host = endpoint.host;
  const std::string quoted = Quote(entry.keyword.text);
  unsigned char v6[16];
  in_addr v4{};
  bool is_v4 = inet_pton(AF_INET, host.c_str(), &v4) == 1;
  const bool is_v6 = !is_v4 && inet_pton(AF_INET6, host.c_str(), v6) == 1;
  static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (is_v6 && std::equal(kMapped, kMapped + 12, v6)) {  // ::ffff:127.0.0.1 is 127.0.0.1
    std::memcpy(&v4, v6 + 12, 4);
    is_v4 = true;
  }
  const uint32_t a = is_v4 ? ntohl(v4.s_addr) : 0;
  static const unsigned char kZero[16] = {};
  const bool v6_only = is_v6 && !is_v4;
  const bool loopback = (is_v4 && (a >> 24) == 127) || (v6_only && std::equal(kZero, kZero + 15, v6) && v6[15] == 1) ||
                        host == "localhost" || host.ends_with(".localhost");
  const bool unspecified = (is_v4 && a == 0) || (v6_only && std::equal(kZero, kZero + 16, v6));
  // 169.254.169.254, and AWS's IPv6 one, fd00:ec2::254.
  static const unsigned char kAwsV6Metadata[16] = {0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54};
  const bool metadata = (is_v4 && a == 0xA9FEA9FE) || host == "metadata.google.internal" ||
                        (v6_only && std::equal(kAwsV6Metadata, kAwsV6Metadata + 16, v6));
  const bool link_local = (is_v4 && (a >> 16) == 0xA9FE) || (v6_only && v6[0] == 0xfe && (v6[1] & 0xc0) == 0x80);
  if (loopback || unspecified) {
    layer.Warning(entry.span,
                  "endpoint " + quoted + " is " + (loopback ? "loopback" : "the unspecified address") +
                      ": a connect to it stays in the sandbox's own network namespace, so this entry never reaches "
                      "the host",
                  "loopback inside the sandbox needs no entry; a service on the host is reached only at an "
                  "address other than loopback");
  } else if (metadata) {
    layer.Warning(entry.span,
                  "endpoint " + quoted + " is the cloud metadata service: allowed endpoints are connected to from "
                  "the host, so the sandbox can ask it for the host's instance credentials",
                  "remove it unless the sandbox must act as the host's cloud identity");
  } else if (link_local) {
    layer.Warning(entry.span,
                  "endpoint " + quoted + " is link-local (" + (is_v4 ? "169.254.0.0/16" : "fe80::/10") +
                      "): allowed endpoints are connected to from the host, so the sandbox reaches the host's own "
                      "network link, where cloud metadata services answer",
                  "remove it unless the sandbox must reach a device on the host's link");
  }
}

const std::vector<std::string>& FilesystemKeys() {
  static const auto* keys = new std::vector<std::string>{
      "root", "readonly", "writable", "work", "copy", "tmpfs", "hide", "devices"};
  return *keys;
}

bool IsUnder(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size() + 1, dir + "/") == 0);
}

// What the back end (plan_builder.cc AddFilesystemMounts) refuses, reported
// here at the path so `cocoon check` catches it, not only `cocoon compile`.
bool MountTargetAllowed(Layer& layer, const std::string& target, Span span) {
  if (target == "/") {
    layer.Error(span, "cannot mount over '/'; use `root host` or `root rootfs PATH`");
    return false;
  }
  if (IsUnder(target, "/proc") || IsUnder(target, "/dev")) {
    layer.Error(span, "cannot mount on " + Quote(target) + ": /proc and /dev are set up by the enforcer",
                "allow a device with `devices { ... }`; hide a /proc path with `hide`");
    return false;
  }
  return true;
}

// What the enforcer refuses of a bind's host path (ShowsHostProc in
// enforcer/workdir/host_path.cc, applied by child_spec_builder.cc and
// cli/host_overlap_guard.cc): the host's /proc, or '/' which holds it, would
// show every host process and its root directory. Caught here, lexically, so
// that `check` and `compile` refuse what every launch would (the enforcer
// also resolves symlinks to it).
bool BindSourceAllowed(Layer& layer, const ast::Word& source) {
  if (source.text != "/" && !IsUnder(source.text, "/proc")) return true;
  layer.Error(source.span,
              "cannot bind " + Quote(source.text) + ": it would show the host's /proc to the sandbox, with every "
                  "host process and its root directory",
              "the sandbox has a /proc of its own; bind only the host directories it needs (e.g. /usr)");
  return false;
}

// A tmpfs's size or the work dir's quota, in the range a limit such as
// `disk` has. 0 is an error: for a quota it would read as "no quota" in the
// plan (quota_bytes 0), and a tmpfs of 0 bytes holds nothing.
bool SizeInRange(Layer& layer, const ast::Word& word, const std::string& what, const std::string& zero_hint,
                 uint64_t& out) {
  if (!layer.Unit(word, UnitKind::kSize, out)) return false;
  if (out == 0) {
    layer.Error(word.span, what + " must be more than 0", zero_hint);
    return false;
  }
  if (out > kMaxSizeBytes) {
    layer.Error(word.span, what + " " + word.text + " is out of range; expected 1 B to " + FormatBytes(kMaxSizeBytes));
    return false;
  }
  return true;
}

// Two sizes for one message: exact bytes where the rounded figures would
// read the same ("raised to 64 MiB (it was 64 MiB").
std::pair<std::string, std::string> TwoSizes(uint64_t a, uint64_t b) {
  std::string first = FormatBytes(a);
  std::string second = FormatBytes(b);
  if (first == second && a != b) return {std::to_string(a) + " bytes", std::to_string(b) + " bytes"};
  return {first, second};
}

constexpr char kTmpfsMemory[] =
    "its files are kernel memory, and without a memory cgroup its size is all that bounds them";

// The nearest mount above `target` that the profile inherited (not one of
// this profile's own), or null: what the sandbox would see at `target`
// without the new mount.
const ir::Mount* NearestInheritedAncestor(Layer& layer, const std::string& target) {
  const auto& mounts = layer.state().mounts;
  for (std::string dir = target; dir.size() > 1;) {
    dir.resize(std::max<size_t>(dir.rfind('/'), 1));
    if (layer.layer_mounts().count(dir) != 0) continue;
    auto found = mounts.find(dir);
    if (found != mounts.end()) return &found->second;
  }
  return nullptr;
}

// A mount on a target the parent had none on, that gives the sandbox more:
// any tmpfs (its size adds to the memory the sandbox can fill; rootless
// nothing else bounds it), and a writable mount in a directory the parent
// bound read-only.
void WarnIfNewMountWeakens(Layer& layer, const ir::Mount& after, Span span) {
  using Kind = ir::MountKind;
  if (after.kind != Kind::kTmpfs && after.kind != Kind::kWritable) return;
  const ir::Mount* above = NearestInheritedAncestor(layer, after.target);
  const bool under_read_only = above != nullptr && above->kind == Kind::kReadOnly;
  const std::string target = Quote(after.target);
  const std::string tmpfs = "a new tmpfs of " + FormatBytes(after.size_bytes) + " (" + kTmpfsMemory +
                            ": it adds to the memory the sandbox can write)";
  if (under_read_only) {
    const std::string what = after.kind == Kind::kTmpfs ? tmpfs : "a writable bind of the host's " + Quote(after.source);
    layer.Weakens("filesystem", span, target + " made writable under read-only " + Quote(above->target) + ": " + what);
  } else if (after.kind == Kind::kTmpfs) {
    layer.Weakens("filesystem", span, target + " is " + tmpfs);
  }
}

// A mount that replaces an inherited one on the same target and gives the
// sandbox more: writes where it could only read, or a larger tmpfs. A
// tmpfs's files are kernel memory, and rootless (no memory cgroup, only
// RLIMIT_DATA, which does not count them) its size is the only bound on it.
void WarnIfMountWeakened(Layer& layer, const ir::Mount& before, const ir::Mount& after, Span span) {
  using Kind = ir::MountKind;
  const std::string target = Quote(after.target);
  if (before.kind == Kind::kReadOnly && after.kind == Kind::kWritable) {
    layer.Weakens("filesystem", span, target + " made writable (it was read-only)");
  } else if (before.kind == Kind::kReadOnly && after.kind == Kind::kTmpfs) {
    layer.Weakens("filesystem", span,
                  target + " made a writable tmpfs of " + FormatBytes(after.size_bytes) + " (it was a read-only bind)");
  } else if (before.kind == Kind::kTmpfs && after.kind == Kind::kWritable) {
    layer.Weakens("filesystem", span, target + " made a writable bind of the host's " + Quote(after.source) +
                                          " (it was a tmpfs, discarded after the run)");
  } else if (before.kind == Kind::kTmpfs && after.kind == Kind::kTmpfs && after.size_bytes > before.size_bytes) {
    const auto [now, was] = TwoSizes(after.size_bytes, before.size_bytes);
    layer.Weakens("filesystem", span,
                  "tmpfs " + target + " raised to " + now + " (it was " + was + "; " + kTmpfsMemory + ")");
  }
}

// `span`: the target path (with `as`, the whole `SOURCE as TARGET`).
void AddMount(Layer& layer, ir::Mount mount, Span span) {
  State& state = layer.state();
  auto [it, inserted] = layer.layer_mounts().emplace(mount.target, Layer::LayerMount{mount.kind, mount.source, span});
  if (!inserted) {
    uint32_t line = layer.file().source->Locate(it->second.span.begin).line;
    if (it->second.kind == mount.kind && it->second.source != mount.source) {
      // One target shows one host directory: the later bind would silently
      // replace the earlier one, so the reviewer could not tell which is meant.
      uint32_t this_line = layer.file().source->Locate(span.begin).line;
      layer.Error(span, Quote(mount.target) + " is bound from two host paths: " + Quote(it->second.source) +
                            " (line " + std::to_string(line) + ") and " + Quote(mount.source) + " (line " +
                            std::to_string(this_line) + ")",
                  "keep one of them, or bind the other to a target of its own with `as`");
    } else if (it->second.kind == mount.kind) {
      layer.Warning(span, "duplicate " + MountKindName(mount.kind) + " mount of " + Quote(mount.target) +
                              " (first at line " + std::to_string(line) + ")");
    } else {
      layer.Error(span, Quote(mount.target) + " is both " + MountKindName(it->second.kind) + " (line " +
                            std::to_string(line) + ") and " + MountKindName(mount.kind));
    }
    return;
  }
  auto [previous, added] = state.mounts.try_emplace(mount.target);  // one lookup: check, then set
  if (!added) {
    WarnIfMountWeakened(layer, previous->second, mount, span);
  } else {
    WarnIfNewMountWeakens(layer, mount, span);
  }
  layer.Origin("filesystem.mount:" + mount.target, span);
  state.mount_sites[mount.target] = State::RuleSite{layer.file().source, span};
  previous->second = std::move(mount);
}

void ApplyBinds(Layer& layer, const ast::Statement& stmt) {
  ir::MountKind kind = stmt.keyword.text == "readonly" ? ir::MountKind::kReadOnly : ir::MountKind::kWritable;
  const auto& args = stmt.args;
  bool optional = !args.empty() && args[0].IsKeyword("optional");
  for (size_t i = optional ? 1 : 0; i < args.size(); ++i) {
    ir::Mount mount;
    mount.kind = kind;
    mount.optional = optional;
    Span span = args[i].span;
    const ast::Word& source = args[i];
    bool ok = layer.AbsolutePath(source, mount.source);
    mount.target = mount.source;
    if (i + 2 < args.size() && args[i + 1].IsKeyword("as")) {
      ok = layer.AbsolutePath(args[i + 2], mount.target) && ok;
      span.end = args[i + 2].span.end;
      i += 2;
    }
    if (!ok) continue;
    if (!MountTargetAllowed(layer, mount.target, span) || !BindSourceAllowed(layer, source)) continue;
    if (kind == ir::MountKind::kWritable) {
      layer.Warning(span, "writable bind mount of host path " + Quote(mount.source) +
                              ": the sandbox can change the host there",
                    "prefer `work` (staged and verified) or `tmpfs` unless the host must see the writes");
    }
    AddMount(layer, std::move(mount), span);
  }
}

void ApplyWork(Layer& layer, const ast::Statement& stmt) {
  if (!layer.FirstInLayer("filesystem.work", stmt.span, "work")) return;
  ir::WorkDir& work = layer.state().policy.filesystem.work;
  ir::WorkDir next = work;
  if (!layer.AbsolutePath(stmt.args[0], next.path)) return;
  if (next.path == "/") {
    // The work dir is mounted over: it would hide the whole sandbox root.
    layer.Error(stmt.args[0].span, "the work dir cannot be '/'", "use a directory such as /work");
    return;
  }
  for (size_t i = 1; i < stmt.args.size(); ++i) {
    const ast::Word& word = stmt.args[i];
    if (word.IsKeyword("quota") && i + 1 < stmt.args.size()) {
      if (!SizeInRange(layer, stmt.args[++i], "work dir quota", "for no quota, leave out `quota SIZE`",
                       next.quota_bytes)) {
        return;
      }
    } else if (word.IsKeyword("direct")) {
      next.mode = ir::WorkMode::kDirect;
    } else if (word.IsKeyword("staged")) {
      next.mode = ir::WorkMode::kStaged;
    }
  }
  if (next.mode == ir::WorkMode::kDirect && work.mode == ir::WorkMode::kStaged) {
    layer.Weakens("filesystem.work", stmt.span, "the work dir is bound directly instead of staged");
  }
  if (work.quota_bytes != 0 && (next.quota_bytes == 0 || next.quota_bytes > work.quota_bytes)) {
    layer.Weakens("filesystem.work", stmt.span, "the work dir quota is raised");
  }
  work = next;
  layer.state().work_site = State::RuleSite{layer.file().source, stmt.args[0].span};
  layer.Origin("filesystem.work", stmt.span);
}

void ApplyCopy(Layer& layer, const ast::Statement& stmt) {
  const ast::Word& from = stmt.args[0];
  const ast::Word& to = stmt.args[2];
  namespace fs = std::filesystem;
  // As for any other path (AbsolutePath), and checked before either is used.
  const bool printable = layer.NoControlCharacters(from);
  if (!layer.NoControlCharacters(to) || !printable) return;
  ir::Copy copy;
  // A relative source is relative to the policy file, like an include.
  fs::path source = fs::path(from.text).is_absolute() ? fs::path(from.text)
                                                       : fs::path(layer.file().directory) / from.text;
  copy.source = source.lexically_normal().string();
  // The enforcer replaces the destination inside the work dir (RemoveTree):
  // "." or "a/.." would be the work dir itself, ".." outside it.
  const std::string& destination = to.text;
  bool canonical = !destination.empty() && destination.front() != '/' && destination.back() != '/' &&
                   fs::path(destination).lexically_normal().string() == destination;
  for (const fs::path& part : fs::path(destination)) canonical = canonical && part != "." && part != "..";
  if (!canonical) {
    layer.Error(to.span, "copy destination " + Quote(to.text) +
                             " must be a canonical path relative to the work dir (no leading or trailing '/', "
                             "no '.' or '..')");
    return;
  }
  copy.destination = destination;
  if (!layer.FirstInLayer("filesystem.copy:" + destination, stmt.span, "copy to " + Quote(destination))) return;
  layer.Origin("filesystem.copy:" + destination, stmt.span);
  layer.state().copy_sites[destination] = State::RuleSite{layer.file().source, to.span};
  layer.state().copies[destination] = std::move(copy);
}

void ApplyTmpfs(Layer& layer, const ast::Statement& stmt) {
  ir::Mount mount;
  mount.kind = ir::MountKind::kTmpfs;
  mount.size_bytes = 64ull << 20;  // documented default
  if (!layer.AbsolutePath(stmt.args[0], mount.target)) return;
  if (!MountTargetAllowed(layer, mount.target, stmt.args[0].span)) return;
  if (stmt.args.size() == 3 && !SizeInRange(layer, stmt.args[2], "tmpfs size", "", mount.size_bytes)) return;
  AddMount(layer, std::move(mount), stmt.args[0].span);  // the path, like binds
}

void ApplyDevices(Layer& layer, const ast::Statement& stmt) {
  ir::Devices& devices = layer.state().policy.filesystem.devices;
  for (const ast::Statement& device : stmt.block) {
    const std::string& name = device.keyword.text;
    ir::DeviceAccess* field = name == "gpu" ? &devices.gpu : name == "tty" ? &devices.tty
                              : name == "kvm" ? &devices.kvm : nullptr;
    if (field == nullptr) {
      std::string suggestion = DidYouMean(name, {"gpu", "tty", "kvm"});
      layer.Error(device.keyword.span, "unknown device " + Quote(name),
                  suggestion.empty() ? "devices are gpu, tty and kvm" : "did you mean '" + suggestion + "'?");
      continue;
    }
    const ast::Word& value = device.args[0];
    if (value.text != "on" && value.text != "off") {
      layer.Error(value.span, "expected on or off, not " + Quote(value.text));
      continue;
    }
    if (!layer.FirstInLayer("filesystem.devices." + name, device.span, "device " + name)) continue;
    ir::DeviceAccess access = value.text == "on" ? ir::DeviceAccess::kAllowed : ir::DeviceAccess::kDenied;
    if (access == ir::DeviceAccess::kAllowed && *field == ir::DeviceAccess::kDenied) {
      layer.Weakens("devices." + name, device.span, name + " access enabled");
    }
    *field = access;
    layer.Origin("filesystem.devices." + name, device.span);
  }
}

}  // namespace

void ApplyNetwork(Layer& layer, const ast::Statement& stmt) {
  ir::Network& network = layer.state().policy.network;
  ir::Network next;
  const std::string& mode = stmt.args[0].text;
  next.mode = mode == "off" ? ir::NetworkMode::kOff : mode == "on" ? ir::NetworkMode::kOn : ir::NetworkMode::kAllowList;
  for (const ast::Statement& entry : stmt.block) {
    ir::NetworkEndpoint endpoint;
    if (!ParseEndpoint(layer, entry.keyword, endpoint)) continue;
    if (std::find(next.allow.begin(), next.allow.end(), endpoint) != next.allow.end()) {
      layer.Warning(entry.span, "duplicate endpoint " + Quote(entry.keyword.text));
      continue;
    }
    WarnAboutSpecialEndpoint(layer, entry, endpoint);
    next.allow.push_back(endpoint);
  }
  // Only when nothing was written: an endpoint already reported as an error
  // does not make the list empty.
  if (next.mode == ir::NetworkMode::kAllowList && stmt.block.empty()) {
    layer.Warning(stmt.span, "empty allow-list: this is the same as `network off`");
  }
  std::sort(next.allow.begin(), next.allow.end(), [](const auto& a, const auto& b) {
    return std::tie(a.host, a.port) < std::tie(b.host, b.port);
  });
  if (NetworkRank(next.mode) > NetworkRank(network.mode)) {
    layer.Weakens("network", stmt.span, "network " + mode + " (it was more restricted)");
  } else if (next.mode == ir::NetworkMode::kAllowList && network.mode == ir::NetworkMode::kAllowList) {
    for (const auto& endpoint : next.allow) {
      if (std::find(network.allow.begin(), network.allow.end(), endpoint) == network.allow.end()) {
        layer.Weakens("network", stmt.span, "allows " + endpoint.host + ":" + std::to_string(endpoint.port));
        break;
      }
    }
  }
  network = std::move(next);
  layer.Origin("network", stmt.span);
}

void ApplyFilesystem(Layer& layer, const ast::Statement& stmt) {
  const std::string& key = stmt.keyword.text;
  ir::Filesystem& fs = layer.state().policy.filesystem;
  if (key == "root") {
    if (!layer.FirstInLayer("filesystem.root", stmt.span, "root")) return;
    if (stmt.args[0].IsKeyword("host")) {
      fs.root = ir::RootKind::kHost;
      fs.rootfs.clear();
    } else {
      std::string path;
      if (!layer.AbsolutePath(stmt.args[1], path)) return;
      fs.root = ir::RootKind::kRootfs;
      fs.rootfs = path;
    }
    layer.Origin("filesystem.root", stmt.span);
  } else if (key == "readonly" || key == "writable") {
    ApplyBinds(layer, stmt);
  } else if (key == "work") {
    ApplyWork(layer, stmt);
  } else if (key == "copy") {
    ApplyCopy(layer, stmt);
  } else if (key == "tmpfs") {
    ApplyTmpfs(layer, stmt);
  } else if (key == "hide") {
    for (const ast::Word& word : stmt.args) {
      std::string path;
      if (!layer.AbsolutePath(word, path)) continue;
      if (!layer.state().hidden.insert(path).second) continue;
      layer.state().hide_sites[path] = State::RuleSite{layer.file().source, word.span};
      layer.Origin("filesystem.hide:" + path, word.span);
    }
  } else if (key == "devices") {
    ApplyDevices(layer, stmt);
  } else {
    std::string suggestion = DidYouMean(key, FilesystemKeys());
    layer.Error(stmt.keyword.span, "unknown filesystem setting " + Quote(key),
                suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
  }
}

}  // namespace cocoon::frontend::internal
