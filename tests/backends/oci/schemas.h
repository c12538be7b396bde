// The subsets of the OCI runtime-spec (schema/config-schema.json,
// config-linux.json, defs-linux.json) and of the Kubernetes v1 Pod and
// networking/v1 NetworkPolicy OpenAPI schemas that cover every field Cocoon
// emits. additionalProperties:false catches misspelt keys, which runtimes and
// the API server would otherwise ignore or reject at deploy time.
#pragma once

namespace cocoon::testing {

inline constexpr const char* kSeccompSchema = R"({
  "type": "object", "additionalProperties": false,
  "required": ["defaultAction", "architectures", "syscalls"],
  "properties": {
    "defaultAction": {"enum": ["SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_TRAP",
                                "SCMP_ACT_ERRNO", "SCMP_ACT_TRACE", "SCMP_ACT_ALLOW", "SCMP_ACT_LOG", "SCMP_ACT_NOTIFY"]},
    "defaultErrnoRet": {"type": "integer", "minimum": 0},
    "architectures": {"type": "array", "minItems": 1,
                      "items": {"enum": ["SCMP_ARCH_X86", "SCMP_ARCH_X86_64", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64"]}},
    "syscalls": {"type": "array", "items": {
      "type": "object", "additionalProperties": false, "required": ["names", "action"],
      "properties": {
        "names": {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": "^[a-z0-9_]+$"}},
        "action": {"enum": ["SCMP_ACT_KILL_PROCESS", "SCMP_ACT_TRAP", "SCMP_ACT_ERRNO", "SCMP_ACT_ALLOW", "SCMP_ACT_LOG"]},
        "errnoRet": {"type": "integer", "minimum": 0},
        "args": {"type": "array", "items": {
          "type": "object", "additionalProperties": false, "required": ["index", "value", "op"],
          "properties": {
            "index": {"type": "integer", "minimum": 0, "maximum": 5},
            "value": {"type": "integer", "minimum": 0},
            "valueTwo": {"type": "integer", "minimum": 0},
            "op": {"enum": ["SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT",
                            "SCMP_CMP_MASKED_EQ"]}}}}}}}
  }
})";

inline constexpr const char* kOciConfigSchema = R"({
  "type": "object", "additionalProperties": false,
  "required": ["ociVersion", "process", "root", "mounts", "linux"],
  "properties": {
    "ociVersion": {"type": "string", "pattern": "^1\\.[0-9]+\\.[0-9]+$"},
    "hostname": {"type": "string"},
    "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    "root": {"type": "object", "additionalProperties": false, "required": ["path"],
             "properties": {"path": {"type": "string"}, "readonly": {"const": true}}},
    "process": {"type": "object", "additionalProperties": false, "required": ["args", "cwd", "user"],
      "properties": {
        "terminal": {"type": "boolean"},
        "user": {"type": "object", "additionalProperties": false, "required": ["uid", "gid"],
                 "properties": {"uid": {"type": "integer", "minimum": 0}, "gid": {"type": "integer", "minimum": 0},
                                "additionalGids": {"type": "array", "items": {"type": "integer"}}}},
        "args": {"type": "array", "minItems": 1, "items": {"type": "string"}},
        "env": {"type": "array", "items": {"type": "string", "pattern": "^[^=]+="}},
        "cwd": {"type": "string", "pattern": "^/"},
        "capabilities": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
        "rlimits": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                    "required": ["type", "soft", "hard"],
                    "properties": {"type": {"type": "string", "pattern": "^RLIMIT_[A-Z]+$"},
                                   "soft": {"type": "integer", "minimum": 0}, "hard": {"type": "integer", "minimum": 0}}}},
        "noNewPrivileges": {"const": true}}},
    "mounts": {"type": "array", "items": {"type": "object", "additionalProperties": false, "required": ["destination"],
      "properties": {"destination": {"type": "string", "pattern": "^/"}, "type": {"type": "string"},
                     "source": {"type": "string"}, "options": {"type": "array", "items": {"type": "string"}}}}},
    "linux": {"type": "object", "additionalProperties": false,
      "required": ["namespaces", "seccomp", "maskedPaths", "readonlyPaths"],
      "properties": {
        "namespaces": {"type": "array", "items": {"type": "object", "additionalProperties": false, "required": ["type"],
          "properties": {"type": {"enum": ["pid", "network", "mount", "ipc", "uts", "user", "cgroup"]}}}},
        "uidMappings": {"type": "array", "items": {"type": "object", "additionalProperties": false,
          "required": ["containerID", "hostID", "size"],
          "properties": {"containerID": {"type": "integer", "minimum": 0}, "hostID": {"type": "integer", "minimum": 0},
                         "size": {"type": "integer", "minimum": 1}}}},
        "gidMappings": {"type": "array", "items": {"type": "object", "additionalProperties": false,
          "required": ["containerID", "hostID", "size"],
          "properties": {"containerID": {"type": "integer", "minimum": 0}, "hostID": {"type": "integer", "minimum": 0},
                         "size": {"type": "integer", "minimum": 1}}}},
        "resources": {"type": "object", "additionalProperties": false, "properties": {
          "memory": {"type": "object", "additionalProperties": false,
                     "properties": {"limit": {"type": "integer", "minimum": 1}, "swap": {"type": "integer"}}},
          "pids": {"type": "object", "additionalProperties": false, "required": ["limit"],
                   "properties": {"limit": {"type": "integer", "minimum": 1}}},
          "cpu": {"type": "object", "additionalProperties": false,
                  "properties": {"quota": {"type": "integer"}, "period": {"type": "integer", "minimum": 1}}},
          "devices": {"type": "array", "items": {"type": "object", "additionalProperties": false, "required": ["allow"],
            "properties": {"allow": {"type": "boolean"}, "type": {"enum": ["a", "c", "b"]},
                           "major": {"type": "integer", "minimum": 0}, "minor": {"type": "integer", "minimum": 0},
                           "access": {"type": "string", "pattern": "^[rwm]+$"}}}}}},
        "devices": {"type": "array", "items": {"type": "object", "additionalProperties": false,
          "required": ["path", "type", "major", "minor"],
          "properties": {"path": {"type": "string", "pattern": "^/dev/"}, "type": {"enum": ["c", "b", "u", "p"]},
                         "major": {"type": "integer", "minimum": 0}, "minor": {"type": "integer", "minimum": 0},
                         "fileMode": {"type": "integer", "minimum": 0, "maximum": 4095},
                         "uid": {"type": "integer", "minimum": 0}, "gid": {"type": "integer", "minimum": 0}}}},
        "seccomp": {"type": "object"},
        "maskedPaths": {"type": "array", "items": {"type": "string", "pattern": "^/"}},
        "readonlyPaths": {"type": "array", "items": {"type": "string", "pattern": "^/"}}}}
  }
})";

inline constexpr const char* kPodSchema = R"({
  "type": "object", "additionalProperties": false, "required": ["apiVersion", "kind", "metadata", "spec"],
  "properties": {
    "apiVersion": {"const": "v1"}, "kind": {"const": "Pod"},
    "metadata": {"type": "object", "additionalProperties": false, "required": ["name"],
      "properties": {"name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"},
                     "labels": {"type": "object", "additionalProperties": {"type": "string", "pattern": "^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"}},
                     "annotations": {"type": "object", "additionalProperties": {"type": "string"}}}},
    "spec": {"type": "object", "additionalProperties": false, "required": ["containers", "securityContext"],
      "properties": {
        "restartPolicy": {"enum": ["Never", "OnFailure", "Always"]},
        "activeDeadlineSeconds": {"type": "integer", "minimum": 1},
        "automountServiceAccountToken": {"const": false},
        "enableServiceLinks": {"const": false},
        "hostNetwork": {"const": false}, "hostPID": {"const": false}, "hostIPC": {"const": false},
        "hostname": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"},
        "securityContext": {"type": "object", "additionalProperties": false,
          "required": ["runAsNonRoot", "seccompProfile"],
          "properties": {"runAsNonRoot": {"const": true}, "runAsUser": {"type": "integer", "minimum": 0},
                         "runAsGroup": {"type": "integer", "minimum": 0},
                         "seccompProfile": {"type": "object"}}},
        "containers": {"type": "array", "minItems": 1, "items": {"type": "object", "additionalProperties": false,
          "required": ["name", "image", "securityContext"],
          "properties": {
            "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
            "image": {"type": "string"}, "command": {"type": "array", "items": {"type": "string"}},
            "workingDir": {"type": "string"},
            "env": {"type": "array", "items": {"type": "object", "additionalProperties": false, "required": ["name"],
                    "properties": {"name": {"type": "string"}, "value": {"type": "string"}}}},
            "securityContext": {"type": "object", "additionalProperties": false,
              "required": ["allowPrivilegeEscalation", "readOnlyRootFilesystem", "runAsNonRoot", "capabilities", "seccompProfile"],
              "properties": {"allowPrivilegeEscalation": {"const": false}, "privileged": {"const": false},
                             "readOnlyRootFilesystem": {"const": true}, "runAsNonRoot": {"const": true},
                             "capabilities": {"type": "object", "additionalProperties": false, "required": ["drop"],
                                              "properties": {"drop": {"const": ["ALL"]}}},
                             "seccompProfile": {"type": "object"}}},
            "resources": {"type": "object", "additionalProperties": false, "properties": {
              "limits": {"type": "object", "additionalProperties": {"type": "string", "pattern": "^[0-9]+m?$"}},
              "requests": {"type": "object", "additionalProperties": {"type": "string", "pattern": "^[0-9]+m?$"}}}},
            "volumeMounts": {"type": "array", "items": {"type": "object", "additionalProperties": false,
              "required": ["name", "mountPath"],
              "properties": {"name": {"type": "string"}, "mountPath": {"type": "string", "pattern": "^/"},
                             "readOnly": {"type": "boolean"}}}}}}},
        "volumes": {"type": "array", "items": {"type": "object", "additionalProperties": false, "required": ["name"],
          "properties": {"name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
                         "emptyDir": {"type": "object", "additionalProperties": false,
                                      "properties": {"medium": {"enum": ["", "Memory"]},
                                                     "sizeLimit": {"type": "string", "pattern": "^[0-9]+$"}}}}}}}}
  }
})";

inline constexpr const char* kSeccompProfileRefSchema = R"({
  "type": "object", "additionalProperties": false, "required": ["type", "localhostProfile"],
  "properties": {"type": {"const": "Localhost"},
                 "localhostProfile": {"type": "string", "pattern": "^profiles/[a-z0-9-]+\\.json$"}}
})";

inline constexpr const char* kNetworkPolicySchema = R"({
  "type": "object", "additionalProperties": false, "required": ["apiVersion", "kind", "metadata", "spec"],
  "properties": {
    "apiVersion": {"const": "networking.k8s.io/v1"}, "kind": {"const": "NetworkPolicy"},
    "metadata": {"type": "object", "required": ["name"]},
    "spec": {"type": "object", "additionalProperties": false, "required": ["podSelector", "policyTypes"],
      "properties": {
        "podSelector": {"type": "object", "required": ["matchLabels"]},
        "policyTypes": {"const": ["Ingress", "Egress"]},
        "ingress": {"type": "array", "items": {"type": "object"}},
        "egress": {"type": "array", "items": {"type": "object", "additionalProperties": false, "required": ["to", "ports"],
          "properties": {
            "to": {"type": "array", "minItems": 1, "items": {"type": "object", "additionalProperties": false,
                   "required": ["ipBlock"], "properties": {"ipBlock": {"type": "object", "additionalProperties": false,
                   "required": ["cidr"], "properties": {"cidr": {"type": "string", "pattern": "/(32|128)$"}}}}}},
            "ports": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                      "properties": {"protocol": {"enum": ["TCP", "UDP"]}, "port": {"type": "integer", "minimum": 1, "maximum": 65535}}}}}}}}}
  }
})";

}  // namespace cocoon::testing
