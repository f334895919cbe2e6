#!/usr/bin/env bash
# The Debian image installs a package with pip and clones a git repository
# through domain allow rules (the egress proxy), from a package index and a
# git server of the fake internet; without the rule both fail.
source tests/integration/lib.sh
source tests/integration/netlib.sh
net_env
[ -f build/images/debian.ext4 ] || { echo "skip: debian image not built (make rootfs-debian)"; exit 77; }
fakenet_repos
export COVE_IMAGE=$(stage debian.ext4 build/images/debian.ext4)

$cove start --name pg --memory 512 --allow pypi.test --allow git.test >/dev/null 2>"$WORK/err" || {
	not_ok "start: $(cat "$WORK/err")"; finish; }
works pg "pip install from http://pypi.test" \
	'pip install -q --no-cache-dir --disable-pip-version-check --index-url http://pypi.test/simple/ --trusted-host pypi.test --target /tmp/site coveprobe 2>&1 && PYTHONPATH=/tmp/site python3 -c "import coveprobe; print(coveprobe.MESSAGE)"' \
	'installed through the egress proxy'
works pg "git clone http://git.test/repo.git" \
	'git clone -q http://git.test/repo.git /tmp/repo 2>&1 && cat /tmp/repo/README' 'cloned through the egress proxy'
fast_fail pg "git clone of a name with no rule fails" \
	'echo 198.51.100.80 other.test >> /etc/hosts; GIT_HTTP_LOW_SPEED_TIME=30 git clone -q http://other.test/repo.git /tmp/r2'
$cove stop pg >/dev/null
finish
