// Table-driven diagnostics: each row is an input and the exact rendered text,
// caret included.
#include <gtest/gtest.h>

#include "tests/frontend/test_util.h"

namespace cocoon::frontend {
namespace {

struct Case {
  const char* name;
  const char* input;
  const char* expected;
};

const Case kCases[] = {
    {"unknown_key_did_you_mean",
     "import \"strict\"\nprofile p extends strict {\n  netwrok off\n}\n",
     "ERROR: t.cocoon:3:3: unknown setting 'netwrok'\n"
     " |   netwrok off\n"
     " |   ^~~~~~~\n"
     " = help: did you mean 'network'?\n"},
    {"unknown_limit",
     "import \"strict\"\nprofile p extends strict {\n  limits { memroy 64MiB }\n}\n",
     "ERROR: t.cocoon:3:12: unknown limit 'memroy'\n"
     " |   limits { memroy 64MiB }\n"
     " |            ^~~~~~\n"
     " = help: did you mean 'memory'?\n"},
    {"bad_unit",
     "import \"strict\"\nprofile p extends strict {\n  limits { wall_time 5x }\n}\n",
     "ERROR: t.cocoon:3:22: unknown unit 'x'; expected a duration such as 500ms, 5s, 2m or 1h\n"
     " |   limits { wall_time 5x }\n"
     " |                      ^~\n"},
    {"size_unit_for_time",
     "import \"strict\"\nprofile p extends strict {\n  limits { wall_time 5MiB }\n}\n",
     "ERROR: t.cocoon:3:22: '5MiB' is not a duration such as 500ms, 5s, 2m or 1h\n"
     " |   limits { wall_time 5MiB }\n"
     " |                      ^~~~\n"},
    {"out_of_range",
     "import \"strict\"\nprofile p extends strict {\n  limits { processes 0 }\n}\n",
     "ERROR: t.cocoon:3:22: processes 0 is out of range; expected 1 to 4194304\n"
     " |   limits { processes 0 }\n"
     " |                      ^\n"},
    {"relative_path",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { readonly opt/x }\n}\n",
     "ERROR: t.cocoon:3:25: relative path 'opt/x' where an absolute path is needed\n"
     " |   filesystem { readonly opt/x }\n"
     " |                         ^~~~~\n"
     " = help: write '/opt/x'\n"},
    {"non_canonical_path",
     "import \"strict\"\nprofile p extends strict {\n  cwd /work/../tmp/\n}\n",
     "ERROR: t.cocoon:3:7: non-canonical path '/work/../tmp/'; write '/tmp'\n"
     " |   cwd /work/../tmp/\n"
     " |       ^~~~~~~~~~~~~\n"},
    {"readonly_and_writable",
     "import \"strict\"\nprofile p extends strict {\n  relaxes filesystem\n"
     "  filesystem {\n    readonly /opt\n    writable /opt\n  }\n}\n",
     "WARNING: t.cocoon:6:14: writable bind mount of host path '/opt': the sandbox can change the host there\n"
     " |     writable /opt\n"
     " |              ^~~~\n"
     " = help: prefer `work` (staged and verified) or `tmpfs` unless the host must see the writes\n"
     "ERROR: t.cocoon:6:14: '/opt' is both read-only (line 5) and writable\n"
     " |     writable /opt\n"
     " |              ^~~~\n"},
    // Landlock's write rights for the tmpfs reach into the read-only bind
    // below it: a host FIFO there could be opened for writing.
    {"readonly_under_a_writable_mount",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { readonly /tmp/x }\n}\n",
     "WARNING: t.cocoon:3:25: read-only '/tmp/x' is inside the tmpfs '/tmp', whose write access reaches into it "
     "(Landlock rights follow paths across mounts): its files cannot be changed, but a FIFO in it can be opened for "
     "writing, so a host process reading one there can be fed by the sandbox\n"
     " |   filesystem { readonly /tmp/x }\n"
     " |                         ^~~~~~\n"
     " = help: bind it at a target no writable mount is above, or keep FIFOs that host processes use out of it "
     "(docs/security.md, Limitations)\n"},
    {"unknown_syscall",
     "import \"strict\"\nprofile p extends strict {\n  syscalls { allow openn }\n}\n",
     "ERROR: t.cocoon:3:20: unknown syscall 'openn'\n"
     " |   syscalls { allow openn }\n"
     " |                    ^~~~~\n"
     " = help: did you mean 'open'?\n"},
    // A misspelt action on a line of its own continues the rule before it.
    {"misspelt_action_on_its_own_line",
     "import \"strict\"\nprofile p extends strict {\n  syscalls {\n    deny ptrace\n    alow chroot\n"
     "    dney mount\n  }\n}\n",
     "ERROR: t.cocoon:5:5: unknown syscall 'alow'\n"
     " |     alow chroot\n"
     " |     ^~~~\n"
     " = help: did you mean 'allow'? A rule starts with its action; as written, this line continues the rule "
     "before it\n"
     "ERROR: t.cocoon:6:5: unknown syscall 'dney'\n"
     " |     dney mount\n"
     " |     ^~~~\n"
     " = help: did you mean 'deny'? A rule starts with its action; as written, this line continues the rule "
     "before it\n"},
    {"unknown_group",
     "import \"strict\"\nprofile p extends strict {\n  syscalls { deny @mout }\n}\n",
     "ERROR: t.cocoon:3:19: unknown syscall group '@mout'\n"
     " |   syscalls { deny @mout }\n"
     " |                   ^~~~~\n"
     " = help: did you mean '@mount'?\n"},
    {"allowed_and_denied",
     "import \"strict\"\nprofile p extends strict {\n  relaxes syscalls\n"
     "  syscalls {\n    allow ptrace\n    deny ptrace\n  }\n}\n",
     "ERROR: t.cocoon:6:10: conflicting rules: 'ptrace' is allowed at line 5 and denied (errno EPERM) here\n"
     " |     deny ptrace\n"
     " |          ^~~~~~\n"},
    {"unknown_constant_and_errno",
     "import \"strict\"\nprofile p extends strict {\n"
     "  syscalls { deny clone if (arg0 & CLONE_NEWUSR) != 0 errno EPREM }\n}\n",
     "ERROR: t.cocoon:3:36: unknown constant 'CLONE_NEWUSR'\n"
     " |   syscalls { deny clone if (arg0 & CLONE_NEWUSR) != 0 errno EPREM }\n"
     " |                                    ^~~~~~~~~~~~\n"
     " = help: did you mean 'CLONE_NEWUSER'?\n"
     "ERROR: t.cocoon:3:61: unknown errno 'EPREM'\n"
     " |   syscalls { deny clone if (arg0 & CLONE_NEWUSR) != 0 errno EPREM }\n"
     " |                                                             ^~~~~\n"
     " = help: did you mean 'EPERM'?\n"},
    {"masked_in_value_outside_mask",
     "import \"strict\"\nprofile p extends strict {\n"
     "  syscalls { kill clone if (arg0 & CLONE_NEWUSER) in {CLONE_NEWUSER, CLONE_NEWNET} }\n}\n",
     "ERROR: t.cocoon:3:70: value has bits outside the mask: the condition is always false\n"
     " |   syscalls { kill clone if (arg0 & CLONE_NEWUSER) in {CLONE_NEWUSER, CLONE_NEWNET} }\n"
     " |                                                                      ^~~~~~~~~~~~\n"},
    {"masked_in_zero_mask",
     "import \"strict\"\nprofile p extends strict {\n  syscalls { kill clone if (arg0 & 0) in {0} }\n}\n",
     "ERROR: t.cocoon:3:36: mask is 0: the condition would test nothing\n"
     " |   syscalls { kill clone if (arg0 & 0) in {0} }\n"
     " |                                    ^\n"},
    {"copy_to_dot",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { copy \"x\" to \".\" }\n}\n",
     "ERROR: t.cocoon:3:28: copy destination '.' must be a canonical path relative to the work dir (no leading or "
     "trailing '/', no '.' or '..')\n"
     " |   filesystem { copy \"x\" to \".\" }\n"
     " |                            ^~~\n"},
    {"copy_to_trailing_slash",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { copy \"x\" to \"a/\" }\n}\n",
     "ERROR: t.cocoon:3:28: copy destination 'a/' must be a canonical path relative to the work dir (no leading or "
     "trailing '/', no '.' or '..')\n"
     " |   filesystem { copy \"x\" to \"a/\" }\n"
     " |                            ^~~~\n"},
    {"mount_under_dev",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { tmpfs /dev/shm }\n}\n",
     "ERROR: t.cocoon:3:22: cannot mount on '/dev/shm': /proc and /dev are set up by the enforcer\n"
     " |   filesystem { tmpfs /dev/shm }\n"
     " |                      ^~~~~~~~\n"
     " = help: allow a device with `devices { ... }`; hide a /proc path with `hide`\n"},
    {"bind_under_proc",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { readonly /usr as /proc/x }\n}\n",
     "ERROR: t.cocoon:3:25: cannot mount on '/proc/x': /proc and /dev are set up by the enforcer\n"
     " |   filesystem { readonly /usr as /proc/x }\n"
     " |                         ^~~~~~~~~~~~~~~\n"
     " = help: allow a device with `devices { ... }`; hide a /proc path with `hide`\n"},
    {"bind_of_host_proc",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { readonly /proc/self as /me }\n}\n",
     "ERROR: t.cocoon:3:25: cannot bind '/proc/self': it would show the host's /proc to the sandbox, with every "
     "host process and its root directory\n"
     " |   filesystem { readonly /proc/self as /me }\n"
     " |                         ^~~~~~~~~~\n"
     " = help: the sandbox has a /proc of its own; bind only the host directories it needs (e.g. /usr)\n"},
    {"bind_of_host_root",
     "import \"strict\"\nprofile p extends strict {\n  relaxes filesystem\n  filesystem { writable / as /host }\n}\n",
     "ERROR: t.cocoon:4:25: cannot bind '/': it would show the host's /proc to the sandbox, with every "
     "host process and its root directory\n"
     " |   filesystem { writable / as /host }\n"
     " |                         ^\n"
     " = help: the sandbox has a /proc of its own; bind only the host directories it needs (e.g. /usr)\n"},
    {"work_root",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { work / }\n}\n",
     "ERROR: t.cocoon:3:21: the work dir cannot be '/'\n"
     " |   filesystem { work / }\n"
     " |                     ^\n"
     " = help: use a directory such as /work\n"},
    {"mount_on_work_dir",
     "import \"strict\"\nprofile p extends strict { relaxes filesystem\n  filesystem { work /data\n    tmpfs /data }\n}\n",
     "ERROR: t.cocoon:4:11: cannot mount on '/data': it is the work dir\n"
     " |     tmpfs /data }\n"
     " |           ^~~~~\n"
     " = help: mount somewhere else, or move the work dir with `work PATH`\n"},
    {"unknown_parent",
     "import \"strict\"\nprofile p extends strcit { }\n",
     "ERROR: t.cocoon:2:19: unknown parent profile 'strcit'\n"
     " | profile p extends strcit { }\n"
     " |                   ^~~~~~\n"
     " = help: did you mean 'strict'?\n"},
    {"hide_inside_work_dir",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { hide /work/.env }\n}\n",
     "ERROR: t.cocoon:3:21: cannot hide '/work/.env': it is inside the work dir '/work', which holds the caller's "
     "own files (staged at launch), not a host bind\n"
     " |   filesystem { hide /work/.env }\n"
     " |                     ^~~~~~~~~~\n"
     " = help: keep that file out of the host work dir, or hide it where it is bound from\n"},
    {"hide_holding_the_work_dir",
     "import \"strict\"\nprofile p extends strict {\n  filesystem {\n    work /srv/w\n"
     "    readonly /etc as /srv/etc\n    hide /srv\n  }\n}\n",
     "ERROR: t.cocoon:6:10: cannot hide '/srv': it holds the work dir '/srv/w', which the sandbox needs; the "
     "empty directory put there would cover it\n"
     " |     hide /srv\n"
     " |          ^~~~\n"
     " = help: hide the entries beside it one by one, or move the work dir with `work PATH`\n"},
    {"hide_holding_the_cwd",
     "import \"strict\"\nprofile p extends strict {\n  cwd /srv/app\n  filesystem { hide /srv }\n}\n",
     "ERROR: t.cocoon:4:21: cannot hide '/srv': it holds the working directory '/srv/app', which the sandbox "
     "needs; the empty directory put there would cover it\n"
     " |   filesystem { hide /srv }\n"
     " |                     ^~~~\n"
     " = help: hide the entries beside it one by one, or move the working directory with `cwd PATH`\n"},
    {"hide_through_proc_self",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { hide /proc/self/environ /proc/1/environ "
     "/proc/thread-self }\n}\n",
     "ERROR: t.cocoon:3:21: cannot hide '/proc/self/environ': /proc/self names whichever process looks, and "
     "the mask is made at setup, where that is Cocoon's setup process, not the program: it would hide nothing "
     "the program reads\n"
     " |   filesystem { hide /proc/self/environ /proc/1/environ /proc/thread-self }\n"
     " |                     ^~~~~~~~~~~~~~~~~~\n"
     " = help: hide a /proc path that is the same for every process (such as /proc/kcore), or keep the secret "
     "out of the sandbox's environment and command line\n"
     "ERROR: t.cocoon:3:40: cannot hide '/proc/1/environ': /proc/1 is the entry of whichever process has that "
     "PID in the sandbox's new PID namespace, which is not known when the policy is written: the mask would "
     "promise nothing about the program's own entry\n"
     " |   filesystem { hide /proc/self/environ /proc/1/environ /proc/thread-self }\n"
     " |                                        ^~~~~~~~~~~~~~~\n"
     " = help: hide a /proc path that is the same for every process (such as /proc/kcore), or keep the secret "
     "out of the sandbox's environment and command line\n"
     "ERROR: t.cocoon:3:56: cannot hide '/proc/thread-self': /proc/thread-self names whichever process looks, "
     "and the mask is made at setup, where that is Cocoon's setup process, not the program: it would hide "
     "nothing the program reads\n"
     " |   filesystem { hide /proc/self/environ /proc/1/environ /proc/thread-self }\n"
     " |                                                        ^~~~~~~~~~~~~~~~~\n"
     " = help: hide a /proc path that is the same for every process (such as /proc/kcore), or keep the secret "
     "out of the sandbox's environment and command line\n"},
    {"extends_cycle",
     "profile t extends b { }\nprofile b extends t { }\n",
     "ERROR: t.cocoon:2:19: extends cycle: t -> b -> t\n"
     " | profile b extends t { }\n"
     " |                   ^\n"},
    {"weakens_parent",
     "import \"strict\"\nprofile p extends strict {\n  limits { memory 1GiB }\n}\n",
     "WARNING: t.cocoon:3:12: profile 'p' weakens limits.memory inherited from 'strict': 1 GiB is more than 128 MiB\n"
     " |   limits { memory 1GiB }\n"
     " |            ^~~~~~~~~~~\n"
     " = help: if this is deliberate, say so with `relaxes limits` in profile 'p'\n"},
    {"weakens_after_restating_group",
     "import \"strict\"\nprofile p extends strict {\n  syscalls {\n    deny @debug\n    allow ptrace\n  }\n}\n",
     "WARNING: t.cocoon:5:5: profile 'p' weakens syscalls inherited from 'strict': allow 'ptrace', which it denied\n"
     " |     allow ptrace\n"
     " |     ^~~~~~~~~~~~\n"
     " = help: if this is deliberate, say so with `relaxes syscalls` in profile 'p'\n"},
    // Rootless, a tmpfs's size is all that bounds the memory its files
    // hold: raising an inherited one is a weakening, like a raised limit.
    {"weakens_tmpfs_size",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { tmpfs /tmp size 16TiB }\n}\n",
     "WARNING: t.cocoon:3:22: profile 'p' weakens filesystem inherited from 'strict': tmpfs '/tmp' raised to 16 TiB "
     "(it was 64 MiB; its files are kernel memory, and without a memory cgroup its size is all that bounds them)\n"
     " |   filesystem { tmpfs /tmp size 16TiB }\n"
     " |                      ^~~~\n"
     " = help: if this is deliberate, say so with `relaxes filesystem` in profile 'p'\n"},
    {"weakens_read_only_bind_into_tmpfs",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { tmpfs /usr }\n}\n",
     "WARNING: t.cocoon:3:22: profile 'p' weakens filesystem inherited from 'strict': '/usr' made a writable tmpfs "
     "of 64 MiB (it was a read-only bind)\n"
     " |   filesystem { tmpfs /usr }\n"
     " |                      ^~~~\n"
     " = help: if this is deliberate, say so with `relaxes filesystem` in profile 'p'\n"},
    // A tmpfs needs no inherited one to weaken: a new one of any size adds
    // to the kernel memory the sandbox can fill (before: no warning).
    {"weakens_new_tmpfs",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { tmpfs /scratch size 16TiB }\n}\n",
     "WARNING: t.cocoon:3:22: profile 'p' weakens filesystem inherited from 'strict': '/scratch' is a new tmpfs of "
     "16 TiB (its files are kernel memory, and without a memory cgroup its size is all that bounds them: it adds to "
     "the memory the sandbox can write)\n"
     " |   filesystem { tmpfs /scratch size 16TiB }\n"
     " |                      ^~~~~~~~\n"
     " = help: if this is deliberate, say so with `relaxes filesystem` in profile 'p'\n"},
    {"weakens_new_tmpfs_under_an_inherited_tmpfs",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { tmpfs /tmp/big size 16TiB }\n}\n",
     "WARNING: t.cocoon:3:22: profile 'p' weakens filesystem inherited from 'strict': '/tmp/big' is a new tmpfs of "
     "16 TiB (its files are kernel memory, and without a memory cgroup its size is all that bounds them: it adds to "
     "the memory the sandbox can write)\n"
     " |   filesystem { tmpfs /tmp/big size 16TiB }\n"
     " |                      ^~~~~~~~\n"
     " = help: if this is deliberate, say so with `relaxes filesystem` in profile 'p'\n"},
    {"weakens_read_only_bind_with_a_tmpfs_under_it",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { tmpfs /usr/local size 1MiB }\n}\n",
     "WARNING: t.cocoon:3:22: profile 'p' weakens filesystem inherited from 'strict': '/usr/local' made writable "
     "under read-only '/usr': a new tmpfs of 1 MiB (its files are kernel memory, and without a memory cgroup its "
     "size is all that bounds them: it adds to the memory the sandbox can write)\n"
     " |   filesystem { tmpfs /usr/local size 1MiB }\n"
     " |                      ^~~~~~~~~~\n"
     " = help: if this is deliberate, say so with `relaxes filesystem` in profile 'p'\n"},
    {"weakens_read_only_bind_with_a_writable_bind_under_it",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { writable /opt as /usr/share/x }\n}\n",
     "WARNING: t.cocoon:3:25: writable bind mount of host path '/opt': the sandbox can change the host there\n"
     " |   filesystem { writable /opt as /usr/share/x }\n"
     " |                         ^~~~~~~~~~~~~~~~~~~~\n"
     " = help: prefer `work` (staged and verified) or `tmpfs` unless the host must see the writes\n"
     "WARNING: t.cocoon:3:25: profile 'p' weakens filesystem inherited from 'strict': '/usr/share/x' made writable "
     "under read-only '/usr': a writable bind of the host's '/opt'\n"
     " |   filesystem { writable /opt as /usr/share/x }\n"
     " |                         ^~~~~~~~~~~~~~~~~~~~\n"
     " = help: if this is deliberate, say so with `relaxes filesystem` in profile 'p'\n"},
    // Rounded alike, the sizes are given exactly (before: "raised to 64 MiB
    // (it was 64 MiB").
    {"weakens_tmpfs_size_by_less_than_the_rounding",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { tmpfs /tmp size 65537KiB }\n}\n",
     "WARNING: t.cocoon:3:22: profile 'p' weakens filesystem inherited from 'strict': tmpfs '/tmp' raised to "
     "67109888 bytes (it was 67108864 bytes; its files are kernel memory, and without a memory cgroup its size is "
     "all that bounds them)\n"
     " |   filesystem { tmpfs /tmp size 65537KiB }\n"
     " |                      ^~~~\n"
     " = help: if this is deliberate, say so with `relaxes filesystem` in profile 'p'\n"},
    {"relaxes_filesystem_covers_a_new_tmpfs",
     "import \"strict\"\nprofile p extends strict {\n  relaxes filesystem\n  filesystem { tmpfs /scratch size 1GiB }\n}\n",
     ""},
    // Read-only under read-only, a tmpfs under the profile's own new
    // read-only bind, and a tmpfs in a profile that extends nothing: none
    // gives the sandbox more than its parent did.
    {"read_only_bind_under_read_only_is_no_weakening",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { readonly /opt as /usr/share/x }\n}\n", ""},
    {"tmpfs_in_a_profile_extending_nothing_is_no_weakening",
     "profile p {\n  filesystem { tmpfs /scratch size 16TiB }\n  syscalls { allow read }\n}\n", ""},
    {"relaxes_filesystem_covers_a_larger_tmpfs",
     "import \"strict\"\nprofile p extends strict {\n  relaxes filesystem\n  filesystem { tmpfs /tmp size 1GiB }\n}\n",
     ""},
    {"smaller_tmpfs_is_no_weakening",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { tmpfs /tmp size 8MiB }\n}\n", ""},
    // The more restrictive rule wins where two rules of one syscall overlap:
    // a conditional allow under an unconditional deny never applies.
    {"rule_overridden_in_its_own_profile",
     "profile t {\n  syscalls {\n    deny kcmp\n    allow kcmp if arg2 == 1\n  }\n}\n",
     "WARNING: t.cocoon:4:11: this allow rule for 'kcmp' never applies: the unconditional errno EPERM rule for "
     "'kcmp' at t.cocoon:3 is more restrictive, and the more restrictive rule wins wherever both match\n"
     " |     allow kcmp if arg2 == 1\n"
     " |           ^~~~\n"
     " = help: remove this rule; or, to give these calls its action, narrow the covering rule so that it leaves "
     "them out (a condition of its own, or a rule that does not name 'kcmp')\n"},
    {"rule_overridden_by_a_parents_group",
     "profile base {\n  syscalls { deny @debug }\n}\nprofile t extends base {\n"
     "  syscalls { allow kcmp if arg2 == 1 }\n}\n",
     "WARNING: t.cocoon:5:20: this allow rule for 'kcmp' never applies: the unconditional errno EPERM rule for "
     "'kcmp' (from @debug) at t.cocoon:2 is more restrictive, and the more restrictive rule wins wherever both "
     "match\n"
     " |   syscalls { allow kcmp if arg2 == 1 }\n"
     " |                    ^~~~\n"
     " = help: remove this rule; or, to give these calls its action, narrow the covering rule so that it leaves "
     "them out (a condition of its own, or a rule that does not name 'kcmp')\n"},
    // Not overridden: the conditional deny outranks the unconditional allow
    // where it matches, and the lower errno wins between two errno rules.
    {"stricter_conditional_rule_is_not_overridden",
     "profile t {\n  syscalls {\n    allow kcmp\n    deny kcmp if arg2 == 1\n    deny getpid errno EACCES\n"
     "    deny getpid if arg0 == 1\n  }\n}\n",
     ""},
    // The prologue answers every clone3 with ENOSYS whatever the policy
    // says (before: no warning). A rule whose action outranks it (kill, a
    // lower errno), or that repeats it, is not reported.
    {"rule_overridden_by_the_prologue",
     "import \"strict\"\nprofile p extends strict {\n  syscalls {\n    allow clone3 if arg1 == 88\n  }\n}\n",
     "WARNING: t.cocoon:4:11: this allow rule for 'clone3' never applies: the compiler's prologue answers every "
     "clone3 with errno ENOSYS, whatever the policy says\n"
     " |     allow clone3 if arg1 == 88\n"
     " |           ^~~~~~\n"
     " = help: remove this rule: no policy rule reopens 'clone3' (seccomp cannot read its flags, which are behind a "
     "pointer; glibc falls back to clone, whose flags rules can test)\n"},
    // A warning about one syscall of a rule points at that syscall, not at
    // the whole statement (before: the caret ran under all of it).
    {"warnings_point_at_the_syscall_they_are_about",
     "import \"strict\"\nprofile p extends strict {\n  syscalls {\n    allow read write read\n"
     "    allow getpid clone3 getppid\n  }\n}\n",
     "WARNING: t.cocoon:4:22: duplicate rule for 'read' (first at line 4)\n"
     " |     allow read write read\n"
     " |                      ^~~~\n"
     "WARNING: t.cocoon:5:18: this allow rule for 'clone3' never applies: the compiler's prologue answers every "
     "clone3 with errno ENOSYS, whatever the policy says\n"
     " |     allow getpid clone3 getppid\n"
     " |                  ^~~~~~\n"
     " = help: remove this rule: no policy rule reopens 'clone3' (seccomp cannot read its flags, which are behind a "
     "pointer; glibc falls back to clone, whose flags rules can test)\n"},
    // A bad errno or constant used to hide the misspelt syscall of the same
    // rule (only EPERX and FOOO were reported).
    {"unknown_syscall_beside_a_bad_errno_or_constant",
     "import \"strict\"\nprofile p extends strict {\n  syscalls {\n    deny ptrac errno EPERX\n"
     "    deny ptrac if arg0 == FOOO\n  }\n}\n",
     "ERROR: t.cocoon:4:10: unknown syscall 'ptrac'\n"
     " |     deny ptrac errno EPERX\n"
     " |          ^~~~~\n"
     " = help: did you mean 'ptrace'?\n"
     "ERROR: t.cocoon:4:22: unknown errno 'EPERX'\n"
     " |     deny ptrac errno EPERX\n"
     " |                      ^~~~~\n"
     " = help: did you mean 'EPERM'?\n"
     "ERROR: t.cocoon:5:10: unknown syscall 'ptrac'\n"
     " |     deny ptrac if arg0 == FOOO\n"
     " |          ^~~~~\n"
     " = help: did you mean 'ptrace'?\n"
     "ERROR: t.cocoon:5:27: unknown constant 'FOOO'\n"
     " |     deny ptrac if arg0 == FOOO\n"
     " |                           ^~~~\n"
     " = help: write a number, or see docs/language.md#constants\n"},
    // The prologue's fixed answers to argument values (before: check said ok
    // to these three rules, reviewer's x3.cocoon).
    {"rule_for_arguments_the_prologue_answers",
     "import \"strict\"\nprofile p extends strict {\n  relaxes syscalls\n  syscalls {\n"
     "    allow socket if arg0 == AF_VSOCK\n    allow ioctl if arg1 == TIOCSTI\n    allow fcntl if arg1 == 1024\n"
     "    kill ioctl if arg1 == TIOCLINUX\n    allow socket if arg0 == AF_UNIX\n  }\n}\n",
     "WARNING: t.cocoon:5:11: this allow rule for 'socket' never applies: the compiler's prologue answers every "
     "socket call with AF_VSOCK with errno EAFNOSUPPORT, whatever the policy says\n"
     " |     allow socket if arg0 == AF_VSOCK\n"
     " |           ^~~~~~\n"
     " = help: remove this rule: no policy rule reopens these calls (docs/language.md, Prologue)\n"
     "WARNING: t.cocoon:6:11: this allow rule for 'ioctl' never applies: the compiler's prologue answers every "
     "ioctl call with TIOCSTI with errno EPERM, whatever the policy says\n"
     " |     allow ioctl if arg1 == TIOCSTI\n"
     " |           ^~~~~\n"
     " = help: remove this rule: no policy rule reopens these calls (docs/language.md, Prologue)\n"
     "WARNING: t.cocoon:7:11: this allow rule for 'fcntl' never applies: the compiler's prologue answers every "
     "fcntl call with F_SETLEASE with errno EPERM, whatever the policy says\n"
     " |     allow fcntl if arg1 == 1024\n"
     " |           ^~~~~\n"
     " = help: remove this rule: no policy rule reopens these calls (docs/language.md, Prologue)\n"},
    {"rule_outranking_the_prologue_is_not_overridden",
     "profile t {\n  syscalls {\n    kill clone3 if arg1 == 88\n    deny clone3 errno ENOSYS\n  }\n}\n", ""},
    // Same rank as the prologue's errno: the prologue wins whatever the
    // errno (effective_rules.cc), so EPERM, the lower one, never applies.
    {"errno_rule_under_the_prologues_errno",
     "profile t {\n  syscalls {\n    deny clone3 errno EPERM\n  }\n}\n",
     "WARNING: t.cocoon:3:10: this errno EPERM rule for 'clone3' never applies: the compiler's prologue answers every "
     "clone3 with errno ENOSYS, whatever the policy says\n"
     " |     deny clone3 errno EPERM\n"
     " |          ^~~~~~\n"
     " = help: remove this rule: no policy rule reopens 'clone3' (seccomp cannot read its flags, which are behind a "
     "pointer; glibc falls back to clone, whose flags rules can test)\n"},
    {"rule_repeating_the_prologue_is_not_overridden",
     "profile t {\n  syscalls {\n    deny clone3 errno ENOSYS\n  }\n}\n", ""},
    // A copy is staged before the mounts are made: one covering it hides it.
    {"copy_under_a_mount",
     "import \"strict\"\nprofile p extends strict {\n  filesystem {\n    readonly /tmp/x as /work/vendor\n"
     "    copy \"in.txt\" to \"vendor/in.txt\"\n  }\n}\n",
     "WARNING: t.cocoon:4:14: read-only '/work/vendor' is inside the work dir '/work', whose write access reaches "
     "into it (Landlock rights follow paths across mounts): its files cannot be changed, but a FIFO in it can be "
     "opened for writing, so a host process reading one there can be fed by the sandbox\n"
     " |     readonly /tmp/x as /work/vendor\n"
     " |              ^~~~~~~~~~~~~~~~~~~~~~\n"
     " = help: bind it at a target no writable mount is above, or keep FIFOs that host processes use out of it "
     "(docs/security.md, Limitations)\n"
     "ERROR: t.cocoon:5:22: copy to 'vendor/in.txt' lands at '/work/vendor/in.txt', under the read-only mount of "
     "'/work/vendor' (t.cocoon:4): the mount hides the copy from the sandbox, and what it hides is lost\n"
     " |     copy \"in.txt\" to \"vendor/in.txt\"\n"
     " |                      ^~~~~~~~~~~~~~~\n"
     " = help: copy to a path in the work dir that no mount covers, or mount on another target\n"},
    {"copy_holding_a_mount",
     "import \"strict\"\nprofile p extends strict { relaxes filesystem\n  filesystem {\n    tmpfs /work/vendor/cache\n"
     "    copy \"vendor\" to \"vendor\"\n  }\n}\n",
     "ERROR: t.cocoon:5:22: copy to 'vendor' lands at '/work/vendor', which holds the tmpfs mount of "
     "'/work/vendor/cache' (t.cocoon:4): the mount hides that part of the copy from the sandbox, and what it "
     "hides is lost\n"
     " |     copy \"vendor\" to \"vendor\"\n"
     " |                      ^~~~~~~~\n"
     " = help: copy to a path in the work dir that no mount covers, or mount on another target\n"},
    {"copy_beside_a_mount",
     "import \"strict\"\nprofile p extends strict {\n  filesystem {\n    readonly /tmp/x as /work/vendor\n"
     "    copy \"in.txt\" to \"vendored/in.txt\"\n  }\n}\n",
     "WARNING: t.cocoon:4:14: read-only '/work/vendor' is inside the work dir '/work', whose write access reaches "
     "into it (Landlock rights follow paths across mounts): its files cannot be changed, but a FIFO in it can be "
     "opened for writing, so a host process reading one there can be fed by the sandbox\n"
     " |     readonly /tmp/x as /work/vendor\n"
     " |              ^~~~~~~~~~~~~~~~~~~~~~\n"
     " = help: bind it at a target no writable mount is above, or keep FIFOs that host processes use out of it "
     "(docs/security.md, Limitations)\n"},
    {"syntax_expectation",
     "profile x {\n  network offf\n}\n",
     "ERROR: t.cocoon:2:11: unexpected 'offf'; expected 'off', 'on' or 'allow'\n"
     " |   network offf\n"
     " |           ^~~~\n"
     " = help: did you mean 'off'?\n"},
    {"syntax_missing_value",
     "profile x {\n  limits { memory }\n}\n",
     "ERROR: t.cocoon:2:19: unexpected '}'; expected 'unlimited', a number, a quantity (5s, 128MiB, 95%) or a name\n"
     " |   limits { memory }\n"
     " |                   ^\n"},
    // A `}` with no block open is reported where it is (it used to be the
    // token after it: the `}` had ended the profile), with the `}` before it
    // that ends a block too soon when its indentation gives it away.
    {"stray_closing_brace",
     "profile x {\n  network off\n  }\n  description \"d\"\n}\n",
     "ERROR: t.cocoon:5:1: unmatched '}': no block is open here\n"
     " | }\n"
     " | ^\n"
     " = help: remove it, or the '}' before it that ends a block too soon\n"
     "NOTE: t.cocoon:3:3: this '}' ends the block opened at line 1, but is indented unlike it: is it one too many?\n"
     " |   }\n"
     " |   ^\n"},
    {"stray_closing_brace_on_one_line",
     "profile x {\n  filesystem { readonly /opt } }\n  description \"d\"\n}\n",
     "ERROR: t.cocoon:4:1: unmatched '}': no block is open here\n"
     " | }\n"
     " | ^\n"
     " = help: remove it, or the '}' before it that ends a block too soon\n"
     "NOTE: t.cocoon:2:32: this '}' ends the block opened at line 1: is it one too many?\n"
     " |   filesystem { readonly /opt } }\n"
     " |                                ^\n"},
    {"stray_closing_brace_between_profiles",
     "profile x {\n  network off\n}\n}\nprofile y {\n}\n",
     "ERROR: t.cocoon:4:1: unmatched '}': no block is open here\n"
     " | }\n"
     " | ^\n"
     " = help: remove it, or the '}' before it that ends a block too soon\n"},
    // An unclosed block: a note at its `{`.
    {"unclosed_block_at_end_of_file",
     "profile x {\n  network off\n",
     "ERROR: t.cocoon:2:14: unexpected end of file; expected one of 'description', 'network', 'filesystem', "
     "'limits', 'syscalls', 'environment', 'cwd', 'hostname', ...\n"
     " |   network off\n"
     " |              ^\n"
     "NOTE: t.cocoon:1:11: block opened here, and not closed\n"
     " | profile x {\n"
     " |           ^\n"},
    {"unclosed_inner_block",
     "profile x {\n  filesystem {\n    readonly /opt\n  network off\n}\n",
     "ERROR: t.cocoon:4:3: unexpected 'network'; expected one of 'root', 'readonly', 'writable', 'work', 'copy', "
     "'tmpfs', 'hide', 'devices', ...\n"
     " |   network off\n"
     " |   ^~~~~~~\n"
     "NOTE: t.cocoon:2:14: block opened here; is its '}' missing?\n"
     " |   filesystem {\n"
     " |              ^\n"},
    // A `relaxes` that acknowledges no weakening is a warning at its name.
    {"relaxes_that_acknowledges_nothing",
     "import \"strict\"\nprofile p extends strict {\n  relaxes limits network\n  limits { memory 1GiB }\n}\n",
     "WARNING: t.cocoon:3:18: `relaxes network` acknowledges nothing: profile 'p' weakens no network setting "
     "inherited from 'strict'\n"
     " |   relaxes limits network\n"
     " |                  ^~~~~~~\n"
     " = help: remove it: `relaxes` is for a weakening `cocoon check` would otherwise warn about, and one that "
     "marks none tells a reviewer of a loosening that is not there\n"},
    {"relaxes_without_a_parent",
     "profile p {\n  relaxes syscalls\n  syscalls { default allow }\n}\n",
     "WARNING: t.cocoon:2:11: `relaxes syscalls` acknowledges nothing: profile 'p' extends no profile, so it "
     "weakens nothing\n"
     " |   relaxes syscalls\n"
     " |           ^~~~~~~~\n"
     " = help: remove it: `relaxes` is for a weakening `cocoon check` would otherwise warn about, and one that "
     "marks none tells a reviewer of a loosening that is not there\n"},
    // A syscall the profile's architectures lack compiled to no rule, silently.
    {"syscall_missing_on_the_only_architecture",
     "import \"strict\"\nprofile p extends strict {\n  syscalls { deny mmap2 }\n}\n",
     "WARNING: t.cocoon:3:19: 'mmap2' does not exist on x86_64: the rule does nothing for it\n"
     " |   syscalls { deny mmap2 }\n"
     " |                   ^~~~~\n"
     " = help: it exists on x86 (see `arch`); remove the rule, or name the syscall this architecture has\n"},
    {"syscall_missing_on_some_architectures",
     "import \"strict\"\nprofile p extends strict {\n  relaxes syscalls\n  syscalls {\n    arch aarch64\n"
     "    deny mmap2 mmap cacheflush\n  }\n}\n",
     "WARNING: t.cocoon:6:10: 'mmap2' does not exist on x86_64 and aarch64: the rule does nothing for it\n"
     " |     deny mmap2 mmap cacheflush\n"
     " |          ^~~~~\n"
     " = help: it exists on x86 (see `arch`); remove the rule, or name the syscall this architecture has\n"
     "WARNING: t.cocoon:6:21: 'cacheflush' does not exist on x86_64 and aarch64: the rule does nothing for it\n"
     " |     deny mmap2 mmap cacheflush\n"
     " |                     ^~~~~~~~~~\n"
     " = help: no architecture Cocoon filters has it; remove the rule\n"},
    {"syscall_of_one_architecture_of_two",
     "import \"strict\"\nprofile p extends strict {\n  relaxes syscalls\n  syscalls {\n    arch x86\n"
     "    deny mmap2\n  }\n}\n",
     "NOTE: t.cocoon:5:10: on x86 (i386) the socketcall and ipc multiplexers fail with ENOSYS whatever the policy "
     "says: their arguments sit behind a pointer seccomp cannot read; i386 programs must use the direct socket and "
     "SysV IPC syscalls (Linux 4.3+)\n"
     " |     arch x86\n"
     " |          ^~~\n"
     "WARNING: t.cocoon:6:10: 'mmap2' does not exist on x86_64: the rule applies to it on x86 only\n"
     " |     deny mmap2\n"
     " |          ^~~~~\n"},
    // Under `arch x86` a rule on a call the i386 socketcall/ipc multiplexers
    // carry is not enforced as written there (they are refused with ENOSYS):
    // said at the rule; an error where the rule's action is stronger (kill).
    // A group's kill or trap under `arch x86`: its members i386 reaches
    // through ipc or socketcall get ENOSYS; said once, at the group rule.
    {"i386_trap_of_a_group_with_multiplexed_calls",
     "import \"strict\"\nprofile p extends strict {\n  relaxes syscalls\n  syscalls {\n    arch x86\n    trap @ipc\n  }\n}\n",
     "NOTE: t.cocoon:5:10: on x86 (i386) the socketcall and ipc multiplexers fail with ENOSYS whatever the policy says: their arguments sit behind a pointer seccomp cannot read; i386 programs must use the direct socket and SysV IPC syscalls (Linux 4.3+)\n"
     " |     arch x86\n"
     " |          ^~~\n"
     "WARNING: t.cocoon:6:5: on x86 this trap rule for @ipc does not trap ipc, msgctl, msgget, msgrcv, msgsnd, semctl, semget, semop and 5 more when i386 programs reach them through socketcall or ipc: the compiler refuses every i386 socketcall and ipc call with errno ENOSYS, before any rule\n"
     " |     trap @ipc\n"
     " |     ^~~~~~~~~\n"
     " = help: the calls are refused either way; name a call on its own for the rule to be checked, or remove `arch x86` (docs/language.md, Syscalls)\n"},
    {"i386_kill_of_a_multiplexed_call_is_an_error",
     "import \"strict\"\nprofile p extends strict {\n  relaxes syscalls\n  syscalls {\n    arch x86\n    kill connect\n    allow accept4\n    allow socketcall\n  }\n}\n",
     "NOTE: t.cocoon:5:10: on x86 (i386) the socketcall and ipc multiplexers fail with ENOSYS whatever the policy says: their arguments sit behind a pointer seccomp cannot read; i386 programs must use the direct socket and SysV IPC syscalls (Linux 4.3+)\n"
     " |     arch x86\n"
     " |          ^~~\n"
     "ERROR: t.cocoon:6:10: on x86 this kill rule for 'connect' applies to the direct i386 connect syscall only: under `arch x86` the compiler refuses every i386 socketcall call with errno ENOSYS, before any rule (its arguments sit behind a pointer seccomp cannot read); so the rule cannot be enforced as written (kill there is errno ENOSYS)\n"
     " |     kill connect\n"
     " |          ^~~~~~~\n"
     " = help: write an errno rule (`deny connect`) if refusing the call is enough, or remove `arch x86`\n"
     "WARNING: t.cocoon:7:11: on x86 this allow rule for 'accept4' applies to the direct i386 accept4 syscall only: under `arch x86` the compiler refuses every i386 socketcall call with errno ENOSYS, before any rule (its arguments sit behind a pointer seccomp cannot read)\n"
     " |     allow accept4\n"
     " |           ^~~~~~~\n"
     " = help: i386 programs must call accept4 directly (Linux 4.3+); through socketcall it fails with ENOSYS\n"
     "WARNING: t.cocoon:8:11: this allow rule for 'socketcall' cannot apply on x86; under `arch x86` the compiler refuses every i386 socketcall call with errno ENOSYS, before any rule (its arguments sit behind a pointer seccomp cannot read)\n"
     " |     allow socketcall\n"
     " |           ^~~~~~~~~~\n"
     " = help: remove this rule: under `arch x86`, i386 programs get ENOSYS for socketcall (docs/language.md, Syscalls)\n"},
    // A permitting personality rule is narrowed to the safe personas: one
    // that matches none never applies, one that matches others in part.
    {"personality_rule_outside_the_safe_personas",
     "profile p {\n  syscalls {\n    allow read\n    allow personality if arg0 == 0x400000\n    log personality if arg0 > 5\n  }\n}\n",
     "WARNING: t.cocoon:4:11: this allow rule for 'personality' never applies: the compiler's prologue lets a permitting personality rule through only for the safe personas (PER_LINUX 0, PER_LINUX32 8, UNAME26 0x20000, both 0x20008, and the 0xffffffff query), and this rule matches none of them\n"
     " |     allow personality if arg0 == 0x400000\n"
     " |           ^~~~~~~~~~~\n"
     " = help: remove this rule: no policy rule reopens these calls (docs/language.md, Prologue)\n"
     "WARNING: t.cocoon:5:9: this log rule for 'personality' applies in part: the compiler's prologue narrows every permitting personality rule to the safe personas (PER_LINUX 0, PER_LINUX32 8, UNAME26 0x20000, both 0x20008, and the 0xffffffff query): its other values fall to the other rules and the default\n"
     " |     log personality if arg0 > 5\n"
     " |         ^~~~~~~~~~~\n"
     " = help: narrow the condition to the values it can allow, or use an errno rule for the others (docs/language.md, Prologue)\n"},
    // What `user` takes, and why no name; a negative value said as such.
    {"user_name_instead_of_ids",
     "import \"strict\"\nprofile p extends strict {\n  user root\n}\n",
     "ERROR: t.cocoon:3:8: unexpected 'root'; `user` takes numeric ids, uid:gid, each 0..65534\n"
     " |   user root\n"
     " |        ^~~~\n"
     " = help: names are not looked up: the sandbox has its own user namespace, whose ids the host's /etc/passwd does not name. Write `user 0:0` for root (check warns: a weakening), or keep the default 65534:65534 (nobody)\n"},
    {"negative_size_or_count",
     "import \"strict\"\nprofile p extends strict {\n  limits { processes -5 }\n  filesystem { tmpfs /tmp size -5MiB }\n}\n",
     "ERROR: t.cocoon:3:22: unexpected '-5': a negative number, and no value in a policy is negative\n"
     " |   limits { processes -5 }\n"
     " |                      ^~\n"
     " = help: sizes, counts, durations and ids are 0 or more; for no limit at all, write `unlimited`\n"
     "ERROR: t.cocoon:4:32: unexpected '-5MiB': a negative number, and no value in a policy is negative\n"
     " |   filesystem { tmpfs /tmp size -5MiB }\n"
     " |                                ^~~~~\n"
     " = help: sizes, counts, durations and ids are 0 or more; for no limit at all, write `unlimited`\n"},
    // What `cocoon run` refuses (ir/runtime_memory_flag.h), at the flag: a
    // preset that checks is one that runs.
    {"malformed_memory_share_in_a_runtime_flag",
     "import \"strict\"\nprofile p extends strict {\n  runtime r {\n    interpreter /usr/bin/node\n"
     "    flags \"--max-old-space-size={memory_mib:0%}\"\n  }\n}\n",
     "ERROR: t.cocoon:5:11: runtime flag '--max-old-space-size={memory_mib:0%}' has a malformed memory limit share\n"
     " |     flags \"--max-old-space-size={memory_mib:0%}\"\n"
     " |           ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"
     " = help: write the memory limit's share as {memory_mib:N%} with N from 1 to 100, once in the flag\n"},
    // What `cocoon enforce` refuses (ir/work_dir_rules.h), at the work line.
    {"work_dir_inside_a_read_only_bind",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { work /usr/local/bin }\n}\n",
     "ERROR: t.cocoon:3:21: the work dir /usr/local/bin is inside a bound host directory (/usr); put the work dir on the sandbox's own tree, outside every bind\n"
     " |   filesystem { work /usr/local/bin }\n"
     " |                     ^~~~~~~~~~~~~~\n"
     " = help: move the work dir with `work PATH` to a path no bind holds (such as /work), or leave '/usr' out of the binds\n"},
    {"unterminated_string",
     "profile x {\n  description \"oops\n}\n",
     "ERROR: t.cocoon:2:15: unexpected '\"oops' (unterminated string?); expected a \"string\"\n"
     " |   description \"oops\n"
     " |               ^~~~~\n"},
    {"unknown_string_escape",
     "import \"strict\"\nprofile p extends strict {\n  environment { set P \"bad \\q escape\" }\n}\n",
     "ERROR: t.cocoon:3:28: unknown escape '\\q' in a string\n"
     " |   environment { set P \"bad \\q escape\" }\n"
     " |                            ^~\n"
     " = help: the escapes are \\\" \\\\ \\n and \\t; write \\\\ for a backslash\n"},
    // One error per slip, where it is: not also on the valid lines after it.
    {"unit_written_apart",
     "import \"strict\"\nprofile p extends strict {\n  limits {\n    memory 64 MiB\n    wall_time 5 s\n"
     "    processes 8\n    cpu 50 %\n  }\n}\n",
     "ERROR: t.cocoon:4:12: a space between a number and its unit\n"
     " |     memory 64 MiB\n"
     " |            ^~~~~~\n"
     " = help: write 64MiB, without a space\n"
     "ERROR: t.cocoon:5:15: a space between a number and its unit\n"
     " |     wall_time 5 s\n"
     " |               ^~~\n"
     " = help: write 5s, without a space\n"
     "ERROR: t.cocoon:7:9: a space between a number and its unit\n"
     " |     cpu 50 %\n"
     " |         ^~~~\n"
     " = help: write 50%, without a space\n"},
    // A misspelt unit, apart: one error at the value, not "unexpected '}'".
    {"misspelt_unit_written_apart",
     "import \"strict\"\nprofile p extends strict {\n  limits { wall_time 5 sec  memory 128 M  processes 8 }\n}\n",
     "ERROR: t.cocoon:3:22: unknown unit 'sec', written apart from its number\n"
     " |   limits { wall_time 5 sec  memory 128 M  processes 8 }\n"
     " |                      ^~~~~\n"
     " = help: write 5s\n"
     "ERROR: t.cocoon:3:36: unknown unit 'M', written apart from its number\n"
     " |   limits { wall_time 5 sec  memory 128 M  processes 8 }\n"
     " |                                    ^~~~~\n"
     " = help: write 128MiB\n"},
    {"hex_number_with_a_unit",
     "import \"strict\"\nprofile p extends strict {\n  limits {\n    memory 0x40 MiB\n    processes 8\n  }\n}\n",
     "ERROR: t.cocoon:4:12: a hexadecimal number takes no unit\n"
     " |     memory 0x40 MiB\n"
     " |            ^~~~~~~~\n"
     " = help: write 64MiB\n"},
    // Written together, a hex number and its unit (and other words that start
    // with a digit but are no number) were a syntax error that the parser's
    // recovery carried onto the valid line after it ("unexpected '8'").
    {"hex_number_with_its_unit_attached",
     "import \"strict\"\nprofile p extends strict {\n  limits {\n    memory 0x40MiB\n    processes 8\n"
     "    wall_time 0x10s\n    cpu_time 5s\n  }\n}\n",
     "ERROR: t.cocoon:4:12: a hexadecimal number takes no unit; expected a size such as 64KiB, 128MiB or 1GiB\n"
     " |     memory 0x40MiB\n"
     " |            ^~~~~~~\n"
     " = help: write 64MiB\n"
     "ERROR: t.cocoon:6:15: a hexadecimal number takes no unit; expected a duration such as 500ms, 5s, 2m or 1h\n"
     " |     wall_time 0x10s\n"
     " |               ^~~~~\n"
     " = help: write 16s\n"},
    {"fraction_written_apart_from_its_unit",
     "import \"strict\"\nprofile p extends strict {\n  limits {\n    memory 1.5 GiB\n    processes 8\n  }\n}\n",
     "ERROR: t.cocoon:4:12: a space between a number and its unit\n"
     " |     memory 1.5 GiB\n"
     " |            ^~~~~~~\n"
     " = help: write 1.5GiB, without a space\n"},
    {"an_equals_sign_where_none_goes",
     "import \"strict\"\nprofile p extends strict {\n  syscalls { allow socket if arg0 = 1 }\n}\n",
     "ERROR: t.cocoon:3:35: '=' is not an operator; a comparison is written '=='\n"
     " |   syscalls { allow socket if arg0 = 1 }\n"
     " |                                   ^\n"
     " = help: the comparisons are ==, !=, <, <=, >, >= (and `in { ... }`)\n"},
    // A typo in a block's statement is one error at it; the valid lines
    // after it, and a mistake further on, are still read.
    {"a_misspelt_syscall_verb_hides_nothing_after_it",
     "import \"strict\"\nprofile p extends strict {\n  syscalls {\n    alow read\n    deny ptrace\n  }\n"
     "  environment { set FOO \"bar\" }\n  hostname \"a b\"\n}\n",
     "ERROR: t.cocoon:4:5: unknown syscalls statement 'alow'\n"
     " |     alow read\n"
     " |     ^~~~\n"
     " = help: did you mean 'allow'?\n"
     "ERROR: t.cocoon:8:12: invalid hostname 'a b'\n"
     " |   hostname \"a b\"\n"
     " |            ^~~~~\n"
     " = help: use letters, digits, '-' and '.', at most 64 characters\n"},
    {"a_misspelt_environment_statement_is_one_error",
     "import \"strict\"\nprofile p extends strict {\n  environment { sett FOO \"x\"\n    pass BAR }\n}\n",
     "ERROR: t.cocoon:3:17: unknown environment statement 'sett'\n"
     " |   environment { sett FOO \"x\"\n"
     " |                 ^~~~\n"
     " = help: did you mean 'set'?\n"},
    {"an_endpoint_without_its_port_is_one_error",
     "import \"strict\"\nprofile p extends strict {\n  network allow { a.com:443 b.com\n    c.com:80 }\n"
     "  relaxes network\n}\n",
     "ERROR: t.cocoon:3:29: endpoint 'b.com' has no port; write host:port\n"
     " |   network allow { a.com:443 b.com\n"
     " |                             ^~~~~\n"},
    {"a_mask_left_open_expects_its_parenthesis",
     "import \"strict\"\nprofile p extends strict {\n  syscalls {\n    deny clone if (arg0 & CLONE_NEWUSER != 0\n"
     "    allow read\n  }\n}\n",
     "ERROR: t.cocoon:4:41: unexpected '!='; expected ')'\n"
     " |     deny clone if (arg0 & CLONE_NEWUSER != 0\n"
     " |                                         ^~\n"
     " = help: close the mask before comparing: (arg0 & MASK) != VALUE\n"},
    {"a_setting_written_as_an_assignment",
     "import \"strict\"\nprofile p extends strict {\n  limits { memory = 1GiB }\n}\n",
     "ERROR: t.cocoon:3:19: unexpected '='; expected 'unlimited', a number, a quantity (5s, 128MiB, 95%) or a name\n"
     " |   limits { memory = 1GiB }\n"
     " |                   ^\n"
     " = help: there is no '=' in the language: a setting is its name, then its value (memory 1GiB)\n"},
    {"two_decimal_points_written_apart_from_the_unit",
     "import \"strict\"\nprofile p extends strict {\n  limits {\n    memory 1.2.3 GiB\n    processes 8\n  }\n}\n",
     "ERROR: t.cocoon:4:12: '1.2.3' is not a number\n"
     " |     memory 1.2.3 GiB\n"
     " |            ^~~~~\n"
     " = help: a number has at most one decimal point, and its unit follows with no space: such as 1.5GiB\n"},
    {"fraction_where_a_count_or_a_size_goes",
     "import \"strict\"\nprofile p extends strict {\n  limits {\n    processes 1.5\n    open_files 64\n  }\n"
     "  filesystem { tmpfs /scratch size 1.5 }\n}\n",
     "ERROR: t.cocoon:4:15: '1.5' is not a whole number; expected a plain number\n"
     " |     processes 1.5\n"
     " |               ^~~\n"
     " = help: write 1 or 2\n"
     "ERROR: t.cocoon:7:36: missing unit after '1.5'; expected a size such as 64KiB, 128MiB or 1GiB\n"
     " |   filesystem { tmpfs /scratch size 1.5 }\n"
     " |                                    ^~~\n"},
    {"unit_suggestion_keeps_the_magnitude",
     "import \"strict\"\nprofile p extends strict {\n  limits {\n    memory 128M\n    wall_time 5M\n  }\n}\n",
     "ERROR: t.cocoon:4:12: unknown unit 'M'; expected a size such as 64KiB, 128MiB or 1GiB\n"
     " |     memory 128M\n"
     " |            ^~~~\n"
     " = help: did you mean '128MiB'?\n"
     "ERROR: t.cocoon:5:15: unknown unit 'M'; expected a duration such as 500ms, 5s, 2m or 1h\n"
     " |     wall_time 5M\n"
     " |               ^~\n"
     " = help: did you mean '5m'?\n"},
    {"hex_number_without_a_unit",
     "import \"strict\"\nprofile p extends strict {\n  limits { memory 0x40000000 }\n}\n",
     "ERROR: t.cocoon:3:19: missing unit after '0x40000000'; expected a size such as 64KiB, 128MiB or 1GiB\n"
     " |   limits { memory 0x40000000 }\n"
     " |                   ^~~~~~~~~~\n"
     " = help: for 0x40000000 bytes, write 1GiB\n"},
    {"exponent_where_a_size_goes",
     "import \"strict\"\nprofile p extends strict {\n  limits {\n    memory 1e3MiB\n    processes 8\n  }\n}\n",
     "ERROR: t.cocoon:4:12: unknown unit 'e3MiB'; expected a size such as 64KiB, 128MiB or 1GiB\n"
     " |     memory 1e3MiB\n"
     " |            ^~~~~~\n"},
    // The caller's value of a variable the parent pinned: a weakening.
    {"pass_over_an_inherited_set",
     "import \"strict\"\nprofile base extends strict {\n  environment { set TOKEN \"public\" }\n}\n"
     "profile t extends base {\n  environment { pass TOKEN }\n}\n",
     "WARNING: t.cocoon:6:22: profile 't' weakens environment inherited from 'base': `pass TOKEN` gives the "
     "sandbox the caller's TOKEN in place of the value 'base' sets at line 3\n"
     " |   environment { pass TOKEN }\n"
     " |                      ^~~~~\n"
     " = help: if this is deliberate, say so with `relaxes environment` in profile 't'\n"},
    // The caller's value of a variable the parent kept out of the caller's
    // environment: a weakening too.
    {"pass_over_an_inherited_unset",
     "import \"strict\"\nprofile base extends strict {\n  relaxes environment\n"
     "  environment { inherit unset SECRET }\n}\nprofile t extends base {\n  environment { pass SECRET }\n}\n",
     "WARNING: t.cocoon:7:22: profile 't' weakens environment inherited from 'base': `pass SECRET` gives the "
     "sandbox the caller's SECRET, which 'base' unsets at line 4\n"
     " |   environment { pass SECRET }\n"
     " |                      ^~~~~~\n"
     " = help: if this is deliberate, say so with `relaxes environment` in profile 't'\n"},
    {"keyword_syscall_name",
     "import \"strict\"\nprofile p extends strict {\n  relaxes syscalls\n  syscalls {\n    allow kill\n"
     "    allow read\n    default kill kill ptrace\n  }\n}\n",
     "ERROR: t.cocoon:5:11: the syscall 'kill' is spelt like a keyword of the language\n"
     " |     allow kill\n"
     " |           ^~~~\n"
     " = help: write its name as a string: \"kill\"\n"},
    // A comma in a bare path list was part of the path: /etc/shadow stayed
    // visible while a file named "shadow," was hidden.
    {"comma_in_a_bare_path_list",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { hide /etc/shadow, /etc/gshadow }\n}\n",
     "ERROR: t.cocoon:3:32: ',' is not part of a path; list items are separated by spaces\n"
     " |   filesystem { hide /etc/shadow, /etc/gshadow }\n"
     " |                                ^\n"
     " = help: if the ',' belongs to the file name, quote the path: \"/etc/shadow,\"\n"},
    {"path_list_joined_with_colons",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { readonly /usr/bin:/bin }\n}\n",
     "ERROR: t.cocoon:3:33: ':' is not a path separator; list items are separated by spaces\n"
     " |   filesystem { readonly /usr/bin:/bin }\n"
     " |                                 ^\n"
     " = help: if the ':' belongs to the file name, quote the path: \"/usr/bin:/bin\"\n"},
    // The comment ate the `}`: one error at the '#', not one at the end of the file.
    {"comment_glued_to_a_path",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { hide /etc/shadow#x }\n}\n",
     "ERROR: t.cocoon:3:32: '#' right after the path '/etc/shadow' starts a comment: the rest of the line is not "
     "read\n"
     " |   filesystem { hide /etc/shadow#x }\n"
     " |                                ^\n"
     " = help: put a space before a comment; if the '#' belongs to the file name, quote the whole path\n"},
    // `unlimited` leaves the enforcer's default rlimit: a weakening only
    // when that is more than the parent's value, and said as what it is.
    {"unlimited_open_files_over_a_smaller_parent",
     "import \"strict\"\nprofile p extends strict {\n  limits { open_files unlimited }\n}\n",
     "WARNING: t.cocoon:3:12: profile 'p' weakens limits.open_files inherited from 'strict': `unlimited` leaves "
     "the enforcer's default, 1024, which is more than 256\n"
     " |   limits { open_files unlimited }\n"
     " |            ^~~~~~~~~~~~~~~~~~~~\n"
     " = help: if this is deliberate, say so with `relaxes limits` in profile 'p'\n"
     "WARNING: t.cocoon:3:23: open_files is never unlimited: the sandbox gets the enforcer's default of 1024\n"
     " |   limits { open_files unlimited }\n"
     " |                       ^~~~~~~~~\n"
     " = help: write the value the program needs, up to 1048576\n"},
    // compile said this with no position; check said nothing.
    {"reopening_a_prologue_denied_syscall",
     "profile p {\n  syscalls { default allow allow ptrace bpf }\n}\n",
     "WARNING: t.cocoon:2:41: policy reopens bpf, which the prologue denies by default\n"
     " |   syscalls { default allow allow ptrace bpf }\n"
     " |                                         ^~~\n"
     " = help: the compiler's hardening prologue denies bpf unless a rule names it; keep this rule only if the "
     "program needs it\n"},
    // Loopback stays the sandbox's own; any other address is connected to
    // from the host (docs/security.md, "Network allow-lists").
    {"allow_list_loopback_and_metadata",
     "import \"strict\"\nprofile p extends strict {\n  relaxes network\n"
     "  network allow { 127.0.0.1:8080 169.254.169.254:80 [fe80::1]:80 example.com:443 }\n}\n",
     "WARNING: t.cocoon:4:19: endpoint '127.0.0.1:8080' is loopback: a connect to it stays in the sandbox's own "
     "network namespace, so this entry never reaches the host\n"
     " |   network allow { 127.0.0.1:8080 169.254.169.254:80 [fe80::1]:80 example.com:443 }\n"
     " |                   ^~~~~~~~~~~~~~\n"
     " = help: loopback inside the sandbox needs no entry; a service on the host is reached only at an address "
     "other than loopback\n"
     "WARNING: t.cocoon:4:34: endpoint '169.254.169.254:80' is the cloud metadata service: allowed endpoints are "
     "connected to from the host, so the sandbox can ask it for the host's instance credentials\n"
     " |   network allow { 127.0.0.1:8080 169.254.169.254:80 [fe80::1]:80 example.com:443 }\n"
     " |                                  ^~~~~~~~~~~~~~~~~~\n"
     " = help: remove it unless the sandbox must act as the host's cloud identity\n"
     "WARNING: t.cocoon:4:53: endpoint '[fe80::1]:80' is link-local (fe80::/10): allowed endpoints are connected "
     "to from the host, so the sandbox reaches the host's own network link, where cloud metadata services answer\n"
     " |   network allow { 127.0.0.1:8080 169.254.169.254:80 [fe80::1]:80 example.com:443 }\n"
     " |                                                     ^~~~~~~~~~~~\n"
     " = help: remove it unless the sandbox must reach a device on the host's link\n"},
    // On the same line, `kill` in a rule's list is the syscall, not a second
    // rule (`deny ptrace kill mount` became `kill mount`); on a new line, or
    // after a rule that ends in `errno`, it starts a rule.
    {"keyword_syscall_name_inside_a_list",
     "import \"strict\"\nprofile p extends strict {\n  relaxes syscalls\n  syscalls {\n    deny ptrace kill mount\n"
     "    deny tkill kill }\n  syscalls {\n    deny ptrace\n    kill mount\n    deny chroot errno EPERM kill pivot_root\n"
     "  }\n}\n",
     "ERROR: t.cocoon:5:17: the syscall 'kill' is spelt like a keyword of the language\n"
     " |     deny ptrace kill mount\n"
     " |                 ^~~~\n"
     " = help: write its name as a string: \"kill\"; a rule that kills starts on a line of its own\n"
     "ERROR: t.cocoon:6:16: the syscall 'kill' is spelt like a keyword of the language\n"
     " |     deny tkill kill }\n"
     " |                ^~~~\n"
     " = help: write its name as a string: \"kill\"; a rule that kills starts on a line of its own\n"},
    {"work_quota_zero",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { work /work quota 0 }\n}\n",
     "ERROR: t.cocoon:3:33: work dir quota must be more than 0\n"
     " |   filesystem { work /work quota 0 }\n"
     " |                                 ^\n"
     " = help: for no quota, leave out `quota SIZE`\n"},
    {"work_quota_too_large",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { work /work quota 17TiB }\n}\n",
     "ERROR: t.cocoon:3:33: work dir quota 17TiB is out of range; expected 1 B to 16 TiB\n"
     " |   filesystem { work /work quota 17TiB }\n"
     " |                                 ^~~~~\n"},
    {"tmpfs_size_too_large",
     "import \"strict\"\nprofile p extends strict {\n  filesystem { tmpfs /x size 17TiB }\n}\n",
     "ERROR: t.cocoon:3:30: tmpfs size 17TiB is out of range; expected 1 B to 16 TiB\n"
     " |   filesystem { tmpfs /x size 17TiB }\n"
     " |                              ^~~~~\n"},
    {"count_too_large",
     "import \"strict\"\nprofile p extends strict {\n  limits { processes 0x10000000000000000 }\n}\n",
     "ERROR: t.cocoon:3:22: '0x10000000000000000' is too large\n"
     " |   limits { processes 0x10000000000000000 }\n"
     " |                      ^~~~~~~~~~~~~~~~~~~\n"},
    {"relaxes_unknown_dotted_names",
     "import \"strict\"\nprofile p extends strict {\n  relaxes limits.memroy syscalls.bogus network.x\n}\n",
     "ERROR: t.cocoon:3:11: unknown setting 'limits.memroy' in relaxes\n"
     " |   relaxes limits.memroy syscalls.bogus network.x\n"
     " |           ^~~~~~~~~~~~~\n"
     " = help: did you mean 'limits.memory'?\n"
     "ERROR: t.cocoon:3:25: unknown setting 'syscalls.bogus' in relaxes\n"
     " |   relaxes limits.memroy syscalls.bogus network.x\n"
     " |                         ^~~~~~~~~~~~~~\n"
     " = help: one of: syscalls, syscalls.default, syscalls.arch\n"
     "ERROR: t.cocoon:3:40: unknown setting 'network.x' in relaxes\n"
     " |   relaxes limits.memroy syscalls.bogus network.x\n"
     " |                                        ^~~~~~~~~\n"
     " = help: network has no narrower settings; write `relaxes network`\n"},
    {"one_target_two_bind_sources",
     "import \"strict\"\nprofile p extends strict {\n  filesystem {\n    readonly /usr\n    readonly /opt as /usr\n  }\n}\n",
     "ERROR: t.cocoon:5:14: '/usr' is bound from two host paths: '/usr' (line 4) and '/opt' (line 5)\n"
     " |     readonly /opt as /usr\n"
     " |              ^~~~~~~~~~~~\n"
     " = help: keep one of them, or bind the other to a target of its own with `as`\n"},
    // Columns stay bytes (43), but the caret is padded by what a terminal
    // draws: é and ö one column each, 日本 two each, the emoji two.
    {"caret_after_multibyte_text",
     "import \"strict\"\nprofile p extends strict {\n  description \"h\u00e9llo w\u00f6rld \u65e5\u672c \U0001F600\" netwrok off\n}\n",
     "ERROR: t.cocoon:3:43: unknown setting 'netwrok'\n"
     " |   description \"h\u00e9llo w\u00f6rld \u65e5\u672c \U0001F600\" netwrok off\n"
     " |                                     ^~~~~~~\n"
     " = help: did you mean 'network'?\n"},
    // A combining mark (e + U+0301) takes no column; a wide character in
    // the span is underlined by two.
    {"caret_after_combining_mark_under_wide_text",
     "import \"strict\"\nprofile p extends strict {\n  description \"e\u0301\" syscalls { allow \"\u65e5\u672c\" }\n}\n",
     "ERROR: t.cocoon:3:38: unknown syscall '\u65e5\u672c'\n"
     " |   description \"e\u0301\" syscalls { allow \"\u65e5\u672c\" }\n"
     " |                                    ^~~~~~\n"},
};

class DiagnosticsTable : public ::testing::TestWithParam<Case> {};

TEST_P(DiagnosticsTable, RendersExactly) {
  const Case& c = GetParam();
  EXPECT_EQ(testing::Diagnose(c.input), c.expected);
}

INSTANTIATE_TEST_SUITE_P(Frontend, DiagnosticsTable, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Diagnostics, CollectsEveryErrorNotOnlyTheFirst) {
  std::string out = testing::Diagnose(
      "import \"strict\"\nprofile p extends strict {\n  limits { memroy 1MiB processes 0 }\n"
      "  syscalls { allow openn @nope }\n  cwd tmp/x\n}\n");
  EXPECT_NE(out.find("unknown limit 'memroy'"), std::string::npos);
  EXPECT_NE(out.find("processes 0 is out of range"), std::string::npos);
  EXPECT_NE(out.find("unknown syscall 'openn'"), std::string::npos);
  EXPECT_NE(out.find("unknown syscall group '@nope'"), std::string::npos);
  EXPECT_NE(out.find("relative path 'tmp/x'"), std::string::npos);
}

// The checker applies `arch` before the rules, but its errors are reported
// in source order, as `check` reports them.
TEST(Diagnostics, CompileReportsInSourceOrder) {
  std::string out = testing::Diagnose(
      "profile t {\n  syscalls {\n    allow nosuchcall\n    arch nosucharch\n  }\n}\n");
  const size_t rule = out.find("ERROR: t.cocoon:3:11: unknown syscall 'nosuchcall'");
  const size_t arch = out.find("ERROR: t.cocoon:4:");
  ASSERT_NE(rule, std::string::npos) << out;
  ASSERT_NE(arch, std::string::npos) << out;
  EXPECT_LT(rule, arch) << out;
}

TEST(Diagnostics, ErrorCapIsHonoured) {
  std::string text = "import \"strict\"\nprofile p extends strict {\n  syscalls {\n";
  for (int i = 0; i < 200; ++i) text += "    allow nosuchcall" + std::to_string(i) + "\n";
  text += "  }\n}\n";
  Diagnostics diagnostics(DiagnosticsOptions{10});
  auto policy = CompilePolicyText("t.cocoon", text, "", {}, diagnostics);
  EXPECT_FALSE(policy.has_value());
  EXPECT_EQ(diagnostics.error_count(), 10u);
  EXPECT_EQ(diagnostics.suppressed(), 190u);
}

// A policy under review is hostile input: what a message or hint quotes from
// it (a name, a string) must not reach the terminal as an escape sequence.
TEST(Diagnostics, MessagesAndHintsEscapeControlCharacters) {
  const std::string inputs[] = {
      "import \"strict\"\nprofile p extends strict {\n  syscalls { default errno ENOSYS allow @system-service "
      "allow \"\x1b[2J\x1b]0;pwn\x07\" }\n}\n",
      "profile x {\n  description \"oops\x1b[2J\n}\n",
      "profile x extends \"\x1b[31mred\" { }\n",
      "profile x { \x1b }\n",
      std::string("profile x { \0 }\n", 16),
      "import \"strict\"\nprofile p extends strict {\n  syscalls { allow \"a\xc2\x9b" "2J\" }\n}\n",
  };
  for (const std::string& input : inputs) {
    std::string out = testing::Diagnose(input);
    EXPECT_NE(out.find("ERROR: "), std::string::npos) << out;
    for (char c : out) {
      const unsigned char byte = static_cast<unsigned char>(c);
      EXPECT_TRUE(byte >= 0x20 || c == '\n') << "control byte " << int(byte) << " in:\n" << out;
      if (byte < 0x20 && c != '\n') break;
    }
    EXPECT_EQ(out.find("\xc2\x9b"), std::string::npos) << out;  // C1 CSI
  }
  // Each is refused where it is, before parsing, by name (the policy text
  // may hold none of them, comments and strings included).
  EXPECT_NE(testing::Diagnose(inputs[0]).find("t.cocoon:3:64: control character U+001B ESC (escape)"), std::string::npos);
  EXPECT_NE(testing::Diagnose(inputs[0]).find("t.cocoon:3:75: control character U+0007 BEL"), std::string::npos);
  EXPECT_NE(testing::Diagnose(inputs[1]).find("t.cocoon:2:20: control character U+001B ESC"), std::string::npos);
  EXPECT_NE(testing::Diagnose(inputs[4]).find("t.cocoon:1:13: control character U+0000 NUL"), std::string::npos);
  EXPECT_NE(testing::Diagnose(inputs[5]).find("t.cocoon:3:22: control character U+009B CSI"), std::string::npos);
}

// No string may hold a NUL: an environment value, an argument or a path ends
// at it, so what is enforced would differ from what explain shows.
TEST(Diagnostics, ANulInAStringIsAnError) {
  using namespace std::string_literals;
  EXPECT_EQ(testing::Diagnose("profile p {\n  environment { set X \"a\0b\" }\n}\n"s),
            "ERROR: t.cocoon:2:25: control character U+0000 NUL: a terminal acts on it instead of showing it, so "
            "what a reviewer reads would not be what runs\n"
            " |   environment { set X \"a b\" }\n"
            " |                         ^\n"
            " = help: remove it; in a string, write what it stands for another way\n");
  for (const std::string& statement :
       {"filesystem { copy \"a\0b\" to \"x\" }"s, "filesystem { copy \"a\" to \"x\0y\" }"s,
        "runtime r { interpreter /bin/sh flags \"-c\0zzz\" }"s, "description \"\0\""s}) {
    std::optional<ir::Policy> policy;
    std::string out = testing::Diagnose("profile p {\n  " + statement + "\n}\n", &policy);
    EXPECT_FALSE(policy) << statement;
    EXPECT_NE(out.find("ERROR: t.cocoon:2:"), std::string::npos) << out;
    EXPECT_NE(out.find(": control character U+0000 NUL: "), std::string::npos) << out;
  }
}

// A copy's source and destination are paths, held to what any other path is.
TEST(Diagnostics, ACopyPathWithAControlCharacterIsAnError) {
  EXPECT_EQ(testing::Diagnose("profile p {\n  filesystem { copy \"a\\nb\" to \"x\" }\n"
                              "  syscalls { allow read }\n}\n"),
            "ERROR: t.cocoon:2:21: control character in path\n"
            " |   filesystem { copy \"a\\nb\" to \"x\" }\n"
            " |                     ^~~~~~\n");
  EXPECT_EQ(testing::Diagnose("profile p {\n  filesystem { copy \"a\" to \"x\\ty\" }\n"
                              "  syscalls { allow read }\n}\n"),
            "ERROR: t.cocoon:2:28: control character in path\n"
            " |   filesystem { copy \"a\" to \"x\\ty\" }\n"
            " |                            ^~~~~~\n");
}

// Characters that real file names hold stay part of a bare path; quoted,
// a path may hold anything (a comma or a ':/' included).
TEST(Diagnostics, BarePathsKeepTheCharactersRealFileNamesUse) {
  std::optional<ir::Policy> policy;
  EXPECT_EQ(testing::Diagnose("import \"strict\"\nprofile p extends strict {\n  filesystem {\n"
                              "    readonly optional /sys/devices/pci0000:00 /lib/systemd/system/getty@.service\n"
                              "    readonly optional /opt/a=b /opt/50% /opt/c++ \"/opt/x,y\" \"/opt/u:/v\"\n"
                              "    hide /etc/shadow # a comment after a space\n  }\n}\n",
                              &policy),
            "");
  EXPECT_TRUE(policy);
}

TEST(Diagnostics, RenderingEscapesHiddenCharactersInTheMessage) {
  auto source = std::make_shared<const Source>("t.cocoon", "x\n");
  Diagnostic d{Severity::kError, source, Span{0, 1}, "name 'a\u202eb'", "try 'c\u200bd'\nFORGED: line", {}};
  EXPECT_EQ(RenderDiagnostic(d),
            "ERROR: t.cocoon:1:1: name 'a\\u202eb'\n"
            " | x\n"
            " | ^\n"
            " = help: try 'c\\u200bd'\\nFORGED: line");
}

}  // namespace
}  // namespace cocoon::frontend
