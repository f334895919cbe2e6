#include "config.h"
#include "cove_limits.h"
#include "errf.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char vmm_usage[] =
    "usage: cove-vmm --kernel PATH [--initrd PATH] [--cmdline STR] [--cpus N]\n"
    "                [--memory MiB] [--disk PATH[,ro][,id=NAME][,format=raw|qcow2]\n"
    "                [,bps=N][,bps_burst=N][,iops=N][,iops_burst=N][,max_file=BYTES]]...\n"
    "                [--console stdio|PATH|none] [--console-max BYTES] [--config FILE.json]\n"
    "                [--vsock PATH[,cid=N]] [--api PATH] [--ttl SECONDS]\n"
    "                [--net fd=N|tap=NAME[,mac=XX:XX:XX:XX:XX:XX][,rx_bps=N][,rx_bps_burst=N]\n"
    "                [,rx_pps=N][,rx_pps_burst=N][,tx_bps=N][,tx_bps_burst=N][,tx_pps=N]\n"
    "                [,tx_pps_burst=N]]\n"
    "       cove-vmm --restore SNAPSHOT_DIR [--overlay-dir DIR] [--vsock PATH]\n"
    "                [--api PATH] [--console stdio|PATH|none] [--restore-memory FILE]\n"
    "                (FILE: a copy of the snapshot's memory file to map instead,\n"
    "                 e.g. on a tmpfs with huge pages)\n"
    "  either form: [--jail DIR [--jail-uid N [--jail-gid N]]] [--jail-fsize BYTES]\n"
    "  (pivot_root into DIR, drop to the ids; cove-vmm always clears its\n"
    "   capabilities and sets no_new_privs before the guest runs)\n"
    "  a writable --disk without format= is raw (never probed: its bytes are the\n"
    "  guest's); give format=qcow2 for a qcow2 image; a read-only one is probed\n"

    "  both:         [--seccomp kill|log|off]\n"
    "       cove-vmm --pool CPUS --api PATH [--seccomp kill|log|off]\n"
    "                (a pre-spawned VMM: KVM VM and CPUS vCPUs made, no guest memory;\n"
    "                 it waits on PATH for one start request with the flags above)\n"
    "       cove-vmm --seccomp-list\n"
    "\n"
    "  --seccomp kill  (default) each thread (main, vCPU, I/O, API) runs under its own\n"
    "                  syscall allowlist; any other syscall kills cove-vmm (SIGSYS)\n"
    "  --seccomp log   the same lists, but a syscall outside them is only logged by\n"
    "                  the kernel (audit type=1326 in dmesg): for finding missing ones\n"
    "  --seccomp off   no filters\n"
    "  --seccomp-list  prints every thread kind's allowlist and exits\n"
    "  config JSON: \"seccomp\": \"kill\"|\"log\"|\"off\"\n"

    "                [--api PATH] [--console stdio|PATH|none] [--console-max BYTES]\n"
    "                [--ttl SECONDS] [--disk-limit INDEX,bps=N,iops=N,...]...\n"
    "                [--net fd=N|tap=NAME[,rx_bps=N,...]] (the MAC is the snapshot's)\n"
    "  --net: one virtio-net NIC on a TAP: fd=N an inherited TAP fd opened with\n"
    "         IFF_TAP|IFF_NO_PI|IFF_VNET_HDR, or tap=NAME opened by name; default MAC\n"
    "         06:00:ac:10:00:02; rates in bytes/s and packets/s per direction, each\n"
    "         *_burst a one-time extra allowance; config JSON: \"net\": {\"fd\": N, ...}\n";

#define bad(err, errlen, ...) errf(err, errlen, -EINVAL, __VA_ARGS__)

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int set_console(struct vm_config *vm, const char *v, char *err, size_t errlen)
{
	if (!v || !*v)
		return bad(err, errlen, "console must be stdio, none or a file path");
	if (!strcmp(v, "stdio")) {
		vm->console = VM_CONSOLE_STDIO;
	} else if (!strcmp(v, "none")) {
		vm->console = VM_CONSOLE_NONE;
	} else {
		vm->console = VM_CONSOLE_FILE;
		vm->console_path = v;
	}
	return 0;
}

/* The most a limit may be: far above any real disk, far below overflow. */
#define LIMIT_MAX (1ULL << 62)

/* One "key=N" disk limit option; 1 when opt was one, 0 when not, -EINVAL. */
static int limit_option(struct vmm_disk_limits *l, const char *opt, char *err, size_t errlen)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "bps=", offsetof(struct vmm_disk_limits, bps) },
		{ "bps_burst=", offsetof(struct vmm_disk_limits, bps_burst) },
		{ "iops=", offsetof(struct vmm_disk_limits, iops) },
		{ "iops_burst=", offsetof(struct vmm_disk_limits, iops_burst) },
		{ "max_file=", offsetof(struct vmm_disk_limits, max_file) },
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		size_t n = strlen(keys[i].key);
		if (strncmp(opt, keys[i].key, n))
			continue;
		unsigned long long v;
		if (parse_uint(opt + n, LIMIT_MAX, &v) < 0)
			return bad(err, errlen, "disk option '%s' needs a number from 0 to %llu",
			           opt, LIMIT_MAX);
		memcpy((char *)l + keys[i].off, &(uint64_t){ v }, sizeof(uint64_t));
		return 1;
	}
	return 0;
}

static void set_limits(struct vm_disk_config *d, const struct vmm_disk_limits *l)
{
	d->bps = l->bps;
	d->bps_burst = l->bps_burst;
	d->iops = l->iops;
	d->iops_burst = l->iops_burst;
	d->max_file = l->max_file;
}

static int add_disk(struct vm_config *vm, const char *path, int read_only, const char *id,
                    const char *format, const struct vmm_disk_limits *l, char *err, size_t errlen)
{
	if (format && strcmp(format, "raw") && strcmp(format, "qcow2"))
		return bad(err, errlen, "disk format must be raw or qcow2, got '%s'", format);
	if (vm->ndisks == VM_MAX_DISKS)
		return bad(err, errlen, "too many disks (at most %d)", VM_MAX_DISKS);
	if (!path || !*path)
		return bad(err, errlen, "a disk needs a path");
	if (id && strlen(id) > 20)
		return bad(err, errlen, "disk id '%s' is longer than 20 bytes", id);
	struct vm_disk_config *d = &vm->disks[vm->ndisks++];
	memset(d, 0, sizeof(*d));
	d->path = path;
	d->read_only = read_only;
	d->format = format;
	set_limits(d, l);
	if (id)
		snprintf(d->id, sizeof(d->id), "%s", id);
	return 0;
}

/* PATH[,ro][,id=NAME]; spec is a private copy that we cut up. */
static int parse_disk(struct vm_config *vm, char *spec, char *err, size_t errlen)
{
	char *save = NULL;
	char *path = strtok_r(spec, ",", &save);
	int ro = 0;
	const char *id = NULL, *format = NULL;
	struct vmm_disk_limits l = { 0 };
	for (char *opt; (opt = strtok_r(NULL, ",", &save));) {
		int k = limit_option(&l, opt, err, errlen);
		if (k < 0)
			return k;
		if (k > 0)
			continue;
		if (!strcmp(opt, "ro"))
			ro = 1;
		else if (!strcmp(opt, "rw"))
			ro = 0;
		else if (!strncmp(opt, "id=", 3))
			id = opt + 3;
		else if (!strncmp(opt, "format=", 7))
			format = opt + 7;
		else
			return bad(
			    err, errlen,
			    "unknown disk option '%s' (expected ro, id=NAME, format=raw|qcow2, "
			    "bps=N, bps_burst=N, iops=N, iops_burst=N or max_file=BYTES)",
			    opt);
	}
	return add_disk(vm, path, ro, id, format, &l, err, errlen);
}

/* INDEX,key=N...: limits for disk INDEX of a snapshot being restored
 * (whose disks come from the snapshot, not from --disk). */
static int parse_disk_limit(struct vmm_config *c, char *spec, char *err, size_t errlen)
{
	char *save = NULL;
	char *index = strtok_r(spec, ",", &save);
	unsigned long long i;
	if (!index || parse_uint(index, VM_MAX_DISKS - 1, &i) < 0)
		return bad(err, errlen, "--disk-limit needs a disk index from 0 to %d first",
		           VM_MAX_DISKS - 1);
	struct vmm_disk_limits l = { 0 };
	for (char *opt; (opt = strtok_r(NULL, ",", &save));) {
		int k = limit_option(&l, opt, err, errlen);
		if (k < 0)
			return k;
		if (k == 0)
			return bad(err, errlen,
			           "unknown --disk-limit option '%s' (expected bps=N, bps_burst=N, "
			           "iops=N, iops_burst=N or max_file=BYTES)",
			           opt);
	}
	c->restore_limits[i] = l;
	c->restore_limits_set |= 1u << i;
	return 0;
}

int vmm_config_apply_disk_limits(struct vmm_config *c, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < VM_MAX_DISKS; i++) {
		if (!(c->restore_limits_set & (1u << i)))
			continue;
		if (i >= c->vm.ndisks)
			return bad(err, errlen, "--disk-limit %u: the snapshot has %u disk%s", i,
			           c->vm.ndisks, c->vm.ndisks == 1 ? "" : "s");
		set_limits(&c->vm.disks[i], &c->restore_limits[i]);
	}
	return 0;
}

/* PATH[,cid=N]; spec is a private copy that we cut up. */
static int parse_vsock(struct vm_config *vm, char *spec, char *err, size_t errlen)
{
	char *save = NULL;
	char *path = strtok_r(spec, ",", &save);
	if (!path || !*path)
		return bad(err, errlen, "--vsock needs a socket path");
	vm->vsock_path = path;
	vm->vsock_cid = 0;
	for (char *opt; (opt = strtok_r(NULL, ",", &save));) {
		unsigned long long cid;
		if (strncmp(opt, "cid=", 4) || parse_uint(opt + 4, 0xfffffffeULL, &cid) < 0 ||
		    cid < 3)
			return bad(
			    err, errlen,
			    "bad vsock option '%s' (expected cid=N with N from 3 to 4294967294)",
			    opt);
		vm->vsock_cid = cid;
	}
	return 0;
}

/* The --net limit keys, shared by the flag and the JSON object. */
static const struct {
	const char *key;
	size_t off;
} net_limit_keys[] = {
	{ "rx_bps", offsetof(struct vm_net_config, rx_bps) },
	{ "rx_bps_burst", offsetof(struct vm_net_config, rx_bps_burst) },
	{ "rx_pps", offsetof(struct vm_net_config, rx_pps) },
	{ "rx_pps_burst", offsetof(struct vm_net_config, rx_pps_burst) },
	{ "tx_bps", offsetof(struct vm_net_config, tx_bps) },
	{ "tx_bps_burst", offsetof(struct vm_net_config, tx_bps_burst) },
	{ "tx_pps", offsetof(struct vm_net_config, tx_pps) },
	{ "tx_pps_burst", offsetof(struct vm_net_config, tx_pps_burst) },
};

static uint64_t *net_limit(struct vm_net_config *n, const char *key, size_t keylen)
{
	for (size_t i = 0; i < sizeof(net_limit_keys) / sizeof(net_limit_keys[0]); i++)
		if (strlen(net_limit_keys[i].key) == keylen &&
		    !strncmp(key, net_limit_keys[i].key, keylen))
			return (uint64_t *)(void *)((char *)n + net_limit_keys[i].off);
	return NULL;
}

/* XX:XX:XX:XX:XX:XX, hex digits; a unicast address (the group bit clear). */
static int parse_mac(const char *s, uint8_t mac[6])
{
	for (int i = 0; i < 6; i++) {
		const char *p = s + 3 * i;
		char hex[3] = { 0 };
		for (int k = 0; k < 2; k++) {
			char c = p[k];
			if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
			      (c >= 'A' && c <= 'F')))
				return -EINVAL;
			hex[k] = c;
		}
		if (p[2] != (i == 5 ? '\0' : ':'))
			return -EINVAL;
		mac[i] = (uint8_t)strtoul(hex, NULL, 16);
	}
	return (mac[0] & 1) ? -EINVAL : 0;
}

static int net_fd_value(struct vm_net_config *n, unsigned long long v, char *err, size_t errlen)
{
	if (v > INT_MAX)
		return bad(err, errlen, "--net fd= needs a file descriptor number");
	n->fd = (int)v;
	n->tap_name = NULL;
	return 0;
}

static int net_mac_value(struct vm_net_config *n, const char *v, char *err, size_t errlen)
{
	if (parse_mac(v, n->mac) < 0)
		return bad(err, errlen,
		           "--net mac= needs a unicast address XX:XX:XX:XX:XX:XX, got '%s'", v);
	n->mac_set = true;
	return 0;
}

static int net_tap_value(struct vm_net_config *n, const char *v, char *err, size_t errlen)
{
	if (!*v || strlen(v) > 15 || strchr(v, '/'))
		return bad(err, errlen, "--net tap= needs an interface name of 1 to 15 bytes");
	n->tap_name = v;
	n->fd = -1;
	return 0;
}

/* fd=N|tap=NAME[,mac=..][,rx_bps=N]...; spec is a private copy we cut up. */
static int parse_net(struct vm_net_config *n, char *spec, char *err, size_t errlen)
{
	memset(n, 0, sizeof(*n));
	n->fd = -1;
	char *save = NULL;
	for (char *opt = strtok_r(spec, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(opt, '=');
		if (!eq)
			return bad(err, errlen,
			           "bad --net option '%s' (expected fd=N, tap=NAME, mac=MAC or a "
			           "limit such as rx_bps=N)",
			           opt);
		const char *v = eq + 1;
		size_t klen = (size_t)(eq - opt);
		unsigned long long num;
		uint64_t *lim = net_limit(n, opt, klen);
		int r = 0;
		if (lim) {
			if (parse_uint(v, LIMIT_MAX, &num) < 0)
				return bad(err, errlen,
				           "--net %.*s= needs a number from 0 to %llu, got '%s'",
				           (int)klen, opt, LIMIT_MAX, v);
			*lim = num;
		} else if (klen == 2 && !strncmp(opt, "fd", 2)) {
			if (parse_uint(v, INT_MAX, &num) < 0)
				return bad(err, errlen,
				           "--net fd= needs a file descriptor number, got '%s'", v);
			r = net_fd_value(n, num, err, errlen);
		} else if (klen == 3 && !strncmp(opt, "tap", 3)) {
			r = net_tap_value(n, v, err, errlen);
		} else if (klen == 3 && !strncmp(opt, "mac", 3)) {
			r = net_mac_value(n, v, err, errlen);
		} else {
			return bad(err, errlen,
			           "unknown --net option '%.*s' (expected fd, tap, mac, rx_bps, "
			           "rx_bps_burst, rx_pps, rx_pps_burst, tx_bps, tx_bps_burst, "
			           "tx_pps or tx_pps_burst)",
			           (int)klen, opt);
		}
		if (r < 0)
			return r;
	}
	if (n->fd < 0 && !n->tap_name)
		return bad(err, errlen, "--net needs fd=N (an inherited TAP) or tap=NAME");
	n->enabled = true;
	return 0;
}

static int json_str(json_t *v, const char *key, const char **out, char *err, size_t errlen)
{
	if (!json_is_string(v))
		return bad(err, errlen, "config: '%s' must be a string", key);
	*out = json_string_value(v);
	return 0;
}

static int json_uint(json_t *v, const char *key, unsigned long long max, unsigned long long *out,
                     char *err, size_t errlen)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (unsigned long long)json_integer_value(v) > max)
		return bad(err, errlen, "config: '%s' must be an integer from 0 to %llu", key, max);
	*out = (unsigned long long)json_integer_value(v);
	return 0;
}

static int load_disk(struct vm_config *vm, json_t *d, char *err, size_t errlen)
{
	if (!json_is_object(d))
		return bad(err, errlen, "config: each of 'disks' must be an object");
	const char *path = NULL, *id = NULL, *format = NULL;
	int ro = 0;
	struct vmm_disk_limits l = { 0 };
	const char *key;
	json_t *v;
	json_object_foreach(d, key, v)
	{
		int r = 0;
		unsigned long long n;
		uint64_t *limit = !strcmp(key, "bps")          ? &l.bps
		                  : !strcmp(key, "bps_burst")  ? &l.bps_burst
		                  : !strcmp(key, "iops")       ? &l.iops
		                  : !strcmp(key, "iops_burst") ? &l.iops_burst
		                  : !strcmp(key, "max_file")   ? &l.max_file
		                                               : NULL;
		if (limit) {
			char what[32];
			snprintf(what, sizeof(what), "disks[].%s", key);
			r = json_uint(v, what, LIMIT_MAX, &n, err, errlen);
			*limit = n;
		} else if (!strcmp(key, "path"))
			r = json_str(v, "disks[].path", &path, err, errlen);
		else if (!strcmp(key, "id"))
			r = json_str(v, "disks[].id", &id, err, errlen);
		else if (!strcmp(key, "format"))
			r = json_str(v, "disks[].format", &format, err, errlen);
		else if (!strcmp(key, "read_only")) {
			if (!json_is_boolean(v))
				return bad(err, errlen,
				           "config: 'read_only' must be true or false");
			ro = json_is_true(v);
		} else
			return bad(err, errlen, "config: unknown key 'disks[].%s'", key);
		if (r < 0)
			return r;
	}
	return add_disk(vm, path, ro, id, format, &l, err, errlen);
}

static int load_net(struct vm_net_config *n, json_t *o, char *err, size_t errlen)
{
	if (!json_is_object(o))
		return bad(err, errlen, "config: 'net' must be an object");
	memset(n, 0, sizeof(*n));
	n->fd = -1;
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v)
	{
		int r;
		unsigned long long num;
		uint64_t *lim = net_limit(n, key, strlen(key));
		char what[32];
		snprintf(what, sizeof(what), "net.%s", key);
		if (lim) {
			r = json_uint(v, what, LIMIT_MAX, &num, err, errlen);
			*lim = num;
		} else if (!strcmp(key, "fd")) {
			r = json_uint(v, what, INT_MAX, &num, err, errlen);
			if (!r)
				r = net_fd_value(n, num, err, errlen);
		} else if (!strcmp(key, "tap") || !strcmp(key, "mac")) {
			const char *s = NULL;
			r = json_str(v, what, &s, err, errlen);
			if (!r)
				r = key[0] == 't' ? net_tap_value(n, s, err, errlen)
				                  : net_mac_value(n, s, err, errlen);
		} else {
			return bad(err, errlen, "config: unknown key 'net.%s'", key);
		}
		if (r < 0)
			return r;
	}
	if (n->fd < 0 && !n->tap_name)
		return bad(err, errlen, "config: 'net' needs \"fd\" or \"tap\"");
	n->enabled = true;
	return 0;
}

int vmm_config_load_json(struct vmm_config *c, const char *path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return bad(err, errlen, "config '%s': %s (line %d)", path, je.text, je.line);
	if (c->json)
		json_decref(c->json);
	c->json = root; /* strings below point into it */
	if (!json_is_object(root))
		return bad(err, errlen, "config '%s': the top level must be an object", path);
	struct vm_config *vm = &c->vm;
	const char *key;
	json_t *v;
	json_object_foreach(root, key, v)
	{
		int r;
		unsigned long long n;
		if (!strcmp(key, "kernel"))
			r = json_str(v, key, &vm->kernel, err, errlen);
		else if (!strcmp(key, "initrd"))
			r = json_str(v, key, &vm->initrd, err, errlen);
		else if (!strcmp(key, "cmdline"))
			r = json_str(v, key, &vm->cmdline, err, errlen);
		else if (!strcmp(key, "cpus")) {
			r = json_uint(v, key, VM_MAX_VCPUS, &n, err, errlen);
			vm->cpus = (unsigned int)n;
		} else if (!strcmp(key, "memory")) {
			r = json_uint(v, key, 1ULL << 20, &n, err, errlen);
			vm->memory_mib = n;
		} else if (!strcmp(key, "console")) {
			const char *s = NULL;
			r = json_str(v, key, &s, err, errlen);
			if (!r)
				r = set_console(vm, s, err, errlen);
		} else if (!strcmp(key, "vsock")) {
			r = json_str(v, key, &vm->vsock_path, err, errlen);
		} else if (!strcmp(key, "vsock_cid")) {
			r = json_uint(v, key, 0xfffffffeULL, &n, err, errlen);
			if (!r && n < 3)
				r = bad(err, errlen, "config: 'vsock_cid' must be at least 3");
			vm->vsock_cid = n;
		} else if (!strcmp(key, "seccomp")) {
			const char *s = NULL;
			r = json_str(v, key, &s, err, errlen);
			if (!r && vmm_seccomp_parse_mode(s, &c->seccomp) < 0)
				r = bad(err, errlen,
				        "config: 'seccomp' must be \"kill\", \"log\" or \"off\"");
		} else if (!strcmp(key, "ttl")) {
			r = json_uint(v, key, VMM_TTL_MAX, &n, err, errlen);
			vm->ttl_s = n;
		} else if (!strcmp(key, "console_max")) {
			r = json_uint(v, key, LIMIT_MAX, &n, err, errlen);
			if (!r && n && n < VM_CONSOLE_MAX_MIN)
				r = bad(err, errlen, "config: 'console_max' must be at least %llu",
				        VM_CONSOLE_MAX_MIN);
			vm->console_max = n;
		} else if (!strcmp(key, "net")) {
			r = load_net(&vm->net, v, err, errlen);
		} else if (!strcmp(key, "disks")) {
			if (!json_is_array(v))
				return bad(err, errlen, "config: 'disks' must be an array");
			size_t i;
			json_t *d;
			r = 0;
			json_array_foreach(v, i, d)
			{
				if ((r = load_disk(vm, d, err, errlen)) < 0)
					break;
			}
		} else {
			return bad(err, errlen, "config '%s': unknown key '%s'", path, key);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* cove-vmm's options, numbered past any short option. */
enum {
	O_KERNEL = 256,
	O_INITRD,
	O_CMDLINE,
	O_CPUS,
	O_MEMORY,
	O_DISK,
	O_CONSOLE,
	O_CONFIG,
	O_VSOCK,
	O_API,
	O_RESTORE,
	O_OVERLAY_DIR,
	O_JAIL,
	O_JAIL_UID,
	O_JAIL_GID,
	O_JAIL_FSIZE,
	O_SECCOMP,
	O_SECCOMP_LIST,
	O_TTL,
	O_CONSOLE_MAX,
	O_DISK_LIMIT,
	O_NET,
	O_POOL,
	O_RESTORE_MEMORY
};

static const struct option opts[] = {
	{ "kernel", required_argument, NULL, O_KERNEL },
	{ "initrd", required_argument, NULL, O_INITRD },
	{ "cmdline", required_argument, NULL, O_CMDLINE },
	{ "cpus", required_argument, NULL, O_CPUS },
	{ "memory", required_argument, NULL, O_MEMORY },
	{ "disk", required_argument, NULL, O_DISK },
	{ "console", required_argument, NULL, O_CONSOLE },
	{ "config", required_argument, NULL, O_CONFIG },
	{ "vsock", required_argument, NULL, O_VSOCK },
	{ "api", required_argument, NULL, O_API },
	{ "restore", required_argument, NULL, O_RESTORE },
	{ "overlay-dir", required_argument, NULL, O_OVERLAY_DIR },
	{ "restore-memory", required_argument, NULL, O_RESTORE_MEMORY },
	{ "jail", required_argument, NULL, O_JAIL },
	{ "jail-uid", required_argument, NULL, O_JAIL_UID },
	{ "jail-gid", required_argument, NULL, O_JAIL_GID },
	{ "jail-fsize", required_argument, NULL, O_JAIL_FSIZE },
	{ "seccomp", required_argument, NULL, O_SECCOMP },
	{ "seccomp-list", no_argument, NULL, O_SECCOMP_LIST },
	{ "ttl", required_argument, NULL, O_TTL },
	{ "console-max", required_argument, NULL, O_CONSOLE_MAX },
	{ "disk-limit", required_argument, NULL, O_DISK_LIMIT },
	{ "net", required_argument, NULL, O_NET },
	{ "pool", required_argument, NULL, O_POOL },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* What the option loop keeps from one option to the next. */
struct parse_state {
	unsigned int ndisk_specs;
	bool jail_uid_set, jail_gid_set;
	const char *machine_flag; /* a flag a snapshot decides instead */
};

/* --help or --seccomp-list: nothing else to parse or check. */
#define PARSE_DONE 1

/* An option that describes the machine: 0, or -errno with err set. */
static int vm_option(struct vmm_config *c, int o, struct parse_state *ps, char *err, size_t errlen)
{
	unsigned long long n;
	int r = 0;
	switch (o) {
	case O_KERNEL:
		c->vm.kernel = optarg;
		break;
	case O_INITRD:
		c->vm.initrd = optarg;
		break;
	case O_CMDLINE:
		c->vm.cmdline = optarg;
		break;
	case O_CPUS:
		if (parse_uint(optarg, UINT_MAX, &n) < 0 || n < 1 || n > VM_MAX_VCPUS)
			return bad(err, errlen, "--cpus must be a number from 1 to %d, got '%s'",
			           VM_MAX_VCPUS, optarg);
		c->vm.cpus = (unsigned int)n;
		break;
	case O_MEMORY:
		if (parse_uint(optarg, 1ULL << 20, &n) < 0)
			return bad(err, errlen, "--memory must be a number of MiB, got '%s'",
			           optarg);
		c->vm.memory_mib = n;
		break;
	case O_DISK:
		if (ps->ndisk_specs == VM_MAX_DISKS)
			return bad(err, errlen, "too many disks (at most %d)", VM_MAX_DISKS);
		c->disk_specs[ps->ndisk_specs] = strdup(optarg);
		if (!c->disk_specs[ps->ndisk_specs])
			return -ENOMEM;
		r = parse_disk(&c->vm, c->disk_specs[ps->ndisk_specs++], err, errlen);
		break;
	case O_CONSOLE:
		r = set_console(&c->vm, optarg, err, errlen);
		break;
	case O_VSOCK:
		free(c->vsock_spec);
		c->vsock_spec = strdup(optarg);
		if (!c->vsock_spec)
			return -ENOMEM;
		r = parse_vsock(&c->vm, c->vsock_spec, err, errlen);
		break;
	case O_CONFIG:
		r = vmm_config_load_json(c, optarg, err, errlen);
		break;
	case O_TTL:
		if (parse_uint(optarg, VMM_TTL_MAX, &n) < 0 || n == 0)
			return bad(err, errlen,
			           "--ttl must be a number of seconds from 1 to %llu, got '%s'",
			           VMM_TTL_MAX, optarg);
		c->vm.ttl_s = n;
		break;
	case O_CONSOLE_MAX:
		if (parse_uint(optarg, LIMIT_MAX, &n) < 0 || n < VM_CONSOLE_MAX_MIN)
			return bad(err, errlen,
			           "--console-max must be a number of bytes from %llu, got '%s'",
			           VM_CONSOLE_MAX_MIN, optarg);
		c->vm.console_max = n;
		break;
	case O_DISK_LIMIT: {
		char *spec = strdup(optarg);
		if (!spec)
			return -ENOMEM;
		r = parse_disk_limit(c, spec, err, errlen);
		free(spec);
		break;
	}
	case O_NET:
		free(c->net_spec);
		c->net_spec = strdup(optarg);
		if (!c->net_spec)
			return -ENOMEM;
		r = parse_net(&c->vm.net, c->net_spec, err, errlen);
		break;
	}
	return r;
}

/* An option of the VMM process itself (control socket, restore, jail,
 * seccomp, pool): 0, PARSE_DONE, or -errno with err set. */
static int host_option(struct vmm_config *c, int o, struct parse_state *ps, char *err,
                       size_t errlen)
{
	unsigned long long n;
	switch (o) {
	case O_API:
		if (!*optarg)
			return bad(err, errlen, "--api needs a socket path");
		c->api_path = optarg;
		break;
	case O_RESTORE:
		if (!*optarg)
			return bad(err, errlen, "--restore needs a snapshot directory");
		c->restore_dir = optarg;
		break;
	case O_OVERLAY_DIR:
		if (!*optarg)
			return bad(err, errlen, "--overlay-dir needs a directory");
		c->overlay_dir = optarg;
		break;
	case O_RESTORE_MEMORY:
		if (!*optarg)
			return bad(err, errlen, "--restore-memory needs a file");
		c->restore_memory = optarg;
		break;
	case O_JAIL:
		if (optarg[0] != '/' || !optarg[1])
			return bad(err, errlen,
			           "--jail needs an absolute directory other than /, got '%s'",
			           optarg);
		c->jail.root = optarg;
		break;
	case O_JAIL_UID:
	case O_JAIL_GID:
		if (parse_uint(optarg, 0xfffffffeULL, &n) < 0 || n == 0)
			return bad(err, errlen, "%s must be a non-zero id, got '%s'",
			           o == O_JAIL_UID ? "--jail-uid" : "--jail-gid", optarg);
		if (o == O_JAIL_UID)
			c->jail.uid = (uid_t)n, ps->jail_uid_set = true;
		else
			c->jail.gid = (gid_t)n, ps->jail_gid_set = true;
		break;
	case O_JAIL_FSIZE:
		if (parse_uint(optarg, UINT64_MAX >> 1, &n) < 0 || n == 0)
			return bad(err, errlen, "--jail-fsize must be a number of bytes, got '%s'",
			           optarg);
		c->jail.fsize = n;
		break;
	case O_SECCOMP:
		if (vmm_seccomp_parse_mode(optarg, &c->seccomp) < 0)
			return bad(err, errlen, "--seccomp must be kill, log or off, got '%s'",
			           optarg);
		break;
	case O_SECCOMP_LIST:
		c->show_seccomp_list = 1;
		return PARSE_DONE;
	case O_POOL:
		if (parse_uint(optarg, UINT_MAX, &n) < 0 || n < 1 || n > VM_MAX_VCPUS)
			return bad(err, errlen,
			           "--pool must be a number of vCPUs from 1 to %d, got '%s'",
			           VM_MAX_VCPUS, optarg);
		c->pool_cpus = (unsigned int)n;
		break;
	}
	return 0;
}

/* The options together: a pooled VMM, a restore, or a cold boot. */
static int check_modes(struct vmm_config *c, const struct parse_state *ps, char *err, size_t errlen)
{
	if (ps->jail_gid_set && !ps->jail_uid_set)
		return bad(err, errlen, "--jail-gid needs --jail-uid");
	if (ps->jail_uid_set && !ps->jail_gid_set)
		c->jail.gid = (gid_t)c->jail.uid;
	c->jail.set_ids = ps->jail_uid_set;
	if (c->pool_cpus) {
		/* The machine comes later, in the start request (vmm/pool.c). */
		if (!c->api_path)
			return bad(err, errlen,
			           "--pool needs --api PATH (its start request comes there)");
		if (ps->machine_flag || c->restore_dir || c->overlay_dir || c->restore_memory ||
		    c->restore_limits_set || c->vm.vsock_path || c->vm.net.enabled || c->vm.ttl_s)
			return bad(err, errlen,
			           "--pool takes only --api, --seccomp and the jail options: the "
			           "rest comes with its start request");
		return 0;
	}
	if (c->restore_dir) {
		if (ps->machine_flag)
			return bad(
			    err, errlen,
			    "--%s cannot be combined with --restore (the snapshot decides it)",
			    ps->machine_flag);
		return 0;
	}
	if (c->overlay_dir)
		return bad(err, errlen, "--overlay-dir is only for --restore");
	if (c->restore_memory)
		return bad(err, errlen, "--restore-memory is only for --restore");
	if (c->restore_limits_set)
		return bad(err, errlen,
		           "--disk-limit is only for --restore (give limits as --disk options)");
	if (!c->vm.kernel)
		return bad(err, errlen, "no kernel given (--kernel PATH)");
	return 0;
}

int vmm_config_parse(struct vmm_config *c, int argc, char **argv, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->vm.cpus = COVE_CPUS_DEFAULT;
	c->vm.memory_mib = COVE_MEMORY_DEFAULT_MIB;
	c->vm.console = VM_CONSOLE_STDIO;
	c->seccomp = VMM_SECCOMP_KILL;
	struct parse_state ps = { 0 };
	optind = 1;
	opterr = 0;
	int o;
	int li = -1;
	while ((o = getopt_long(argc, argv, ":h", opts, &li)) != -1) {
		int r;
		if (o == O_KERNEL || o == O_INITRD || o == O_CMDLINE || o == O_CPUS ||
		    o == O_MEMORY || o == O_DISK || o == O_CONFIG)
			ps.machine_flag = li >= 0 ? opts[li].name : "a machine option";
		switch (o) {
		case 'h':
			c->show_help = 1;
			return 0;
		case ':':
			return bad(err, errlen, "option '%s' needs a value", argv[optind - 1]);
		case O_KERNEL:
		case O_INITRD:
		case O_CMDLINE:
		case O_CPUS:
		case O_MEMORY:
		case O_DISK:
		case O_CONSOLE:
		case O_VSOCK:
		case O_CONFIG:
		case O_TTL:
		case O_CONSOLE_MAX:
		case O_DISK_LIMIT:
		case O_NET:
			r = vm_option(c, o, &ps, err, errlen);
			break;
		case O_API:
		case O_RESTORE:
		case O_OVERLAY_DIR:
		case O_RESTORE_MEMORY:
		case O_JAIL:
		case O_JAIL_UID:
		case O_JAIL_GID:
		case O_JAIL_FSIZE:
		case O_SECCOMP:
		case O_SECCOMP_LIST:
		case O_POOL:
			r = host_option(c, o, &ps, err, errlen);
			break;
		default:
			return bad(err, errlen, "unknown option '%s'", argv[optind - 1]);
		}
		if (r == PARSE_DONE)
			return 0;
		if (r < 0)
			return r;
	}
	if (optind < argc)
		return bad(err, errlen, "unexpected argument '%s'", argv[optind]);
	return check_modes(c, &ps, err, errlen);
}

void vmm_config_free(struct vmm_config *c)
{
	if (c->json)
		json_decref(c->json);
	c->json = NULL;
	free(c->vsock_spec);
	c->vsock_spec = NULL;
	free(c->net_spec);
	c->net_spec = NULL;
	for (unsigned int i = 0; i < VM_MAX_DISKS; i++) {
		free(c->disk_specs[i]);
		c->disk_specs[i] = NULL;
	}
}
