/* A stand-in for cove-egress in libcove's network tests (copied as
 * .../cove-egress, the name libcove checks): reads the config the
 * contract gives (docs/network.md), checks that its
 * namespace has tap0 and up0 and that it is uid 0 there, says "ok" on
 * ready_fd, then answers the control socket ({"op":"policy"} -> ok, with
 * one log line; {"op":"status"} -> the policy) until SIGTERM.
 * FAKE_EGRESS_FAIL=1 in its config's policy mode "fail" makes it report
 * an error line instead (the error path). */
#include <errno.h>
#include <jansson.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void say(int fd, const char *line)
{
	(void)!write(fd, line, strlen(line));
}

int main(int argc, char **argv)
{
	if (argc != 3 || strcmp(argv[1], "--config-fd"))
		return 2;
	int cfd = atoi(argv[2]);
	json_error_t je;
	json_t *c = json_loadfd(cfd, 0, &je);
	if (!c) {
		fprintf(stderr, "fake-egress: bad config: %s\n", je.text);
		return 1;
	}
	int ready = (int)json_integer_value(json_object_get(c, "ready_fd"));
	int ctl = (int)json_integer_value(json_object_get(c, "ctl_fd"));
	int log = (int)json_integer_value(json_object_get(c, "log_fd"));
	json_t *policy = json_incref(json_object_get(c, "policy"));
	const char *mode = json_string_value(json_object_get(policy, "mode"));
	char line[256];
	/* Until the table is in ("ok" below), the namespace forwards nothing:
	 * a new one copies the host's ip_forward, which lib/net.c turns off. */
	char fwd = '?';
	FILE *f = fopen("/proc/sys/net/ipv4/ip_forward", "re");
	if (f) {
		fwd = (char)fgetc(f);
		fclose(f);
	}
	if (fwd != '0') {
		snprintf(line, sizeof(line),
		         "fake-egress: the sandbox's namespace forwards before its table is in "
		         "(ip_forward %c)\n",
		         fwd);
		say(ready, line);
		return 1;
	}
	if (!if_nametoindex("tap0") || !if_nametoindex("up0") || getuid() != 0) {
		snprintf(line, sizeof(line),
		         "namespace not as promised (tap0 %u, up0 %u, uid %u)\n",
		         if_nametoindex("tap0"), if_nametoindex("up0"), (unsigned)getuid());
		say(ready, line);
		return 1;
	}
	if (mode && !strcmp(mode, "none") && json_array_size(json_object_get(policy, "deny")) &&
	    !strcmp(json_string_value(json_array_get(json_object_get(policy, "deny"), 0)),
	            "192.0.2.99/32")) {
		say(ready, "fake failure asked for by the test\n");
		return 1;
	}
	signal(SIGTERM, on_term);
	signal(SIGPIPE, SIG_IGN);
	say(ready, "ok\n");
	close(ready);
	while (!stop) {
		struct pollfd p = { .fd = ctl, .events = POLLIN };
		if (poll(&p, 1, 1000) <= 0)
			continue;
		int s = accept(ctl, NULL, NULL);
		if (s < 0)
			continue;
		char buf[65536];
		ssize_t n = read(s, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = 0;
		json_t *req = json_loads(buf, JSON_DISABLE_EOF_CHECK, &je);
		const char *op = json_string_value(json_object_get(req, "op"));
		char *out = NULL;
		if (op && !strcmp(op, "policy")) {
			json_decref(policy);
			policy = json_incref(json_object_get(req, "policy"));
			out = strdup("{\"ok\":true}\n");
			say(log, "{\"verdict\":\"policy\"}\n");
		} else if (op && !strcmp(op, "status")) {
			json_t *r =
			    json_pack("{s:b, s:O, s:i}", "ok", 1, "policy", policy, "pins", 0);
			char *t = json_dumps(r, JSON_COMPACT);
			if (t && asprintf(&out, "%s\n", t) < 0)
				out = NULL;
			free(t);
			json_decref(r);
		} else {
			out = strdup("{\"ok\":false,\"error\":\"unknown op\"}\n");
		}
		if (out)
			say(s, out);
		free(out);
		json_decref(req);
		close(s);
	}
	return 0;
}
