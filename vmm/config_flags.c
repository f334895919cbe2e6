/* cove-vmm's flags: each option's value, then the combination checks. */
#include "config_flags.h"

#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_priv.h"
#include "cove_limits.h"

/* PATH[,ro][,id=NAME]; spec is a private copy that we cut up. */
static int parse_disk(struct vm_config *vm, char *spec, char *err, size_t errlen)
{
	char *save = NULL;
	char *path = strtok_r(spec, ",", &save);
	int ro = 0;
	const char *id = NULL, *format = NULL;
	struct vmm_disk_limits l = { 0 };
	for (char *opt; (opt = strtok_r(NULL, ",", &save));) {
		int k = cfg_limit_option(&l, opt, err, errlen);
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
	return cfg_add_disk(vm, path, ro, id, format, &l, err, errlen);
}

/* INDEX,key=N...: limits for disk INDEX of a snapshot being restored
 * (whose disks come from the snapshot, not from --disk). */
static int parse_disk_limit(struct vmm_config *c, char *spec, char *err, size_t errlen)
{
	char *save = NULL;
	char *index = strtok_r(spec, ",", &save);
	unsigned long long i;
	if (!index || cfg_parse_uint(index, VM_MAX_DISKS - 1, &i) < 0)
		return bad(err, errlen, "--disk-limit needs a disk index from 0 to %d first",
		           VM_MAX_DISKS - 1);
	struct vmm_disk_limits l = { 0 };
	for (char *opt; (opt = strtok_r(NULL, ",", &save));) {
		int k = cfg_limit_option(&l, opt, err, errlen);
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
		if (strncmp(opt, "cid=", 4) || cfg_parse_uint(opt + 4, 0xfffffffeULL, &cid) < 0 ||
		    cid < 3)
			return bad(
			    err, errlen,
			    "bad vsock option '%s' (expected cid=N with N from 3 to 4294967294)",
			    opt);
		vm->vsock_cid = cid;
	}
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
		uint64_t *lim = cfg_net_limit(n, opt, klen);
		int r = 0;
		if (lim) {
			if (cfg_parse_uint(v, LIMIT_MAX, &num) < 0)
				return bad(err, errlen,
				           "--net %.*s= needs a number from 0 to %llu, got '%s'",
				           (int)klen, opt, LIMIT_MAX, v);
			*lim = num;
		} else if (klen == 2 && !strncmp(opt, "fd", 2)) {
			if (cfg_parse_uint(v, INT_MAX, &num) < 0)
				return bad(err, errlen,
				           "--net fd= needs a file descriptor number, got '%s'", v);
			r = cfg_net_fd_value(n, num, err, errlen);
		} else if (klen == 3 && !strncmp(opt, "tap", 3)) {
			r = cfg_net_tap_value(n, v, err, errlen);
		} else if (klen == 3 && !strncmp(opt, "mac", 3)) {
			r = cfg_net_mac_value(n, v, err, errlen);
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
		if (cfg_parse_uint(optarg, UINT_MAX, &n) < 0 || n < 1 || n > VM_MAX_VCPUS)
			return bad(err, errlen, "--cpus must be a number from 1 to %d, got '%s'",
			           VM_MAX_VCPUS, optarg);
		c->vm.cpus = (unsigned int)n;
		break;
	case O_MEMORY:
		if (cfg_parse_uint(optarg, 1ULL << 20, &n) < 0)
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
		r = cfg_set_console(&c->vm, optarg, err, errlen);
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
		if (cfg_parse_uint(optarg, VMM_TTL_MAX, &n) < 0 || n == 0)
			return bad(err, errlen,
			           "--ttl must be a number of seconds from 1 to %llu, got '%s'",
			           VMM_TTL_MAX, optarg);
		c->vm.ttl_s = n;
		break;
	case O_CONSOLE_MAX:
		if (cfg_parse_uint(optarg, LIMIT_MAX, &n) < 0 || n < VM_CONSOLE_MAX_MIN)
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
		if (cfg_parse_uint(optarg, 0xfffffffeULL, &n) < 0 || n == 0)
			return bad(err, errlen, "%s must be a non-zero id, got '%s'",
			           o == O_JAIL_UID ? "--jail-uid" : "--jail-gid", optarg);
		if (o == O_JAIL_UID)
			c->jail.uid = (uid_t)n, ps->jail_uid_set = true;
		else
			c->jail.gid = (gid_t)n, ps->jail_gid_set = true;
		break;
	case O_JAIL_FSIZE:
		if (cfg_parse_uint(optarg, UINT64_MAX >> 1, &n) < 0 || n == 0)
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
		if (cfg_parse_uint(optarg, UINT_MAX, &n) < 0 || n < 1 || n > VM_MAX_VCPUS)
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
