#include "config.h"
#include "config_priv.h"
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

int cfg_parse_uint(const char *s, unsigned long long max, unsigned long long *out)
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

int cfg_set_console(struct vm_config *vm, const char *v, char *err, size_t errlen)
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

/* One "key=N" disk limit option; 1 when opt was one, 0 when not, -EINVAL. */
int cfg_limit_option(struct vmm_disk_limits *l, const char *opt, char *err, size_t errlen)
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
		if (cfg_parse_uint(opt + n, LIMIT_MAX, &v) < 0)
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

int cfg_add_disk(struct vm_config *vm, const char *path, int read_only, const char *id,
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

uint64_t *cfg_net_limit(struct vm_net_config *n, const char *key, size_t keylen)
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

int cfg_net_fd_value(struct vm_net_config *n, unsigned long long v, char *err, size_t errlen)
{
	if (v > INT_MAX)
		return bad(err, errlen, "--net fd= needs a file descriptor number");
	n->fd = (int)v;
	n->tap_name = NULL;
	return 0;
}

int cfg_net_mac_value(struct vm_net_config *n, const char *v, char *err, size_t errlen)
{
	if (parse_mac(v, n->mac) < 0)
		return bad(err, errlen,
		           "--net mac= needs a unicast address XX:XX:XX:XX:XX:XX, got '%s'", v);
	n->mac_set = true;
	return 0;
}

int cfg_net_tap_value(struct vm_net_config *n, const char *v, char *err, size_t errlen)
{
	if (!*v || strlen(v) > 15 || strchr(v, '/'))
		return bad(err, errlen, "--net tap= needs an interface name of 1 to 15 bytes");
	n->tap_name = v;
	n->fd = -1;
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
	return cfg_add_disk(vm, path, ro, id, format, &l, err, errlen);
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
		uint64_t *lim = cfg_net_limit(n, key, strlen(key));
		char what[32];
		snprintf(what, sizeof(what), "net.%s", key);
		if (lim) {
			r = json_uint(v, what, LIMIT_MAX, &num, err, errlen);
			*lim = num;
		} else if (!strcmp(key, "fd")) {
			r = json_uint(v, what, INT_MAX, &num, err, errlen);
			if (!r)
				r = cfg_net_fd_value(n, num, err, errlen);
		} else if (!strcmp(key, "tap") || !strcmp(key, "mac")) {
			const char *s = NULL;
			r = json_str(v, what, &s, err, errlen);
			if (!r)
				r = key[0] == 't' ? cfg_net_tap_value(n, s, err, errlen)
				                  : cfg_net_mac_value(n, s, err, errlen);
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
				r = cfg_set_console(vm, s, err, errlen);
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
