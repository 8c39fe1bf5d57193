#!/bin/sh
# Entrypoint of the docker-compose `worker`: give the Python sandbox a delegated cgroup v2 (whole-tree
# memory, socket buffers and kernel memory included, and pids, enforced by the kernel), then run the
# command as the unprivileged `app` user. Needs a cgroup v2 host, the container's own cgroup namespace
# (`cgroup: private`) and a writable /sys/fs/cgroup (`security_opt: writable-cgroups=true`, Docker
# Engine 28 or later). Layout inside the container's namespace (docs/tools.md):
#   /                the container's cgroup: controllers only, no processes (cgroup v2's rule for a parent)
#   /app             owned by app; memory and pids are enabled for its children
#   /app/worker      the worker's processes
#   /app/sandbox-*   one per sandbox run (SANDBOX_CGROUP_PARENT=/sys/fs/cgroup/app)
# Where any of it fails, no cgroup is delegated, and in production the sandbox then refuses to run code
# and says why (unless SANDBOX_ALLOW_WEAK_LIMITS=1).
set -eu
cg=/sys/fs/cgroup
if [ "$(id -u)" = 0 ] && [ -f "$cg/cgroup.controllers" ] && [ -w "$cg/cgroup.procs" ]; then
    if mkdir -p "$cg/app/worker" 2>/dev/null \
        && echo $$ > "$cg/app/worker/cgroup.procs" \
        && echo "+memory +pids" > "$cg/cgroup.subtree_control" \
        && echo "+memory +pids" > "$cg/app/cgroup.subtree_control"; then
        chown app "$cg/app" "$cg/app/cgroup.procs" "$cg/app/cgroup.subtree_control" \
            "$cg/app/worker" "$cg/app/worker/cgroup.procs"
    else
        echo "worker-cgroup: cannot delegate a cgroup v2 here; see docs/tools.md" >&2
    fi
else
    echo "worker-cgroup: no writable cgroup v2 in this container; see docs/tools.md" >&2
fi
if [ "$(id -u)" = 0 ]; then
    export HOME=/home/app USER=app LOGNAME=app  # the rest of the environment (the app's settings) stays
    exec setpriv --reuid=app --regid=app --init-groups -- "$@"
fi
exec "$@"
