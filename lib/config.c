/* A sandbox's configuration: the defaults (cove-vmm, the kernel and the
 * images found beside the running executable, unless the environment
 * names them) and what cove_start and cove_restore accept. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cove_limits.h"
#include "errf.h"
#include "lib/base/handle.h"
#include "lib/base/text.h"
#include "lib/config.h"
#include "lib/net/net_addr.h"

#define CONFIG_BOOT_TIMEOUT_MS 60000

/* build/bin/<exe> -> build/<rel>; NULL when /proc/self/exe is unreadable. */
static char *beside_exe(const char *rel)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = 0; /* build/bin */
	char *out = NULL;
	if (!strncmp(rel, "bin/", 4)) {
		if (asprintf(&out, "%s/%s", exe, rel + 4) < 0)
			return NULL;
		return out;
	}
	slash = strrchr(exe, '/');
	if (slash)
		*slash = 0; /* build */
	if (asprintf(&out, "%s/%s", exe, rel) < 0)
		return NULL;
	return out;
}

static const char *env_or(const char *name, const char *rel, char **keep)
{
	const char *v = getenv(name);
	if (v && *v)
		return v;
	*keep = beside_exe(rel);
	return *keep;
}

void cove_config_defaults(struct cove_config *cfg)
{
	/* The strings live for the process: defaults are resolved once. */
	static char *vmm, *kernel, *image, *egress;
	memset(cfg, 0, sizeof(*cfg));
	cfg->vmm = vmm ? vmm : (char *)env_or("COVE_VMM", "bin/cove-vmm", &vmm);
	cfg->egress = egress ? egress : (char *)env_or("COVE_EGRESS", "bin/cove-egress", &egress);
	cfg->kernel = kernel ? kernel : (char *)env_or("COVE_KERNEL", "vmlinux", &kernel);
	if (!image)
		image = cove_image_path(getenv("COVE_IMAGE") ? getenv("COVE_IMAGE") : "minimal");
	cfg->image = image;
	cfg->cpus = COVE_CPUS_DEFAULT;
	cfg->memory_mib = COVE_MEMORY_DEFAULT_MIB;
	cfg->boot_timeout_ms = CONFIG_BOOT_TIMEOUT_MS;
}

char *cove_image_path(const char *name)
{
	if (!name || !*name)
		return NULL;
	if (strchr(name, '/') || strstr(name, ".ext4") || strstr(name, ".img"))
		return strdup(name);
	char *out = NULL;
	const char *dir = getenv("COVE_IMAGES");
	if (dir && *dir) {
		if (asprintf(&out, "%s/%s.ext4", dir, name) < 0)
			return NULL;
		return out;
	}
	char rel[128];
	snprintf(rel, sizeof(rel), "images/%s.ext4", name);
	return beside_exe(rel);
}

unsigned int config_boot_timeout_ms(const struct cove_config *cfg)
{
	return cfg->boot_timeout_ms ? cfg->boot_timeout_ms : CONFIG_BOOT_TIMEOUT_MS;
}

int config_check_sizes(unsigned int cpus, uint64_t memory_mib, char *err, size_t errlen)
{
	if (memory_mib && memory_mib < COVE_MEMORY_MIN_MIB)
		return errf(err, errlen, -EINVAL, "memory must be at least %d MiB, got %llu",
		            COVE_MEMORY_MIN_MIB, (unsigned long long)memory_mib);
	if (cpus > COVE_CPUS_MAX)
		return errf(err, errlen, -EINVAL, "cpus must be between 1 and %d, got %u",
		            COVE_CPUS_MAX, cpus);
	return 0;
}

int config_check_limits(const struct cove_config *cfg, char *err, size_t errlen)
{
	/* NaN fails every comparison: it is refused with the rest. */
	if (cfg->cpu_quota != 0 &&
	    !(cfg->cpu_quota >= CONFIG_CPU_QUOTA_MIN && cfg->cpu_quota <= COVE_CPUS_MAX))
		return errf(err, errlen, -EINVAL,
		            "cpu quota must be between %.2f and %d CPUs, got %g",
		            CONFIG_CPU_QUOTA_MIN, COVE_CPUS_MAX, cfg->cpu_quota);
	if (cfg->pids_max && (cfg->pids_max < CONFIG_PIDS_MIN || cfg->pids_max > CONFIG_PIDS_MAX))
		return errf(err, errlen, -EINVAL, "pids max must be between %d and %d, got %llu",
		            CONFIG_PIDS_MIN, CONFIG_PIDS_MAX, (unsigned long long)cfg->pids_max);
	if (cfg->disk_size > CONFIG_DISK_SIZE_MAX)
		return errf(err, errlen, -EINVAL,
		            "disk size must be at most %llu TiB, got %llu bytes",
		            CONFIG_DISK_SIZE_MAX >> 40, (unsigned long long)cfg->disk_size);
	if (cfg->disk_bps &&
	    (cfg->disk_bps < CONFIG_DISK_BPS_MIN || cfg->disk_bps > CONFIG_RATE_MAX))
		return errf(
		    err, errlen, -EINVAL, "disk rate must be between %d bytes/s and %llu, got %llu",
		    CONFIG_DISK_BPS_MIN, CONFIG_RATE_MAX, (unsigned long long)cfg->disk_bps);
	if (cfg->disk_iops > CONFIG_RATE_MAX)
		return errf(err, errlen, -EINVAL, "disk iops must be at most %llu, got %llu",
		            CONFIG_RATE_MAX, (unsigned long long)cfg->disk_iops);
	if (cfg->ttl_s > CONFIG_TTL_MAX_S)
		return errf(err, errlen, -EINVAL, "ttl must be at most %llu seconds, got %llu",
		            CONFIG_TTL_MAX_S, (unsigned long long)cfg->ttl_s);
	return 0;
}

int config_check(const struct cove_config *cfg, bool boot, char *err, size_t errlen)
{
	/* A restore takes its sizes from the snapshot. */
	int r = boot ? config_check_sizes(cfg->cpus, cfg->memory_mib, err, errlen) : 0;
	if (r == 0)
		r = config_check_limits(cfg, err, errlen);
	if (r == 0)
		r = net_check_config(cfg, boot, err, errlen);
	if (r == 0 && boot && cfg->proxy_rules && cfg->net.mode == COVE_NET_OFF)
		r = errf(
		    err, errlen, -EINVAL,
		    "--proxy-rules needs a network (--net none denies all but the rules' hosts)");
	/* Before anything else of the host: one line, nothing started. */
	if (r == 0 && cfg->net.mode != COVE_NET_OFF)
		r = config_check_net_host(cfg, err, errlen);
	if (r == 0 && (unsigned int)cfg->memcache > COVE_MEMCACHE_NONE)
		r = errf(err, errlen, -EINVAL, "unknown memory cache choice %d",
		         (int)cfg->memcache);
	if (r == 0 && !boot && cfg->disk_size)
		r = errf(err, errlen, -EINVAL,
		         "a restored sandbox keeps the snapshot's disk size (no disk size)");
	if (r < 0)
		return r;
	/* It goes onto the kernel command line: nothing but a host name. */
	if (cfg->hostname && !text_hostname_valid(cfg->hostname))
		return errf(err, errlen, -EINVAL, "invalid host name '%s' (RFC 1123)",
		            cfg->hostname);
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		return errf(err, errlen, -ENODEV,
		            "no usable /dev/kvm here (%s); on a machine without KVM run "
		            "Cove through scripts/kvm-host",
		            strerror(errno));
	close(kvm);
	struct {
		const char *path, *what;
	} need[] = { { cfg->vmm, "cove-vmm" }, { cfg->kernel, "kernel" }, { cfg->image, "image" } };
	size_t n = boot ? sizeof(need) / sizeof(need[0]) : 1;
	for (size_t i = 0; i < n; i++) {
		if (!need[i].path)
			return errf(err, errlen, -EINVAL, "no %s configured", need[i].what);
		if (access(need[i].path, R_OK) < 0)
			return errf(err, errlen, -errno, "%s '%s': %s (run make)", need[i].what,
			            need[i].path, strerror(errno));
	}
	if (cfg->name)
		return sandbox_check_name(cfg->name, err, errlen);
	return 0;
}

int config_check_net_host(const struct cove_config *cfg, char *err, size_t errlen)
{
	if (geteuid() != 0)
		return errf(err, errlen, -EPERM,
		            "networking (--net, --allow, --deny, --publish) needs root: a "
		            "sandbox's veth, NAT and nftables rules live in the host's network "
		            "namespace (uid %u here); run cove as root, or without network "
		            "options",
		            (unsigned)geteuid());
	if (access("/dev/net/tun", R_OK | W_OK) < 0)
		return errf(err, errlen, -ENODEV,
		            "networking needs /dev/net/tun (%s): load the tun module",
		            strerror(errno));
	if (!cfg->egress || access(cfg->egress, X_OK) < 0)
		return errf(err, errlen, -ENOENT, "cove-egress '%s': %s (run make)",
		            cfg->egress ? cfg->egress : "(none configured)",
		            cfg->egress ? strerror(errno) : "not found");
	return 0;
}
