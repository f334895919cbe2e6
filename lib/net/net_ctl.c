/* A running sandbox's network from outside: cove_net_set, through
 * cove-egress's control socket (egress_ctl.c), and cove doctor's network
 * line. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "lib/base/cove_types.h"
#include "lib/base/handle.h"
#include "lib/base/jail.h"
#include "lib/base/registry.h"
#include "lib/net/egress_ctl.h"
#include "lib/net/net_addr.h"
#include "lib/net/net_ctl.h"
#include "lib/net/net_egress.h"
#include "lib/net/net_nft.h"

int cove_net_set(struct cove_sandbox *sb, const struct cove_net_policy *policy, char *err,
                 size_t errlen)
{
	if (!sb || sb->stopped)
		return errf(err, errlen, -ESRCH, "the sandbox is stopped");
	struct cove_config c = { .net = *policy };
	if (policy->mode == COVE_NET_OFF)
		return errf(err, errlen, -EINVAL,
		            "a running sandbox keeps its NIC: the policy's mode is none, rules or "
		            "open");
	int r = net_check_config(&c, true, err, errlen);
	if (r < 0)
		return r;
	struct registry_meta *m = malloc(sizeof(*m));
	if (!m)
		return errf(err, errlen, -ENOMEM, "out of memory");
	if ((r = registry_meta_read(sb->dir, m)) < 0) {
		r = errf(err, errlen, r, "sandbox %s: unreadable %s/%s", sb->name, sb->dir,
		         REGISTRY_META);
		goto out;
	}
	if (!m->net.on) {
		r = errf(err, errlen, -ENOTSUP,
		         "sandbox %s was started without networking (start it with --net, "
		         "--allow or --publish)",
		         sb->name);
		goto out;
	}
	json_t *pj = net_policy_json(policy);
	json_t *req = pj ? json_pack("{s:s, s:O}", "op", "policy", "policy", pj) : NULL;
	char sock[REGISTRY_DIR_MAX + sizeof(EGRESS_SOCK) + 1];
	snprintf(sock, sizeof(sock), "%s/%s", sb->dir, EGRESS_SOCK);
	json_t *reply = NULL;
	r = req ? net_ctl_call(sock, req, &reply, err, errlen)
	        : errf(err, errlen, -ENOMEM, "no memory");
	json_decref(req);
	json_decref(reply);
	/* A connection that broke may mean cove-egress died on it: say so
	 * (its namespace keeps the rules it had last, until the sandbox stops). */
	struct pollfd pf = { .fd = sb->net.egress_pidfd, .events = POLLIN };
	if (r < 0 && r != -EIO && sb->net.egress_pidfd >= 0 && poll(&pf, 1, 200) > 0)
		r = errf(err, errlen, -ECHILD,
		         "cove-egress of sandbox %s exited while taking the new policy (see %s/%s "
		         "and the kernel log); the sandbox keeps its last rules until it stops",
		         sb->name, sb->dir, EGRESS_ERR);
	char *text = r == 0 ? json_dumps(pj, JSON_COMPACT) : NULL;
	json_decref(pj);
	if (r == 0 && text && strlen(text) < sizeof(m->net.policy)) {
		memcpy(m->net.policy, text, strlen(text) + 1);
		if (registry_meta_write(sb->dir, m) < 0)
			r = errf(err, errlen, -EIO,
			         "the policy is in force, but %s/%s could not record it", sb->dir,
			         REGISTRY_META);
	}
	free(text);
out:
	free(m);
	return r;
}

/* ---- cove doctor -------------------------------------------------------- */

int cove_net_probe(char *out, size_t len)
{
	char why[256] = "";
	int tun = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	int tun_errno = errno;
	if (tun >= 0)
		close(tun);
	char nft[200] = "";
	bool root = geteuid() == 0;
	bool nft_ok = root && net_nft_probe(nft, sizeof(nft)) == 0;
	bool userns = jail_userns_probe() == 0;
	char fwd[4] = "?";
	int fd = open("/proc/sys/net/ipv4/ip_forward", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t k = read(fd, fwd, 1);
		fwd[k > 0 ? 1 : 0] = 0;
		close(fd);
	}
	if (!root)
		snprintf(why, sizeof(why),
		         "not root (uid %u): the veth, NAT and nftables rules "
		         "live in the host's namespace",
		         (unsigned)geteuid());
	else if (tun < 0)
		snprintf(why, sizeof(why), "/dev/net/tun: %s", strerror(tun_errno));
	else if (!nft_ok)
		snprintf(why, sizeof(why), "%s", nft);
	snprintf(out, len,
	         "%s: root %s, /dev/net/tun %s, nf_tables %s, user namespaces %s, ip_forward %s "
	         "(libcove turns it on)%s%s",
	         why[0] ? "unavailable" : "available", root ? "yes" : "no",
	         tun >= 0 ? "ok" : "missing",
	         !root    ? "unchecked"
	         : nft_ok ? "ok"
	                  : "unusable",
	         userns ? "ok" : "refused", fwd, why[0] ? "; " : "", why);
	return why[0] ? 1 : 0;
}
